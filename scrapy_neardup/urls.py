"""The URL layer: canonical URLs, their fingerprints and a scalable Bloom filter of them.

Pure Python (w3lib, xxhash, rbloom), no Scrapy, so it can be tested and benchmarked alone.
One request costs one :func:`canonical_url`, one :func:`url_fingerprint` and one
:meth:`ScalableBloomFilter.add`.
"""

from __future__ import annotations

import functools
import math
import operator
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import tldextract
from rbloom import Bloom
from w3lib.url import canonicalize_url
from xxhash import xxh3_128_digest

from scrapy_neardup.exceptions import InvalidURL, StateError

__all__ = [
    "DEFAULT_STRIP_PARAMS",
    "ScalableBloomFilter",
    "canonical_url",
    "url_fingerprint",
]

#: Query (and ``;path``) parameters that only track the visitor or the session: they never
#: change the page, so a URL that differs only in them is the same URL. Exact names, or
#: prefixes ending in ``*``; matched case-insensitively.
DEFAULT_STRIP_PARAMS: tuple[str, ...] = (
    # campaign tags: Google Analytics / Urchin, Matomo, HubSpot ads
    "utm_*",
    "mtm_*",
    "hsa_*",
    "pk_campaign",
    "pk_kwd",
    # ad-click identifiers
    "fbclid",
    "gclid",
    "gclsrc",
    "gbraid",
    "wbraid",
    "dclid",
    "msclkid",
    "yclid",
    "twclid",
    "ttclid",
    "li_fat_id",
    "igshid",
    "igsh",
    "epik",
    "rb_clickid",
    "s_cid",
    "wickedid",
    # analytics and mailing-list tracking
    "_ga",
    "_gl",
    "_hsenc",
    "_hsmi",
    "__hssc",
    "__hstc",
    "__hsfp",
    "_openstat",
    "mc_cid",
    "mc_eid",
    "mkt_tok",
    "oly_anon_id",
    "oly_enc_id",
    "vero_id",
    "vero_conv",
    "ref_src",
    "spm",
    # session identifiers
    "sessionid",
    "session_id",
    "jsessionid",
    "phpsessid",
    "aspsessionid*",
    "cfid",
    "cftoken",
    "sid",
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
    if out.startswith("https://"):  # the common cases first
        port, path = ":443", out.find("/", 8)
    elif out.startswith("http://"):
        port, path = ":80", out.find("/", 7)
    else:
        port, path = _scheme_and_path(url, out)
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
    """:func:`canonical_url` of a plain URL (:data:`_PLAIN_URL`, no dot segment), else None.

    Our own, because the URL filter runs for every request in the reactor's thread, and
    w3lib parses, unquotes and quotes again every part of every URL (about 20 us a URL,
    7x this path, on ``bench_urlfilter.py``'s URLs, 98 % of which are plain). It does what
    w3lib does to such a URL (host lower-cased, an empty path made "/", the query's pairs
    sorted, "=" added to a pair without one, the fragment dropped), then the cleanups of
    :func:`_w3lib_canonical`, and gives its output to the character (tests/test_urls.py
    compares both on generated URLs): the canonical form, and every fingerprint saved
    before, stay the same. A URL parser such as ada-url would not: it normalises by the
    WHATWG rules, not w3lib's."""
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


def _scheme_and_path(url: str, out: str) -> tuple[str | None, int]:
    """Default port of the scheme of canonical ``out`` and where its path starts."""
    colon = out.find(":")
    if colon < 1 or not _SCHEME_RE.fullmatch(out, 0, colon):
        raise InvalidURL(url, "no scheme (a relative URL must be joined to its page URL first)")
    if out.startswith("//", colon + 1):
        # w3lib always writes a path after the authority, at least "/"
        return _DEFAULT_PORTS.get(out[:colon]), out.find("/", colon + 3)
    return None, colon + 1


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


# rbloom hashes with Python's hash() unless told otherwise, which is salted per process;
# the fingerprint is already a good 128-bit hash, so it is used as the integer itself. It is
# made an integer once per test-and-set, and rbloom's hash function is then ``int`` (a lookup
# and an add each called the conversion before: a fifth of the filter's time). The bits set
# are the same as when rbloom was given the bytes and the conversion.
def _as_int(fingerprint: bytes) -> int:
    return int.from_bytes(fingerprint, "little", signed=True)


_HEADER = struct.Struct("<4sHQdIdQI")  # magic, version, capacity, error_rate, growth,
#                                        tightening, count, number of stages
_STAGE = struct.Struct("<QdQQ")  # capacity, error_rate, count, length of the rbloom blob
_MAGIC = b"NDBF"
_VERSION = 1


# rbloom rounds its number of hash functions down, to 0 above a rate of about 0.5, and a
# filter with none reports everything present: no stage is ever built looser than this.
_MAX_STAGE_RATE = 0.3


def _bloom_size(capacity: int, error_rate: float) -> tuple[float, int]:
    """Bits (before rbloom rounds them to whole words) and hash functions rbloom picks."""
    bits = -1.0 * capacity * math.log(error_rate) / math.log(2) ** 2
    return bits, int(bits / capacity * math.log(2))


@dataclass(slots=True)
class _Stage:
    bloom: Bloom
    capacity: int
    error_rate: float
    k: int
    count: int = 0

    @property
    def fill(self) -> float:
        """Expected fraction of set bits after ``count`` distinct inserts."""
        return -math.expm1(-self.k * self.count / self.bloom.size_in_bits)


def _check_params(capacity: object, error_rate: object, growth: object, tightening: object) -> str:
    """The first problem with the filter parameters, or '' if they are fine."""
    if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 1:
        return f"capacity must be an integer >= 1, got {capacity!r}"
    if not isinstance(error_rate, (int, float)) or not 0.0 < error_rate < 1.0:
        return f"error_rate must be a number with 0 < error_rate < 1, got {error_rate!r}"
    if not isinstance(growth, int) or isinstance(growth, bool) or not 1 <= growth < 2**32:
        return f"growth must be an integer >= 1, got {growth!r}"
    if not isinstance(tightening, (int, float)) or not 0.0 < tightening < 1.0:
        return f"tightening must be a number with 0 < tightening < 1, got {tightening!r}"
    return ""


class ScalableBloomFilter:
    """Set of URL fingerprints that grows without letting its false-positive rate drift.

    A scalable Bloom filter (Almeida et al., 2007): a chain of rbloom filters. The first
    holds ``capacity`` items at ``error_rate * (1 - tightening)``; when the newest is full a
    new one is added with ``growth`` times its capacity and ``tightening`` times its error
    rate, so the compound false-positive rate stays below ``error_rate`` however many items
    arrive (no stage is built looser than 0.3: rbloom would give it no hash function). Items
    go into the newest stage only; lookups check every stage. Items are the 16-byte
    fingerprints of :func:`url_fingerprint`, used as rbloom's hash as they are (not hashed
    with ``hash()``, which is salted per process), so a saved filter answers the same in any
    process.

    Binary format of :meth:`to_bytes`, all integers little-endian::

        magic        4s   b"NDBF"
        version      u16  1
        capacity     u64  first stage's capacity
        error_rate   f64  the overall bound asked for
        growth       u32
        tightening   f64
        count        u64  items added, all stages
        stages       u32  number of stages, then for each stage, oldest first:
          capacity   u64
          error_rate f64
          count      u64  items added to this stage
          length     u64  length of the blob that follows
          blob            rbloom ``Bloom.save_bytes()``: u64 k, then the bit array
    """

    def __init__(
        self, capacity: int, error_rate: float, *, growth: int = 2, tightening: float = 0.5
    ) -> None:
        problem = _check_params(capacity, error_rate, growth, tightening)
        if problem:
            raise ValueError(problem)
        self.capacity = capacity
        self.error_rate = float(error_rate)
        self.growth = growth
        self.tightening = float(tightening)
        self._count = 0
        self._stages: list[_Stage] = []
        self._blooms: list[Bloom] = []  # the stages' filters, for the lookup loop
        self._add_stage(capacity, self.error_rate * (1.0 - self.tightening))

    def _add_stage(self, capacity: int, error_rate: float, blob: bytes | None = None) -> _Stage:
        if blob is None:
            error_rate = min(error_rate, _MAX_STAGE_RATE)
            bloom = Bloom(capacity, error_rate, int)
            k = _bloom_size(capacity, error_rate)[1]
        else:
            bloom = Bloom.load_bytes(blob, int)
            k = int.from_bytes(blob[:8], "little")
        stage = _Stage(bloom, capacity, error_rate, k)
        self._stages.append(stage)
        self._blooms.append(bloom)
        return stage

    def add(self, fingerprint: bytes) -> bool:
        """Test and set: True if ``fingerprint`` was (probably) there already, else add it."""
        value = int.from_bytes(fingerprint, "little", signed=True)
        for bloom in self._blooms:
            if value in bloom:
                return True
        stage = self._stages[-1]
        if stage.count >= stage.capacity:
            stage = self._add_stage(
                stage.capacity * self.growth, stage.error_rate * self.tightening
            )
        stage.bloom.add(value)
        stage.count += 1
        self._count += 1
        return False

    def __contains__(self, fingerprint: bytes) -> bool:
        value = _as_int(fingerprint)
        return any(value in bloom for bloom in self._blooms)

    def __len__(self) -> int:
        """Number of items added (lookups that found an item do not count)."""
        return self._count

    def __repr__(self) -> str:
        return (
            f"<ScalableBloomFilter items={self._count} stages={self.stages}"
            f" size_in_bytes={self.size_in_bytes}>"
        )

    @property
    def stages(self) -> int:
        return len(self._stages)

    @property
    def size_in_bytes(self) -> int:
        """Memory held by the bit arrays (the Python objects around them are negligible)."""
        return sum(bloom.size_in_bits for bloom in self._blooms) // 8

    @property
    def total_capacity(self) -> int:
        """URLs the stages so far are sized for (at their error rates)."""
        return sum(stage.capacity for stage in self._stages)

    def expected_false_positives(self, steps: int = 100) -> float:
        """Expected number of new URLs so far reported as seen: each stage's false-positive
        rate integrated over its fill as its items were added."""
        total = 0.0
        for stage in self._stages:
            size = stage.bloom.size_in_bits
            for j in range(1, steps + 1):
                fill = -math.expm1(-stage.k * stage.count * j / steps / size)
                total += stage.count / steps * fill**stage.k
        return total

    @property
    def fill_ratio(self) -> float:
        """Estimated fraction of set bits in the newest stage (about 0.5 when it is full)."""
        return self._stages[-1].fill

    @property
    def expected_false_positive_rate(self) -> float:
        """Chance that an item never added is reported present, from each stage's fill."""
        miss = 1.0
        for stage in self._stages:
            miss *= 1.0 - stage.fill**stage.k
        return 1.0 - miss

    def to_bytes(self) -> bytes:
        """The filter in the versioned format of the class docstring (no pickle)."""
        parts = [
            _HEADER.pack(
                _MAGIC,
                _VERSION,
                self.capacity,
                self.error_rate,
                self.growth,
                self.tightening,
                self._count,
                len(self._stages),
            )
        ]
        for stage in self._stages:
            blob = stage.bloom.save_bytes()
            parts.append(_STAGE.pack(stage.capacity, stage.error_rate, stage.count, len(blob)))
            parts.append(blob)
        return b"".join(parts)

    @classmethod
    def from_bytes(cls, data: bytes) -> ScalableBloomFilter:
        """Read :meth:`to_bytes` output; StateError if it is truncated, corrupt or too new."""
        data = bytes(memoryview(data))
        if len(data) < _HEADER.size:
            raise StateError(f"Bloom filter data truncated: {len(data)} bytes, no full header")
        magic, version, capacity, error_rate, growth, tightening, count, n_stages = (
            _HEADER.unpack_from(data)
        )
        if magic != _MAGIC:
            raise StateError(f"not a scrapy-neardup Bloom filter: magic {magic!r}, not {_MAGIC!r}")
        if version != _VERSION:
            raise StateError(
                f"Bloom filter format version {version} is not supported (this version of"
                f" scrapy-neardup reads version {_VERSION})"
            )
        problem = _check_params(capacity, error_rate, growth, tightening)
        if problem or n_stages < 1:
            raise StateError(f"corrupt Bloom filter header: {problem or 'no stages'}")
        self = cls.__new__(cls)  # not __init__: the header may be corrupt, never allocate it
        self.capacity, self.error_rate = capacity, error_rate
        self.growth, self.tightening = growth, tightening
        self._count, self._stages, self._blooms = 0, [], []
        offset = _HEADER.size
        for i in range(n_stages):
            if len(data) < offset + _STAGE.size:
                raise StateError(f"Bloom filter data truncated in the header of stage {i}")
            s_capacity, s_rate, s_count, length = _STAGE.unpack_from(data, offset)
            offset += _STAGE.size
            blob = data[offset : offset + length]
            offset += length
            if len(blob) < length:
                raise StateError(f"Bloom filter data truncated in stage {i}")
            problem = _check_params(s_capacity, s_rate, growth, tightening) or _check_blob(
                blob, s_capacity, s_rate
            )
            if problem or s_count > s_capacity:
                raise StateError(f"corrupt Bloom filter stage {i}: {problem or 'count'}")
            self._add_stage(s_capacity, s_rate, blob).count = s_count
        if offset != len(data):
            raise StateError(f"corrupt Bloom filter: {len(data) - offset} bytes after the end")
        if count != sum(stage.count for stage in self._stages):
            raise StateError("corrupt Bloom filter: item count does not match its stages")
        self._count = count
        return self


def _check_blob(blob: bytes, capacity: int, error_rate: float) -> str:
    """Check an rbloom blob before rbloom reads it: rbloom panics (or allocates without
    bound) on bad input. Sizes are compared with rbloom's formula, allowing for its rounding
    to whole words, so the check does not allocate the filter it describes."""
    k = int.from_bytes(blob[:8], "little")
    bits, _ = _bloom_size(capacity, error_rate)
    if len(blob) < 9 or abs((len(blob) - 8) * 8 - bits) > 64:
        return f"{len(blob)} bytes of rbloom data for about {bits / 8:.0f} bytes of bits"
    if not 1 <= k <= 64:
        return f"rbloom hash count {k} is out of range"
    return ""


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
