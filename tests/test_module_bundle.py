"""The run's module bundle: modules come from it only while their sources are what it was built
from, and a missing or damaged bundle leaves imports as they are.

Each test builds the bundle of its own copy of the package (`python -m swarmdeck.module_bundle`
with the copy first on the path), never the checkout's.
"""

from __future__ import annotations

import marshal
import os
import shutil
import sys
from pathlib import Path

import pytest

from package_copy import package_copy, with_copy
from swarmdeck import module_bundle

LOADERS = """
import sys
from swarmdeck import module_bundle
print(module_bundle.use())
import swarmdeck.sizes, swarmdeck.durations, swarmdeck.actions
for name in ("swarmdeck.sizes", "swarmdeck.durations", "swarmdeck.actions"):
    module = sys.modules[name]
    print(name, type(module.__loader__).__name__, module.__file__)
"""


def loaders(tmp_path: Path) -> list[str]:
    done = with_copy(tmp_path, "-c", LOADERS)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_modules_come_from_the_bundle_with_their_own_files(tmp_path: Path) -> None:
    src = package_copy(tmp_path)
    used, *modules = loaders(tmp_path)
    assert used == "True"
    assert modules == [
        f"swarmdeck.sizes _BundledLoader {src}/swarmdeck/sizes.py",
        f"swarmdeck.durations _BundledLoader {src}/swarmdeck/durations.py",
        f"swarmdeck.actions _BundledLoader {src}/swarmdeck/actions/__init__.py",
    ]


def test_a_bundled_module_fails_with_its_source_lines_in_the_traceback(tmp_path: Path) -> None:
    src = package_copy(tmp_path)
    done = with_copy(tmp_path, "-c", "\n".join([
        "from swarmdeck import module_bundle",
        "assert module_bundle.use()",
        "from swarmdeck.sizes import parse_size",
        "parse_size('seven')",
    ]))
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    source = (src / "swarmdeck" / "sizes.py").read_text().splitlines()
    frames = [i for i, line in enumerate(lines) if 'sizes.py", line' in line]
    assert frames, done.stderr
    for i in frames:
        number = int(lines[i].split('", line ')[1].split(",")[0])
        assert lines[i + 1].strip() == source[number - 1].strip()


def test_a_changed_module_is_imported_from_its_source_and_the_rest_from_the_bundle(
    tmp_path: Path,
) -> None:
    src = package_copy(tmp_path)
    with (src / "swarmdeck" / "sizes.py").open("a") as f:
        f.write("\nCHANGED_AFTER_THE_BUNDLE = True\n")
    used, sizes, durations, _ = loaders(tmp_path)
    assert used == "True"
    assert sizes.split()[1] == "SourceFileLoader"
    assert durations.split()[1] == "_BundledLoader"
    done = with_copy(tmp_path, "-c", "from swarmdeck import module_bundle; module_bundle.use();"
                  " import swarmdeck.sizes as s; print(s.CHANGED_AFTER_THE_BUNDLE)")
    assert done.stdout == "True\n", done.stderr


def test_an_edit_that_keeps_the_size_is_seen_by_its_time(tmp_path: Path) -> None:
    src = package_copy(tmp_path)
    sizes = src / "swarmdeck" / "sizes.py"
    before = sizes.stat()
    sizes.write_text(sizes.read_text().replace("Sizes as people", "SIZES AS PEOPLE", 1))
    os.utime(sizes, ns=(before.st_atime_ns, before.st_mtime_ns + 1))
    assert sizes.stat().st_size == before.st_size
    _, sizes_line, durations_line, _ = loaders(tmp_path)
    assert sizes_line.split()[1] == "SourceFileLoader"
    assert durations_line.split()[1] == "_BundledLoader"


def test_a_copied_tree_runs_its_own_sources_not_the_originals(tmp_path: Path) -> None:
    package_copy(tmp_path / "a")
    shutil.copytree(tmp_path / "a" / "src", tmp_path / "b" / "src")  # the bundle and times too
    with (tmp_path / "b" / "src" / "swarmdeck" / "sizes.py").open("a") as f:
        f.write("\nCHANGED_IN_THE_COPY = True\n")
    used, sizes, durations, _ = loaders(tmp_path / "b")
    assert used == "True"
    assert sizes.split()[1:] == ["SourceFileLoader", f"{tmp_path}/b/src/swarmdeck/sizes.py"]
    assert durations.split()[1:] == [
        "_BundledLoader", f"{tmp_path}/b/src/swarmdeck/durations.py"
    ]


def test_an_optimized_interpreter_has_a_bundle_of_its_own(tmp_path: Path) -> None:
    src = package_copy(tmp_path)
    probe = ("from swarmdeck import module_bundle; print(module_bundle.use());"
             " import swarmdeck.sizes as s; print(type(s.__loader__).__name__)")
    assert with_copy(tmp_path, "-O", "-c", probe).stdout.split() == [
        "False", "SourceFileLoader"
    ]
    assert with_copy(tmp_path, "-O", "-m", "swarmdeck.module_bundle").returncode == 0
    assert with_copy(tmp_path, "-O", "-c", probe).stdout.split() == ["True", "_BundledLoader"]
    assert with_copy(tmp_path, "-c", probe).stdout.split() == ["True", "_BundledLoader"]
    names = sorted(p.name for p in (src / "swarmdeck" / "__pycache__").glob("run.*.bundle"))
    tag = sys.implementation.cache_tag
    assert names == [f"run.{tag}.bundle", f"run.{tag}.opt-1.bundle"]


FLIPPED = """
import random, sys
from swarmdeck import module_bundle
path, start, tries = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
whole = open(path, "rb").read()
rng = random.Random(13)
used = 0
for _ in range(tries):
    data = bytearray(whole)
    data[rng.randrange(start, len(data))] ^= 1 << rng.randrange(8)
    open(path, "wb").write(data)
    if module_bundle.use(path):
        sys.meta_path.pop(0)
        used += 1
print(tries, used)
"""
"""Flips one bit past the header of a bundle, tries after tries, and counts the bundles used."""


def test_a_bundle_with_a_flipped_bit_is_read_or_refused_never_raised(tmp_path: Path) -> None:
    src = package_copy(tmp_path)
    bundle = next((src / "swarmdeck" / "__pycache__").glob("run.*.bundle"))
    done = with_copy(tmp_path, "-c", FLIPPED, str(bundle), str(len(module_bundle.HEADER)), "300")
    assert done.returncode == 0, done.stderr
    tries, used = map(int, done.stdout.split())
    assert tries == 300 and used < tries


def test_a_module_whose_source_is_gone_is_not_taken_from_the_bundle(tmp_path: Path) -> None:
    src = package_copy(tmp_path)
    (src / "swarmdeck" / "durations.py").unlink()
    done = with_copy(tmp_path, "-c", "from swarmdeck import module_bundle; module_bundle.use();"
                  " import swarmdeck.durations")
    assert done.returncode == 1
    assert "No module named 'swarmdeck.durations'" in done.stderr


def test_a_damaged_missing_or_foreign_bundle_is_not_used(tmp_path: Path) -> None:
    src = package_copy(tmp_path)
    bundle = next((src / "swarmdeck" / "__pycache__").glob("run.*.bundle"))
    whole = bundle.read_bytes()
    header = module_bundle.HEADER
    another_layout = header[:-2] + b"0\n" + whole[len(header):]
    entry_of_another_shape = header + marshal.dumps({"swarmdeck.sizes": ("sizes.py",)})
    for damaged in (b"", b"not a bundle", whole[: len(whole) // 2], header + b"\x00" * 64,
                    b"\x00\x00\r\n" + whole[4:], another_layout, entry_of_another_shape):
        bundle.write_bytes(damaged)
        used, *modules = loaders(tmp_path)
        assert used == "False", damaged[:16]
        assert all(line.split()[1] == "SourceFileLoader" for line in modules)
    bundle.unlink()
    used, *modules = loaders(tmp_path)
    assert used == "False"
    assert all(line.split()[1] == "SourceFileLoader" for line in modules)


def test_every_user_can_read_the_bundle_as_they_can_the_pyc_files(tmp_path: Path) -> None:
    umask = os.umask(0o022)  # a user's usual one: the bundle's own mode is what is tested
    try:
        src = package_copy(tmp_path)
    finally:
        os.umask(umask)
    (bundle,) = (src / "swarmdeck" / "__pycache__").glob("run.*.bundle")
    assert bundle.stat().st_mode & 0o777 == 0o644


def test_a_second_use_adds_no_second_finder(tmp_path: Path) -> None:
    package_copy(tmp_path)
    done = with_copy(tmp_path, "-c", "import sys; from swarmdeck import module_bundle;"
                  " print(module_bundle.use(), module_bundle.use(), len(sys.meta_path))")
    plain = with_copy(tmp_path, "-c", "import sys; print(len(sys.meta_path))")
    assert done.stdout.split() == ["True", "True", str(int(plain.stdout) + 1)]


def test_reading_the_bundle_leaves_the_collector_as_it_was(tmp_path: Path) -> None:
    package_copy(tmp_path)
    done = with_copy(tmp_path, "-c", "import gc; from swarmdeck import module_bundle;"
                     " a = module_bundle.use(); on = gc.isenabled(); gc.disable();"
                     " import sys; sys.meta_path.pop(0); b = module_bundle.use();"
                     " print(a, on, b, gc.isenabled())")
    assert done.stdout.split() == ["True", "True", "True", "False"], done.stderr


RUN = """
import resource, sys
# A read of /dev/zero grows until memory runs out: bounded here so it ends in a MemoryError
# within this interpreter, never in the machine's memory.
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
sys.argv = ["swarmdeck", "run", "--", "true"]
from swarmdeck.cli import main
sys.exit(main())
"""
"""The console script's `swarmdeck run -- true`, its address space bounded to 1 GiB."""


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero", "link to a bundle"])
def test_a_run_completes_whatever_lies_at_the_bundles_path(
    own_slice: Path, tmp_path: Path, kind: str
) -> None:
    src = package_copy(tmp_path)
    (bundle,) = (src / "swarmdeck" / "__pycache__").glob("run.*.bundle")
    if kind == "link to a bundle":
        bundle.rename(tmp_path / "elsewhere.bundle")
        bundle.symlink_to(tmp_path / "elsewhere.bundle")
    else:
        bundle.unlink()
        if kind == "fifo":
            os.mkfifo(bundle)  # nobody ever writes it: a blocking open would wait for ever
        else:
            bundle.symlink_to("/dev/zero")
    done = with_copy(tmp_path, "-c", RUN)
    assert (done.returncode, done.stderr) == (0, "")
    probe = with_copy(tmp_path, "-c", "from swarmdeck import module_bundle;"
                      " print(module_bundle.use())")
    assert probe.stdout == "False\n", probe.stderr
