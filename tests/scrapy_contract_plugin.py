"""pytest plugin for ``tests/test_scrapy_contract.py``: runs Scrapy's own ``test_dupefilters.py``
against scrapy-neardup.

Loaded with ``-p scrapy_contract_plugin`` in a child pytest that runs a ``tests/`` package
extracted from the installed Scrapy's sdist; not collected by our own suite. The mode comes from
``SCRAPY_NEARDUP_CONTRACT_MODE``:

``scrapy``
    nothing substituted: Scrapy's file against Scrapy's filter, to show the harness works.
``class``
    ``NearDupDupeFilter`` as a drop-in ``DUPEFILTER_CLASS``: while the test module is imported,
    ``scrapy.dupefilters.RFPDupeFilter`` is ours, so its ``from scrapy.dupefilters import
    RFPDupeFilter`` (used directly and as the base of its test subclasses) binds our class; and
    the default ``DUPEFILTER_CLASS`` names our class, as a user's settings would. The attribute is
    restored after the import, so Scrapy's own code (e.g. its check in ``RFPDupeFilter.__init__``
    for an overridden ``request_fingerprint()``) still compares against its own class.
``addon``
    as ``class`` for the test module, plus ``ADDONS = {"scrapy_neardup.Addon": 500}`` for every
    crawler; ``DUPEFILTER_CLASS`` keeps Scrapy's default, which the add-on has to replace.

In every mode each scheduler the tests build is recorded (dupefilter class, add-on loaded) and
written as JSON to ``SCRAPY_NEARDUP_CONTRACT_REPORT``, so the outer test can check that the
substitution really happened.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

MODES = ("scrapy", "class", "addon")
MODE_ENV = "SCRAPY_NEARDUP_CONTRACT_MODE"
REPORT_ENV = "SCRAPY_NEARDUP_CONTRACT_REPORT"
ADDON_PATH = "scrapy_neardup.Addon"
DUPEFILTER_PATH = "scrapy_neardup.dupefilter.NearDupDupeFilter"
# Extraction workers are processes; a dupefilter opened outside a crawl (as these tests do) gets
# no spider_closed to stop them. Extraction is not what this contract is about.
EXTRA_DEFAULTS: dict[str, Any] = {"NEARDUP_WORKERS": 0}

_mode = ""
_ours: type | None = None
_current = "<outside a test>"
_report: dict[str, Any] = {"mode": "", "schedulers": {}, "modules": {}, "errors": []}


def _qualname(obj: Any) -> str:
    cls = obj if isinstance(obj, type) else type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def _install_reactor_for_scrapy_2_13() -> None:
    """Scrapy 2.13's ``get_crawler()`` needs a reactor installed (its own test suite installs
    one in its conftest, which this child run does not load); later Scrapy needs none."""
    from scrapy.utils.reactor import install_reactor, is_asyncio_reactor_installed

    try:
        is_asyncio_reactor_installed()
    except RuntimeError:
        install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")


def pytest_configure(config: pytest.Config) -> None:
    global _mode, _ours
    _install_reactor_for_scrapy_2_13()
    _mode = os.environ.get(MODE_ENV, "")
    if _mode not in MODES:
        raise pytest.UsageError(f"{MODE_ENV} must be one of {MODES}, not {_mode!r}")
    _report["mode"] = _mode

    import scrapy.settings.default_settings as defaults
    from scrapy.core.scheduler import Scheduler

    from scrapy_neardup.dupefilter import NearDupDupeFilter

    _ours = NearDupDupeFilter
    if _mode != "scrapy":
        for name, value in EXTRA_DEFAULTS.items():
            setattr(defaults, name, value)
    if _mode == "class":
        defaults.DUPEFILTER_CLASS = DUPEFILTER_PATH
    if _mode == "addon":
        defaults.ADDONS = {**defaults.ADDONS, ADDON_PATH: 500}

    original_init = Scheduler.__init__

    def recording_init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        crawler = getattr(self, "crawler", None) or kwargs.get("crawler")
        addons = getattr(getattr(crawler, "addons", None), "addons", [])
        _report["schedulers"].setdefault(_current, []).append(
            {
                "dupefilter": _qualname(self.df),
                "ours": isinstance(self.df, NearDupDupeFilter),
                "scrapy_rfp": _is_scrapy_rfp(self.df),
                "addon": any(_qualname(addon) == "scrapy_neardup.addon.Addon" for addon in addons),
            }
        )

    Scheduler.__init__ = recording_init  # type: ignore[method-assign]


def _is_scrapy_rfp(df: Any) -> bool:
    from scrapy.dupefilters import RFPDupeFilter

    return isinstance(df, RFPDupeFilter)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    """Import the test module with ``scrapy.dupefilters.RFPDupeFilter`` bound to our class."""
    if _mode == "scrapy" or not isinstance(collector, pytest.Module):
        return (yield)
    import scrapy.dupefilters

    original = scrapy.dupefilters.RFPDupeFilter
    scrapy.dupefilters.RFPDupeFilter = _ours  # type: ignore[misc]
    try:
        return (yield)
    finally:
        scrapy.dupefilters.RFPDupeFilter = original  # type: ignore[misc]


def pytest_collection_finish(session: pytest.Session) -> None:
    import scrapy.dupefilters

    if _ours is not None and scrapy.dupefilters.RFPDupeFilter is _ours:
        _report["errors"].append("scrapy.dupefilters.RFPDupeFilter was not restored")
    for item in session.items:
        module = getattr(item, "module", None)
        if module is not None and module.__name__ not in _report["modules"]:
            _report["modules"][module.__name__] = {
                "file": str(module.__file__),
                "RFPDupeFilter": _qualname(getattr(module, "RFPDupeFilter", None)),
            }


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    global _current
    _current = item.nodeid
    try:
        return (yield)
    finally:
        _current = "<outside a test>"


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get(REPORT_ENV)
    if path:
        Path(path).write_text(json.dumps(_report, indent=1), encoding="utf-8")
