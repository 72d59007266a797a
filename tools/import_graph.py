"""Check the package's import graph against its floors: no cycles, no import from a lower floor upward.

    python tools/import_graph.py            # the report; exit 1 when a rule is broken
    python tools/import_graph.py --json     # the same as JSON (edges, floors, cycles, upward imports)

Floors, top to bottom, as docs/development.md draws the flow (cli → api → runner → executors → workflow →
engines → models / faces / video → foundations). A module may import its own floor or any floor below it. Imports
inside functions count too (a lazy import is still a dependency); `if TYPE_CHECKING:` imports do not.
"""
from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

PACKAGE = "facefusion_batch"

# The package's face (`facefusion_batch/__init__.py`) hands on the public API: it stands on the API's floor.
PACKAGE_FLOOR = 8

# First matching prefix wins; the number is the floor (higher = closer to the user).
FLOORS: tuple[tuple[str, int], ...] = (
    ("facefusion_batch.__main__", 10),
    ("facefusion_batch.launch", 10),  # the `ffb` entry point: signal handlers first, then the CLI
    ("facefusion_batch.cli", 9),
    ("facefusion_batch.cli_options", 9),  # the flags of run and watch, made from the settings' declarations
    ("facefusion_batch.bench", 8),
    ("facefusion_batch.api", 8),
    ("facefusion_batch.runner", 7),  # one run's bookkeeping: driver, journal, lock, progress, summary, metrics
    ("facefusion_batch.executors", 6),
    ("facefusion_batch.provenance", 5),
    ("facefusion_batch.workflow", 5),  # one target: processor, image and video phases, workspace, outcome
    ("facefusion_batch.engines", 4),
    ("facefusion_batch.processors", 4),
    ("facefusion_batch.hardware", 3),
    ("facefusion_batch.models", 3),
    ("facefusion_batch.faces", 3),
    ("facefusion_batch.offline", 3),  # MediaPipe adapters and the classical swapper
    ("facefusion_batch.video", 3),
    ("facefusion_batch.targets", 2),
    ("facefusion_batch.settings", 2),
    ("facefusion_batch.concurrency", 2),
    ("facefusion_batch.media", 2),
    ("facefusion_batch", 1),  # foundations: errors, timing, memory, marking
)


def floor_of(module: str) -> int:
    if module == PACKAGE:
        return PACKAGE_FLOOR
    for prefix, floor in FLOORS:
        if module == prefix or module.startswith(prefix + "."):
            return floor
    return 1


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(source: str, module: str, is_package: bool) -> list[tuple[str, tuple[str, ...]]]:
    """(imported module, names taken from it) for every package import of `module`, lazy ones included."""
    found: list[tuple[str, tuple[str, ...]]] = []
    skipped: set[int] = set()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _type_checking_only(node):
            skipped.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.extend((alias.name, ()) for alias in node.names if alias.name.split(".")[0] == PACKAGE)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != PACKAGE:
                continue
            found.append((target, tuple(alias.name for alias in node.names)))
    return found


def graph(root: Path) -> dict[str, set[str]]:
    """Module → the package modules it imports (only names that are modules of the package)."""
    files = {module_name(p, root): p for p in (root / PACKAGE).rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for module, path in files.items():
        targets: set[str] = set()
        for imported, names in imports_of(path.read_text(encoding="utf-8"), module, path.name == "__init__.py"):
            submodules = {f"{imported}.{name}" for name in names} & files.keys()
            targets |= submodules or {imported}  # `from pkg import mod` depends on mod, not on pkg's face
        edges[module] = {t for t in targets if t in files and t != module and not module.startswith(t + ".")}
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def upward(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((a, b) for a, targets in edges.items() for b in targets if floor_of(b) > floor_of(a))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    edges = graph(args.root)
    found_cycles, found_upward = cycles(edges), upward(edges)
    if args.json:
        print(json.dumps({"modules": len(edges), "edges": sum(map(len, edges.values())),
                          "floors": {m: floor_of(m) for m in sorted(edges)}, "cycles": found_cycles,
                          "upward": [list(pair) for pair in found_upward]}, indent=1))
    else:
        by_floor: dict[int, list[str]] = {}
        for module in edges:
            by_floor.setdefault(floor_of(module), []).append(module.removeprefix(PACKAGE + ".") or PACKAGE)
        for floor in sorted(by_floor, reverse=True):
            print(f"floor {floor}: {' '.join(sorted(by_floor[floor]))}")
        print(f"{len(edges)} modules, {sum(map(len, edges.values()))} imports, "
              f"{len(found_cycles)} cycles, {len(found_upward)} upward imports")
        for component in found_cycles:
            print("cycle: " + " <-> ".join(component))
        for a, b in found_upward:
            print(f"upward: {a} (floor {floor_of(a)}) imports {b} (floor {floor_of(b)})")
    return 1 if found_cycles or found_upward else 0


if __name__ == "__main__":
    sys.exit(main())
