"""The package's modules import each other in one direction: no import circles.

Every import of a plugnn module counts, at module level, inside functions and type-only
ones alike: a stage that needs a later stage's type is a sign the split is wrong."""

from __future__ import annotations

import ast
from pathlib import Path

import plugnn

PACKAGE = Path(plugnn.__file__).resolve().parent
GENERATED = {"plugnn._abi_cffi", "plugnn._abi_defs", "plugnn._build_config"}


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if name not in GENERATED:
            found[name] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The plugnn modules `name` imports (a package's own __init__ only when a name comes from it)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        found |= {t for t in targets if t in known and t != name}
    return found


def test_no_import_circles() -> None:
    found = modules()
    known = set(found) | GENERATED
    graph = {name: imports(name, path, known) for name, path in found.items()}
    # The package __init__ files re-export lazily; what they name is not an import of theirs.
    for package in ("plugnn", "plugnn.onnx"):
        graph[package] = set()
    state: dict[str, int] = {}
    circles: list[list[str]] = []

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph.get(name, ())):
            if state.get(target) == 1:
                circles.append(trail[trail.index(target):] + [target] if target in trail else [name, target])
            elif target not in state:
                visit(target, trail + [target])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert circles == []
