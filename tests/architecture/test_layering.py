"""The import graph of the installed packages: layers point down only, and no module imports itself back.

Layers, bottom to top: ``offsetops.coordinator_core`` (pure Python) <- ``offsetops.pipelines`` (Spark) <-
``offsetops.checks`` (Great Expectations, asset checks) <- ``offsetops.assets`` (Dagster) <- the command
line (``offsetops`` itself, ``offsetops.cli``, ``offsetops.commands``), alone on top: nothing imports it.
Every import is read from the source, including those inside functions: a deferred import still ties two
modules together.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: Folder in the repository -> the package it installs as (setup.py's mapping).
FOLDERS = {
    "offsetops": "offsetops",
    "coordinator_core": "offsetops.coordinator_core",
    "pipelines": "offsetops.pipelines",
    "checks": "offsetops.checks",
    "assets": "offsetops.assets",
}
LAYER = {
    "offsetops.coordinator_core": 0,
    "offsetops.pipelines": 1,
    "offsetops.checks": 2,
    "offsetops.assets": 3,
    "offsetops": 4,  # the command line, alone on top
}
BARE = {"coordinator_core", "pipelines", "checks", "assets"}


def _modules() -> dict[str, Path]:
    out = {}
    for folder, package in FOLDERS.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            parts = path.relative_to(REPO / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join((package, *parts))] = path
    return out


MODULES = _modules()


def _layer(module: str) -> int:
    """The layer of the longest package prefix (``offsetops.pipelines.x`` is a pipeline, not the CLI)."""
    owner = max((p for p in LAYER if module == p or module.startswith(p + ".")), key=len)
    return LAYER[owner]


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:``: annotations only, never run."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return out


def _imports(module: str, path: Path, *, runtime_only: bool = False) -> list[tuple[str, int]]:
    """(imported module, line) for every import in ``path``, resolved to a module of ours when it is one.

    ``runtime_only`` leaves out imports under ``if TYPE_CHECKING:``, which tie no modules together at run
    time (the cycle check); the layering check counts them, since a type still points at its layer.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skip = _type_checking_only(tree) if runtime_only else set()
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package_of(module, path).split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            for alias in node.names:  # `from pkg import submodule` imports the submodule
                sub = f"{target}.{alias.name}"
                found.append((sub if sub in MODULES else target, node.lineno))
    return found


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in MODULES.items():
        for target, _ in _imports(module, path, runtime_only=True):
            if target in MODULES and target != module:
                graph[module].add(target)
    return graph


def test_the_graph_covers_every_layer() -> None:
    assert {_layer(m) for m in MODULES} == {0, 1, 2, 3, 4}
    assert sum(len(v) for v in _graph().values()) > 100  # the walk found the real imports


def test_no_bare_top_level_imports() -> None:
    """``import pipelines`` works in a checkout and breaks once installed: always ``offsetops.pipelines``."""
    bad = [
        f"{path.relative_to(REPO)}:{line} imports {target}"
        for module, path in MODULES.items()
        for target, line in _imports(module, path)
        if target.split(".")[0] in BARE
    ]
    assert not bad, "\n".join(sorted(set(bad)))


def test_the_core_parses_values_not_command_lines() -> None:
    """argparse belongs to the front ends (the CLI, the Spark jobs and their ``pipelines/cli_args.py``);
    the core offers plain parsers that raise ValueError, which the front ends' argument types wrap."""
    bad = [
        f"{path.relative_to(REPO)}:{line} imports argparse"
        for module, path in MODULES.items()
        if _layer(module) == LAYER["offsetops.coordinator_core"]
        for target, line in _imports(module, path)
        if target == "argparse"
    ]
    assert not bad, "\n".join(sorted(bad))


def test_layers_point_down_only() -> None:
    bad = []
    for module, path in MODULES.items():
        for target, line in _imports(module, path):
            if target in MODULES and _layer(target) > _layer(module):
                bad.append(
                    f"{path.relative_to(REPO)}:{line}: {module} (layer {_layer(module)}) imports "
                    f"{target} (layer {_layer(target)})"
                )
    assert not bad, "\n".join(sorted(set(bad)))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(MODULES):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
    return out


def test_cycle_finder_finds_a_cycle() -> None:
    real = sorted(MODULES)[:3]
    looped = {real[0]: {real[1]}, real[1]: {real[2]}, real[2]: {real[0]}}
    assert _cycles(looped) == [sorted(real)]


@pytest.mark.parametrize(
    "layer",
    [
        "offsetops.coordinator_core",
        "offsetops.pipelines",
        "offsetops.checks",
        "offsetops.assets",
        "offsetops",
    ],
)
def test_no_import_cycles(layer: str) -> None:
    cycles = [c for c in _cycles(_graph()) if any(m == layer or m.startswith(layer + ".") for m in c)]
    assert not cycles, "\n".join(" <-> ".join(c) for c in cycles)
