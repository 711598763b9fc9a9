"""Settings are validated once, at start, with messages that name the setting."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scrapy.settings import Settings

from scrapy_neardup import cores as cores_module
from scrapy_neardup.config import (
    NearDupConfig,
    bool_setting,
    enabled,
    state_dir_from,
)
from scrapy_neardup.cores import busy_cores, default_workers
from scrapy_neardup.exceptions import ConfigError
from scrapy_neardup.factories import backend_from_config


def config(**values: object) -> NearDupConfig:
    return NearDupConfig.from_settings(Settings(values))


def test_defaults() -> None:
    c = config()
    assert c.backend == "minhash"
    assert c.action == "drop"
    assert c.state_dir is None
    assert c.bloom_error_rate == 0.001
    assert c.extract and not c.extract_fast
    assert (c.page_timeout, c.page_memory) == (20.0, 1024)


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
    assert backend_from_config(c).k == 4


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
        ("NEARDUP_SIMHASH_K", 13, "to 12"),
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


# -- values as the command line gives them: -s NAME=value --------------------------------------

README = Path(__file__).resolve().parents[1] / "README.md"


def cmdline(**values: str) -> Settings:
    """Settings as ``scrapy crawl -s NAME=value`` leaves them: strings at cmdline priority."""
    settings = Settings()
    for name, value in values.items():
        settings.set(name, value, priority="cmdline")
    return settings


# (setting, the string after -s NAME=, config field, parsed value)
COMMAND_LINE = [
    ("NEARDUP_ENABLED", "False", "enabled", False),
    ("NEARDUP_ENABLED", "true", "enabled", True),
    ("NEARDUP_ENABLED", "0", "enabled", False),
    ("NEARDUP_BACKEND", "SimHash", "backend", "simhash"),
    ("NEARDUP_THRESHOLD", "0.6", "threshold", 0.6),
    ("NEARDUP_SIMHASH_K", "4", "simhash_k", 4),
    ("NEARDUP_SIMHASH_K", "12", "simhash_k", 12),
    ("NEARDUP_DECISION", "Similar", "decision", "similar"),
    ("NEARDUP_CONTAINED_WORDS", "0.95", "contained_words", 0.95),
    ("NEARDUP_CONTAINED_SHINGLES", "0.7", "contained_shingles", 0.7),
    ("NEARDUP_RELATED", "0.6", "related", 0.6),
    ("NEARDUP_SIMILARITY", "0.5", "similarity", 0.5),
    ("NEARDUP_SIMILARITY_SHINGLES", "3", "similarity_shingles", 3),
    ("NEARDUP_SIMILARITY_SPOTS", "false", "similarity_spots", False),
    ("NEARDUP_NEAR_FIELD", "near", "near_field", "near"),
    ("NEARDUP_BACKEND_PARAMS", '{"num_perm": 256}', "backend_params", {"num_perm": 256}),
    ("NEARDUP_BACKEND_PARAMS", "", "backend_params", {}),
    ("NEARDUP_MIN_TOKENS", "20", "min_tokens", 20),
    ("NEARDUP_INDEX", "LSHBloom", "index", "lshbloom"),
    ("NEARDUP_LSHBLOOM_WINDOW", "5000", "lshbloom_window", 5000),
    ("NEARDUP_ACTION", "Tag", "action", "tag"),
    ("NEARDUP_DUPLICATE_OF_FIELD", "original", "duplicate_of_field", "original"),
    ("NEARDUP_SIMILARITY_FIELD", "score", "similarity_field", "score"),
    ("NEARDUP_RELATED_FIELD", "holds", "related_field", "holds"),
    ("NEARDUP_TEXT_FIELD", "body", "text_field", "body"),
    ("NEARDUP_URL_FIELD", "link", "url_field", "link"),
    ("NEARDUP_URL_FILTER", "false", "url_filter", False),
    ("NEARDUP_BLOOM_CAPACITY", "500", "bloom_capacity", 500),
    ("NEARDUP_BLOOM_CAPACITY", " 2000 ", "bloom_capacity", 2000),
    ("NEARDUP_BLOOM_ERROR_RATE", "0.01", "bloom_error_rate", 0.01),
    ("NEARDUP_URL_CONFIRM", "0", "url_confirm", False),
    ("NEARDUP_STRIP_PARAMS", "utm_*,ref", "strip_params", ("utm_*", "ref")),
    ("NEARDUP_STRIP_PARAMS", " utm_* , ref ,", "strip_params", ("utm_*", "ref")),
    ("NEARDUP_STRIP_PARAMS", '["utm_*", "ref"]', "strip_params", ("utm_*", "ref")),
    ("NEARDUP_STRIP_PARAMS", "", "strip_params", ()),
    ("NEARDUP_STRIP_TRAILING_SLASH", "False", "strip_trailing_slash", False),
    ("NEARDUP_CHECK_CANONICAL", "0", "check_canonical", False),
    ("NEARDUP_EXTRACT", "false", "extract", False),
    ("NEARDUP_EXTRACT_FAST", "True", "extract_fast", True),
    ("NEARDUP_WORKERS", "0", "workers", 0),
    ("NEARDUP_MAX_BODY_BYTES", "2048", "max_body_bytes", 2048),
    ("NEARDUP_MAX_TEXT_CHARS", "1000", "max_text_chars", 1000),
    ("NEARDUP_PAGE_TIMEOUT", "2.5", "page_timeout", 2.5),
    ("NEARDUP_PAGE_TIMEOUT", "0", "page_timeout", 0.0),
    ("NEARDUP_PAGE_MEMORY", "512", "page_memory", 512),
    ("NEARDUP_PAGE_MEMORY", "0", "page_memory", 0),
    ("NEARDUP_STATE_DIR", "/tmp/neardup-state", "state_dir", Path("/tmp/neardup-state")),
    ("NEARDUP_FLUSH_INTERVAL", "0", "flush_interval", 0.0),
    ("NEARDUP_FLUSH_INTERVAL", "2.5", "flush_interval", 2.5),
    ("NEARDUP_GC_FREEZE", "False", "gc_freeze", False),
    ("NEARDUP_DEBUG", "1", "debug", True),
    ("NEARDUP_KEEP_TEXT", "20000", "keep_text", 20000),
    ("NEARDUP_KEEP_TEXT", "0", "keep_text", 0),
    ("NEARDUP_STORAGE", "Redis", "storage", "redis"),
    ("NEARDUP_STORAGE", "MEMORY", "storage", "memory"),
    ("NEARDUP_STORAGE", "myproject.state.MyState", "storage", "myproject.state.MyState"),
    ("NEARDUP_REDIS_URL", "rediss://cache:6380/1", "redis_url", "rediss://cache:6380/1"),
    ("NEARDUP_KEY_PREFIX", "shared", "key_prefix", "shared"),
    ("NEARDUP_REDIS_ON_ERROR", "Fail-Closed", "redis_on_error", "fail-closed"),
    ("NEARDUP_REDIS_TIMEOUT", "2.5", "redis_timeout", 2.5),
    ("NEARDUP_LEASE_TIMEOUT", "30", "lease_timeout", 30.0),
    ("JOBDIR", "/tmp/job", "state_dir", Path("/tmp/job/neardup")),
]


@pytest.mark.parametrize(("name", "text", "attribute", "expected"), COMMAND_LINE)
def test_every_setting_from_a_command_line_string(
    name: str, text: str, attribute: str, expected: object
) -> None:
    value = getattr(NearDupConfig.from_settings(cmdline(**{name: text})), attribute)
    assert value == expected
    assert type(value) is type(expected)  # True is not 1, 500 is not 500.0


def readme_settings() -> set[str]:
    section = README.read_text(encoding="utf-8").split("\n## Supported settings\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    return set(re.findall(r"^### `(NEARDUP_[A-Z_]+)`$", section, re.M))


def test_the_command_line_cases_cover_every_setting_of_the_readme() -> None:
    documented = readme_settings()
    assert len(documented) > 25  # the table was found
    assert documented <= {case[0] for case in COMMAND_LINE}


def test_backend_params_from_a_json_string_reach_the_method() -> None:
    settings = cmdline(NEARDUP_BACKEND_PARAMS='{"num_perm": 256}', NEARDUP_THRESHOLD="0.6")
    c = NearDupConfig.from_settings(settings)
    # with the default candidates' shingles (the similar rule's, under either decision)
    assert c.backend_kwargs() == {"num_perm": 256, "threshold": 0.6, "shingles": "word:2"}
    assert backend_from_config(c).num_perm == 256
    c = NearDupConfig.from_settings(
        cmdline(NEARDUP_BACKEND="simhash", NEARDUP_BACKEND_PARAMS='{"k": 5}')
    )
    assert c.backend_kwargs() == {"k": 5}  # the explicit option beats NEARDUP_SIMHASH_K


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("NEARDUP_ENABLED", "yes"),  # Scrapy's getbool knows no "yes": neither do we
        ("NEARDUP_ENABLED", "TRUE"),
        ("NEARDUP_ENABLED", "2"),
        ("NEARDUP_DEBUG", "on"),
        ("NEARDUP_URL_FILTER", ""),
        ("NEARDUP_BACKEND", "bloom"),
        ("NEARDUP_THRESHOLD", "1.5"),
        ("NEARDUP_THRESHOLD", "high"),
        ("NEARDUP_THRESHOLD", "nan"),
        ("NEARDUP_SIMHASH_K", "13"),
        ("NEARDUP_BACKEND_PARAMS", "num_perm=256"),
        ("NEARDUP_BACKEND_PARAMS", '{"num_perm": 256'),
        ("NEARDUP_BACKEND_PARAMS", '[["num_perm", 256]]'),
        ("NEARDUP_BACKEND_PARAMS", '{"num_perm": 3}'),  # too few for the method
        ("NEARDUP_BACKEND_PARAMS", '{"no_such_option": 1}'),
        ("NEARDUP_MIN_TOKENS", "-3"),
        ("NEARDUP_ACTION", "delete"),
        ("NEARDUP_TEXT_FIELD", "  "),
        ("NEARDUP_BLOOM_CAPACITY", "0"),
        ("NEARDUP_BLOOM_CAPACITY", "2.5"),
        ("NEARDUP_BLOOM_CAPACITY", "1e6"),
        ("NEARDUP_BLOOM_CAPACITY", "True"),
        ("NEARDUP_BLOOM_CAPACITY", "10000000001"),
        ("NEARDUP_BLOOM_ERROR_RATE", "0"),
        ("NEARDUP_BLOOM_ERROR_RATE", "0.6"),
        ("NEARDUP_BLOOM_ERROR_RATE", "NaN"),
        ("NEARDUP_STRIP_PARAMS", "*"),
        ("NEARDUP_STRIP_PARAMS", "utm_*,*"),
        ("NEARDUP_STRIP_PARAMS", '["utm_*", 5]'),
        ("NEARDUP_STRIP_PARAMS", '["utm_*", "ref"'),
        ("NEARDUP_STRIP_PARAMS", '[{"utm": 1}]'),
        ("NEARDUP_WORKERS", "65"),
        ("NEARDUP_WORKERS", "-1"),
        ("NEARDUP_WORKERS", "many"),
        ("NEARDUP_MAX_BODY_BYTES", "10"),
        ("NEARDUP_MAX_TEXT_CHARS", "all"),
        ("NEARDUP_PAGE_TIMEOUT", "-1"),
        ("NEARDUP_PAGE_TIMEOUT", "nan"),
        ("NEARDUP_PAGE_TIMEOUT", "soon"),
        ("NEARDUP_PAGE_MEMORY", "1.5"),
        ("NEARDUP_PAGE_MEMORY", "-5"),
        ("NEARDUP_PAGE_MEMORY", "1GB"),
        ("NEARDUP_FLUSH_INTERVAL", "-1"),
        ("NEARDUP_FLUSH_INTERVAL", "inf"),
        ("NEARDUP_KEEP_TEXT", "-1"),
        ("NEARDUP_KEEP_TEXT", "20k"),
        ("NEARDUP_STORAGE", "disk"),
        ("NEARDUP_STORAGE", "my state.MyState"),
        ("NEARDUP_STORAGE", "myproject."),
        ("NEARDUP_STORAGE", ".MyState"),
        ("NEARDUP_REDIS_URL", "localhost:6379"),
        ("NEARDUP_KEY_PREFIX", " shared"),
        ("NEARDUP_REDIS_ON_ERROR", "ignore"),
        ("NEARDUP_REDIS_TIMEOUT", "0"),
        ("NEARDUP_REDIS_TIMEOUT", "601"),
        ("NEARDUP_LEASE_TIMEOUT", "0.5"),
    ],
)
def test_bad_command_line_strings_name_the_setting(name: str, text: str) -> None:
    with pytest.raises(ConfigError) as info:
        NearDupConfig.from_settings(cmdline(**{name: text}))
    assert info.value.setting == name
    assert info.value.value == text or name == "NEARDUP_BACKEND_PARAMS"  # parsed by then
    assert str(info.value).startswith(f"{name}=")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        # what Scrapy's getters would quietly bend
        ("NEARDUP_ENABLED", 2),  # getbool: True
        ("NEARDUP_ENABLED", 0.5),  # getbool: False
        ("NEARDUP_DEBUG", []),  # getbool: TypeError
        ("NEARDUP_BLOOM_CAPACITY", True),  # getint: 1
        ("NEARDUP_MIN_TOKENS", 2.5),  # getint: 2
        ("NEARDUP_WORKERS", float("inf")),  # getint: OverflowError
        ("NEARDUP_THRESHOLD", True),  # getfloat: 1.0
        ("NEARDUP_REDIS_TIMEOUT", 10**400),  # getfloat: OverflowError
        ("NEARDUP_BLOOM_ERROR_RATE", float("nan")),
        ("NEARDUP_BACKEND_PARAMS", [("num_perm", 256)]),  # getdict: a dict
        ("NEARDUP_BACKEND_PARAMS", {1: 2}),
        ("NEARDUP_STRIP_PARAMS", {"utm_*": 1}),  # getlist: its keys
        ("NEARDUP_STRIP_PARAMS", {"utm_*"}),  # getlist: in no particular order
        ("NEARDUP_STORAGE", 5),
    ],
)
def test_python_values_scrapy_would_bend_are_refused(name: str, value: object) -> None:
    with pytest.raises(ConfigError) as info:
        config(**{name: value})
    assert info.value.setting == name


def test_python_values_of_the_right_kind() -> None:
    c = config(
        NEARDUP_ENABLED=1,
        NEARDUP_DEBUG=1,
        NEARDUP_BLOOM_CAPACITY=1e6,  # a float that is an integer
        NEARDUP_REDIS_TIMEOUT=3,
        NEARDUP_STRIP_PARAMS=("utm_*",),
        NEARDUP_BACKEND_PARAMS={"num_perm": 64},
    )
    assert (c.enabled, c.debug, c.bloom_capacity, c.redis_timeout) == (True, True, 10**6, 3.0)
    assert type(c.bloom_capacity) is int and type(c.redis_timeout) is float
    assert c.strip_params == ("utm_*",)
    assert config(NEARDUP_STRIP_PARAMS=[]).strip_params == ()


def test_a_plain_mapping_or_settings() -> None:
    assert NearDupConfig.from_settings({}) == NearDupConfig.from_settings(Settings())
    c = NearDupConfig.from_settings({"NEARDUP_DEBUG": "true", "NEARDUP_THRESHOLD": None})
    assert c.debug and c.threshold is None
    with pytest.raises(TypeError):
        NearDupConfig.from_settings(["NEARDUP_DEBUG"])  # type: ignore[arg-type]


def test_the_higher_priority_of_jobdir_and_state_dir_wins(tmp_path: Path) -> None:
    job, state = str(tmp_path / "job"), str(tmp_path / "state")
    settings = Settings({"NEARDUP_STATE_DIR": state})  # the project's settings
    settings.set("JOBDIR", job, priority="cmdline")
    assert state_dir_from(settings) == tmp_path / "job" / "neardup"
    assert NearDupConfig.from_settings(settings).state_dir == tmp_path / "job" / "neardup"
    settings = Settings({"JOBDIR": job})
    settings.set("NEARDUP_STATE_DIR", state, priority="cmdline")
    assert NearDupConfig.from_settings(settings).state_dir == tmp_path / "state"
    # a mapping has no priorities: the more specific setting wins
    assert state_dir_from({"JOBDIR": job, "NEARDUP_STATE_DIR": state}) == tmp_path / "state"
    assert state_dir_from(cmdline(JOBDIR="")) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [("True", True), ("true", True), ("1", True), ("False", False), ("false", False), ("0", False)],
)
def test_booleans_mean_what_they_mean_to_scrapy(text: str, expected: bool) -> None:
    settings = cmdline(NEARDUP_ENABLED=text, NEARDUP_URL_FILTER=text)
    assert settings.getbool("NEARDUP_ENABLED") is expected  # Scrapy's own reading
    assert enabled(settings) is expected
    assert enabled({"NEARDUP_ENABLED": text}) is expected
    assert bool_setting(settings, "NEARDUP_URL_FILTER", not expected) is expected
    assert NearDupConfig.from_settings(settings).enabled is expected


def test_enabled_defaults_to_true_and_refuses_what_scrapy_would_bend() -> None:
    assert enabled(Settings()) is True
    assert enabled({"NEARDUP_ENABLED": None}) is True
    assert bool_setting({}, "NEARDUP_DEBUG", False) is False
    for bad in ("yes", "off", 2, [], "2"):
        with pytest.raises(ConfigError, match="NEARDUP_ENABLED"):
            enabled({"NEARDUP_ENABLED": bad})


@pytest.mark.parametrize(
    ("cores", "busy", "expected"),
    [(2, 0.3, 2), (2, 0.6, 1), (2, 1.2, 1), (2, 5.0, 1), (16, 0.0, 4), (4, 2.4, 2), (4, 0.0, 4)],
)
def test_default_workers_are_the_free_cores(monkeypatch, cores, busy, expected) -> None:
    """NEARDUP_WORKERS's default: the cores this process may use, less those busy now
    (rounded); at least 1, at most 4."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    monkeypatch.setattr(cores_module, "_busy_measured", None)
    monkeypatch.setattr(cores_module, "busy_cores", lambda cpus: busy)
    assert default_workers() == expected
    assert NearDupConfig.from_settings({}).workers == expected


def test_default_workers_fall_back_on_the_load_average(monkeypatch) -> None:
    """Where /proc/stat cannot be read, the 1-minute load average says what is busy."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(cores_module, "_busy_measured", None)
    monkeypatch.setattr(cores_module, "_busy_ticks", lambda cpus: None)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.2, 0.5, 0.5))
    assert default_workers() == 1


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="reads /proc/stat")
def test_busy_cores_counts_a_process_that_spins_now() -> None:
    """The measure sees work running now (a child spinning on one core), which a load
    average that decays over minutes would only half see."""
    cpus = set(os.sched_getaffinity(0))
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)  # started and running
        busy = busy_cores(cpus, seconds=0.3)
    finally:
        spinner.kill()
        spinner.wait()
    assert busy is not None and 0.7 <= busy <= len(cpus)


def test_a_given_worker_count_measures_nothing(monkeypatch) -> None:
    """The free cores are measured (0.1 s) only when NEARDUP_WORKERS is unset."""

    def measured(cpus: set[int]) -> float:
        raise AssertionError("measured although NEARDUP_WORKERS was given")

    monkeypatch.setattr(cores_module, "_busy_measured", None)
    monkeypatch.setattr(cores_module, "busy_cores", measured)
    assert NearDupConfig.from_settings({"NEARDUP_WORKERS": 3}).workers == 3


def test_a_misspelt_setting_is_named_with_the_closest_known_one(caplog) -> None:
    from scrapy.utils.test import get_crawler

    from scrapy_neardup.config import unknown_settings
    from scrapy_neardup.state import NearDupState

    assert unknown_settings({"NEARDUP_BACKNED": "simhash", "NEARDUP_BACKEND": "minhash"}) == [
        ("NEARDUP_BACKNED", "NEARDUP_BACKEND")
    ]
    assert unknown_settings({"NEARDUP_FROBNICATE": 1}) == [("NEARDUP_FROBNICATE", None)]
    assert unknown_settings({"JOBDIR": "x", "NEARDUP_KEEP_TEXT": 5}) == []
    crawler = get_crawler(settings_dict={"NEARDUP_KEEPTEXT": 100, "NEARDUP_WORKERS": 0})
    with caplog.at_level("WARNING"):
        state = NearDupState.from_crawler(crawler)
    state.close()
    assert "NEARDUP_KEEPTEXT is not a setting of ours; did you mean NEARDUP_KEEP_TEXT?" in (
        caplog.text
    )
