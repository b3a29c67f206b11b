"""A ledger job as a row: state, memory figures, cores figures, runtime and how it ended."""

from __future__ import annotations

from rich.text import Text

from swarmdeck.durations import NONE, runtime_text
from swarmdeck.probes.ledger import RUNNING, LedgerJob
from swarmdeck.probes.usage import cores_text
from swarmdeck.views.cells import Cell, pick, size_cell

COLUMNS = (
    ("id", "id"),
    ("label", "label"),
    ("host", "host"),
    ("state", "state"),
    ("booked", "booked"),
    ("current", "current"),
    ("peak", "peak"),
    ("cap", "cap"),
    ("cores", "cores"),
    ("via", "admitted via"),
    ("adj", "oom adj"),
    ("runtime", "runtime"),
    ("exit", "exit"),
)
PANEL_COLUMNS = pick(COLUMNS, [key for key, _ in COLUMNS if key != "id"])
"""The Jobs panel keys its rows by id and leaves it out."""
STATUS_COLUMNS = pick(
    COLUMNS, ("id", "label", "state", "booked", "current", "peak", "cap", "cores", "runtime",
              "exit"),
)
"""`swarmdeck status` shows this host's jobs only, without the admission details."""

STATE_STYLES = {
    "running": "bold green",
    "admitted": "green",
    "queued": "yellow",
    "lost": "bold red",
    "refused": "red",
    "done": "",
}
EXIT_STYLES = {250: "bold red", 254: "bold magenta", 253: "yellow", 252: "red"}


def state_cell(job: LedgerJob) -> Text:
    if job.stale:
        return Text(f"{job.state}, runner gone", style="bold red")
    return Text(job.state, style=STATE_STYLES.get(job.state, ""))


def exit_cell(job: LedgerJob) -> Text:
    if job.exit_code is None:
        return Text(NONE)
    label = str(job.exit_code)
    if job.outcome and job.outcome not in ("ok", f"exit {job.exit_code}"):
        label += f" {job.outcome}"
    return Text(label, style=EXIT_STYLES.get(job.exit_code, "red" if job.exit_code else "green"))


def peak_cell(job: LedgerJob) -> Text:
    text = Text(size_cell(job.peak))
    if job.hit_ceiling:
        text.append(" ceiling", style="bold red")
    return text


def cores_cell(job: LedgerJob) -> Text:
    """Cores in use and threads at once of those declared while it runs; the serial reason
    it gives, in cyan, so a low thread count reads as intended."""
    if job.state != RUNNING:
        return Text(NONE)
    text = cores_text(job.usage, job.threads, job.serial_reason)
    return Text(text, style="cyan" if job.serial_reason else ("dim" if job.usage is None else ""))


def job_cells(job: LedgerJob, now: float) -> dict[str, Cell]:
    """One ledger row's cells, keyed by column."""
    return {
        "id": str(job.id),
        "label": job.label,
        "host": job.host,
        "state": state_cell(job),
        "booked": size_cell(job.booked),
        "current": size_cell(job.current),
        "peak": peak_cell(job),
        "cap": size_cell(job.cap),
        "cores": cores_cell(job),
        "via": job.admitted_via or NONE,
        "adj": NONE if job.oom_score_adj is None else str(job.oom_score_adj),
        "runtime": runtime_text(job.runtime(now)),
        "exit": exit_cell(job),
    }
