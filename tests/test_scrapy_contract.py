"""Scrapy's own ``tests/test_dupefilters.py``, the contract a ``DUPEFILTER_CLASS`` is held to, run
against ``NearDupDupeFilter``.

The file is taken from the sdist of the installed Scrapy version (downloaded once with pip into
``~/.cache/scrapy-neardup/sdist``; nothing of Scrapy's is kept in this repository) and run in a
child pytest, with ``tests/scrapy_contract_plugin.py`` substituting our class, in three modes:

* ``scrapy``: no substitution, all must pass (the harness itself works);
* ``class``: ``NearDupDupeFilter`` as ``DUPEFILTER_CLASS`` and as the test file's
  ``RFPDupeFilter`` (also the base of its test subclasses);
* ``addon``: as ``class``, plus ``ADDONS = {"scrapy_neardup.Addon": 500}`` in every crawler.

Every test must pass except those in ``INTENDED_DIFFERENCES``, which must fail.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest
import scrapy

import scrapy_neardup

# Scrapy's tests (function names, any parametrisation) that fail by design, with the reason.
INTENDED_DIFFERENCES: dict[str, str] = {
    "test_seenreq_truncated": (
        "it truncates Scrapy's JOBDIR/requests.seen fingerprint file; we keep a Bloom filter "
        "(and its own journal) under JOBDIR/neardup instead"
    ),
    "test_fingerprints_deprecation": (
        "RFPDupeFilter.fingerprints returns the set of seen fingerprints; a Bloom filter keeps "
        "no such set"
    ),
    "test_seenreq_newlines": (
        "Scrapy 2.13's reading of JOBDIR/requests.seen, as test_seenreq_truncated does later"
    ),
}
#: The intended differences a Scrapy release's file has: 2.13's reads requests.seen in
#: test_seenreq_newlines; later ones in test_seenreq_truncated, with a deprecated set too.
INTENDED_FOR_SCRAPY_2_13 = frozenset({"test_seenreq_newlines"})

MODES = ("scrapy", "class", "addon")
SCRAPY_TEST_FILE = "tests/test_dupefilters.py"
#: Warnings are errors in the child run, but for the deprecations Scrapy's file calls for on
#: purpose: Scrapy 2.13's records one with ``catch_warnings(record=True)`` and no filter of
#: its own, which an error filter turns into a failure (later Scrapy uses ``pytest.warns``).
SCRAPY_OWN_DEPRECATIONS = (
    "always::scrapy.exceptions.ScrapyDeprecationWarning:tests.test_dupefilters"
)
PLUGIN = "scrapy_contract_plugin"  # tests/scrapy_contract_plugin.py
OURS = "scrapy_neardup.dupefilter.NearDupDupeFilter"
CACHE_DIR = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "scrapy-neardup" / "sdist"
)
DOWNLOAD_TIMEOUT = 180
RUN_TIMEOUT = 120


# -- the sdist ------------------------------------------------------------------------------------


def _download_command(version: str, dest: Path) -> list[str]:
    return [
        sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
        "--disable-pip-version-check", f"scrapy=={version}", "-d", str(dest),
    ]  # fmt: skip


def _find_sdist(directory: Path, version: str) -> Path | None:
    wanted = f"scrapy-{version}.tar.gz".lower()  # older sdists are named Scrapy-x.y.z.tar.gz
    if directory.is_dir():
        for path in directory.iterdir():
            if path.name.lower() == wanted:
                return path
    return None


def _sdist(version: str) -> Path:
    """The cached sdist of Scrapy ``version``, downloaded when missing or unreadable."""
    found = _find_sdist(CACHE_DIR, version)
    if found is not None:
        try:
            with tarfile.open(found) as tar:
                tar.getmembers()
            return found
        except (tarfile.TarError, OSError, EOFError):
            found.unlink()
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE_DIR, prefix=".download-") as tmp:
        command = _download_command(version, Path(tmp))
        shown = " ".join(command)
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT, check=False
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"downloading Scrapy's sdist timed out after {DOWNLOAD_TIMEOUT}s: {shown}")
        downloaded = _find_sdist(Path(tmp), version)
        if done.returncode != 0 or downloaded is None:
            pytest.fail(
                f"could not download the sdist of the installed Scrapy {version}, needed to run "
                f"its {SCRAPY_TEST_FILE}.\ncommand: {shown}\nexit status: {done.returncode}\n"
                f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
            )
        target = CACHE_DIR / downloaded.name
        os.replace(downloaded, target)  # atomic: a concurrent run never sees half a file
    return target


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported_test_modules(source: str, module: str, is_package: bool) -> set[str]:
    """Modules of Scrapy's ``tests`` package that ``source`` imports at run time (not under
    ``if TYPE_CHECKING``), plus names that may be attributes rather than modules."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)  # e.g. an invalid escape in their code
        tree = ast.parse(source)
    package = module if is_package else module.rpartition(".")[0]
    names: set[str] = set()
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        stack.extend(ast.iter_child_nodes(node))
    return {name for name in names if name == "tests" or name.startswith("tests.")}


def _extract_contract(sdist: Path, dest: Path) -> list[str]:
    """Extract Scrapy's test file and the modules of its ``tests`` package that it needs (found
    by following imports) into ``dest``; return the extracted paths."""
    with tarfile.open(sdist) as tar:
        files = {m.name: m for m in tar.getmembers() if m.isfile()}
        suffix = "/" + SCRAPY_TEST_FILE
        roots = [name[: -len(suffix)] for name in files if name.endswith(suffix)]
        roots = [root for root in roots if root and "/" not in root]
        assert len(roots) == 1, f"{SCRAPY_TEST_FILE} not found (once) in {sdist}: {roots}"
        root = roots[0]

        def member(relative: str) -> tarfile.TarInfo | None:
            return files.get(f"{root}/{relative}")

        wanted = [SCRAPY_TEST_FILE]
        done: set[str] = set()
        while wanted:
            relative = wanted.pop()
            if relative in done:
                continue
            done.add(relative)
            info = member(relative)
            assert info is not None, f"{relative} is missing from {sdist}"
            handle = tar.extractfile(info)
            assert handle is not None
            data = handle.read()
            target = dest / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            parts = relative[: -len(".py")].split("/")
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            for depth in range(1, len(parts)):  # every enclosing package's __init__.py
                wanted.append("/".join([*parts[:depth], "__init__.py"]))
            for name in _imported_test_modules(data.decode("utf-8"), ".".join(parts), is_package):
                path = name.replace(".", "/")
                for candidate in (f"{path}.py", f"{path}/__init__.py"):
                    if member(candidate) is not None:
                        wanted.append(candidate)
                        break
    return sorted(done)


@pytest.fixture(scope="module")
def scrapy_tests(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding the ``tests`` package Scrapy's test file needs, and a pytest.ini."""
    dest = tmp_path_factory.mktemp("scrapy-contract")
    _extract_contract(_sdist(scrapy.__version__), dest)
    (dest / "pytest.ini").write_text("[pytest]\nxfail_strict = true\n", encoding="utf-8")
    return dest


# -- running it ------------------------------------------------------------------------------------


@dataclass
class Outcome:
    test: str  # Class::name[param]
    status: str  # passed, failed, error, skipped
    message: str = ""  # first line of the failure
    text: str = ""  # the traceback

    @property
    def function(self) -> str:
        return self.test.rpartition("::")[2].partition("[")[0]


def _outcomes(junit: Path) -> list[Outcome]:
    outcomes = []
    for case in ET.parse(junit).iter("testcase"):
        test = f"{case.get('classname', '').rpartition('.')[2]}::{case.get('name', '')}"
        status, messages, texts = "passed", [], []
        for kind in ("skipped", "error", "failure"):  # the worst one wins
            for element in case.findall(kind):
                status = "failed" if kind == "failure" else kind
                messages.append((element.get("message") or "").strip().splitlines()[:1])
                texts.append((element.text or "").strip())
        message = " / ".join(line[0] for line in messages if line)
        outcomes.append(Outcome(test, status, message, "\n\n".join(texts)))
    return outcomes


def _run(directory: Path, mode: str) -> tuple[list[Outcome], dict, str]:
    junit = directory / f"junit-{mode}.xml"
    report = directory / f"report-{mode}.json"
    for path in (junit, report):
        path.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    repo_root = Path(scrapy_neardup.__file__).resolve().parents[1]
    env.update(
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",  # only the plugins named below
        PYTHONPATH=os.pathsep.join(
            filter(None, [str(Path(__file__).parent), str(repo_root), env.get("PYTHONPATH")])
        ),
        SCRAPY_NEARDUP_CONTRACT_MODE=mode,
        SCRAPY_NEARDUP_CONTRACT_REPORT=str(report),
    )
    command = [
        sys.executable, "-m", "pytest", "-c", "pytest.ini", "-p", "no:cacheprovider",
        "-p", PLUGIN, "-W", "error", "-W", SCRAPY_OWN_DEPRECATIONS,
        "-rA", "-q", f"--junitxml={junit}", SCRAPY_TEST_FILE,
    ]  # fmt: skip
    ours = sorted(k for k in env if k.startswith(("PYTEST_", "SCRAPY_NEARDUP_", "PYTHONPATH")))
    shown = " ".join([f"cd {directory} &&", *(f"{k}={env[k]}" for k in ours), *command])
    try:
        done = subprocess.run(
            command, cwd=directory, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT,
            check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            f"Scrapy's {SCRAPY_TEST_FILE} ({mode}) timed out after {RUN_TIMEOUT}s\n"
            f"command: {shown}\noutput:\n{exc.stdout!s:.5000}\n{exc.stderr!s:.5000}"
        )
    output = f"command: {shown}\nexit status: {done.returncode}\n{done.stdout}\n{done.stderr}"
    # 0: all passed, 1: some failed; anything else is the harness breaking (usage, interrupt).
    if done.returncode not in (0, 1) or not junit.exists() or not report.exists():
        pytest.fail(f"the child pytest ({mode}) did not run Scrapy's tests\n{output[-10000:]}")
    return _outcomes(junit), json.loads(report.read_text(encoding="utf-8")), output


def _substitution_problems(mode: str, report: dict, directory: Path) -> list[str]:
    """Whatever shows that the child did not test what ``mode`` says it does."""
    problems = list(report["errors"])
    modules = report["modules"]
    if not modules:
        problems.append("no test module was collected")
    for name, module in modules.items():
        if not Path(module["file"]).is_relative_to(directory):
            problems.append(f"{name} came from {module['file']}, not from {directory}")
        want = "scrapy.dupefilters.RFPDupeFilter" if mode == "scrapy" else OURS
        if module["RFPDupeFilter"] != want:
            problems.append(f"{name}.RFPDupeFilter is {module['RFPDupeFilter']}, not {want}")
    built = [(test, df) for test, dfs in report["schedulers"].items() for df in dfs]
    if not built:
        problems.append("no scheduler was built")
    for test, df in built:
        if mode == "scrapy" and df["ours"]:
            problems.append(f"{test}: the dupefilter is ours ({df['dupefilter']})")
        if mode != "scrapy" and df["scrapy_rfp"] and not df["ours"]:
            problems.append(f"{test}: Scrapy's {df['dupefilter']} was not replaced by ours")
        if df["addon"] != (mode == "addon"):
            problems.append(f"{test}: the add-on is {'' if df['addon'] else 'not '}loaded")
    if mode != "scrapy" and not any(df["ours"] for _, df in built):
        problems.append("no scheduler used our dupefilter")
    return problems


def _table(mode: str, outcomes: list[Outcome]) -> str:
    lines = [f"Scrapy {scrapy.__version__} {SCRAPY_TEST_FILE}, mode {mode!r}:"]
    for outcome in outcomes:
        note = f"  {outcome.message[:200]}" if outcome.message else ""
        lines.append(f"  {outcome.status:7} {outcome.test}{note}")
    return "\n".join(lines)


@pytest.mark.parametrize("mode", MODES)
def test_scrapy_dupefilter_contract(scrapy_tests: Path, mode: str) -> None:
    outcomes, report, output = _run(scrapy_tests, mode)
    print(_table(mode, outcomes))  # shown with -rA / -s, and on failure

    problems = [f"substitution: {p}" for p in _substitution_problems(mode, report, scrapy_tests)]
    names = set(INTENDED_DIFFERENCES)
    if scrapy.__version__.startswith("2.13."):
        names &= INTENDED_FOR_SCRAPY_2_13
    else:
        names -= INTENDED_FOR_SCRAPY_2_13
    intended = set() if mode == "scrapy" else names
    unexpected = [o for o in outcomes if o.status != "passed" and o.function not in intended]
    still_passing = [o for o in outcomes if o.status == "passed" and o.function in intended]
    missing = intended - {o.function for o in outcomes}
    if not outcomes:
        problems.append("no test ran")
    problems += [f"{o.status}: {o.test}: {o.message}" for o in unexpected]
    problems += [
        f"passed, but listed in INTENDED_DIFFERENCES ({INTENDED_DIFFERENCES[o.function]}): "
        f"{o.test}; remove it from the list"
        for o in still_passing
    ]
    problems += [
        f"INTENDED_DIFFERENCES names {name}, which Scrapy's file lacks" for name in missing
    ]
    if problems:
        details = "\n\n".join(f"---- {o.test} ({o.status})\n{o.text[-4000:]}" for o in unexpected)
        pytest.fail(
            f"{SCRAPY_TEST_FILE} of Scrapy {scrapy.__version__} against scrapy-neardup, "
            f"mode {mode!r}:\n"
            + "\n".join(f"  {p}" for p in problems)
            + f"\n\n{_table(mode, outcomes)}\n\n{details}\n\n"
            + output.partition("\n")[0],
            pytrace=False,
        )


def test_from_settings_takes_the_fingerprinter_keyword_of_scrapys_filter() -> None:
    """``RFPDupeFilter.from_settings(settings, *, fingerprinter=None)`` (Scrapy 2.13, where
    it is deprecated): the same call builds ours, which then uses the fingerprinter given."""
    from scrapy.settings import Settings
    from scrapy.utils.request import RequestFingerprinter

    from scrapy_neardup.dupefilter import NearDupDupeFilter

    fingerprinter = RequestFingerprinter()
    dupefilter = NearDupDupeFilter.from_settings(Settings(), fingerprinter=fingerprinter)
    assert dupefilter.fingerprinter is fingerprinter
