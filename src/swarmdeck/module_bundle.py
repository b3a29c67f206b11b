"""The code of every module a caged run imports, in one file, so a run reads its code at once.

Each `swarmdeck run` is a fresh interpreter, and it imports some fifty modules of its own one by
one: for each, a finder's directory and file checks, a .pyc opened, read and validated, and the
import machinery's Python around them, some 80 µs a module on these machines, a fifth of what
its imports cost. `make compile` writes the code objects those imports would make into one file
beside the .pyc files (`python -m swarmdeck.module_bundle`); a run reads it once and finds its
modules there. A module is taken from the bundle only while its source is the file the bundle
was built from (same size and modification time, as a .pyc is checked); a changed module, one
the bundle lacks, or every module when the file is missing, damaged or from another Python is
imported as usual. The modules are the same code either way: each keeps its own `__file__`,
loader methods and tracebacks, since its loader is the source file's loader with only the
reading of its code replaced.

The import machinery comes from `_frozen_importlib_external`, the module the interpreter itself
imports with: the `importlib` package would cost the run more than a millisecond to import.
"""

from __future__ import annotations

import gc
import marshal
import os
import sys
from _frozen_importlib_external import MAGIC_NUMBER, SourceFileLoader, spec_from_file_location
from stat import S_ISREG

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from types import CodeType, ModuleType

RUN_ENTRIES = (
    "swarmdeck.cli.output",
    "swarmdeck.errors",
    "swarmdeck.cli.run",
    "swarmdeck.actions.runner",
    "swarmdeck.config_cache",
    "swarmdeck.actions.cage.v1",
    "swarmdeck.actions.cage.v2",
)
"""What a caged run imports after `swarmdeck.cli`; the bundle holds these and all they import
of swarmdeck's own (a test runs a real caged run and checks that nothing it imports is missed)."""

HEADER = MAGIC_NUMBER + b"swarmdeck module bundle 2\n"
"""What a bundle starts with: this interpreter's bytecode magic and the layout of its entries,
whose number changes with `Entry`, so a bundle left by another version is never misread."""

Entry = tuple[str, int, int, bool, "CodeType"]
"""A bundled module: its source's path from the folder holding the package (swarmdeck/sizes.py),
that file's modification time (ns) and size, whether it is a package, and its code. The path is
relative so that a copied tree's bundle finds the copy's sources, never the original's."""


def default_path() -> str:
    """The run's bundle, beside swarmdeck's .pyc files and named as they are: for this
    interpreter's tag and optimization level (`-O` drops asserts, `-OO` docstrings too)."""
    package = os.path.dirname(os.path.abspath(__file__))
    level = f".opt-{sys.flags.optimize}" if sys.flags.optimize else ""
    name = f"run.{sys.implementation.cache_tag}{level}.bundle"
    return os.path.join(package, "__pycache__", name)


def _root_of(bundle: str) -> str:
    """The folder holding the package whose __pycache__ holds `bundle`."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(bundle))))


class _BundledLoader(SourceFileLoader):
    """A source file's loader whose code is the bundle's, not its .pyc's."""

    def __init__(self, fullname: str, path: str, code: CodeType) -> None:
        super().__init__(fullname, path)
        self._code = code

    def get_code(self, fullname: str) -> CodeType:
        return self._code


class _BundleFinder:
    """Finds the bundle's modules whose sources are unchanged; leaves every other to the rest."""

    def __init__(self, table: dict[str, Entry], root: str) -> None:
        self._table = table
        self._root = root

    def find_spec(self, fullname: str, path: object = None, target: ModuleType | None = None):
        entry = self._table.get(fullname)
        if entry is None:
            return None
        source, mtime_ns, size, is_package, code = entry
        origin = os.path.join(self._root, source)
        try:
            st = os.stat(origin)
        except OSError:
            return None
        if st.st_mtime_ns != mtime_ns or st.st_size != size:
            return None
        return spec_from_file_location(
            fullname, origin, loader=_BundledLoader(fullname, origin, code),
            submodule_search_locations=[os.path.dirname(origin)] if is_package else None,
        )


def use(path: str | None = None) -> bool:
    """Find modules in the bundle at `path` (the run's by default) before anywhere else.

    False, and imports as they were, when the file is missing, unreadable, damaged or not a
    bundle of this interpreter's bytecode; True, and nothing more, when a bundle is in use
    already. (A damaged file that still reads as well-formed code is as harmful as a damaged
    .pyc: the code is what the interpreter checks, as it does a .pyc's.)
    """
    if any(isinstance(finder, _BundleFinder) for finder in sys.meta_path):
        return True
    path = path or default_path()
    data = _read_bundle(path)
    if data is None or data[: len(HEADER)] != HEADER:
        return False
    # The code objects live as long as the process: the cyclic collector's passes over the
    # tuples of their constants, while they are made, would find nothing (3 ms or more).
    collecting = gc.isenabled()
    gc.disable()
    try:
        table = marshal.loads(memoryview(data)[len(HEADER):])
    except Exception:  # marshal answers damage with EOFError, ValueError, TypeError, SystemError
        return False
    finally:
        if collecting:
            gc.enable()
    if not _well_formed(table):
        return False
    sys.meta_path.insert(0, _BundleFinder(table, _root_of(path)))
    return True


MAX_BYTES = 64 << 20
"""The largest file read as a bundle; the run's is some 0.6 MiB."""


def _read_bundle(path: str) -> bytes | None:
    """The bytes of the regular file at `path` (never a link), or None.

    Opened without blocking and read no further than its size: a FIFO put at the path would
    hang every run on a blocking open, and a link to /dev/zero would be read until memory ran
    out.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        size = st.st_size
        if not S_ISREG(st.st_mode) or size > MAX_BYTES:
            return None
        with open(fd, "rb", closefd=False) as f:
            data = f.read(size + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) == size else None


_CODE = type(default_path.__code__)


def _well_formed(table: object) -> bool:
    """Whether `table` is a bundle's: names of modules, each with an `Entry`."""
    return isinstance(table, dict) and all(
        type(name) is str and type(entry) is tuple and len(entry) == 5
        and type(entry[0]) is str and type(entry[1]) is int and type(entry[2]) is int
        and type(entry[3]) is bool and type(entry[4]) is _CODE
        for name, entry in table.items()
    )


def entries_of(modules: Iterable[ModuleType], root: str) -> dict[str, Entry]:
    """The bundle's table for those of these imported modules whose sources lie under `root`:
    the code their own loaders make."""
    table: dict[str, Entry] = {}
    for module in modules:
        spec = module.__spec__
        if spec is None or not isinstance(spec.loader, SourceFileLoader):
            continue
        source = os.path.relpath(spec.origin, root)
        if source.startswith(os.pardir + os.sep):
            continue
        st = os.stat(spec.origin)
        is_package = spec.submodule_search_locations is not None
        table[spec.name] = (
            source, st.st_mtime_ns, st.st_size, is_package, spec.loader.get_code(spec.name)
        )
    return table


def write(path: str, table: dict[str, Entry]) -> None:
    """Write the bundle whole or not at all, so a run reading it never sees half a file; it is
    readable by everyone, as the .pyc files are: every user's runs read it."""
    from swarmdeck.regular_files import replace_whole

    os.makedirs(os.path.dirname(path), exist_ok=True)
    replace_whole(path, HEADER + marshal.dumps(table), 0o644)


def run_modules() -> list[ModuleType]:
    """swarmdeck's modules a caged run imports after `swarmdeck.cli`, imported here."""
    import importlib

    before = set(sys.modules)
    for name in RUN_ENTRIES:
        importlib.import_module(name)
    return [
        sys.modules[name] for name in sorted(set(sys.modules) - before)
        if name.startswith("swarmdeck.")
    ]


def main() -> int:
    """`python -m swarmdeck.module_bundle`: (re)write the run's bundle from the sources."""
    path = default_path()
    table = entries_of(run_modules(), _root_of(path))
    write(path, table)
    print(f"{path}: {len(table)} modules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
