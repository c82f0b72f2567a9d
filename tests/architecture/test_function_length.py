"""Functions stay short enough to read: none is over :data:`MAX_LINES` lines, unless the list below says why.

A function's length is from its ``def`` to its last line (decorators left out, its docstring counted).
A long function is split into named steps; the few that stay long are listed in :data:`ALLOWED` with
the reason, and the list only shrinks: an entry whose function got short (or went away) fails too.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MAX_LINES = 80
#: The product's folders and the runnable scripts beside them.
FOLDERS = (
    "offsetops",
    "coordinator_core",
    "pipelines",
    "checks",
    "assets",
    "deploy",
    "benchmarks",
    "scripts",
)

_REWRITE = (
    "in a file the one run model or the findings model rewrites in parallel: split once that lands, "
    "not beside it"
)
_HOT = "the reload's per-batch hot path: split only with a before/after figure from benchmarks/reload.py"
#: "path:function" -> why it is still longer than MAX_LINES.
ALLOWED: dict[str, str] = {
    "offsetops/commands/expire.py:register": _REWRITE,
    "coordinator_core/records/fold.py:fold_buffer": _HOT,
}


def function_lengths() -> dict[str, int]:
    """``path:function`` (``path:Class.method`` for methods) -> lines, for every function in FOLDERS."""
    out: dict[str, int] = {}
    for folder in FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            if any(part.startswith(".") or part == "build" for part in path.relative_to(REPO).parts):
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            _walk(tree, str(path.relative_to(REPO)), "", out)
    return out


def _walk(node: ast.AST, where: str, prefix: str, out: dict[str, int]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            name = prefix + child.name
            out[f"{where}:{name}"] = max(out.get(f"{where}:{name}", 0), child.end_lineno - child.lineno + 1)  # type: ignore[operator]
            _walk(child, where, name + ".", out)
        elif isinstance(child, ast.ClassDef):
            _walk(child, where, prefix + child.name + ".", out)
        else:
            _walk(child, where, prefix, out)


def test_the_walk_sees_every_function() -> None:
    lengths = function_lengths()
    assert len(lengths) > 1000
    assert lengths["coordinator_core/partitioner.py:partition_for"] < MAX_LINES


def test_functions_stay_short() -> None:
    long = {name: n for name, n in function_lengths().items() if n > MAX_LINES}
    unexplained = sorted(f"{name}: {n} lines" for name, n in long.items() if name not in ALLOWED)
    assert not unexplained, "split these into named steps:\n" + "\n".join(unexplained)


def test_the_allowed_list_only_shrinks() -> None:
    lengths = function_lengths()
    stale = sorted(name for name in ALLOWED if lengths.get(name, 0) <= MAX_LINES)
    assert not stale, "short now (or gone): take them off ALLOWED:\n" + "\n".join(stale)
