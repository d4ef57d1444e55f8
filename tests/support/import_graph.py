"""The static import graph of the project's own modules, for the layout tests (no module is imported).

An edge a -> b means module a names module b in an import statement. Module-level statements count,
including those under `if TYPE_CHECKING:` (a type-only circle is still a circle for a reader);
`module_imports` also gives the imports inside functions (`lazy=True`), which the boundary rules read.
`from p import x` is an edge to p.x when p.x is one of the project's modules, else to p.
"""

from __future__ import annotations

import ast
import graphlib
from collections.abc import Iterable
from pathlib import Path


def modules_under(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Dotted name -> file of every .py module under the given top-level packages."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _resolve(module: str, base: str | None, level: int, is_package: bool) -> str | None:
    if level == 0:
        return base
    parts = module.split(".")
    anchor = parts if is_package else parts[:-1]
    anchor = anchor[: len(anchor) - (level - 1)]
    return ".".join([*anchor, base] if base else anchor)


def _statements(tree: ast.Module, lazy: bool) -> Iterable[ast.stmt]:
    if lazy:
        yield from (node for node in ast.walk(tree) if isinstance(node, ast.stmt))
        return
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If | ast.Try):  # module-level conditionals and guarded imports
            stack.extend(node.body)
            stack.extend(node.orelse)
            if isinstance(node, ast.Try):
                for handler in node.handlers:
                    stack.extend(handler.body)
                stack.extend(node.finalbody)


def module_imports(name: str, path: Path, known: set[str], *, lazy: bool = False) -> set[str]:
    """The project modules that `name` imports (`lazy`: also inside functions and classes)."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in _statements(tree, lazy):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(name, node.module, node.level, is_package)
            if base is None:
                continue
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                targets.add(candidate if candidate in known else base)
    return {target for target in targets if target in known and target != name}


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    known = set(modules)
    return {name: module_imports(name, path, known) for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of the graph (its modules in order, the first repeated at the end), or None."""
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as error:
        return list(error.args[1])
    return None
