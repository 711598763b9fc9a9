"""`neardup dedupe`: the engine over a folder, without a crawl."""

from __future__ import annotations

import json

from scrapy_neardup.cli import main

STORY = " ".join(
    f"sentence {i} tells how the river authority opened the new flood gates near the old mill"
    for i in range(20)
)


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


def test_dedupe_human_output(tmp_path, capsys) -> None:
    (tmp_path / "a.txt").write_text(STORY)
    (tmp_path / "b.txt").write_text(STORY)
    assert main(["dedupe", str(tmp_path), "--backend", "exact"]) == 0
    out = capsys.readouterr().out
    assert "KEEP" in out and "DROP" in out and "2 documents: 1 kept, 1 dropped" in out
