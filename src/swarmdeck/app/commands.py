"""What the control room can change, each by one key and from the command palette.

Every action that changes anything is listed in ACTIONS; `--readonly` removes them from the
keys and the palette, and each one refuses by itself too (`SwarmdeckApp.refused`), so no way of
invoking it gets through. Each asks first in a modal that says exactly what will happen, with
Cancel focused; results and failures come back as one-line notifications.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from swarmdeck.actions.booking import OOM_ADJ_UNBOUNDED, made_cap
from swarmdeck.actions.migration import copy_running
from swarmdeck.actions.run_request import RunRequest
from swarmdeck.ledger.schema import ACTIVE
from swarmdeck.probes.locks import HELD, LockState
from swarmdeck.probes.memory_book import LedgerJob
from swarmdeck.sizes import exact_size


@dataclass(frozen=True)
class Action:
    """A key, the app action it runs, and what it does (for the footer, help and palette)."""

    key: str
    action: str
    description: str


ACTIONS = (
    Action("n", "launch", "Launch a caged job"),
    Action("r", "rerun", "Rerun the selected finished job"),
    Action("l", "release_lock", "Release the selected stale lock"),
    Action("m", "migrate", "Migrate the selected job to a peer"),
)
"""Every action that changes something; others register theirs here (watchdog, migrate)."""
MUTATING = frozenset(action.action for action in ACTIONS)


def bindings() -> list[Binding]:
    return [Binding(a.key, a.action, a.description.split(" the ")[0].split(" a ")[0])
            for a in ACTIONS]


class ConfirmScreen(ModalScreen[bool]):
    """What an action will do, line by line; Cancel is focused, so `enter` alone does nothing."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, lines: list[str], verb: str) -> None:
        """Args:
        title: What is about to happen, in a few words.
        lines: The details: what, where, the equivalent command line.
        verb: The label of the button that does it.
        """
        super().__init__(classes="confirm")
        self._title = title
        self._lines = lines
        self._verb = verb

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Label(f"[b]{self._title}[/b]")
            yield Static("\n".join(self._lines), id="confirm-lines", markup=False)
            with Horizontal(id="confirm-buttons"):
                yield Button("Cancel", id="cancel", variant="default")
                yield Button(self._verb, id="do", variant="warning")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "do")

    def action_cancel(self) -> None:
        self.dismiss(False)


def declared_cap(job: LedgerJob, cap_factor: float) -> str | None:
    """The --cap the job was run with, as it was given ("8G", "70%"), which its row records;
    None when none was. A row from before the ledger recorded it has only the cap its cage had:
    then none for an unbounded job (its cap is the slice's), none where the cap is the one the
    runner makes without --cap (booking × cap_factor), else that cap."""
    if job.declared_cap is not None:
        return job.declared_cap or None
    if job.cap is None or job.oom_score_adj == OOM_ADJ_UNBOUNDED:
        return None
    if job.booked is not None and job.cap == made_cap(job.booked, cap_factor):
        return None
    return exact_size(job.cap)


def rerun_request(job: LedgerJob, cap_factor: float) -> RunRequest:
    """The command the person ran: the same argv, cwd, label, threads, --timeout, and --cap
    (as given) or --unbounded where it had them; admission books it from its history."""
    return RunRequest(
        argv=list(job.argv),
        cap=declared_cap(job, cap_factor),
        label=job.label,
        threads=job.threads,
        unbounded=job.oom_score_adj == OOM_ADJ_UNBOUNDED,
        timeout=job.timeout,
        detach=True,
        cwd=Path(job.cwd),
    )


def command_line(request: RunRequest) -> str:
    """The `swarmdeck run` line a person would type for this request."""
    args = ["swarmdeck", "run", "--detach"]
    timeout = f"{request.timeout:g}" if request.timeout is not None else None
    for flag, value in (("--cap", request.cap), ("--label", request.label),
                        ("--threads", request.threads), ("--timeout", timeout)):
        if value is not None:
            args += [flag, str(value)]
    if request.unbounded:
        args.append("--unbounded")
    return f"cd {shlex.quote(str(request.cwd))} && " + shlex.join([*args, "--", *request.argv])


def why_not_rerun(job: LedgerJob, jobs: Iterable[LedgerJob] = ()) -> str | None:
    """Why this job cannot be rerun now, or None; `jobs` are the ledger's others, where the
    copy of a job moved to a peer is (`m` refuses it for the same reason)."""
    if job.state in ACTIVE:
        return f"job {job.id} is {job.state}: only a finished job is rerun"
    running_there = copy_running(job, jobs, "rerunning")
    if running_there:
        return running_there
    if not job.argv:
        return f"job {job.id} has no recorded command"
    if not Path(job.cwd).is_dir():
        return f"job {job.id}'s folder {job.cwd} is gone"
    return None


def why_not_release(lock: LockState) -> str | None:
    """Why this lock is not released from here, or None."""
    if lock.state == HELD:
        holder = lock.holder
        who = f" by session {holder.session}, process {holder.pid}" if holder else ""
        return f"held{who}, which is alive: only its own session releases it"
    return None
