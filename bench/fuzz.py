"""The long fuzz run: tests/test_fuzz.py's properties with many more examples, then atheris.

    python bench/fuzz.py [--examples 20000] [--atheris-seconds 120] [--no-atheris]

1. The hypothesis properties of ``tests/test_fuzz.py`` (URL canonicaliser: idempotent, only
   InvalidURL, absolute results, tracking parameters gone, parameter order irrelevant; text:
   ``normalize`` idempotent, tokens and every method's signatures never raise, a repeated text
   is always a duplicate) with ``--examples`` examples each (the test suite runs 150).
2. When atheris is installed (``pip install atheris``; a wheel exists for CPython 3.11 on
   Linux x86-64), a coverage-guided run of the same checks on raw bytes for
   ``--atheris-seconds``, in a child process (atheris never returns from ``Fuzz()``).

Exits non-zero on the first failure, printing the failing input.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ATHERIS_TARGET = r"""
import sys
import atheris

with atheris.instrument_imports():
    from scrapy_neardup.deduplicator import Deduplicator
    from scrapy_neardup.exceptions import InvalidURL
    from scrapy_neardup.text import Document, normalize
    from scrapy_neardup.urls import canonical_url

DEDUP = Deduplicator("minhash", min_tokens=5)
N = [0]


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    text = fdp.ConsumeUnicode(4096)
    for url in (text, "http://" + text, "https://a.com/?" + text):
        try:
            once = canonical_url(url)
        except InvalidURL:
            continue
        assert canonical_url(once) == once, (url, once)
    once = normalize(text)
    assert normalize(once) == once, text
    Document(text).tokens
    N[0] += 1
    DEDUP.check(f"k{N[0]}", text)
    assert DEDUP.check(f"k{N[0]}-again", text).is_duplicate, text


atheris.Setup(sys.argv, one_input)
atheris.Fuzz()
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=20_000)
    parser.add_argument("--atheris-seconds", type=int, default=120)
    parser.add_argument("--no-atheris", action="store_true")
    args = parser.parse_args()
    env = {
        **os.environ,
        "NEARDUP_FUZZ_EXAMPLES": str(args.examples),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    print(f"== hypothesis: {args.examples} examples per property", flush=True)
    tests = str(ROOT / "tests" / "test_fuzz.py")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", tests, "-q", "-p", "no:cacheprovider"],
        env=env,
        cwd=ROOT,
        check=False,
    )
    if done.returncode:
        return done.returncode
    try:
        import atheris  # noqa: F401
    except ImportError:
        print("== atheris: not installed (pip install atheris); skipped")
        return 0
    if args.no_atheris:
        return 0
    print(f"== atheris: {args.atheris_seconds} s on canonical_url and the text pipeline")
    corpus = ROOT / "bench" / ".fuzz-corpus"
    corpus.mkdir(exist_ok=True)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            ATHERIS_TARGET,
            f"-max_total_time={args.atheris_seconds}",
            "-max_len=4096",
            "-rss_limit_mb=4096",
            f"-artifact_prefix={corpus}/",
            str(corpus),
        ],
        env=env,
        cwd=ROOT,
        check=False,
    )
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
