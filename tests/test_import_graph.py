"""The package's imports form no circle and run only in the directions DESIGN.md allows."""

from __future__ import annotations

import ast
from pathlib import Path

import swarmdeck

ROOT = Path(swarmdeck.__file__).parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _parse(source: str, tries: int = 5) -> ast.Module:
    """ast.parse, again when CPython 3.11 raises its spurious "AST constructor recursion depth
    mismatch" (gh-106905: a race with another thread during garbage collection, fixed in later
    releases): the source is the same, so a second parse is the true answer."""
    for _ in range(tries - 1):
        try:
            return ast.parse(source)
        except SystemError:
            continue
    return ast.parse(source)


def _imports() -> dict[str, set[str]]:
    """Each swarmdeck module and the swarmdeck modules it imports, at any depth of its body."""
    modules = {_module_name(path): path for path in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(_parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
        graph[name] = {target for target in found if target in modules and target != name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state and (found := visit(target)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_module_imports_itself_through_others() -> None:
    assert _cycle(_imports()) is None


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_nothing_but_the_cli_imports_the_app() -> None:
    importers = {
        name
        for name, targets in _imports().items()
        if any(t == "swarmdeck.app" or t.startswith("swarmdeck.app.") for t in targets)
        and not name.startswith("swarmdeck.app")
    }
    assert {name for name in importers if not name.startswith("swarmdeck.cli")} == set()


def test_probes_never_import_actions_hooks_or_app() -> None:
    upward = ("swarmdeck.actions", "swarmdeck.hooks", "swarmdeck.app", "swarmdeck.watchdog")
    for name, targets in _imports().items():
        if name.startswith("swarmdeck.probes"):
            assert not [t for t in targets if t.startswith(upward)], name
