"""The real-site evaluation's own parts on a tiny hand-made site: choosing pages, the scoring
(containment of a dropped page in its original, lossy drops) and one crawl through the plugin.
Nothing is downloaded; ``../shared`` is not needed."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from evaluation import evaluate_sites as ev
from evaluation import line_reading as lr

WORDS = (
    "river stone garden lamp window paper cloud bridge engine letter market winter silver "
    "forest harbor candle mirror ladder pocket violin basket meadow tunnel orchard"
).split()


def paragraph(seed: int, n: int = 60) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n)) + "."


def page(title: str, paragraphs: list[str], links: Sequence[str] = ()) -> str:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    nav = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return (
        f"<html><head><title>{title}</title></head><body><nav><ul>{nav}</ul></nav>"
        f"<article><h1>{title}</h1>{body}</article></body></html>"
    )


def write(root: Path, files: dict[str, str]) -> None:
    for name, html in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html, encoding="utf-8")


def test_containment_is_the_decisions_measure() -> None:
    assert ev.contained("a b c d e", "a b c d e x y z") == 1.0
    assert ev.contained("a b c d e", "a b c") == 1 / 3
    assert ev.contained("", "a b c") == 1.0  # an empty page loses nothing
    # 3-shingles within lines: paragraphs in another order lose nothing.
    assert ev.contained("a b c d\ne f g h", "e f g h\na b c d") == 1.0
    assert ev.contained("我爱北京天安门", "我爱北京天安门 and Paris") == 1.0
    assert ev.LOSSY_BELOW == 0.8


def test_choose_pages_keeps_each_entry_to_its_directory(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "en/index.html": page("en", [], ["a.html", "b.html", "../de/a.html", "mailto:x@y"]),
            "en/a.html": page("a", [], ["b.html#top", "http://example.com/x.html"]),
            "en/b.html": page("b", [], ["c.html"]),
            "en/c.html": page("c", []),
            "de/index.html": page("de", [], ["a.html", "missing.html"]),
            "de/a.html": page("a", [], ["/en/c.html"]),
        },
    )
    assert ev.choose_pages(tmp_path, ["en/index.html", "de/index.html"], 100) == [
        "en/index.html",
        "de/index.html",
        "en/a.html",
        "de/a.html",
        "en/b.html",
        "en/c.html",
    ]
    # a cap gives every entry its turn
    assert ev.choose_pages(tmp_path, ["en/index.html", "de/index.html"], 3) == [
        "en/index.html",
        "de/index.html",
        "en/a.html",
    ]


def test_score_counts_lossy_drops(tmp_path: Path) -> None:
    full = [paragraph(i) for i in range(4)]
    write(
        tmp_path,
        {
            "full.html": page("Chapter", full),
            "part.html": page("Chapter", full[:2]),
            "copy.html": page("Chapter", full),
            "kapitel.html": page("Kapitel", full),  # untranslated but for its heading
        },
    )
    texts = ev.Texts(tmp_path, tmp_path / "texts.json")
    crawled = {
        "kept": ["part.html", "kapitel.html"],
        "drops": [
            ["full.html", "part.html", "minhash", 0.5],  # the richer page dropped: lossy
            ["copy.html", "full.html", "minhash", 1.0],
            ["other.html", "", "dropped for another reason", 0.0],
        ],
        "order": ["part.html", "full.html", "copy.html", "kapitel.html"],
    }
    s = ev.score(crawled, texts)
    assert (s.pages, s.dropped, s.lossy, s.unscored) == (5, 3, 1, 1)
    # copies the crawl met: "copy" and "kapitel" (all but a word of each is in "full");
    # the line reading finds "kapitel" lossy (its heading), so it is no lossless copy
    assert (s.copies, s.copies_dropped) == (2, 1)
    assert (s.lossless_copies, s.lossless_copies_dropped) == (1, 1)
    # the line reading: the richer page loses its last two paragraphs, the copy nothing
    ((dropped, original, *_, loss),) = s.line_losses
    assert (dropped, original) == ("full.html", "part.html") and loss.lines == tuple(full[2:])
    assert s.bins == [0, 0, 1, 0, 1]  # half of "full" is in "part"; "copy" is all in "full"
    (c, dropped, original, method, _), (c2, *_) = s.worst
    assert (dropped, original, method) == ("full.html", "part.html", "minhash")
    assert 0.45 < c < 0.55 and c2 == 1.0
    texts.save()
    assert ev.Texts(tmp_path, tmp_path / "texts.json").cache == texts.cache


def test_crawl_drops_an_exact_copy_and_scores_it(tmp_path: Path) -> None:
    text = [paragraph(10 + i) for i in range(5)]
    write(
        tmp_path,
        {
            "index.html": page("Home", [paragraph(1)], ["one.html", "two.html", "other.html"]),
            "one.html": page("One", text),
            "two.html": page("One", text),
            "other.html": page("Other", [paragraph(30 + i) for i in range(5)]),
        },
    )
    pages = ev.choose_pages(tmp_path, ["index.html"], 10)
    crawled = ev.crawl_site(tmp_path, pages, ["index.html"], "exact")
    assert crawled["finish_reason"] == "finished"
    assert sorted(crawled["kept"] + [d[0] for d in crawled["drops"]]) == sorted(pages)
    assert len(crawled["drops"]) == 1
    dropped, original, method, _ = crawled["drops"][0]
    assert {dropped, original} == {"one.html", "two.html"} and method == "exact"
    s = ev.score(crawled, ev.Texts(tmp_path, None))
    assert (s.dropped, s.lossy) == (1, 0) and s.worst[0][0] == 1.0


def test_body_text_is_every_visible_word() -> None:
    html = b"<html><body><nav>Home</nav><p>one</p><p>two</p><script>x = 1</script></body></html>"
    assert ev.body_text(html) == "Home one two"


# ---------------------------------------------------------------- the line reading

SHARED = [paragraph(50 + i, 40) for i in range(3)]


def module_page(
    name: str, description: str, extra: Sequence[str] = (), suffix: str = "Server Version 2.4"
) -> bytes:
    """A module's reference page in one template: a sidebar naming every module, the
    module's name and description, then paragraphs every module page shares."""
    nav = "".join(f'<li><a href="{m}.html">{m}</a></li>' for m in ("mod_foo", "mod_bar"))
    body = "".join(f"<p>{p}</p>" for p in [*extra, *SHARED])
    return (
        f"<html><head><title>{name} - {suffix}</title></head><body>"
        f'<div class="sidebar" role="navigation"><h3>Modules</h3><ul>{nav}</ul></div>'
        f'<div id="content"><h1>Module {name}</h1><table>'
        f"<tr><th>Description:</th><td>{description}</td></tr>"
        f"<tr><th>Identifier:</th><td>{name}_module</td></tr></table>"
        f"<h2>Summary</h2>{body}</div></body></html>"
    ).encode()


def test_an_exact_copy_is_never_lossy() -> None:
    for html in (
        module_page("mod_foo", "a plain memory segment"),
        page("第3章 安装", ["我爱北京天安门。" * 8, paragraph(3)]).encode(),
        b"<html><body>only 3 words</body></html>",
        b"",
    ):
        assert not lr.losses(lr.read(html), lr.read(html)).lossy


def test_a_sibling_module_page_is_lossy() -> None:
    """Same template, another module: its name is lost (the kept page's sidebar names it,
    which does not count) although every line it has of 6 words or more is held."""
    foo = lr.read(module_page("mod_foo", "a plain memory segment"))
    bar = lr.read(module_page("mod_bar", "a shared memory segment"))
    loss = lr.losses(foo, bar)
    assert loss.lossy and not loss.lines
    assert "mod_foo" in loss.headings
    assert loss.identifiers == ("mod_foo_module",)
    assert lr.losses(foo, foo) == lr.Loss()


def test_a_lost_line_and_a_scattered_edit() -> None:
    line = "The module also keeps a log of every request that it serves to its clients"
    edited = line.replace("every", "each")
    kept = lr.read(module_page("mod_foo", "memory", [line]))
    loss = lr.losses(lr.read(module_page("mod_foo", "memory", [paragraph(9, 12), line])), kept)
    assert loss.lines == (paragraph(9, 12),) and not loss.headings
    assert not lr.losses(lr.read(module_page("mod_foo", "memory", [edited])), kept).lossy


def test_a_number_is_not_an_edit() -> None:
    kept = lr.read(module_page("mod_foo", "memory", ["Available in version 2.4.12 and later."]))
    dropped = lr.read(module_page("mod_foo", "memory", ["Available in version 2.4.10 and later."]))
    assert lr.losses(dropped, kept) == lr.Loss(numbers=("2.4.10",))
    # a release's number in its heading is lost as a heading token, once
    notes = "<html><head><title>{0} release notes</title></head><body><h1>Django {0}</h1>{1}"
    older = notes.format("1.5.8", "".join(f"<p>{p}</p>" for p in SHARED)).encode()
    newer = notes.format("1.4.13", "".join(f"<p>{p}</p>" for p in SHARED)).encode()
    assert lr.losses(lr.read(older), lr.read(newer)) == lr.Loss(headings=("1.5.8",))


def test_another_editions_site_name_and_navigation_are_not_the_pages() -> None:
    """An untranslated page under two languages' chrome: the title's suffix and the
    sidebar's headings differ, the page does not."""
    it = module_page("mod_foo", "memory", suffix="documentazione")
    ru = module_page("mod_foo", "memory", suffix="документация").replace(b"Modules", b"Moduli")
    assert not lr.losses(lr.read(it), lr.read(ru)).lossy
    other = module_page("mod_foo", "memory", suffix="documentazione").replace(
        b"<h2>Summary</h2>", b"<h2>Riassunto</h2>"
    )
    assert lr.losses(lr.read(other), lr.read(ru)).headings == ("Riassunto",)


def test_words_and_identifiers() -> None:
    assert lr.words("Foo_bar x86_64 3.25.1 我爱 Straße") == [
        *("foo_bar", "x86_64", "3", "25", "1", "我", "爱", "straße"),
    ]
    assert lr.tokens("Foo.bar 3.25.1, 1,838 std::map e.g. 我爱") == [
        *("Foo.bar", "3.25.1", "1,838", "std::map", "e.g", "我", "爱"),
    ]
    for token in ("foo_bar", "Foo.bar", "std::map", "CamelCase", "CMP0047", "x86_64"):
        assert lr.is_identifier(token), token
    for token in ("word", "42", "3.25.1", "e.g", "_", "Word"):
        assert not lr.is_identifier(token), token


def test_rescore_says_what_it_could_not_score(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--rescore`` of a crawl that was never saved is reported and fails the run."""
    monkeypatch.setattr(ev, "postgresql_doc", lambda: "postgresql-doc-15")  # no apt-cache
    monkeypatch.setattr(ev.shutil, "which", lambda name: f"/usr/bin/{name}")
    site = next(s for s in ev.sites() if s.name == "sqlite")
    tree = tmp_path / "cache" / site.name
    for package in site.packages:
        (tree / site.root).mkdir(parents=True, exist_ok=True)
        (tree / f".extracted-{package}").touch()
    text = [paragraph(70 + i) for i in range(3)]
    write(tree / site.root, {"a.html": page("A", text), "b.html": page("A", text)})
    crawl = {"site": "sqlite", "backend": "minhash", "pages": 2, "dropped": 1}
    crawl |= {"pages_served": 2, "seconds": 1.0, "kept": ["b.html"], "order": ["b.html", "a.html"]}
    crawl |= {"drops": [["a.html", "b.html", "exact", 1.0]], "finish_reason": "finished"}
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text(json.dumps([{**crawl, "stats": {}}]))
    args = ["--rescore", "--sites", "sqlite", "--cache", str(tmp_path / "cache"), "--out", str(out)]
    assert ev.main([*args, "--backends", "minhash"]) == 0
    assert ev.main([*args, "--backends", "minhash,simhash"]) == 1
    assert "sqlite simhash: no saved crawl to rescore" in capsys.readouterr().out
    (saved,) = json.loads((out / "results.json").read_text())
    assert (saved["dropped"], saved["line_lossy"]) == (1, 0)
