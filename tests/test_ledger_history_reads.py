"""A refresh of the control room or `status` reads the host's active jobs, its newest ended
ones and how many ended: a cost that follows what is supervised, not the months of history
the ledger keeps. Measured as the bytes the process reads from the state file, from a fresh
connection, against the file's size."""

from __future__ import annotations

from pathlib import Path

from ledger_rows import bytes_read, insert_job
from swarmdeck.probes.memory_book import RECENT_FINISHED, finished_count, ledger_jobs
from swarmdeck.state import StateStore

ENDED = 4000
RUNNING = 5


def history(path: Path) -> None:
    """A ledger of ENDED finished jobs with the widths real rows have, and a few running."""
    store = StateStore(path)
    with store.transaction() as conn:
        for number in range(ENDED):
            insert_job(
                conn, label=f"pytest tests/case_{number:04d}", state="done", exit_code=0,
                argv=["pytest", "-q", f"tests/case_{number:04d}", "--maxfail=1"],
                cwd="/home/person/work/project-with-a-long-name", fingerprint=f"{number:064x}",
                output_path=f"/home/person/.local/state/swarmdeck/runs/{number:08d}/output.log",
                ended_at=1.0e9 + number, peak=300 << 20,
            )
        for _ in range(RUNNING):
            insert_job(conn)
    store.close()


def test_a_refresh_reads_a_small_part_of_a_long_history(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    history(path)
    size = path.stat().st_size
    store = StateStore(path)
    try:
        before = bytes_read()
        jobs = ledger_jobs(store, runners=False)
        count = finished_count(store)
        read = bytes_read() - before
    finally:
        store.close()
    assert len(jobs) == RUNNING + RECENT_FINISHED and count == ENDED
    assert read < size / 10, f"{read} bytes read of a {size}-byte ledger"
