"""Every first-party import (module level or inside a function) that points up a layer, and every cycle.

Layers: coordinator_core <- pipelines <- checks <- assets <- the CLI.
Usage: python scripts/import_layers.py [ROOT]; exit 1 when any is found.
"""

import ast
import pathlib
import sys

# The CLI sits beside assets at the top: nothing imports it, and `offsetops demo` runs the code location.
RANK = {"coordinator_core": 0, "pipelines": 1, "checks": 2, "assets": 3, "offsetops": 4}
root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
files = {}
for pkg in RANK:
    for f in (root / pkg).rglob("*.py"):
        parts = f.relative_to(root).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
mods = set(files)


def resolve(name):
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name


edges = {}
for mod, f in files.items():
    is_pkg = f.name == "__init__.py"
    for node in ast.walk(ast.parse(f.read_text())):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = mod.split(".") if is_pkg else mod.split(".")[:-1]
                pkg = pkg[: len(pkg) - node.level + 1]
                base = ".".join(pkg + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
        for t in targets:
            r = resolve(t)
            if r and r != mod:
                edges.setdefault(mod, {})[r] = node.lineno
bad = 0
for mod, out in sorted(edges.items()):
    for t, line in sorted(out.items()):
        a, b = mod.split(".")[0], t.split(".")[0]
        if RANK[b] > RANK[a] or (a != b and RANK[a] == RANK[b]):
            print(f"UP {files[mod]}:{line} {mod} -> {t}")
            bad += 1
# cycles, ignoring a submodule's import of its own ancestor package (Python initialises it first)
g = {m: {t for t in out if not m.startswith(t + ".")} for m, out in edges.items()}
idx, low, stack, on, comps, c = {}, {}, [], set(), [], [0]
sys.setrecursionlimit(10000)


def visit(v):
    idx[v] = low[v] = c[0]
    c[0] += 1
    stack.append(v)
    on.add(v)
    for w in g.get(v, ()):
        if w not in idx:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], idx[w])
    if low[v] == idx[v]:
        comp = []
        while True:
            w = stack.pop()
            on.discard(w)
            comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            comps.append(comp)


for v in list(g):
    if v not in idx:
        visit(v)
for comp in comps:
    bad += 1
    print("CYCLE", sorted(comp))
    for m in comp:
        print("   ", m, "->", {t: edges[m][t] for t in g[m] & set(comp)})
sys.exit(1 if bad else 0)
