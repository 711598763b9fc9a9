"""Fixtures shared by the test modules.

``site``/``site_url``: the example project's demo site, served on loopback. ``redis_url``: a
redis-server for the whole session. ``server``/``client``: a redis-server of the module's own
(a module may stop, pause or kill it) and a client of it, its database flushed for each test.
A module that needs another ``server`` (an HTTP one) defines its own, which wins.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from demo_site import Site, build_site, serve
from redis_server import RedisServer

from scrapy_neardup.storage import redis_client

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"


def _install_reactor_for_scrapy_2_13() -> None:
    """Scrapy 2.13's ``get_crawler()`` asks which reactor is installed and raises when none
    is (later Scrapy assumes asyncio's): install the asyncio reactor then, as Scrapy's own
    test suite does. With later Scrapy the tests run without one, as before."""
    from scrapy.utils.reactor import install_reactor, is_asyncio_reactor_installed

    try:
        is_asyncio_reactor_installed()
    except RuntimeError:
        install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")


_install_reactor_for_scrapy_2_13()

#: Lines of figures the crash suite of spider kinds (tests/test_crash_kinds.py) reports.
CRASH_FIGURES = pytest.StashKey[list[str]]()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    figures = terminalreporter.config.stash.get(CRASH_FIGURES, [])
    if figures:
        terminalreporter.section("crash figures: pages in the feed after SIGKILLs")
        for line in figures:
            terminalreporter.write_line(line)


@pytest.fixture(scope="module")
def site() -> Site:
    return build_site()


@pytest.fixture(scope="module")
def site_url(site: Site) -> Iterator[str]:
    server, port = serve("127.0.0.1", 0, site)
    yield f"http://127.0.0.1:{port}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real redis-server on a free loopback port, for the whole session (tests flush it)."""
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server.url
    server.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A redis-server of this module's own, with an append-only file (restarts keep data)."""
    srv = RedisServer(tmp_path_factory.mktemp("redis"), appendonly=True).start()
    yield srv
    srv.stop()


@pytest.fixture
def client(server: RedisServer) -> Iterator[Any]:
    """A client of ``server``, its database flushed; the server woken or started again first
    when an earlier test failed while it was paused or stopped."""
    if server.proc is not None:
        server.proc.send_signal(signal.SIGCONT)
    if not server.ping():
        server.start()
    c = redis_client.connect(server.url)
    c.flushdb()
    yield c
    c.close()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Close the event loop of an asyncio reactor a test installed (``get_crawler`` does),
    so it is not left to the interpreter's exit as an unclosed resource."""
    if "twisted.internet.reactor" not in sys.modules:
        return
    loop = getattr(sys.modules["twisted.internet.reactor"], "_asyncioEventloop", None)
    if loop is not None and not loop.is_running() and not loop.is_closed():
        loop.close()
