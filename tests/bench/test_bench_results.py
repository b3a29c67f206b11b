"""A benchmark run adds to its results file and never writes over what earlier runs recorded
there: a one-trace run of bench_swarm.py once replaced six rounds of swarm results."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType


def test_a_swarm_run_is_added_after_the_rounds_already_recorded(
    tmp_path: Path, bench_module: Callable[[str], ModuleType]
) -> None:
    bench_swarm = bench_module("bench_swarm")
    results = tmp_path / "swarm.md"
    results.write_text(f"{bench_swarm.TITLE}\n\n## Sixth round\n\nthe reading of it\n")
    bench_swarm.add_run(results, ["## One run: heavy-tail", "", "| heavy-tail | 2.61× |"])
    assert results.read_text() == (
        f"{bench_swarm.TITLE}\n\n## Sixth round\n\nthe reading of it\n\n"
        "## One run: heavy-tail\n\n| heavy-tail | 2.61× |\n"
    )


def test_a_first_swarm_run_makes_the_file_with_its_title(
    tmp_path: Path, bench_module: Callable[[str], ModuleType]
) -> None:
    bench_swarm = bench_module("bench_swarm")
    results = tmp_path / "swarm.md"
    bench_swarm.add_run(results, ["## One run: family"])
    assert results.read_text() == f"{bench_swarm.TITLE}\n\n## One run: family\n"


def test_a_soak_replaces_its_own_reading_and_keeps_the_earlier_runs_beneath_it(
    tmp_path: Path, bench_module: Callable[[str], ModuleType]
) -> None:
    bench_soak = bench_module("bench_soak")
    results = tmp_path / "app.md"
    results.write_text(
        "# The control room\n\n"
        f"{bench_soak.SECTION}\n\nthe last run's table\n\n"
        "### Two hours on an earlier commit\n\nits table and reading\n\n"
        "## In a browser: `swarmdeck serve`\n\nserve's figures\n"
    )
    bench_soak.write_section(f"{bench_soak.SECTION}\n\nthis run's table\n", results)
    assert results.read_text() == (
        "# The control room\n\n"
        f"{bench_soak.SECTION}\n\nthis run's table\n\n"
        "### Two hours on an earlier commit\n\nits table and reading\n\n"
        "## In a browser: `swarmdeck serve`\n\nserve's figures\n"
    )
