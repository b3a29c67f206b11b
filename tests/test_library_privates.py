"""No module of swarmdeck reads, sets or overrides a private attribute of a library's object.

Underscored attributes (a DataTable's caches, a Tree's line cache, argparse's `_check_value`)
change in any minor release, so the package uses what Textual and the standard library
document. Two readings of the source, as written, find every use:

- In a class built on a library's class (Textual's, argparse's, threading's), `self._name`
  where a class it derives from has `_name` (set on `self` in its source, or defined in its
  body): that reaches into the library, or clobbers its own attribute with one of the same
  name.
- Anywhere, `something._name` on another object where Textual has `_name` and swarmdeck defines
  no `_name` of its own: that can only be Textual's.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import textwrap
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import textual
from textual.scroll_view import ScrollView
from textual.widgets import DataTable

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "swarmdeck"
TEXTUAL = Path(textual.__file__).resolve().parent


def private(name: str) -> bool:
    """A single-underscore name; dunders such as `__init__` and enum's documented sunders such
    as `_missing_` are public."""
    return name.startswith("_") and not name.endswith("_")


def on_self(tree: ast.AST) -> Iterator[ast.Attribute]:
    """Each `self._name` in the tree."""
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and private(node.attr)
                and isinstance(node.value, ast.Name) and node.value.id == "self"):
            yield node


def defined(tree: ast.AST) -> set[str]:
    """The private names a source defines: functions, classes, assignments to a name or to an
    attribute (of any object), parameters and imported names."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.split(".")[-1])
    return {name for name in names if private(name)}


@cache
def textual_names() -> frozenset[str]:
    """Every private attribute name Textual's source mentions or defines."""
    names: set[str] = set()
    for path in TEXTUAL.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        names |= defined(tree)
        names |= {node.attr for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute) and private(node.attr)}
    return frozenset(names)


@cache
def class_names(cls: type) -> frozenset[str]:
    """The private names a library's class has: defined in its body or set on `self`."""
    try:
        tree = ast.parse(inspect.getsource(cls))
    except (OSError, TypeError):  # a class made at run time has no source: its body is all
        tree = ast.parse("")
    body = {name for name in vars(cls) if private(name)}
    return frozenset(body | {node.attr for node in on_self(tree)})


def from_a_library(cls: type) -> bool:
    """A class swarmdeck builds on from outside it (Textual, argparse, threading...); Python's
    built-in types have no Python source to reach into."""
    return cls.__module__.split(".")[0] not in ("swarmdeck", "builtins")


def sources() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "__main__.py":
            continue  # a program: importing it runs it
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def shared_with_its_library(cls: type) -> set[str]:
    """The private names a class built on a library's uses on `self` or defines that a library
    class it derives from has too."""
    theirs = frozenset().union(
        *(class_names(base) for base in cls.__mro__[1:] if from_a_library(base))
    )
    [body] = ast.parse(textwrap.dedent(inspect.getsource(cls))).body
    assert isinstance(body, ast.ClassDef)
    mine = {node.attr for node in on_self(body)} | {
        name for statement in body.body for name in defined(statement)
        if not isinstance(statement, ast.ClassDef)  # a nested class has a test of its own
    }
    return mine & theirs


def reaching_in_on_self() -> list[str]:
    """`module.Class: _name` for each private name a class built on a library's shares with it."""
    found = []
    for dotted, _path in sources():
        module = importlib.import_module(dotted)
        for cls in vars(module).values():
            if (isinstance(cls, type) and cls.__module__ == dotted
                    and any(from_a_library(base) for base in cls.__mro__[1:])):
                found += [f"{dotted}.{cls.__qualname__}: {name}"
                          for name in sorted(shared_with_its_library(cls))]
    return found


def only_textuals(tree: ast.AST, ours: set[str]) -> list[ast.Attribute]:
    """Each `something._name` where Textual has `_name` and `ours` has not; not on `self` (the
    other reading's) nor on a module imported whole (`os._exit` is documented)."""
    theirs = textual_names() - ours
    modules = {"self"} | {
        alias.asname or alias.name.split(".")[0]
        for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    return [
        node for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in theirs
        and not (isinstance(node.value, ast.Name) and node.value.id in modules)
    ]


def reaching_in_elsewhere() -> list[str]:
    """`file line: _name` for each private attribute of another object that only Textual has."""
    trees = {path: ast.parse(path.read_text(), str(path)) for _, path in sources()}
    ours = set().union(*(defined(tree) for tree in trees.values()))
    return [
        f"{path.relative_to(PACKAGE.parent)} {node.lineno}: {node.attr}"
        for path, tree in trees.items()
        for node in only_textuals(tree, ours)
    ]


def test_no_class_built_on_a_library_class_shares_a_private_name_with_it() -> None:
    assert reaching_in_on_self() == []


def test_no_module_reads_a_private_attribute_only_textual_has() -> None:
    assert reaching_in_elsewhere() == []


class ReachingIn(DataTable[str]):
    def repaint(self) -> None:
        self._clear_caches()
        self._mine = 1


class Checking(argparse.ArgumentParser):
    def _check_value(self, action: argparse.Action, value: object) -> None:
        """Overrides argparse's own check of a choice."""


class Shadowing(ScrollView):
    def _refresh_scrollbars(self) -> None:
        """Overrides Widget's own private method, unknowingly."""


def test_the_readings_find_a_reach_into_a_library_and_a_name_that_clobbers_its_own() -> None:
    assert shared_with_its_library(ReachingIn) == {"_clear_caches"}
    assert shared_with_its_library(Shadowing) == {"_refresh_scrollbars"}
    assert shared_with_its_library(Checking) == {"_check_value"}
    source = "import os\ndef f(tree, app):\n  tree._invalidate()\n  app._ours()\n  os._exit(0)"
    assert [node.attr for node in only_textuals(ast.parse(source), {"_ours"})] == ["_invalidate"]
