"""The URL layer: canonical URLs, fingerprints and the scalable Bloom filter."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_neardup.exceptions import InvalidURL, NearDupError
from scrapy_neardup.storage.bloom import ScalableBloomFilter
from scrapy_neardup.urls import (
    DEFAULT_STRIP_PARAMS,
    _plain_canonical,
    _rules_for,
    _w3lib_canonical,
    canonical_url,
    url_fingerprint,
)

ROOT = Path(__file__).resolve().parents[1]

# -- canonical_url ----------------------------------------------------------------------------

CANONICAL = [
    # tracking and session parameters
    ("https://example.com/a?utm_source=x&utm_medium=y&id=3", "https://example.com/a?id=3"),
    ("https://example.com/a?UTM_Source=x&id=3&FBCLID=1", "https://example.com/a?id=3"),
    ("https://example.com/a?gclid=1&fbclid=2&_ga=3&mc_eid=4", "https://example.com/a"),
    ("https://example.com/a?sid=1&PHPSESSID=2&jsessionid=3&q=x", "https://example.com/a?q=x"),
    ("https://example.com/a?utm=1&ref=2", "https://example.com/a?ref=2&utm=1"),  # no prefix
    # parameter order, blank values
    ("https://example.com/a?b=2&a=1&a=0", "https://example.com/a?a=0&a=1&b=2"),
    ("https://example.com/a?flag", "https://example.com/a?flag="),
    ("https://example.com/a?", "https://example.com/a"),
    # fragments
    ("https://example.com/a#section-2", "https://example.com/a"),
    ("https://example.com/a?x=1#utm_source=y", "https://example.com/a?x=1"),
    # default ports only
    ("http://example.com:80/a", "http://example.com/a"),
    ("https://example.com:443/a", "https://example.com/a"),
    ("http://example.com:0080/a", "http://example.com/a"),
    ("http://example.com:443/a", "http://example.com:443/a"),
    ("https://example.com:80/a", "https://example.com:80/a"),
    ("http://example.com:8080/a", "http://example.com:8080/a"),
    ("http://[::1]:80/a", "http://[::1]/a"),
    # scheme and host case; path case is kept
    ("HTTPS://WWW.Example.COM/Path", "https://www.example.com/Path"),
    ("https://user:PassWord@Example.com/", "https://user:PassWord@example.com/"),
    # trailing slash
    ("https://example.com/a/b/", "https://example.com/a/b"),
    ("https://example.com/a//", "https://example.com/a"),
    ("https://example.com/a/?x=1", "https://example.com/a?x=1"),
    ("https://example.com/", "https://example.com/"),
    ("https://example.com", "https://example.com/"),
    ("https://example.com?x=1", "https://example.com/?x=1"),
    # percent-encoding equivalents, dot segments
    ("https://example.com/%7euser", "https://example.com/~user"),
    ("https://example.com/caf%c3%a9", "https://example.com/caf%C3%A9"),
    ("https://example.com/café", "https://example.com/caf%C3%A9"),
    ("https://example.com/a b?q=a b", "https://example.com/a%20b?q=a+b"),
    ("https://example.com/a%2fb", "https://example.com/a%2Fb"),
    ("https://example.com/a/./b/../c", "https://example.com/a/c"),
    ("https://example.com/%4%31", "https://example.com/A"),  # w3lib needs two passes here
    # IDN host
    ("https://Bücher.example/", "https://xn--bcher-kva.example/"),
    ("https://xn--bcher-kva.example/", "https://xn--bcher-kva.example/"),
    # session ids as path parameters
    ("https://example.com/shop;jsessionid=AB12?item=5", "https://example.com/shop?item=5"),
    ("https://example.com/a;JSESSIONID=1/b", "https://example.com/a/b"),
    ("https://example.com/a/;jsessionid=1", "https://example.com/a"),
    ("https://example.com/a;v=2;jsessionid=1", "https://example.com/a;v=2"),
    ("https://example.com/a/b/..;jsessionid=1/c", "https://example.com/a/c"),
    ("https://example.com/a;v=2", "https://example.com/a;v=2"),
    # other schemes stay sane
    ("mailto:Someone@Example.com", "mailto:Someone@Example.com"),
    ("javascript:void(0)", "javascript:void(0)"),
    ("data:text/plain,hi", "data:text/plain,hi"),
    ("ftp://FTP.Example.com:21/pub/", "ftp://ftp.example.com/pub"),
    ("file:///tmp/dir/", "file:///tmp/dir"),
    ("wss://example.com:443/socket", "wss://example.com/socket"),
]


@pytest.mark.parametrize(("url", "expected"), CANONICAL)
def test_canonical_url(url: str, expected: str) -> None:
    assert canonical_url(url) == expected
    assert canonical_url(expected) == expected


def test_variants_share_one_canonical_url() -> None:
    variants = [
        "https://example.com/news/item?id=7&page=2",
        "https://EXAMPLE.com:443/news/item/?page=2&id=7",
        "https://example.com/news/item?page=2&utm_campaign=spring&id=7#comments",
        "https://example.com/news/./item?id=7&page=2&fbclid=IwAR0",
        "https://example.com/news/item;jsessionid=0F3A?page=%32&id=7",
    ]
    assert {canonical_url(v) for v in variants} == {"https://example.com/news/item?id=7&page=2"}
    assert len({url_fingerprint(canonical_url(v)) for v in variants}) == 1


def test_options() -> None:
    url = "https://example.com/a/?ref=1&x_a=2&utm_source=3"
    assert canonical_url(url, strip_params=("REF", "x_*")) == "https://example.com/a?utm_source=3"
    assert canonical_url(url, strip_params=[]) == "https://example.com/a?ref=1&utm_source=3&x_a=2"
    assert canonical_url(url, strip_trailing_slash=False) == "https://example.com/a/?ref=1&x_a=2"
    with pytest.raises(ValueError, match="strip_params"):
        canonical_url("https://example.com/", strip_params="utm_*")
    with pytest.raises(ValueError, match="strip_params"):
        canonical_url("https://example.com/", strip_params=["*"])


def test_default_strip_params() -> None:
    assert isinstance(DEFAULT_STRIP_PARAMS, tuple)
    for name in ("utm_*", "fbclid", "gclid", "msclkid", "_ga", "jsessionid", "sid"):
        assert name in DEFAULT_STRIP_PARAMS


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1",
        "http://[::1]x/",
        "http://example.com:99999/",
        "http://example.com:port/",
        "",
        "   ",
        "relative/path",
        "/absolute/path?x=1",
        "https://example.com/\ud800",
        None,
        42,
        b"https://example.com/",
        ["https://example.com/"],
    ],
)
def test_invalid_url(url: object) -> None:
    with pytest.raises(InvalidURL) as info:
        canonical_url(url)  # type: ignore[arg-type]
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, NearDupError)
    assert info.value.url is url
    assert repr(url)[:20] in str(info.value)


def _check_canonical(text: str) -> None:
    try:
        once = canonical_url(text)
    except InvalidURL:
        return
    assert canonical_url(once) == once


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_canonical_url_on_any_text(text: str) -> None:
    _check_canonical(text)


_CHARS = st.sampled_from([*"aZ09-._~%:@!$&'()*+,;=/?#[] é中\t", "%2F", "%41", "%zz", ".."])
_PIECE = st.lists(_CHARS, max_size=8).map("".join)
_NAME = st.sampled_from(["id", "page", "utm_source", "UTM_Medium", "fbclid", "sid", "a"]) | _PIECE
_URLS = st.builds(
    "{}://{}{}{}/{}{}{}{}".format,
    st.sampled_from(["http", "https", "HTTP", "ftp", "wss", "file", "foo", "mailto"]),
    st.sampled_from(["", "user:pw@", "@"]),
    st.sampled_from(["example.com", "EXAMPLE.com", "bücher.de", "[::1]", "[::0:1]", "", "a..b"])
    | _PIECE,
    st.sampled_from(["", ":", ":80", ":443", ":0080", ":8080", ":99999", ":x"]),
    st.lists(st.sampled_from(["a", "..", ".", "", "b;jsessionid=1", "c;v=1", "%2e"]) | _PIECE).map(
        "/".join
    ),
    st.sampled_from(["", "/", "//", ";jsessionid=X", ";sid"]),
    st.lists(st.tuples(_NAME, _PIECE).map("=".join), max_size=4).map(
        lambda pairs: "?" + "&".join(pairs) if pairs else ""
    ),
    st.sampled_from(["", "#", "#frag", "#a?b=c"]),
)


@settings(max_examples=300, deadline=None)
@given(_URLS)
def test_canonical_url_on_url_like_text(url: str) -> None:
    _check_canonical(url)


_PLAIN_CHARS = st.sampled_from([*"aZ09-._~!$'()*,=:@/&", "..", "/.", "%41", "+", ";", "é"])
_PLAIN_URLS = st.builds(
    "{}://{}{}{}{}{}".format,
    st.sampled_from(["http", "https", "HTTP"]),
    st.sampled_from(["example.com", "EXAMPLE.co.uk", "a-b.c", "-a.com", "1.2.3.4", "x", "a..b"]),
    st.sampled_from(["", ":80", ":443", ":8080", ":65535", ":65536", ":99999", ":01"]),
    st.lists(_PLAIN_CHARS, max_size=12).map(lambda p: "/" + "".join(p)) | st.just(""),
    st.lists(
        st.tuples(st.sampled_from(["id", "B", "utm_source", "Sid", "a", ""]), _PIECE).map("=".join)
        | st.sampled_from(["", "a", "a=1=2", "b=2"]),
        max_size=5,
    ).map(lambda pairs: "?" + "&".join(pairs) if pairs else ""),
    st.sampled_from(["", "#", "#x/y?z", "#a b", "#é"]),
)


@settings(max_examples=1500, deadline=None)
@given(_PLAIN_URLS, st.booleans())
def test_the_plain_url_path_gives_what_w3lib_gives(url: str, strip_slash: bool) -> None:
    """canonical_url's own path for plain URLs must match its w3lib path to the character:
    the canonical form is part of the saved state (every URL fingerprint)."""
    rules = _rules_for(DEFAULT_STRIP_PARAMS)
    plain = _plain_canonical(url, rules, strip_slash)
    if plain is None:
        return
    assert plain == _w3lib_canonical(url, rules, DEFAULT_STRIP_PARAMS, strip_slash)


def test_the_plain_url_path_takes_common_urls() -> None:
    rules = _rules_for(DEFAULT_STRIP_PARAMS)
    for url, expected in [
        ("https://Example.com:443/a/b/?utm_source=x&b=2&a#top", "https://example.com/a/b?a=&b=2"),
        ("http://example.com", "http://example.com/"),
        ("http://example.com:8080/x", "http://example.com:8080/x"),
    ]:
        assert _plain_canonical(url, rules, True) == expected
    for url in ("http://example.com/a/../b", "http://example.com/%41", "http://example.com/é"):
        assert _plain_canonical(url, rules, True) is None


def test_url_fingerprint_is_stable() -> None:
    fp = url_fingerprint("https://example.com/")
    assert len(fp) == 16
    # Pinned: saved Bloom filters hold these, so changing it loses every saved crawl state.
    assert fp.hex() == "503c1beec51db0209ff1930daa8e5b98"
    assert url_fingerprint("https://example.com/a") != fp


# -- ScalableBloomFilter ----------------------------------------------------------------------


def fingerprints(start: int, stop: int) -> list[bytes]:
    return [url_fingerprint(f"https://example.com/item/{i}") for i in range(start, stop)]


def fp_rate(bloom: ScalableBloomFilter, probes: list[bytes]) -> float:
    return sum(fp in bloom for fp in probes) / len(probes)


PROBES = fingerprints(10_000_000, 10_200_000)  # never added anywhere below


def test_no_false_negatives_and_counts() -> None:
    bloom = ScalableBloomFilter(50_000, 0.01)
    items = fingerprints(0, 200_000)
    new = sum(not bloom.add(fp) for fp in items)
    assert all(fp in bloom for fp in items)
    assert all(bloom.add(fp) for fp in items[:1000])  # test-and-set: now seen
    assert len(bloom) == new >= 200_000 - 2_000  # a few adds were false positives
    assert bloom.stages == 3  # 50k + 100k + 200k


def test_false_positive_rate_at_capacity() -> None:
    bloom = ScalableBloomFilter(100_000, 0.01)
    for fp in fingerprints(0, 100_000):
        bloom.add(fp)
    assert bloom.stages == 1
    measured = fp_rate(bloom, PROBES)
    expected = bloom.expected_false_positive_rate
    assert measured <= 0.01
    assert expected / 2 <= measured <= expected * 2
    assert 0.4 < bloom.fill_ratio < 0.6  # a full stage at the optimal number of hashes
    assert bloom.size_in_bytes < 100_000 * 2  # about 11 bits per item at 0.005


def test_growth_keeps_false_positive_rate_bounded() -> None:
    bloom = ScalableBloomFilter(20_000, 0.01)
    for fp in fingerprints(0, 100_000):  # five times the capacity
        bloom.add(fp)
    assert bloom.stages == 3
    measured = fp_rate(bloom, PROBES)
    assert measured < 0.01
    assert bloom.expected_false_positive_rate < 0.01
    assert bloom.expected_false_positive_rate / 2 <= measured


def test_loose_error_rate_still_filters() -> None:
    bloom = ScalableBloomFilter(1_000, 0.99, tightening=0.01)
    assert sum(bloom.add(fp) for fp in fingerprints(0, 1_000)) < 500


def test_a_filter_rebuilt_from_its_keys_holds_them_all() -> None:
    """A state directory keeps the keys, not the filter: the filter is rebuilt from them at
    start (in another order, at once), and holds every one, at the rate asked for."""
    bloom = ScalableBloomFilter(1_000, 0.01, growth=3, tightening=0.8)
    items = fingerprints(0, 5_000)
    for fp in items:
        bloom.add(fp)
    copy = ScalableBloomFilter(1_000, 0.01, growth=3, tightening=0.8)
    copy.update(sorted(int.from_bytes(fp, "little", signed=True) for fp in items))
    assert all(fp in copy for fp in items) and len(copy) == 5_000
    assert copy.stages == bloom.stages
    probes = PROBES[:20_000]
    assert sum(fp in copy for fp in probes) <= 2 * sum(fp in bloom for fp in probes) + 10
    assert copy.expected_false_positive_rate < 0.01
    assert not copy.add(fingerprints(5_000, 5_001)[0])  # and it goes on growing


@pytest.mark.parametrize(
    ("args", "name"),
    [
        ((0, 0.01), "capacity"),
        ((-5, 0.01), "capacity"),
        ((1.5, 0.01), "capacity"),
        ((True, 0.01), "capacity"),
        ((10, 0.0), "error_rate"),
        ((10, 1.0), "error_rate"),
        ((10, float("nan")), "error_rate"),
        ((10, "0.1"), "error_rate"),
    ],
)
def test_bad_arguments(args: tuple[object, object], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        ScalableBloomFilter(*args)  # type: ignore[arg-type]


def test_bad_keyword_arguments() -> None:
    with pytest.raises(ValueError, match="growth"):
        ScalableBloomFilter(10, 0.1, growth=0)
    with pytest.raises(ValueError, match="tightening"):
        ScalableBloomFilter(10, 0.1, tightening=1.0)
