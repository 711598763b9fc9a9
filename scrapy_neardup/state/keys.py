"""What the URL filter records for a request: its key, from its canonical URL.

Promises: two requests share a key only when the crawler's request fingerprinter calls them one
request once their URLs are canonicalised (``NEARDUP_STRIP_PARAMS``,
``NEARDUP_STRIP_TRAILING_SLASH``). Rationale: ``docs/design.md#request-keys``.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from scrapy.utils.request import RequestFingerprinter
from xxhash import xxh3_128_digest

from scrapy_neardup.urls import canonical_url, url_fingerprint

if TYPE_CHECKING:
    from scrapy import Request

    from scrapy_neardup.config import NearDupConfig

#: URLs whose key :func:`request_key` keeps (a site's links recur on every page: most
#: requests a crawl filters are the same few URLs).
URL_KEYS = 4096


@functools.lru_cache(maxsize=URL_KEYS)
def _url_key(url: str, strip_params: tuple[str, ...], strip_trailing_slash: bool) -> bytes:
    """The key of a plain GET of ``url``: its canonical URL's fingerprint."""
    canonical = canonical_url(
        url, strip_params=strip_params, strip_trailing_slash=strip_trailing_slash
    )
    return url_fingerprint(canonical)


def canonical(url: str, config: NearDupConfig) -> str:
    """``url`` canonicalised as ``config`` says. Raises InvalidURL."""
    return canonical_url(
        url, strip_params=config.strip_params, strip_trailing_slash=config.strip_trailing_slash
    )


def request_key(request: Request, config: NearDupConfig, fingerprinter: Any = None) -> bytes:
    """The 16 bytes the URL filter records for ``request``: for a GET without a body under
    Scrapy's own fingerprinter (or none), its canonical URL's fingerprint; else the
    fingerprinter's answer for the request with its canonical URL. Raises InvalidURL."""
    url = request.url
    if fingerprinter is None or (
        type(fingerprinter) is RequestFingerprinter and request.method == "GET" and not request.body
    ):
        return _url_key(url, config.strip_params, config.strip_trailing_slash)
    canonical_ = canonical(url, config)
    if canonical_ != url:
        request = request.replace(url=canonical_)
    # 0xff never starts UTF-8 text, so these keys never equal a URL's fingerprint.
    return xxh3_128_digest(b"\xff" + fingerprinter.fingerprint(request))
