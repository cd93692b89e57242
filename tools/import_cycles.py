"""No import cycle between the application's modules (``make lint``).

import-linter's contracts (``.importlinter``) keep the rooms in layers and their
sub-packages acyclic; this check goes further, to single modules: it builds the
import graph with grimp (import-linter's graph library), imports inside functions
included, and fails on any strongly connected component of more than one module.
Migrations are left out (Django loads them, nothing imports them).

Usage: python tools/import_cycles.py [PACKAGE ...]
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

import grimp

PACKAGES = ("qaportal", "campaigns", "linking", "validation", "frontend")


def import_cycles(packages: Iterable[str] = PACKAGES) -> list[list[str]]:
    """The groups of modules that import each other in a circle (empty: none)."""
    graph = grimp.build_graph(*packages, include_external_packages=False)
    modules = sorted(m for m in graph.modules if ".migrations" not in m)
    edges = {
        m: sorted(i for i in graph.find_modules_directly_imported_by(m) if ".migrations" not in i)
        for m in modules
    }
    # Tarjan's strongly connected components, iteratively (no recursion limit).
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    counter = 0
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            targets = edges.get(node, [])
            if i < len(targets):
                work.append((node, i + 1))
                target = targets[i]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return groups


def main(argv: list[str]) -> int:
    cycles = import_cycles(argv or PACKAGES)
    for group in cycles:
        print("import cycle:", " <-> ".join(group))
    if not cycles:
        print("No import cycles between application modules.")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
