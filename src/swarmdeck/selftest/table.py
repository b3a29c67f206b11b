"""Run the selftest's cells, clean and once per break switch, and say what held.

A clean pass must be all green (a skip says why it could not run). Under `--breaks`, each
switch of breaks.SWITCHES runs every cell that ran clean again with that decision switched off:
the cells it names must turn red and every other cell must stay green, or the switch's row
fails. Cells run concurrently (they wait on their processes far more than they compute), each
in a place of its own, so the table's time is about its slowest cells'.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

from swarmdeck.breaks import SWITCHES
from swarmdeck.selftest.cells import Cell
from swarmdeck.selftest.every_cell import all_cells, reddening
from swarmdeck.selftest.sandbox import CellFailed, CellSkipped, Sandbox, stop_strays

PASS, FAIL, SKIP = "pass", "FAIL", "skip"


@dataclass(frozen=True)
class Result:
    """One cell's outcome in one pass."""

    cell: str
    proves: str
    result: str
    reason: str
    seconds: float
    switch: str | None = None


@dataclass
class SwitchResult:
    """One break switch's outcome: did it turn exactly its cells red?"""

    switch: str
    turns_red: tuple[str, ...]
    result: str = PASS
    reason: str = ""
    seconds: float = 0.0
    cells: list[Result] = field(default_factory=list)


@dataclass
class Report:
    """Everything a selftest run found."""

    cells: list[Result]
    breaks: list[SwitchResult] | None
    seconds: float

    @property
    def ok(self) -> bool:
        clean = all(result.result != FAIL for result in self.cells)
        return clean and all(row.result != FAIL for row in self.breaks or [])

    def to_json(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "seconds": round(self.seconds, 1),
            "cells": [_result_json(result) for result in self.cells],
            "breaks": None if self.breaks is None else [
                {
                    "switch": row.switch, "turns_red": list(row.turns_red),
                    "result": row.result.lower(), "reason": row.reason,
                    "seconds": round(row.seconds, 1),
                    "cells": [_result_json(result) for result in row.cells],
                }
                for row in self.breaks
            ],
        }


def _result_json(result: Result) -> dict[str, object]:
    data = asdict(result)
    data["result"] = result.result.lower()
    data["seconds"] = round(result.seconds, 1)
    del data["switch"]
    return data


def run_cell(sandbox: Sandbox, cell: Cell, switch: str | None) -> Result:
    """One cell in a fresh place; whatever it started is ended before it returns."""
    place = sandbox.place(cell.name, switch)
    started = time.monotonic()
    try:
        status, reason = PASS, cell.check(place)
    except CellSkipped as skipped:
        status, reason = SKIP, str(skipped)
    except CellFailed as failed:
        status, reason = FAIL, str(failed)
    except Exception as error:  # a cell that breaks is a red cell, never a pass
        status, reason = FAIL, f"the cell itself failed: {type(error).__name__}: {error}"
    finally:
        place.end()
    return Result(cell.name, cell.proves, status, reason, time.monotonic() - started, switch)


def selected(names: Iterable[str] | None) -> list[Cell]:
    """The cells asked for (all when None), in the table's order."""
    cells = all_cells()
    if names is None:
        return list(cells.values())
    return [cells[name] for name in names]


def run_selftest(
    names: list[str] | None,
    breaks: bool,
    workers: int | None = None,
    progress: Callable[[Result], None] = lambda result: None,
) -> Report:
    """Run the cells (and with `breaks`, once per switch) in a sandbox removed afterwards."""
    started = time.monotonic()
    cells = selected(names)
    sandbox = Sandbox()
    pool = ThreadPoolExecutor(max_workers=workers or default_workers())
    try:
        clean = _run_all(pool, sandbox, [(cell, None) for cell in cells], progress)
        switch_rows = None
        if breaks:
            switch_rows = _run_switches(pool, sandbox, cells, clean, progress)
        return Report(clean, switch_rows, time.monotonic() - started)
    finally:
        sandbox.closing = True
        stop_strays(sandbox.root, grace=1.0)
        pool.shutdown(wait=True, cancel_futures=True)
        sandbox.close()


def default_workers() -> int:
    """Cells at once: they mostly wait on their processes, so a few more than the cores."""
    return max(3, min(6, (os.cpu_count() or 1) + 1))


def _run_all(
    pool: ThreadPoolExecutor,
    sandbox: Sandbox,
    runs: list[tuple[Cell, str | None]],
    progress: Callable[[Result], None],
) -> list[Result]:
    futures: list[Future[Result]] = [
        pool.submit(run_cell, sandbox, cell, switch) for cell, switch in runs
    ]
    results = []
    for future in futures:
        result = future.result()
        progress(result)
        results.append(result)
    return results


def _run_switches(
    pool: ThreadPoolExecutor,
    sandbox: Sandbox,
    cells: list[Cell],
    clean: list[Result],
    progress: Callable[[Result], None],
) -> list[SwitchResult]:
    """Every switch over every cell that ran clean; a cell that was skipped stays out."""
    ran = {result.cell for result in clean if result.result != SKIP}
    skipped = {result.cell: result.reason for result in clean if result.result == SKIP}
    table = reddening()
    wanted = {cell.name for cell in cells}
    rows = [
        SwitchResult(switch, tuple(name for name in table[switch] if name in wanted))
        for switch in SWITCHES
        if set(table[switch]) & wanted
    ]
    runs = [(cell, row.switch) for row in rows for cell in cells if cell.name in ran]
    results = _run_all(pool, sandbox, runs, progress)
    for row in rows:
        row.cells = [result for result in results if result.switch == row.switch]
        row.seconds = sum(result.seconds for result in row.cells)
        judge_switch(row, skipped)
    return rows


def judge_switch(row: SwitchResult, skipped: dict[str, str]) -> None:
    """Pass when each named cell that ran went red and every other cell stayed green."""
    stayed_green = [r.cell for r in row.cells if r.cell in row.turns_red and r.result == PASS]
    went_red = [r for r in row.cells if r.cell not in row.turns_red and r.result == FAIL]
    proved = [r.cell for r in row.cells if r.cell in row.turns_red and r.result == FAIL]
    if stayed_green:
        row.result, row.reason = FAIL, f"{', '.join(stayed_green)} stayed green"
    elif went_red:
        row.result = FAIL
        row.reason = f"{went_red[0].cell} went red too: {went_red[0].reason}"
    elif not proved:
        row.result = SKIP
        reasons = {skipped.get(name, "not run") for name in row.turns_red}
        if len(reasons) == 1:
            row.reason = f"{', '.join(row.turns_red)} skipped: {reasons.pop()}"
        else:
            row.reason = "; ".join(
                f"{name}: {skipped.get(name, 'not run')}" for name in row.turns_red
            )
    else:
        red = next(r for r in row.cells if r.cell == proved[0])
        row.reason = f"{', '.join(proved)} red ({red.reason})"


# ---- text --------------------------------------------------------------------------------------


def _rows_text(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header) - 1)]
    lines = []
    for row in [header, *rows]:
        cells = [text.ljust(width) for text, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return lines


def report_text(report: Report) -> str:
    """The tables a person reads: each cell, then (with --breaks) each switch."""
    lines = _rows_text(
        ("cell", "what it proves", "time", "result"),
        [
            (r.cell, r.proves, f"{r.seconds:.1f}s", f"{r.result}  {r.reason}")
            for r in report.cells
        ],
    )
    if report.breaks is not None:
        lines.append("")
        lines += _rows_text(
            ("break switch", "must turn red", "time", "result"),
            [
                (row.switch, ", ".join(row.turns_red), f"{row.seconds:.1f}s",
                 f"{row.result}  {row.reason}")
                for row in report.breaks
            ],
        )
    failed = sum(r.result == FAIL for r in report.cells)
    failed += sum(row.result == FAIL for row in report.breaks or [])
    skipped = sum(r.result == SKIP for r in report.cells)
    verdict = "all held" if report.ok else f"{failed} did not hold"
    lines.append("")
    lines.append(
        f"selftest: {verdict}" + (f", {skipped} cells skipped (see why above)" if skipped else "")
        + f" in {report.seconds:.0f} s"
    )
    return "\n".join(lines)
