"""The settings table (scrapy_neardup/settings.py) is the one place of names, types and
defaults: the README's "Supported settings" and the config's fields are held to it."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from scrapy_neardup.config import NearDupConfig
from scrapy_neardup.settings import DECISION_SETTINGS, SETTINGS

README = Path(__file__).resolve().parents[1] / "README.md"
ENTRY = re.compile(r"^### `(NEARDUP_[A-Z_]+)`\n+Type `([a-z]+)`, default `([^`]*)`\.", re.M)


def readme_entries() -> dict[str, tuple[str, object]]:
    """``{name: (type, default)}`` of the README's "Supported settings" section."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Supported settings\n", 1)[1].split("\n## ", 1)[0]
    entries = {
        name: (kind, ast.literal_eval(value)) for name, kind, value in ENTRY.findall(section)
    }
    # every entry of the section has the shape: none is skipped by the pattern
    assert len(entries) == len(re.findall(r"^### `NEARDUP_", section, re.M))
    return entries


def test_the_readme_documents_every_setting_of_the_table_in_its_order() -> None:
    assert list(readme_entries()) == list(SETTINGS)


@pytest.mark.parametrize("name", list(SETTINGS))
def test_the_readme_gives_the_type_and_default_of_the_table(name: str) -> None:
    spec = SETTINGS[name]
    kind, value = readme_entries()[name]
    assert kind == spec.type.__name__
    assert value == (None if spec.computed else spec.default)
    assert type(value) is type(None if spec.computed else spec.default)  # 1 is not 1.0


def test_every_setting_is_a_config_field_and_every_field_a_setting() -> None:
    assert {f.name for f in dataclasses.fields(NearDupConfig)} == {
        spec.field for spec in SETTINGS.values()
    }


def test_an_empty_configuration_has_the_table_defaults() -> None:
    config = NearDupConfig.from_settings({})
    for spec in SETTINGS.values():
        assert getattr(config, spec.field) == spec.default_value(), spec.name


def test_every_setting_has_a_one_line_doc() -> None:
    for spec in SETTINGS.values():
        assert spec.doc and "\n" not in spec.doc and spec.doc.endswith("."), spec.name


def test_the_decision_settings_come_from_the_table() -> None:
    for setting, unset in DECISION_SETTINGS.values():
        assert SETTINGS[setting].default == unset


PACKAGE = README.parent / "scrapy_neardup"
STAT = re.compile(r"""["'](neardup/[a-z_/]+)["']""")


def readme_stats() -> set[str]:
    """Every stat name of the README's "Stats" section, ``{a,b}`` groups expanded."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Stats\n", 1)[1].split("\n## ", 1)[0]
    names = set()
    for prefix, group in re.findall(r"`(neardup/[a-z_/]*?)(?:\{([a-z_,]+)\})?`", section):
        names.update(prefix + part for part in group.split(",")) if group else names.add(prefix)
    return names


def test_the_readme_documents_every_stat_the_package_writes() -> None:
    written = {
        name
        for path in PACKAGE.rglob("*.py")
        for name in STAT.findall(path.read_text(encoding="utf-8"))
    }
    from scrapy_neardup.extraction import Extractor

    dynamic = {f"neardup/extract/{how}" for how in ("trafilatura", "fallback", "empty")}
    dynamic |= {f"neardup/extract/{name}" for name in Extractor(None, workers=0).timing()}
    dynamic |= {f"neardup/skipped/{limit}" for limit in ("timeout", "memory")}
    assert written and written | dynamic <= readme_stats(), (written | dynamic) - readme_stats()
