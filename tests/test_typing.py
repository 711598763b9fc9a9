"""The package type-checks: ``mypy scrapy_neardup`` (configured in pyproject.toml) reports
no error, with the package's dependencies installed (their own annotations are read)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_reports_no_error() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "scrapy_neardup"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
