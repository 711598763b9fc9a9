"""Settings are validated once, at start, with messages that name the setting."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from scrapy_neardup.config import NearDupConfig
from scrapy_neardup.exceptions import ConfigError


def config(**values: object) -> NearDupConfig:
    return NearDupConfig.from_settings(Settings(values))


def test_defaults() -> None:
    c = config()
    assert c.backend == "minhash"
    assert c.action == "drop"
    assert c.state_dir is None
    assert c.bloom_error_rate == 0.001
    assert c.extract and c.extract_fast


def test_jobdir_gives_state_dir(tmp_path) -> None:
    assert config(JOBDIR=str(tmp_path)).state_dir == tmp_path / "neardup"
    assert config(JOBDIR=str(tmp_path), NEARDUP_STATE_DIR="x").state_dir.name == "x"


def test_values_from_command_line_strings() -> None:
    c = config(
        NEARDUP_BACKEND="SimHash",
        NEARDUP_SIMHASH_K="4",
        NEARDUP_ACTION="tag",
        NEARDUP_DEBUG="true",
        NEARDUP_STRIP_PARAMS="utm_*,ref",
    )
    assert (c.backend, c.simhash_k, c.action, c.debug) == ("simhash", 4, "tag", True)
    assert c.strip_params == ("utm_*", "ref")
    assert c.make_method().k == 4


@pytest.mark.parametrize(
    ("name", "value", "allowed"),
    [
        ("NEARDUP_BACKEND", "bloom", "one of"),
        ("NEARDUP_ACTION", "delete", "'drop', 'tag'"),
        ("NEARDUP_THRESHOLD", 1.5, "at most 1.0"),
        ("NEARDUP_THRESHOLD", "high", "a number"),
        ("NEARDUP_BLOOM_ERROR_RATE", 0, "greater than 0.0"),
        ("NEARDUP_BLOOM_CAPACITY", -5, "an integer from 1"),
        ("NEARDUP_BLOOM_CAPACITY", 2.5, "an integer"),
        ("NEARDUP_SIMHASH_K", 12, "to 7"),
        ("NEARDUP_WORKERS", "many", "an integer"),
        ("NEARDUP_ENABLED", "perhaps", "a boolean"),
        ("NEARDUP_EXTRACT_FAST", "sometimes", "a boolean"),
        ("NEARDUP_TEXT_FIELD", "", "field name"),
        ("NEARDUP_STRIP_PARAMS", 5, "a list"),
        ("NEARDUP_BACKEND_PARAMS", "num_perm=3", "a dict"),
        ("NEARDUP_STORAGE", "sqlite", "'memory'"),
    ],
)
def test_bad_values_name_the_setting(name: str, value: object, allowed: str) -> None:
    with pytest.raises(ConfigError) as info:
        config(**{name: value})
    assert info.value.setting == name
    assert name in str(info.value)
    assert allowed in str(info.value)


def test_bad_backend_params_fail_at_start() -> None:
    with pytest.raises(ConfigError, match="NEARDUP_BACKEND_PARAMS"):
        config(NEARDUP_BACKEND_PARAMS={"num_perm": 3})
    with pytest.raises(ConfigError, match="NEARDUP_BACKEND_PARAMS"):
        config(NEARDUP_BACKEND_PARAMS={"no_such_option": 1})
