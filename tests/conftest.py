"""Fixtures shared by the crawl tests: the example project's demo site, served on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from demo_site import Site, build_site, serve
from redis_server import RedisServer

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
