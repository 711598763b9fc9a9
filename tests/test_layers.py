"""The package's layers (``docs/design.md#layers``): no module imports one of a higher layer,
the Scrapy components import none of each other, and no module-level import cycle.

Every import counts, at module level or in a function, but those under ``if TYPE_CHECKING:``
(which never run). A module no entry of :data:`LAYERS` places fails until it is placed.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "scrapy_neardup"
ROOT = PACKAGE.name

#: Module name (relative to the package; a package places its modules too) -> layer rank.
#: A module may import modules of its own rank or lower.
LAYERS: dict[str, int] = {
    # leaves every layer may use: errors, request meta keys, the refusal of a crawl that
    # cannot start, awaiting futures on the crawl's loop, the cores free for workers
    "exceptions": 0,
    "meta": 0,
    "start": 0,
    "twisted_futures": 0,
    "cores": 0,
    # text features; canonical URLs; a page's main text
    "text": 1,
    "main_text": 1,
    "stopwords": 1,
    "urls": 1,
    # signature maths, candidates and the decision
    "backends": 2,
    # where buckets, bits, signatures and the state database live
    "storage": 3,
    # the engine, and the workers that extract and sign pages for it
    "deduplicator": 4,
    "index": 4,
    "extraction": 4,
    "workers": 4,
    "page_limits": 4,
    # the recorded frontier, the requests it writes, durable feeds
    "frontier": 5,
    "request_codec": 5,
    "feeds": 5,
    # the settings table, the config read by it, what the config builds
    "settings": 6,
    "config": 6,
    "factories": 6,
    "components": 6,
    # one state per crawler
    "state": 7,
    # the Scrapy components: none imports another (see COMPONENTS)
    "dupefilter": 8,
    "middlewares": 8,
    "pipeline": 8,
    "leases": 8,
    # what a user starts: the add-on, commands, reports, the package's lazy names
    "addon": 9,
    "commands": 9,
    "cli": 9,
    "report": 9,
    "report_html": 9,
    "__init__": 9,
}
#: The rank whose modules are independent Scrapy components: they share lower modules only.
COMPONENTS = 8


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([ROOT, *parts])


MODULES: dict[str, Path] = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def rank(module: str) -> int | None:
    """The rank of ``module`` by its longest placed prefix; None if none places it."""
    if module == ROOT:
        return LAYERS.get("__init__")
    parts = module.removeprefix(ROOT + ".").split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in LAYERS:
            return LAYERS[prefix]
    return None


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(module: str, name: str | None) -> str | None:
    """The package module an import of ``module`` (``from module import name``) loads."""
    if name is not None and f"{module}.{name}" in MODULES:
        return f"{module}.{name}"
    while module and module not in MODULES:
        module = module.rpartition(".")[0]
    return module or None


def imports(module: str) -> list[tuple[str, int, bool]]:
    """``(imported package module, line, at module level)`` for each import of ``module``."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[tuple[str, int, bool]] = set()

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for stmt in child.orelse:
                    visit_one(stmt, top)
            else:
                visit_one(child, top)

    def visit_one(node: ast.AST, top: bool) -> None:
        names: list[tuple[str, str | None]] = []
        if isinstance(node, ast.Import):
            names = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*here, *([node.module] if node.module else [])])
            names = [(base, alias.name) for alias in node.names]
        else:
            in_function = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(node, top and not in_function)
            return
        for imported, name in names:
            if imported == ROOT or imported.startswith(ROOT + "."):
                target = _resolve(imported, name)
                if target is not None and target != module:
                    found.add((target, node.lineno, top))

    visit(ast.parse(path.read_text(encoding="utf-8")), True)
    return sorted(found)


def _top(module: str) -> str:
    """The package's top-level module or subpackage that ``module`` is in."""
    return module.split(".")[1] if "." in module else module


def test_every_module_is_placed_in_a_layer() -> None:
    unplaced = [m for m in MODULES if rank(m) is None]
    assert not unplaced, f"add to LAYERS: {unplaced}"


def test_no_module_imports_a_higher_layer_or_another_component() -> None:
    wrong = []
    for module in MODULES:
        here = rank(module)
        for target, line, _ in imports(module):
            there = rank(target)
            if here is None or there is None:
                continue  # reported by the test above
            if there > here or (here == there == COMPONENTS and _top(target) != _top(module)):
                wrong.append(f"{module}:{line} (layer {here}) imports {target} (layer {there})")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycle_at_module_level() -> None:
    graph = {m: sorted({t for t, _, top in imports(m) if top}) for m in MODULES}
    cycles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                cycles.append(" -> ".join([*path[path.index(nxt) :], nxt]))
            elif nxt not in state:
                walk(nxt)
        path.pop()
        state[node] = 2

    for module in graph:
        if module not in state:
            walk(module)
    assert not cycles, "\n".join(cycles)
