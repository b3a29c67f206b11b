"""A ledger job as a row: state (how it ended, once it has), memory, cores, runtime."""

from __future__ import annotations

from rich.text import Text

from swarmdeck.actions.oom import reached_its_cap
from swarmdeck.durations import NONE, runtime_text
from swarmdeck.exitcodes import ExitCode
from swarmdeck.ledger.schema import DONE, LOST, MOVED, REFUSED, RUNNING
from swarmdeck.probes.memory_book import LedgerJob
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
    ("owner", "owner"),
    ("via", "admitted via"),
    ("adj", "oom adj"),
    ("runtime", "runtime"),
    ("exit", "exit"),
)
PANEL_COLUMNS = pick(
    COLUMNS, ("label", "state", "booked", "peak", "cap", "runtime", "current", "cores", "owner",
              "host", "via", "adj"),
)
"""The Jobs panel keys its rows by id and leaves it out (a label two rows share gets it). Its
columns are in the order they give way on a narrow panel, the last first: the job and how it
stands, then the memory a memory tool is about (what admission booked, the peak it reached,
the cap it is held to) and how long it ran, at every width; then its memory now and the cores
it keeps busy, and who launched it, where, and how it was admitted last; Right brings in those
that gave way. Its state says how a job ended, so the exit column is left out too."""
STATUS_COLUMNS = pick(
    COLUMNS, ("id", "label", "state", "host", "booked", "current", "peak", "cap", "cores",
              "runtime"),
)
"""`swarmdeck status` shows the jobs of this host's ledger (its peer runs and cluster jobs too,
hence the host), without the admission details; how a job ended is its state, said once."""
STATUS_GIVING_WAY = ("cap", "booked", "cores", "host", "current", "runtime")
"""The status table's job columns left out on a narrow terminal, first to last (its host
before any when every job is on one host)."""

STATE_STYLES = {
    "running": "bold green",
    "admitted": "green",
    "queued": "yellow",
    LOST: "bold red",
    "refused": "red",
    MOVED: "cyan",
    "done": "",
}
EXIT_STYLES = {250: "bold red", 254: "bold magenta", 253: "yellow", 252: "red"}


BRIEF_OUTCOMES = {
    ExitCode.NOT_FOUND: "not found",
    ExitCode.CANNOT_EXECUTE: "cannot run",
}
"""How a job that never ran says so in a table's state: the runner's reason names the command
(`train.sh: command not found`), which would take the row's width; the detail has it whole."""

BRIEF_WORDS = 10
"""The most cells a job's ending takes in brief, before its exit code: `slice full`,
`cannot run`; a longer ending is cut to its first clause (`slice full, over booking`,
`stopped: runner got SIGTERM`), a signal's kill to the signal (`SIGKILL 137`), and what is
still longer ends in `…`. The Jobs panel's state column is that wide from the start."""

BRIEF_STATE_WIDTH = BRIEF_WORDS + len(" 255")
"""The widest an ended job's state is in brief: the ending's words and a 3-digit exit code."""

CEILING_MARK = "▲"
"""A peak that reached its job's cap, in brief (the Jobs panel); in full it says `ceiling`."""


def state_cell(job: LedgerJob, *, whole: bool = False) -> Text:
    """The state while a job is active; once over, how it ended: `ok`, `exit 7`,
    `own cap 250`, `timed out 253`, `refused 252`, `not found 127`, `lost 255`,
    `moved to box2 (job 6)`; `whole`, the runner's reason for a job that never ran in full,
    and what a lost job's closer said of it."""
    if job.stale:
        return Text(f"{job.state}, runner gone", style="bold red")
    if job.state == MOVED:
        return Text(job.outcome or MOVED, style=STATE_STYLES[MOVED])
    if job.state == LOST and job.exit_code is not None:
        return Text(outcome_text(job, whole=whole), style=STATE_STYLES[LOST])
    if job.state in (DONE, REFUSED) and job.exit_code is not None:
        return Text(outcome_text(job, whole=whole), style=exit_style(job.exit_code))
    return Text(job.state, style=STATE_STYLES.get(job.state, ""))


def outcome_text(job: LedgerJob, *, whole: bool = False) -> str:
    """How an ended job ended, in a few words and its exit code; `whole`, with the runner's
    reason in full where the words are a brief of it."""
    code = job.exit_code
    if job.state == REFUSED:
        return f"refused {code}"
    if job.state == LOST:
        return f"{job.outcome} {code}" if whole and job.outcome else f"lost {code}"
    if code == 0:
        return "ok"
    if not job.outcome or job.outcome in ("ok", f"exit {code}"):
        return f"exit {code}"
    if not whole:
        return f"{brief_words(job.outcome, code)} {code}"
    return f"{job.outcome} {code}"


def brief_words(outcome: str, code: int) -> str:
    """An ending in at most BRIEF_WORDS cells (see there)."""
    if code in BRIEF_OUTCOMES:
        return BRIEF_OUTCOMES[code]
    words = outcome.split(":")[0].split(",")[0].removeprefix("killed by ")
    return words if len(words) <= BRIEF_WORDS else f"{words[:BRIEF_WORDS - 1]}…"


def exit_style(code: int) -> str:
    return EXIT_STYLES.get(code, "red" if code else "green")


def panel_order(jobs: list[LedgerJob]) -> list[LedgerJob]:
    """The one order of the Jobs panel, on a fresh start as after hours of refreshes: newest
    first. A job that ends keeps its line; a new one comes in at the top."""
    return sorted(jobs, key=lambda job: -job.id)


def exit_cell(job: LedgerJob) -> Text:
    if job.exit_code is None:
        return Text(NONE)
    label = str(job.exit_code)
    if job.outcome and job.outcome not in ("ok", f"exit {job.exit_code}"):
        label += f" {job.outcome}"
    return Text(label, style=exit_style(job.exit_code))


def peak_cell(job: LedgerJob, *, brief: bool = False) -> Text:
    """The most the job held; at its cap, `ceiling` after it (`brief`, CEILING_MARK)."""
    text = Text(size_cell(job.peak))
    if reached_its_cap(job.hit_ceiling, job.outcome):
        text.append(f" {CEILING_MARK if brief else 'ceiling'}", style="bold red")
    return text


def cores_cell(job: LedgerJob) -> Text:
    """Cores in use and threads at once of those declared while it runs; the serial reason
    it gives, in cyan, so a low thread count reads as intended."""
    if job.state != RUNNING:
        return Text(NONE)
    text = cores_text(job.usage, job.threads, job.serial_reason)
    return Text(text, style="cyan" if job.serial_reason else ("dim" if job.usage is None else ""))


def owner_text(job: LedgerJob) -> str:
    """Who launched the job: its session's id in short form, then the subagent where known."""
    if job.session_id is None:
        return NONE
    short = job.session_id[:8]
    return f"{short}/{job.agent_id[:8]}" if job.agent_id else short


def job_cells(job: LedgerJob, now: float, *, brief: bool = False) -> dict[str, Cell]:
    """One ledger row's cells, keyed by column; `brief`, a job that never ran says so in a few
    words (BRIEF_WORDS: the Jobs panel, whose detail view has the reason whole) and a peak at
    its cap with CEILING_MARK, else with the runner's whole reason (`swarmdeck status`, which
    has no detail view)."""
    return {
        "id": str(job.id),
        "label": job.label,
        "host": job.host,
        "state": state_cell(job, whole=not brief),
        "booked": size_cell(job.booked),
        "current": size_cell(job.current),
        "peak": peak_cell(job, brief=brief),
        "cap": size_cell(job.cap),
        "cores": cores_cell(job),
        "owner": owner_text(job),
        "via": job.admitted_via or NONE,
        "adj": NONE if job.oom_score_adj is None else str(job.oom_score_adj),
        "runtime": runtime_text(job.runtime(now)),
        "exit": exit_cell(job),
    }
