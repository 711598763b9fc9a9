"""The examples in the public classes' docstrings run as written."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize("module", ["scrapy_neardup.deduplicator", "scrapy_neardup.config"])
def test_docstring_examples_run(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
