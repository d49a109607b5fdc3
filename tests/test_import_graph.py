"""dpkit's import graph has no cycle: every ``import dpkit...``, ``from dpkit... import``
and relative import, at module level AND inside functions, is an edge.

An import placed inside a function hides a circle from Python (it runs later)
but not from the design: two modules that need each other are one module, or
lack a third below both. The graph is built from the source (``ast``), so the
test imports nothing; on failure it prints each cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dpkit"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "_vendor" not in p.parts}


def _resolve(name: str, known: set[str]) -> str | None:
    """The known module ``name`` refers to: itself, or the nearest enclosing package."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Every dpkit module that ``name`` imports, wherever the import statement stands."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names if alias.name.split(".")[0] == "dpkit"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] != "dpkit":
                continue
            # "from dpkit.x import y" imports the module dpkit.x.y when y is one, else names of dpkit.x
            targets = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else module
                       for alias in node.names]
        else:
            continue
        for target in targets:
            resolved = _resolve(target, known)
            if resolved is not None and resolved != name:
                found.add(resolved)
    return found


def import_graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports_of(name, path, known) for name, path in mods.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each as one cycle through it.

    A package is the module of its ``__init__``: ``from dpkit.privacy import X``
    inside ``dpkit/privacy/ledger.py`` is an edge to ``dpkit.privacy``, which
    imports ``ledger`` back, and that is a cycle too.
    """
    edges = {a: set(bs) for a, bs in graph.items()}
    index, low, stack, on_stack, components = {}, {}, [], set(), []
    counter = [0]

    def strongconnect(v):  # iterative Tarjan (deep import chains)
        work = [(v, iter(sorted(edges[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            strongconnect(v)
    return [_one_cycle(edges, component) for component in components]


def _one_cycle(edges, component: list[str]) -> list[str]:
    """A shortest cycle through the component's first module (breadth-first), for the failure message."""
    members, start = set(component), component[0]
    previous, frontier = {start: None}, [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(edges[node] & members):
                if child == start:
                    path = [node]
                    while previous[path[-1]] is not None:
                        path.append(previous[path[-1]])
                    return [start] + path[::-1][1:] + [start] if len(path) > 1 else [start, node, start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    return component


def test_the_graph_sees_function_level_and_relative_imports():
    graph = import_graph()
    assert "dpkit.privpred.decode" in graph["dpkit.privpred.jobs"]     # a module-level import
    assert "dpkit.privpred.ray_executor" in graph["dpkit.privpred.executors"]
    known = set(modules())
    sample = ast.parse("def f():\n    from dpkit.seeds import child\n    from . import decode\n")
    path = PACKAGE / "privpred" / "_probe.py"
    try:
        path.write_text(ast.unparse(sample))
        found = imports_of("dpkit.privpred._probe", path, known | {"dpkit.privpred._probe"})
    finally:
        path.unlink()
    assert found == {"dpkit.seeds", "dpkit.privpred.decode"}


def test_the_cycle_finder_finds_a_hidden_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "p": {"p.x"}, "p.x": {"p"}, "q": set()}
    assert sorted(cycles(graph)) == [["a", "b", "c", "a"], ["p", "p.x", "p"]]


def test_dpkit_has_no_import_cycle():
    found = cycles(import_graph())
    assert not found, "import cycles (module -> module it imports -> ...):\n" + "\n".join(
        "  " + " -> ".join(cycle) for cycle in found)
