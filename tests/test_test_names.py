"""Every test module has a base name of its own.

The tests are no packages: pytest imports each module by its base name, and refuses to collect
a second `test_jobs.py` in another folder. `make test` then ends in a collection error that the
unit tier (`make test-fast`, which leaves some folders out) does not see; this test does.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_no_two_test_modules_share_a_base_name() -> None:
    folders: dict[str, list[str]] = defaultdict(list)
    for module in TESTS.rglob("test_*.py"):
        folders[module.name].append(str(module.parent.relative_to(TESTS)))
    assert {name: places for name, places in folders.items() if len(places) > 1} == {}
