"""Canonical URLs, their fingerprints and the site a URL belongs to.

Promises: :func:`canonical_url` maps every spelling of one page to one string (or raises
:class:`InvalidURL`), :func:`url_fingerprint` is the same 16 bytes in every process, and
:func:`site_of` names the registered domain. Pure Python (w3lib, xxhash, tldextract): it must
not import Scrapy or any storage; the Bloom filter of fingerprints is
:mod:`scrapy_neardup.storage.bloom`. Rationale: ``docs/design.md#canonical-urls``.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Sequence
from urllib.parse import urlsplit

import tldextract
from w3lib.url import canonicalize_url
from xxhash import xxh3_128_digest

from scrapy_neardup.exceptions import InvalidURL

__all__ = [
    "DEFAULT_STRIP_PARAMS",
    "canonical_url",
    "site_of",
    "url_fingerprint",
]

#: Query (and ``;path``) parameters that only track the visitor or the session: they never
#: change the page, so a URL that differs only in them is the same URL. Exact names, or
#: prefixes ending in ``*``; matched case-insensitively.
DEFAULT_STRIP_PARAMS: tuple[str, ...] = (
    # campaign tags: Google Analytics / Urchin, Matomo, HubSpot ads
    *"utm_* mtm_* hsa_* pk_campaign pk_kwd".split(),
    # ad-click identifiers
    *"fbclid gclid gclsrc gbraid wbraid dclid msclkid yclid twclid ttclid li_fat_id".split(),
    *"igshid igsh epik rb_clickid s_cid wickedid".split(),
    # analytics and mailing-list tracking
    *"_ga _gl _hsenc _hsmi __hssc __hstc __hsfp _openstat mc_cid mc_eid mkt_tok".split(),
    *"oly_anon_id oly_enc_id vero_id vero_conv ref_src spm".split(),
    # session identifiers
    *"sessionid session_id jsessionid phpsessid aspsessionid* cfid cftoken sid".split(),
)

_SCHEME_RE = re.compile(r"[a-z][a-z0-9+.-]*")
_STRAY_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_PATH_PARAM_RE = re.compile(r";([^;/=]*)(?:=[^;/]*)?")
_DEFAULT_PORTS = {"http": ":80", "https": ":443", "ws": ":80", "wss": ":443", "ftp": ":21"}


_Rules = tuple[frozenset[str], tuple[str, ...]]


def _compile_rules(params: Sequence[str]) -> _Rules:
    """Split ``strip_params`` into lower-cased exact names and prefixes."""
    if isinstance(params, str):
        raise ValueError(f"strip_params must be a sequence of names, not the string {params!r}")
    exact, prefixes = set(), []
    for p in params:
        if not isinstance(p, str) or not p.strip("*"):
            raise ValueError(f"strip_params entries must be names or 'prefix*', got {p!r}")
        if p.endswith("*"):
            prefixes.append(p[:-1].lower())
        else:
            exact.add(p.lower())
    return frozenset(exact), tuple(prefixes)


# The last strip_params seen and its rules, by identity: a crawl passes the same object on
# every call, and hashing a long tuple per call would cost more than the lookup saves.
_last_rules: tuple[object, _Rules] = (DEFAULT_STRIP_PARAMS, _compile_rules(DEFAULT_STRIP_PARAMS))


def _rules_for(strip_params: Sequence[str]) -> _Rules:
    global _last_rules
    if strip_params is not _last_rules[0]:
        _last_rules = (strip_params, _compile_rules(strip_params))
    return _last_rules[1]


def canonical_url(
    url: str,
    *,
    strip_params: Sequence[str] = DEFAULT_STRIP_PARAMS,
    strip_trailing_slash: bool = True,
) -> str:
    """One spelling per page: w3lib's ``canonicalize_url`` plus the cleanups it leaves out.

    w3lib sorts the query, normalises percent-encoding, lower-cases the scheme and host,
    encodes IDN hosts, resolves dot segments and drops the fragment. On its output (string
    operations, no second parse) this drops a default port (http :80, https :443, ws, wss,
    ftp), the query and ``;path`` parameters named in ``strip_params`` (exact names or
    ``prefix*``, any case), and, when ``strip_trailing_slash``, trailing ``/`` of a non-root
    path. Raises :class:`~scrapy_neardup.exceptions.InvalidURL` (a ``ValueError``) and
    nothing else when ``url`` cannot be canonicalised, including a relative URL (no scheme).
    """
    if not isinstance(url, str):
        raise InvalidURL(url, f"expected str, got {type(url).__name__}")
    rules = _rules_for(strip_params)
    out = _plain_canonical(url, rules, strip_trailing_slash)
    if out is None:
        out = _w3lib_canonical(url, rules, strip_params, strip_trailing_slash)
    return out


def _w3lib_canonical(
    url: str, rules: _Rules, strip_params: Sequence[str], strip_trailing_slash: bool
) -> str:
    """:func:`canonical_url` for any URL: w3lib's, then the cleanups on its output."""
    try:
        out = canonicalize_url(url)
        if "[" in out or "]" in out:
            # IDNA maps a fullwidth "［" in a host to "[": w3lib then returns a host that
            # nothing (itself included) can parse ("http://xn--[-xs8c/").
            urlsplit(out)
    except Exception as exc:  # any failure inside w3lib means: not a URL we can use
        raise InvalidURL(url, str(exc) or type(exc).__name__) from None
    if "%" in url and _STRAY_PERCENT.search(url):
        out = _settle(url, out)
    colon = out.find(":")
    if colon < 1 or not _SCHEME_RE.fullmatch(out, 0, colon):
        raise InvalidURL(url, "no scheme (a relative URL must be joined to its page URL first)")
    port: str | None = None  # the scheme's default port, removed from the URL
    path = colon + 1  # where the path starts
    if out.startswith("//", colon + 1):  # w3lib always writes a path after the authority
        port, path = _DEFAULT_PORTS.get(out[:colon]), out.find("/", colon + 3)
    if port is not None and out.endswith(port, 0, path):
        out = out[: path - len(port)] + out[path:]
        path -= len(port)
    # Most URLs end here: the rest needs a query, a ";" or a trailing slash.
    if "?" in out or ";" in out or (strip_trailing_slash and out.endswith("/", path + 1)):
        return _clean(out, path, rules, strip_params, strip_trailing_slash)
    return out


# A plain http(s) URL: an ASCII host name, a port, a path and a query of characters that
# w3lib leaves as they are (no "%", "+", ";", non-ASCII or space), a printable fragment.
_PLAIN_URL = re.compile(
    r"(https?)://([A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*)"
    r"(:[1-9][0-9]{0,4})?"
    r"(/[A-Za-z0-9\-._~/!$'()*,=:@]*)?"
    r"(?:\?([A-Za-z0-9\-._~=&]*))?"
    r"(?:#[\x21-\x7e]*)?"
)
_DOT_SEGMENT = re.compile(r"/\.\.?(?:/|$)")


def _plain_canonical(url: str, rules: _Rules, strip_trailing_slash: bool) -> str | None:
    """:func:`canonical_url` of a plain URL (:data:`_PLAIN_URL`, no dot segment), else None:
    w3lib's output plus the cleanups, to the character (tests/test_urls.py), by string
    operations alone (``docs/design.md#canonical-urls``)."""
    match = _PLAIN_URL.fullmatch(url)
    if match is None:
        return None
    scheme, host, port, path, query = match.groups()
    if port is not None:
        if len(port) == 6 and int(port[1:]) > 65535:
            return None  # w3lib raises: the slow path says why
        if port == (":443" if scheme == "https" else ":80"):
            port = None
    if path is None:
        path = "/"
    elif "/." in path and _DOT_SEGMENT.search(path):
        return None
    elif strip_trailing_slash and len(path) > 1 and path.endswith("/"):
        path = path.rstrip("/") or path
        if "/." in path:
            return None  # the slow path resolves what the cut may leave
    out = f"{scheme}://{host.lower()}{port or ''}{path}"
    if not query:
        return out
    exact, prefixes = rules
    pairs = []
    for pair in query.split("&"):
        if pair:
            name, eq, value = pair.partition("=")
            if "=" in value:
                return None  # w3lib quotes it as %3D
            lowered = name.lower()
            if lowered not in exact and not lowered.startswith(prefixes):
                pairs.append((name, value, pair if eq else pair + "="))
    if not pairs:
        return out
    if len(pairs) > 1:
        pairs.sort()  # by name, then value, as w3lib sorts them
    return out + "?" + "&".join(map(_third, pairs))


_third = operator.itemgetter(2)


def _settle(url: str, out: str) -> str:
    """Canonicalise until nothing changes, for URLs with a "%" that starts no escape.

    w3lib decodes the escape after such a "%" into a new one ("%a%41" -> "%aA" -> "%AA"),
    so its output is not yet canonical; each pass shortens the URL, so this ends.
    """
    for _ in range(8):
        try:
            again = canonicalize_url(out)
        except Exception as exc:
            raise InvalidURL(url, str(exc) or type(exc).__name__) from None
        if again == out:
            return out
        out = again
    raise InvalidURL(url, "its percent-encoding does not settle")


def _clean(
    out: str, path: int, rules: _Rules, strip_params: Sequence[str], strip_trailing_slash: bool
) -> str:
    """Drop stripped path and query parameters and the trailing slash from ``out[path:]``."""
    exact, prefixes = rules
    head, sep, query = out.partition("?")
    if head.startswith("/", path):  # a hierarchical path
        old = head[path:]
        new = _strip_path_params(old, rules) if ";" in old else old
        if strip_trailing_slash and new.endswith("/"):
            # An empty ";" goes too (w3lib drops it). Only slashes: kept, "//" is not "/".
            new = new.rstrip("/;") or new
        if new != old:
            if ";" in new or "/." in new:
                # w3lib quotes ;params of the last segment apart and resolves dot segments
                # ("/..;sid=1"): let it see the new path, then clean its output again.
                return canonical_url(
                    head[:path] + new + sep + query,
                    strip_params=strip_params,
                    strip_trailing_slash=strip_trailing_slash,
                )
            head = head[:path] + new
    if query:
        query = "&".join(
            [
                pair
                for pair in query.split("&")
                if (name := pair.partition("=")[0].lower()) not in exact
                and not name.startswith(prefixes)
            ]
        )
        if query:
            return f"{head}?{query}"
    return head


def _strip_path_params(path: str, rules: _Rules) -> str:
    """Drop ``;name=value`` path parameters (``;jsessionid=...``) whose name is stripped."""
    exact, prefixes = rules

    def keep(m: re.Match[str]) -> str:
        name = m[1].lower()
        return "" if name in exact or name.startswith(prefixes) else m[0]

    return _PATH_PARAM_RE.sub(keep, path)


def url_fingerprint(canonical: str) -> bytes:
    """16-byte xxh3-128 digest of a canonical URL: the same in every process and machine."""
    return xxh3_128_digest(canonical.encode("utf-8", "surrogatepass"))


# The public suffix list bundled with tldextract: never fetched over the network, no cache
# written. Its private section counts too: a.github.io and b.github.io are two sites.
_PUBLIC_SUFFIXES = tldextract.TLDExtract(
    cache_dir=None, suffix_list_urls=(), include_psl_private_domains=True
)


@functools.lru_cache(maxsize=16384)
def _site_of_host(host: str) -> str:
    parts = _PUBLIC_SUFFIXES(host)
    if parts.domain and parts.suffix:
        return f"{parts.domain}.{parts.suffix}"
    return host  # an IP address, localhost, a name under no public suffix: the host itself


def site_of(url: str) -> str:
    """The registered domain of the URL's host (``news.bbc.co.uk``: ``bbc.co.uk``)."""
    host = (urlsplit(url).hostname or "").lower().rstrip(".")
    return _site_of_host(host) if host else ""
