"""No module of swarmdeck imports a private module of CPython or of a library, nor reads a
private name off one (`argparse._SubParsersAction`).

A name with a leading underscore is its owner's to change in any minor release (CPython renamed
`_sha256` to `_sha2` in 3.12; Textual moves its parsers between releases), so the package uses
public modules and names only. The tests read every source file as written; the private
attributes of the classes it builds on are test_library_privates.py's.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "swarmdeck"
OWN = "swarmdeck"


def private(name: str) -> bool:
    """A single-underscore name; dunders such as `__version__` and `__future__` are public."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def imports(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Each imported module, and each name imported from another package's public module, as
    dotted text."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
            public = not any(private(part) for part in node.module.split("."))
            if public and node.module.split(".")[0] != OWN:
                for alias in node.names:
                    yield node.lineno, f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Call) and _loads_by_name(node.func) and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                yield node.lineno, first.value


def _loads_by_name(func: ast.expr) -> bool:
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in ("import_module", "__import__")


def private_imports(source: str) -> list[str]:
    return [
        f"line {line}: {dotted}"
        for line, dotted in imports(ast.parse(source))
        if any(private(part) for part in dotted.split("."))
    ]


@pytest.mark.parametrize(
    "source, found",
    [
        ("import _thread", ["line 1: _thread"]),
        ("from re import _parser", ["line 1: re._parser"]),
        ("from textual._xterm_parser import XTermParser", ["line 1: textual._xterm_parser"]),
        ("import importlib\nimportlib.import_module('_json')", ["line 2: _json"]),
        ("from __future__ import annotations\nfrom swarmdeck import __version__", []),
        ("import threading\nfrom json import dumps", []),
    ],
)
def test_the_reader_finds_private_imports_in_every_spelling(source: str, found: list[str]) -> None:
    assert private_imports(source) == found


def test_no_module_imports_a_private_module() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE.parent)} {finding}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for finding in private_imports(path.read_text())
    ]
    assert offenders == []


def module_aliases(tree: ast.AST) -> set[str]:
    """The names `import X` and `import X as Y` bind to another package's modules."""
    return {
        (alias.asname or alias.name).split(".")[0]
        for node in ast.walk(tree) if isinstance(node, ast.Import)
        for alias in node.names if alias.name.split(".")[0] != OWN
    }


def private_module_attributes(source: str) -> list[str]:
    """`argparse._SubParsersAction` and the like: a private name read off another package's
    module."""
    tree = ast.parse(source)
    modules = module_aliases(tree)
    return [
        f"line {node.lineno}: {node.value.id}.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
        and node.value.id in modules and private(node.attr)
    ]


@pytest.mark.parametrize(
    "source, found",
    [
        ("import argparse\nx: argparse._SubParsersAction", ["line 2: argparse._SubParsersAction"]),
        ("import os\nos._exit(0)", ["line 2: os._exit"]),
        ("import argparse\nargparse.ArgumentParser()", []),
        ("from swarmdeck import paths\npaths._home()", []),
    ],
)
def test_the_reader_finds_private_names_read_off_a_module(source: str, found: list[str]) -> None:
    assert private_module_attributes(source) == found


ALLOWED_MODULE_ATTRIBUTES = {"os._exit"}
"""Private-looking names a module documents as public (`os._exit` is in os's documentation)."""


def test_no_module_reads_a_private_name_off_another_packages_module() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE.parent)} {finding}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for finding in private_module_attributes(path.read_text())
        if finding.split(": ", 1)[1] not in ALLOWED_MODULE_ATTRIBUTES
    ]
    assert offenders == []
