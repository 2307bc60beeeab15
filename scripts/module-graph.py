#!/usr/bin/env python3
"""Print the dependency graph between src/'s top-level modules and fail on any cycle.

A module depends on another when its non-test code names `crate::<other>`. Comments and
`#[cfg(test)]` code are ignored: tests may look anywhere, the pipeline must flow one way.
Usage: scripts/module-graph.py [src-dir]
"""
import collections
import os
import re
import sys

src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src")
edges = collections.defaultdict(set)
for root, _, files in os.walk(src):
    for name in files:
        if not name.endswith(".rs"):
            continue
        path = os.path.join(root, name)
        top = os.path.relpath(path, src).split(os.sep)[0].removesuffix(".rs")
        parts = os.path.relpath(path, src).split(os.sep)
        # Test-only files (`tests.rs`, `tests/`) are compiled under `#[cfg(test)]`.
        if top in ("lib", "main") or "tests" in parts or "tests.rs" in parts:
            continue
        code = open(path, encoding="utf-8").read().split("#[cfg(test)]")[0]
        code = re.sub(r"//[^\n]*", "", code)
        edges[top] |= {m for m in re.findall(r"crate::([a-z_]+)", code) if m != top}


def reaches(start, goal):
    seen, todo = set(), [start]
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt == goal:
                return True
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


cycles = [(a, b) for a in sorted(edges) for b in sorted(edges[a]) if reaches(b, a)]
for module in sorted(edges):
    print(f"{module:9} -> {', '.join(sorted(edges[module])) or '(nothing)'}")
for a, b in cycles:
    print(f"cycle: {a} -> {b} -> ... -> {a}")
sys.exit(1 if cycles else 0)
