"""The package's import graph has no circles. Every import counts, including those inside
functions and under TYPE_CHECKING: a circle hidden in a function still means two modules that
cannot be understood, tested or moved apart, and a helper both sides need belongs lower down."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "mcp_memory"

# Imports that close a circle and wait for their fix in a module another change owns; without them
# the graph has no circle. Empty is the goal: an entry whose import is gone fails the test, so it
# cannot outlive its fix.
ALLOWED: set[tuple[str, str]] = set()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _outside(path: Path) -> set[str]:
    """Top-level names of what a module imports from outside the package (`mcp`, `starlette`, …)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.partition(".")[0])
    return found - {"mcp_memory"}


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules this one imports; `from . import x` names submodule x when there is one."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            targets = [f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in known else origin
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # `import a.b.c` of a name inside a module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[tuple[str, ...]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(tuple(sorted(component)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_the_checker_finds_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [("a", "b", "c")]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_relative_lazy_and_type_checking_imports() -> None:
    graph = import_graph()
    assert "mcp_memory.config" in graph["mcp_memory.cli"]  # from .config import ...
    assert "mcp_memory.repository.jobs" in graph["mcp_memory.repository.memory_store"]  # from . import jobs
    assert "mcp_memory.decisions.doctor" in graph["mcp_memory.db.doctor"]  # inside diagnose()


def test_no_import_circles() -> None:
    graph = import_graph()
    stale = {(a, b) for a, b in ALLOWED if b not in graph.get(a, set())}
    assert not stale, f"these imports are gone: remove them from ALLOWED: {sorted(stale)}"
    pruned = {name: targets - {b for a, b in ALLOWED if a == name} for name, targets in graph.items()}
    found = cycles(pruned)
    assert not found, "import circles (move what both sides need down a layer): " + "; ".join(
        " <-> ".join(c) for c in found)


# Where each outside library may be imported: MCP only in the server, HTTP serving only in the
# server and the console (DESIGN.md: nothing below the service knows about MCP or HTTP).
CONFINED = {
    "mcp": ("mcp_memory.server",),
    "mcp_types": ("mcp_memory.server",),
    "starlette": ("mcp_memory.server", "mcp_memory.console"),
    "uvicorn": ("mcp_memory.server", "mcp_memory.console"),
}
LOWER = ("mcp_memory.repository", "mcp_memory.retrieval", "mcp_memory.db", "mcp_memory.embeddings",
         "mcp_memory.telemetry")
UPPER = ("mcp_memory.service", "mcp_memory.server", "mcp_memory.console", "mcp_memory.cli", "mcp_memory.capture",
         "mcp_memory.decisions", "mcp_memory.hookline")
# `mcp-memory doctor` reports on every layer, the capture status file and the decisions provider included.
REACHES_UP = {"mcp_memory.db.doctor"}


def test_mcp_and_http_stay_in_their_layers() -> None:
    wrong = [f"{name} imports {lib}" for name, path in _modules().items() for lib in sorted(_outside(path))
             if lib in CONFINED and not name.startswith(CONFINED[lib])]
    assert not wrong, "\n".join(wrong)


def test_lower_layers_do_not_import_upper_ones() -> None:
    graph = import_graph()
    wrong = [f"{name} imports {target}" for name, targets in sorted(graph.items())
             if name.startswith(LOWER) and name not in REACHES_UP
             for target in sorted(targets) if target.startswith(UPPER)]
    assert not wrong, "\n".join(wrong)
    unneeded = [name for name in REACHES_UP if not any(t.startswith(UPPER) for t in graph[name])]
    assert not unneeded, f"exceptions no longer needed, remove them from REACHES_UP: {unneeded}"
