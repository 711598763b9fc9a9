"""Property tests of the URL canonicaliser and the text pipeline, on arbitrary input.

A bounded budget here (a few seconds); ``python bench/fuzz.py`` runs the same properties
with far more examples (``NEARDUP_FUZZ_EXAMPLES``), and with atheris when it is installed.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from urllib.parse import parse_qsl, urlsplit

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scrapy_neardup.deduplicator import Deduplicator
from scrapy_neardup.exceptions import InvalidURL
from scrapy_neardup.text import Document, normalize, tokenize
from scrapy_neardup.urls import DEFAULT_STRIP_PARAMS, canonical_url

with warnings.catch_warnings():  # hypothesis imports this to report a failure; under
    warnings.simplefilter("ignore", DeprecationWarning)  # warnings-as-errors it would crash
    with contextlib.suppress(ImportError):
        import hypothesis.extra._patching  # noqa: F401

EXAMPLES = int(os.environ.get("NEARDUP_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)

# -- strategies ---------------------------------------------------------------------------

#: Every code point, surrogates and control characters included.
ANY_CHAR = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())
URL_CHARS = st.sampled_from([*"aZ09-._~%/?#[]@!$&'()*+,;=:", "é", "中", " ", "\t", "\x00"])
TRACKING = [p.rstrip("*") + ("x" if p.endswith("*") else "") for p in DEFAULT_STRIP_PARAMS]

hosts = st.one_of(
    st.from_regex(
        r"[a-zA-Z0-9]([a-zA-Z0-9-]{0,10}[a-zA-Z0-9])?(\.[a-zA-Z]{2,6}){1,2}", fullmatch=True
    ),
    st.sampled_from(
        ["127.0.0.1", "[::1]", "EXAMPLE.com", "bücher.de", "例え.jp", "xn--zz", "a..b"]
    ),
)
segments = st.lists(st.text(URL_CHARS, max_size=8), max_size=5)
#: Query parameters without spaces or control characters: a URL's leading and trailing ones
#: are stripped (WHATWG), so shuffling one to the end would change the URL, not its order.
QUERY_CHARS = st.sampled_from([*"aZ09-._~%/?[]@!$'()*+,;:", "é", "中"])
names = st.one_of(
    st.sampled_from(["id", "page", "q", "sort", "a", "A", "x y"]), st.text(QUERY_CHARS, max_size=5)
)
values = st.text(QUERY_CHARS, max_size=6)


@st.composite
def urls(draw: st.DrawFn) -> tuple[str, list[tuple[str, str]], list[tuple[str, str]]]:
    """A URL built from parts; its content parameters and its tracking parameters."""
    scheme = draw(st.sampled_from(["http", "https", "HTTP", "ftp", "ws"]))
    port = draw(st.sampled_from(["", ":80", ":443", ":8080", ":21"]))
    path = "/" + "/".join(draw(segments)) + draw(st.sampled_from(["", "/", ";jsessionid=1"]))
    content = draw(st.lists(st.tuples(names, values), max_size=4))
    tracking = draw(st.lists(st.tuples(st.sampled_from(TRACKING), values), max_size=3))
    pairs = draw(st.permutations(content + tracking))
    query = "&".join(f"{k}={v}" for k, v in pairs)
    fragment = draw(st.sampled_from(["", "#top", "#"]))
    url = f"{scheme}://{draw(hosts)}{port}{path}" + (f"?{query}" if query else "") + fragment
    return url, content, tracking


def canonical_or_none(url: object) -> str | None:
    """canonical_url(url), or None when it says the URL is invalid (anything else fails)."""
    try:
        return canonical_url(url)  # type: ignore[arg-type]
    except InvalidURL:
        return None


# -- URL properties -----------------------------------------------------------------------


@FUZZ
@given(st.one_of(st.text(ANY_CHAR, max_size=80), st.text(URL_CHARS, max_size=80)))
@example("\uff3b\u82f9")  # found by atheris: IDNA made the host "xn--[-xs8c"
def test_canonical_url_of_any_text_is_invalid_or_idempotent(text: str) -> None:
    for candidate in (text, "http://" + text, "https://a.com/" + text):
        once = canonical_or_none(candidate)
        if once is not None:
            assert canonical_url(once) == once


@FUZZ
@given(st.one_of(st.integers(), st.none(), st.binary(max_size=20), st.lists(st.text(max_size=3))))
def test_canonical_url_of_a_non_string_is_invalid(value: object) -> None:
    assert canonical_or_none(value) is None


@FUZZ
@given(urls())
def test_canonical_url_of_built_urls(built: tuple[str, list, list]) -> None:
    url, _, tracking = built
    once = canonical_or_none(url)
    if once is None:
        return
    assert canonical_url(once) == once
    parts = urlsplit(once)
    assert parts.scheme and once.startswith(parts.scheme + ":")  # absolute
    assert parts.scheme == parts.scheme.lower() and not parts.fragment
    kept = {name.lower() for name, _ in parse_qsl(parts.query, keep_blank_values=True)}
    assert not kept & {name.lower() for name, _ in tracking}, once


@FUZZ
@given(urls(), st.randoms(use_true_random=False))
def test_parameter_order_does_not_matter(built: tuple[str, list, list], rng) -> None:
    # WHATWG strips leading and trailing C0 controls and spaces: a shuffle must not move one
    # of those (from a path segment with a "?") into the middle.
    url = built[0].strip("".join(map(chr, range(33))))
    base, sep, rest = url.partition("?")
    if not sep:
        return
    query, hash_, fragment = rest.partition("#")
    pairs = query.split("&")
    rng.shuffle(pairs)
    shuffled = f"{base}?{'&'.join(pairs)}{hash_}{fragment}"
    assert canonical_or_none(shuffled) == canonical_or_none(url)


# -- text properties ----------------------------------------------------------------------

texts = st.one_of(
    st.text(ANY_CHAR, max_size=300),
    st.text(
        st.sampled_from(list("abc 中文字词。，\u202e\u200fשלום عربي\x00\x07\t\n")), max_size=300
    ),
    st.builds(lambda s, n: s * n, st.text(ANY_CHAR, min_size=1, max_size=5), st.integers(1, 3000)),
)


@FUZZ
@given(texts)
def test_normalize_is_idempotent(text: str) -> None:
    once = normalize(text)
    assert normalize(once) == once


@FUZZ
@given(texts)
def test_tokens_and_signatures_never_raise(text: str) -> None:
    doc = Document(text)
    assert all(isinstance(t, str) and t for t in tokenize(doc.normalized))
    assert len(doc.token_hashes) == len(doc.tokens)
    for method in ("minhash", "simhash", "spotsigs", "exact"):
        DEDUPS[method].sign(doc)


DEDUPS = {m: Deduplicator(m, min_tokens=5) for m in ("minhash", "simhash", "spotsigs", "exact")}


@FUZZ
@given(st.lists(texts, min_size=1, max_size=4), st.sampled_from(sorted(DEDUPS)))
def test_check_never_raises_and_a_repeat_is_always_a_duplicate(
    batch: list[str], method: str
) -> None:
    dedup = Deduplicator(method, min_tokens=5)
    for n, text in enumerate(batch):
        dedup.check(f"k{n}", text)
        again = dedup.check(f"k{n}-again", text)
        assert again.is_duplicate, (method, text[:50])
