"""`neardup dedupe`: the engine over a folder, without a crawl; real files, real encodings."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from scrapy_neardup.backends import DEFAULT_BACKEND
from scrapy_neardup.cli import Folder, build_parser, decode, main
from scrapy_neardup.config import NearDupConfig
from scrapy_neardup.deduplicator import Deduplicator

ROOT = Path(__file__).resolve().parent.parent

STORY = " ".join(
    f"sentence {i} tells how the river authority opened the new flood gates near the old mill"
    for i in range(20)
)
CURLY = " ".join(
    f"It\u2019s the {i}th time the river authority\u2019s crew opened the \u201cnew\u201d gates"
    for i in range(20)
)
GERMAN = " ".join(
    f"Zum {i}. Mal äußerten sich die Bürger über die Größe der neuen Schleusen am Fluss."
    for i in range(20)
)
CHINESE = (
    "河务局在老磨坊附近打开了新的防洪闸门，居民们对此表示欢迎。"
    "今年夏天的降雨量比往年多得多，上游水库的水位一直在上涨。"
    "专家建议沿岸居民关注天气预报，及时做好防汛准备。"
) * 4
FRENCH = "Il a dit\u00a0: «\u00a0Très bientôt, à la fenêtre\u00a0», et l\u2019élève étudiait."
# A .DS_Store as Finder writes it: a "Bud1" header and NUL-padded records.
DS_STORE = b"\x00\x00\x00\x01Bud1\x00\x00\x10\x00\x00\x00\x08\x0b" + bytes(range(256)) * 8
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000") + b"\x1f" * 64


@pytest.fixture
def dedupe_json(capsys):
    def run(path: Path, *options: str) -> dict:
        assert main(["dedupe", str(path), "--json", *options]) == 0
        return json.loads(capsys.readouterr().out)

    return run


def test_dedupe_folder(tmp_path, capsys) -> None:
    (tmp_path / "a.txt").write_text(STORY)
    (tmp_path / "b.txt").write_text(STORY.replace("old mill", "old mills", 1))
    (tmp_path / "docs.jsonl").write_text(
        json.dumps({"url": "http://x/c", "text": "a completely different short note"})
        + "\n"
        + json.dumps({"url": "http://x/d", "body": "no text field"})
        + "\n"
        + json.dumps({"url": "http://x/e", "text": 42})
        + "\n"
        + "not json\n"
    )
    assert main(["dedupe", str(tmp_path), "--json"]) == 0
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert result["kept"] == [str(tmp_path / "a.txt"), "http://x/c"]
    assert [d["key"] for d in result["dropped"]] == [str(tmp_path / "b.txt")]
    assert result["dropped"][0]["duplicate_of"] == str(tmp_path / "a.txt")
    assert err.count("skipped") == 3
    jsonl = str(tmp_path / "docs.jsonl")
    assert result["skipped"] == [
        {"path": jsonl, "line": 2, "reason": "no 'text' field"},
        {"path": jsonl, "line": 3, "reason": "'text' is not text"},
        {"path": jsonl, "line": 4, "reason": "no 'text' field"},
    ]


def test_dedupe_human_output(tmp_path, capsys) -> None:
    (tmp_path / "a.txt").write_text(STORY)
    (tmp_path / "b.txt").write_text(STORY)
    assert main(["dedupe", str(tmp_path), "--backend", "exact"]) == 0
    out = capsys.readouterr().out
    assert "KEEP" in out and "DROP" in out and "2 documents: 1 kept, 1 dropped" in out
    assert "skipped" not in out


# -- one default everywhere --------------------------------------------------------------------


def test_one_default_method_everywhere() -> None:
    assert DEFAULT_BACKEND == "minhash"
    assert Deduplicator().method.name == DEFAULT_BACKEND
    assert NearDupConfig.from_settings({}).backend == DEFAULT_BACKEND
    assert build_parser().parse_args(["dedupe", "."]).backend == DEFAULT_BACKEND


# -- binary files ------------------------------------------------------------------------------


def test_binary_files_are_skipped_and_reported(tmp_path, capsys, dedupe_json) -> None:
    (tmp_path / "a.txt").write_text(STORY)
    (tmp_path / ".DS_Store").write_bytes(DS_STORE)
    (tmp_path / "photo.png").write_bytes(PNG)
    (tmp_path / "notes.txt").write_bytes(gzip.compress(STORY.encode(), mtime=0))  # misnamed
    (tmp_path / "blank.md").write_text(" \n\t\n")
    (tmp_path / "page.html").write_text("<p>not read</p>")
    result = dedupe_json(tmp_path)
    assert result["kept"] == [str(tmp_path / "a.txt")]
    assert result["counts"]["documents"] == 1  # none of the others was indexed
    assert result["skipped"] == [
        {"path": str(tmp_path / ".DS_Store"), "reason": "binary"},
        {"path": str(tmp_path / "blank.md"), "reason": "empty"},
        {"path": str(tmp_path / "notes.txt"), "reason": "binary"},
        {"path": str(tmp_path / "page.html"), "reason": "not a .txt, .md or .jsonl file"},
        {"path": str(tmp_path / "photo.png"), "reason": "binary"},
    ]

    assert main(["dedupe", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert "1 documents: 1 kept, 0 dropped; 5 skipped (3 binary, 1 empty, 1 not a " in out
    assert f"  skipped {tmp_path / '.DS_Store'}: binary\n" in out
    assert f"skipped {tmp_path / 'photo.png'}: binary\n" in err


def test_binary_jsonl_is_skipped(tmp_path, dedupe_json) -> None:
    (tmp_path / "dump.jsonl").write_bytes(gzip.compress(b'{"text": "x"}\n' * 100, mtime=0))
    result = dedupe_json(tmp_path)
    assert result["skipped"] == [{"path": str(tmp_path / "dump.jsonl"), "reason": "binary"}]
    assert result["kept"] == []


# -- encodings ---------------------------------------------------------------------------------

ENCODED = [
    pytest.param(CURLY, CURLY.encode("cp1252"), id="cp1252-curly-quotes"),
    pytest.param(CURLY, b"\xef\xbb\xbf" + CURLY.encode(), id="utf8-bom"),
    pytest.param(CURLY, b"\xff\xfe" + CURLY.encode("utf-16-le"), id="utf16le-bom"),
    pytest.param(GERMAN, b"\xfe\xff" + GERMAN.encode("utf-16-be"), id="utf16be-bom"),
    pytest.param(GERMAN, GERMAN.encode("latin-1"), id="latin1-german"),
    pytest.param(CHINESE, CHINESE.encode("gb18030"), id="gb18030-chinese"),
]


@pytest.mark.parametrize(("text", "data"), ENCODED)
def test_encodings_are_detected(tmp_path, dedupe_json, text: str, data: bytes) -> None:
    (tmp_path / "a-utf8.txt").write_text(text, encoding="utf-8")
    (tmp_path / "b-encoded.txt").write_bytes(data)
    assert list(Folder(tmp_path / "b-encoded.txt", "text")) == [
        (str(tmp_path / "b-encoded.txt"), text)
    ]
    # Decoded right, the copy is the very same text: an exact duplicate of the UTF-8 file.
    result = dedupe_json(tmp_path, "--backend", "exact")
    assert result["kept"] == [str(tmp_path / "a-utf8.txt")]
    assert result["dropped"][0]["key"] == str(tmp_path / "b-encoded.txt")


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("It\u2019s done.", "cp1252"),  # one lone high byte: too short for a detector
        (FRENCH, "cp1252"),  # adjacent high bytes (« and NBSP): the detector, tie-broken
        ("Grüße", "latin-1"),
        ("河务局打开了新的防洪闸门。", "gb18030"),  # short: ties with Korean cp949
        ("Zażółć gęślą jaźń, powiedział pan Józef w Łodzi. " * 4, "cp1250"),
        ("Москва — столица России, крупнейший город страны. " * 2, "cp1251"),
    ],
)
def test_decode_short_and_ambiguous_texts(text: str, encoding: str) -> None:
    assert decode(text.encode(encoding)) == text


def test_jsonl_encodings(tmp_path, dedupe_json) -> None:
    line = json.dumps({"url": "http://x/1", "text": CURLY}, ensure_ascii=False) + "\r\n"
    (tmp_path / "a.jsonl").write_bytes(b"\xff\xfe" + (line * 2).encode("utf-16-le"))
    (tmp_path / "b.jsonl").write_bytes(b"\xef\xbb\xbf" + line.replace("/1", "/2").encode())
    (tmp_path / "c.jsonl").write_bytes(line.replace("/1", "/3").encode("cp1252"))
    result = dedupe_json(tmp_path, "--backend", "exact")
    assert result["kept"] == ["http://x/1"]
    assert [d["key"] for d in result["dropped"]] == ["http://x/1", "http://x/2", "http://x/3"]
    assert result["skipped"] == []


# -- progress ----------------------------------------------------------------------------------


def _cli(folder: Path, *options: str, stderr: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "error"}
    return subprocess.Popen(
        [sys.executable, "-m", "scrapy_neardup.cli", "dedupe", str(folder), *options],
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=env,
    )


def _run_on_pty(folder: Path, *options: str) -> tuple[bytes, bytes]:
    """stdout (a pipe) and what reached the terminal on stderr (a pseudo-terminal)."""
    master, slave = os.openpty()
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO once the child has closed its end
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        proc = _cli(folder, *options, stderr=slave)
        os.close(slave)
        out, _ = proc.communicate(timeout=120)
        reader.join(timeout=10)
    finally:
        os.close(master)
    assert proc.returncode == 0
    return out, b"".join(chunks)


@pytest.fixture
def folder(tmp_path) -> Path:
    for i in range(30):
        (tmp_path / f"doc{i:02}.txt").write_text((STORY, CURLY, GERMAN)[i % 3])
    (tmp_path / ".DS_Store").write_bytes(DS_STORE)
    return tmp_path


def test_progress_on_a_terminal(folder) -> None:
    out, terminal = _run_on_pty(folder)
    assert b"\r[" in terminal and b"documents" in terminal and b"%" in terminal
    assert terminal.endswith(b"\r")  # the status line erased at the end
    piped = _cli(folder, stderr=subprocess.PIPE)
    piped_out, piped_err = piped.communicate(timeout=120)
    assert out == piped_out  # the same report either way
    assert out.decode().splitlines()[-2:] == [
        "30 documents: 3 kept, 27 dropped; 1 skipped (1 binary)",
        f"  skipped {folder / '.DS_Store'}: binary",
    ]
    assert b"\r" not in piped_err and b"documents" not in piped_err
    assert piped_err.decode().splitlines() == [f"skipped {folder / '.DS_Store'}: binary"]


def test_no_progress_when_asked_or_piped(folder) -> None:
    out, terminal = _run_on_pty(folder, "--json", "--no-progress")
    assert b"\r[" not in terminal and b"documents" not in terminal
    assert json.loads(out)["skipped"] == [{"path": str(folder / ".DS_Store"), "reason": "binary"}]
    piped = _cli(folder, "--json", stderr=subprocess.PIPE)
    piped_out, piped_err = piped.communicate(timeout=120)
    assert piped_out == out
    assert b"\r" not in piped_err
