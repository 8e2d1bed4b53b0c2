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
UPPER = ("mcp_memory.service", "mcp_memory.searching", "mcp_memory.composition", "mcp_memory.server",
         "mcp_memory.console", "mcp_memory.cli", "mcp_memory.capture", "mcp_memory.decisions", "mcp_memory.hookline")
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


# --- the service is the one door to the repository ---------------------------------------------------
# The transports (DESIGN.md: MCP server, web console, hooks and capture) and the command line
# (cli.py, cli_common.py and the subcommand modules: capture/cli.py, console/cli.py,
# decisions/cli.py) reach the memories through the service (its rules: permissions, scope,
# validation), never the SQL below it.
TRANSPORTS = ("mcp_memory.server", "mcp_memory.console", "mcp_memory.capture", "mcp_memory.cli",
              "mcp_memory.decisions.cli")
BELOW_THE_SERVICE = ("mcp_memory.repository", "mcp_memory.retrieval")
# What a transport may use below the service, and why: credentials are checked before there is a
# principal for the service to act for, and the probes read no tenant's data.
BESIDE_THE_SERVICE = {
    "mcp_memory.repository.api_keys": "keys are checked before there is a principal",
    "mcp_memory.repository.console_sessions": "the console's sign-in and its sessions",
    "mcp_memory.repository.operations": "/ready and /metrics read no tenant's data",
}
# Imports and `.repo` reads that skip the service in modules another change owns, each waiting for
# a service method: an entry whose skip is gone fails the test, so it cannot outlive its fix. Empty
# is the goal (`import` and `export` reach a user's whole store through `service.whole_store`).
SKIPS_WAITING: set[tuple[str, str]] = set()


def _repo_reads(path: Path) -> bool:
    """Whether a module reads `.repo` off an object other than itself (`service.repo`)."""
    return any(isinstance(node, ast.Attribute) and node.attr == "repo"
               and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
               for node in ast.walk(ast.parse(path.read_text(), filename=str(path))))


def skips_of_the_service() -> set[tuple[str, str]]:
    graph, modules = import_graph(), _modules()
    found = {(name, target) for name, targets in graph.items() if name.startswith(TRANSPORTS)
             for target in targets if target.startswith(BELOW_THE_SERVICE) and target not in BESIDE_THE_SERVICE}
    return found | {(name, ".repo") for name, path in modules.items()
                    if name.startswith(TRANSPORTS) and _repo_reads(path)}


def test_the_checker_sees_a_read_of_another_objects_repository(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("async def page(service, p):\n    return await count(service.repo, p)\n")
    (tmp_path / "b.py").write_text("class S:\n    def __init__(self, repo):\n        self.repo = repo\n")
    assert _repo_reads(tmp_path / "a.py") and not _repo_reads(tmp_path / "b.py")


def test_transports_reach_the_repository_only_through_the_service() -> None:
    found = skips_of_the_service()
    stale = SKIPS_WAITING - found
    assert not stale, f"these skips are gone: remove them from SKIPS_WAITING: {sorted(stale)}"
    wrong = sorted(found - SKIPS_WAITING)
    assert not wrong, "go through a service method instead of: " + "; ".join(f"{a} -> {b}" for a, b in wrong)


# --- one composition root ------------------------------------------------------------------------
# composition.py builds the repository, the service and the decisions worker complete; a transport
# builds through it (tests and benchmarks may build a service by hand), and nothing wires one part
# into another afterwards by setting an attribute on it.
# Transports that still open a service themselves (MemoryService.open, the same service
# composition.py builds without a worker), in modules another change owns. Empty is the goal.
BUILDS_WAITING: set[str] = set()
# Names of the parts composition.py builds: an assignment to an attribute of an object of one of
# these names, other than `self`, wires it after construction.
PARTS = {"service", "repo", "repository", "worker", "workers", "decider", "provider", "vectors", "statistics",
         "structure", "sessions", "cursors", "review", "overview", "versions", "entities", "house", "state"}
# Assignments that wire a part after construction, in modules another change owns. Empty is the
# goal: the sampling sessions (server/sampling.py), which exist before the database and so before
# the worker that listens to them, take its subscription as the worker is built.
WIRED_AFTER: set[tuple[str, str]] = set()


def _builds_a_service(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call):
            fn = node.func
            if isinstance(fn, ast.Name) and fn.id == "MemoryService":
                return True
            if isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name) and fn.value.id == "MemoryService":
                return True
    return False


def _wirings(path: Path) -> set[str]:
    """`owner.attribute` for each assignment to an attribute of a part that is not the assigning
    object itself (`service.settle = …`, `self.service.repo.x = …`; not `self.repo = …`)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else [])
        while any(isinstance(t, ast.Tuple | ast.List | ast.Starred) for t in targets):  # a, b.c = …
            targets = [e for t in targets for e in (t.elts if isinstance(t, ast.Tuple | ast.List)
                                                     else [t.value] if isinstance(t, ast.Starred) else [t])]
        for t in targets:
            if isinstance(t, ast.Attribute):
                owner = t.value
                name = (owner.id if isinstance(owner, ast.Name)
                        else owner.attr if isinstance(owner, ast.Attribute) else None)
                if name is not None and name not in ("self", "cls") and name.lstrip("_") in PARTS:
                    found.add(f"{name}.{t.attr}")
    return found


def test_the_checker_sees_wiring_after_construction(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def wire(service, worker, repo):\n    service.settle = worker.settle\n"
                                   "    self.service.repo.attempts = 3\n    repo.kinds |= {'turn'}\n"
                                   "    self.repo = repo\n    report.count = 1\n    n, worker.name = 1, 'w'\n")
    assert _wirings(tmp_path / "a.py") == {"service.settle", "repo.attempts", "repo.kinds", "worker.name"}
    (tmp_path / "b.py").write_text("x = MemoryService.open(db, s)\n")
    assert _builds_a_service(tmp_path / "b.py") and not _builds_a_service(tmp_path / "a.py")


def test_parts_are_built_complete_in_one_place() -> None:
    modules = _modules()
    builders = {name for name, path in modules.items()
                if name.startswith((*TRANSPORTS, "mcp_memory.cli")) and _builds_a_service(path)}
    assert not BUILDS_WAITING - builders, f"remove from BUILDS_WAITING: {sorted(BUILDS_WAITING - builders)}"
    assert not builders - BUILDS_WAITING, f"build through composition.py instead: {sorted(builders - BUILDS_WAITING)}"
    wired = {(name, w) for name, path in modules.items() for w in _wirings(path)}
    assert not WIRED_AFTER - wired, f"remove from WIRED_AFTER: {sorted(WIRED_AFTER - wired)}"
    assert not wired - WIRED_AFTER, "pass these through a constructor (composition.py) instead: " + "; ".join(
        f"{a}: {b}" for a, b in sorted(wired - WIRED_AFTER))
