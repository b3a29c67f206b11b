"""The control room imports no private module (a name segment starting with `_`) of Textual or
anything else: a private module changes without notice on a minor release."""

from __future__ import annotations

import ast
from pathlib import Path

import swarmdeck.app

APP = Path(swarmdeck.app.__file__).resolve().parent
TESTS = Path(__file__).resolve().parent


def private_imports(folder: Path) -> list[str]:
    """`file: module` for every import of a private module in the Python files of `folder`."""
    found = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            else:
                continue
            found += [f"{path.name}: {name}" for name in names
                      if name != "__future__" and any(p.startswith("_") for p in name.split("."))]
    return found


def test_the_app_imports_no_private_module() -> None:
    assert private_imports(APP) == []


def test_its_tests_import_no_private_module() -> None:
    assert private_imports(TESTS) == []
