"""The house's structure, read from the source (imports inside functions included): no import
cycle anywhere under labs/ and instructor/, and the engine (labs/core/engine/) imports neither
the lab kit nor marimo, so it can be read, tested and reused on its own."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREES = ("labs", "instructor")
ENGINE = "labs.core.engine"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """Line numbers of imports inside `if TYPE_CHECKING:` (never executed)."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            lines |= {n.lineno for child in node.body for n in ast.walk(child) if isinstance(n, (ast.Import, ast.ImportFrom))}
    return lines


def imported_names(path: Path) -> set[str]:
    """Every module name a file imports, anywhere in its body: `from a.b import c` gives both
    a.b.c and a.b (c may be a module or a name in a.b); relative imports resolved."""
    tree = ast.parse(path.read_text())
    skipped = _type_checking_lines(tree)
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    names = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skipped:
            continue
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names.add(base)
            names |= {f"{base}.{a.name}" for a in node.names}
    return names


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports. An edge to a package's submodule is to that
    submodule, not to the package's __init__ (a package importing its own submodules is no cycle)."""
    files = {module_name(p): p for tree in TREES for p in (ROOT / tree).rglob("*.py") if "__marimo__" not in p.parts}
    graph = {}
    for name, path in files.items():
        names, edges = imported_names(path), set()
        for imported in names & files.keys():
            submodules = {i for i in names if i.startswith(imported + ".") and i in files}
            edges |= submodules or {imported}
        graph[name] = edges - {name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first == last), or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_cycle_finder_sees_a_lazy_import_cycle():
    """The finder itself: the engine's old cycle (pipeline imported perf inside a function, perf
    imported step, step imported pipeline) is one; a chain is not."""
    graph = {"perf": {"step"}, "step": {"pipeline"}, "pipeline": {"perf"}}
    assert find_cycle(graph) == ["perf", "step", "pipeline", "perf"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_graph_sees_imports_inside_functions():
    graph = import_graph()
    assert f"{ENGINE}.stages.compute" in graph[f"{ENGINE}.pipeline"], "op_costs_from_shape's function-level import"
    assert "instructor.class_dashboard" in graph and len(graph) > 60


def test_no_import_cycle_under_labs_and_instructor():
    cycle = find_cycle(import_graph())
    assert cycle is None, " -> ".join(cycle)


def test_the_engine_imports_neither_the_kit_nor_marimo():
    offending = {}
    for path in (ROOT / "labs" / "core" / "engine").rglob("*.py"):
        bad = {name for name in imported_names(path)
               if (name.startswith("labs") and not name.startswith(ENGINE) and name not in ("labs", "labs.core"))
               or name.split(".")[0] in ("marimo", "plotly")}
        if bad:
            offending[module_name(path)] = sorted(bad)
    assert not offending, offending
