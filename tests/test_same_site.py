"""Is a ``rel=canonical`` on the page's own site? One registered domain, by the public suffix list.

The list is the snapshot bundled with tldextract: the check never fetches it over the network.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scrapy_neardup.urls import site_of as _site


@pytest.mark.parametrize(
    ("url", "other"),
    [
        ("https://news.bbc.co.uk/a", "https://www.bbc.co.uk/b"),
        ("https://m.example.com/story/9", "https://www.example.com/story/9"),
        ("https://amp.example.com/x", "https://example.com/x"),
        ("https://a.b.c.example.com/", "http://example.com:8080/"),
        ("https://EXAMPLE.com./x", "https://www.example.com/y"),
        ("http://127.0.0.1:8000/a", "http://127.0.0.1:8001/b"),  # one host, any port
        ("http://localhost:8000/a", "http://localhost/b"),
        ("http://[::1]:8000/a", "http://[::1]/b"),
        ("https://xn--bcher-kva.de/a", "https://www.xn--bcher-kva.de/b"),
    ],
)
def test_same_site(url: str, other: str) -> None:
    assert _site(url) == _site(other)


@pytest.mark.parametrize(
    ("url", "other"),
    [
        ("https://example.com/", "https://example.org/"),
        ("https://a.github.io/", "https://b.github.io/"),  # private section of the list
        ("https://foo.blogspot.com/", "https://bar.blogspot.com/"),
        ("https://bbc.co.uk/", "https://itv.co.uk/"),
        ("https://example.co.uk/", "https://example.com/"),
        ("http://127.0.0.1:8000/", "http://127.0.0.2:8000/"),
        ("http://127.0.0.1:8000/", "http://localhost:8000/"),
        ("http://10.0.0.1/", "http://10.0.0.2/"),  # IP addresses compare by host, not by "0.1"
        ("http://localhost/", "https://news.example/story"),
        ("https://news.example/", "https://www.news.example/"),  # no public suffix: by host
    ],
)
def test_different_sites(url: str, other: str) -> None:
    assert _site(url) != _site(other)


def test_site_is_the_registered_domain() -> None:
    assert _site("https://news.bbc.co.uk/a") == "bbc.co.uk"
    assert _site("https://a.github.io/") == "a.github.io"
    assert _site("http://127.0.0.1:8000/") == "127.0.0.1"
    assert _site("http://LocalHost:8000/") == "localhost"
    assert _site("https://co.uk/") == "co.uk"  # a bare suffix is its own host


def test_the_public_suffix_list_is_never_fetched(tmp_path: Path) -> None:
    """In a fresh interpreter with every socket refused and an empty cache directory: the
    snapshot bundled with tldextract answers, and nothing is written to the cache."""
    cache = tmp_path / "cache"
    cache.mkdir()
    script = textwrap.dedent(
        """
        import os
        import socket
        import sys

        def refuse(*args, **kwargs):  # an exception could be caught: leave at once
            print(f"network access: {args!r}", file=sys.stderr, flush=True)
            os._exit(3)

        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse

        from scrapy_neardup.urls import site_of

        assert site_of("https://news.bbc.co.uk/") == site_of("https://www.bbc.co.uk/")
        assert site_of("https://a.github.io/") != site_of("https://b.github.io/")
        print("ok")
        """
    )
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "XDG_CACHE_HOME": str(cache),
        # tldextract's default URLs come from here; the extractor must ignore them
        "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS": "https://publicsuffix.invalid/list.dat",
    }
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    assert not any(cache.iterdir())
