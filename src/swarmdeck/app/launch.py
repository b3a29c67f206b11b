"""The `n` modal: launch a caged job, seeing before it starts what it will be booked, whether
that fits now, and the `swarmdeck run` line that does the same.

The form is checked as it is typed, with the runner's own rules (`check_request`, `parse_cap`)
and its own booking (`decide_booking` over the workload's recorded peaks); the preview reads
the state file, so it is worked out in a thread, and again at each snapshot while the form is
open. Launch stays disabled while anything is wrong, and while this host has no memory cage.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static, Switch

from swarmdeck.actions.booking import Decision, decide_admission, decide_booking
from swarmdeck.actions.fingerprint import fingerprint
from swarmdeck.actions.jobrecord import past_runs
from swarmdeck.actions.run_request import RunRequest, thread_count
from swarmdeck.actions.runner import check_request, parse_cap
from swarmdeck.app.commands import command_line
from swarmdeck.app.hosts import NO_CAGE
from swarmdeck.config import MAX_THREADS, Config
from swarmdeck.durations import seconds_above_zero
from swarmdeck.errors import SwarmdeckError
from swarmdeck.probes.memory_book import MemoryBook
from swarmdeck.sizes import format_size
from swarmdeck.state import StateStore

FIELDS = (
    ("command", "command", "make -j8 test"),
    ("cwd", "folder", ""),
    ("cap", "cap", "e.g. 8G (blank: from its history)"),
    ("label", "label", "blank: the command"),
    ("threads", "threads", "cores it will keep busy"),
    ("timeout", "timeout", "seconds it may run (blank: no limit)"),
)
"""(key, name, placeholder) of each field; the threads' placeholder gets the range of this
host's cores (`hint`), the range the form takes."""

UNBOUNDED = "may grow to the whole slice, killed first"
"""What the unbounded switch does (`swarmdeck run --unbounded`), beside it."""

CAP_SET_ASIDE = "none: --unbounded grows to the whole slice"
"""The cap field's placeholder while the unbounded switch is on."""


def hint(key: str, placeholder: str, cores: int | None) -> str:
    """A field's placeholder: the threads' names this host's range, "1–16", which is what the
    form takes (`request_from`)."""
    return f"{placeholder}, 1–{cores}" if key == "threads" and cores else placeholder


@dataclass(frozen=True)
class Preview:
    """What launching would do now, or why it cannot."""

    request: RunRequest | None
    lines: tuple[str, ...]
    problem: str = ""


def request_from(
    values: dict[str, str], default_cwd: Path, cores: int | None = None, unbounded: bool = False
) -> RunRequest:
    """The form as a RunRequest (a blank folder is `default_cwd`, `unbounded` its switch);
    SwarmdeckError (one line) when a field is wrong, or a cap is given with unbounded. With
    this host's `cores` read, threads are 1 to that many, the range the field's placeholder
    names: a job cannot keep more cores busy than the host has (the runner itself takes up to
    MAX_THREADS); a bad count is worded as the runner words it."""
    try:
        argv = shlex.split(values["command"])
    except ValueError as error:
        raise SwarmdeckError(f"command: {error}") from error
    if not argv:
        raise SwarmdeckError("command: type the command to run")
    cwd = Path(values["cwd"] or default_cwd).expanduser()
    if not cwd.is_dir():
        raise SwarmdeckError(f"folder {cwd} does not exist")
    threads_text = values["threads"].strip()
    threads = thread_count(threads_text, cores or MAX_THREADS) if threads_text else None
    timeout_text = values["timeout"].strip()
    try:
        timeout = seconds_above_zero(timeout_text) if timeout_text else None
    except ValueError as error:
        raise SwarmdeckError(f"--timeout {error}") from None
    request = RunRequest(
        argv=argv,
        cap=values["cap"].strip() or None,
        label=values["label"].strip() or None,
        threads=threads,
        unbounded=unbounded,
        timeout=timeout,
        detach=True,
        cwd=cwd,
    )
    check_request(request)
    return request


def form_values(request: RunRequest) -> dict[str, str]:
    """A request as the form's fields (`request_from` read back): a rerun's form opens with
    what the job declared."""
    return {
        "command": shlex.join(request.argv),
        "cwd": str(request.cwd),
        "cap": request.cap or "",
        "label": request.label or "",
        "threads": str(request.threads) if request.threads is not None else "",
        "timeout": f"{request.timeout:g}" if request.timeout is not None else "",
    }


def preview(config: Config, store: StateStore, book: MemoryBook | None,
            values: dict[str, str], default_cwd: Path, cores: int | None = None,
            unbounded: bool = False) -> Preview:
    """Check the form and work out the booking the runner would give it, and if it fits;
    `cores` is this host's, the threads' range, `unbounded` the form's switch."""
    try:
        request = request_from(values, default_cwd, cores, unbounded)
    except SwarmdeckError as error:
        return Preview(None, (), str(error))
    return request_preview(config, store, book, request)


def request_preview(config: Config, store: StateStore, book: MemoryBook | None,
                    request: RunRequest) -> Preview:
    """The booking the runner would give `request` (from its workload's recorded peaks, under
    its cap), and whether that fits `book` now; the form's preview, and the rerun modal's."""
    try:
        if book is None:
            not_read = "this host's memory book is not read yet"
            return Preview(request, (command_line(request),), not_read)
        if book.problem:
            return Preview(request, (command_line(request),), f"{NO_CAGE} here: {book.problem}")
        total = book.mem_total
        booking = decide_booking(
            past_runs(store, fingerprint(request.argv, request.cwd)),
            declared_cap=parse_cap(request.cap, total),
            default_prediction=config.memory.default_prediction.resolve(total),
            cap_factor=config.memory.cap_factor,
            unbounded=request.unbounded,
            slice_cap=book.slice_cap,
        )
    except SwarmdeckError as error:
        return Preview(None, (), str(error))
    decision = decide_admission(booking.booked, book)
    fits = {
        Decision.ADMIT: f"fits now: room {format_size(max(0, book.usable))}",
        Decision.WAIT: f"waits for room: {format_size(max(0, book.usable))} free now",
        Decision.NEVER: f"never fits: the slice is {format_size(book.slice_cap)} (exit 252)",
    }[decision]
    booked = (
        f"booked {format_size(booking.booked)} (via {booking.via.value}),"
        f" cap {format_size(booking.cap)}, oom adj {booking.oom_score_adj}"
    )
    if decision is Decision.NEVER:
        # Launching would only end in 252: refused here, as an error in the form is.
        return Preview(request, (booked, "", command_line(request)), fits)
    return Preview(request, (booked, fits, "", command_line(request)))


class LaunchScreen(ModalScreen[RunRequest | None]):
    """The form (its command focused), its live preview, and Cancel / Launch.

    Enter in a field moves to the next one, and from the last to Launch once the form is right:
    a form is launched by its button, never by an Enter that was meant for a field. Its
    unbounded switch sets the cap aside, as the runner takes no --cap with --unbounded: the cap
    field is emptied and disabled while it is on, and has what was typed in it again when it is
    off."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self,
        config: Config,
        store: StateStore,
        book: Callable[[], MemoryBook | None],
        cwd: Path,
        filled: dict[str, str] | None = None,
        title: str = "Launch a caged job",
        cores: int | None = None,
        unbounded: bool = False,
    ) -> None:
        """Args:
        config: The effective configuration (booking defaults).
        store: The state file (the workload's recorded peaks).
        book: The memory book the job would be booked in, as last read: for whether it fits.
        cwd: The folder the form starts with, and a blank folder means.
        filled: Fields given a value to start with, by key (a rerun's, `form_values`).
        title: The form's title.
        cores: This host's cores, the range the threads field takes; None when not read.
        unbounded: Whether the unbounded switch starts on (a rerun of an unbounded job's).
        """
        super().__init__(classes="confirm")
        self._config = config
        self._store = store
        self._book = book
        self._cwd = cwd
        self._filled = {"cwd": str(cwd), **(filled or {})}
        self._title = title
        self._cores = cores
        self._unbounded = unbounded
        self._cap_typed = ("", "")
        """The cap field's value and placeholder from before the unbounded switch went on."""
        self._request: RunRequest | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Label(f"[b]{self._title}[/b]")
            for key, name, placeholder in FIELDS:
                with Horizontal(classes="form-line"):
                    yield Label(f"{name:>9} ", classes="form-label")
                    yield Input(self._filled.get(key, ""), id=f"launch-{key}",
                                placeholder=hint(key, placeholder, self._cores))
                if key == "cap":
                    with Horizontal(classes="form-line"):
                        yield Label(f"{'unbounded':>9} ", classes="form-label")
                        yield Switch(self._unbounded, id="launch-unbounded")
                        yield Label(UNBOUNDED, classes="form-hint")
            yield Static("", id="launch-preview", markup=False)
            with Horizontal(id="confirm-buttons"):
                yield Button("Cancel", id="cancel", variant="default")
                yield Button("Launch", id="do", variant="warning", disabled=True)

    def on_mount(self) -> None:
        self.query_one("#launch-command", Input).focus()
        self._set_cap_aside(self._unbounded)
        self._check()

    def values(self) -> dict[str, str]:
        return {key: self.query_one(f"#launch-{key}", Input).value for key, _, _ in FIELDS}

    @property
    def unbounded(self) -> bool:
        """Whether the unbounded switch is on."""
        return self.query_one("#launch-unbounded", Switch).value

    @on(Input.Changed)
    def _changed(self) -> None:
        self._check()

    @on(Switch.Changed, "#launch-unbounded")
    def _unbounded_switched(self, event: Switch.Changed) -> None:
        self._set_cap_aside(event.value)
        self._check()

    def _set_cap_aside(self, unbounded: bool) -> None:
        """The cap field emptied and disabled while unbounded, with what was typed kept for
        when it is off again."""
        cap = self.query_one("#launch-cap", Input)
        if unbounded == cap.disabled:
            return
        if unbounded:
            self._cap_typed = (cap.value, cap.placeholder)
            cap.value, cap.placeholder = "", CAP_SET_ASIDE
        else:
            cap.value, cap.placeholder = self._cap_typed
        cap.disabled = unbounded

    @on(Input.Submitted)
    def _next_field(self, event: Input.Submitted) -> None:
        event.stop()
        keys = [key for key, _, _ in FIELDS]
        at = keys.index(event.input.id.removeprefix("launch-")) if event.input.id else -1
        for key in keys[at + 1:]:
            field = self.query_one(f"#launch-{key}", Input)
            if not field.disabled:
                field.focus()
                return
        # A disabled Launch takes no focus: Enter on a form that is not right stays put.
        self.query_one("#do", Button).focus()

    def book_changed(self) -> None:
        """Work the fit out again against the book as read now; the form stays as it is."""
        if self._fields_gone():
            return
        self._work_out(self.values(), self.unbounded)

    def _fields_gone(self) -> bool:
        """Whether the form's fields are gone: a snapshot or a preview worked out in a thread
        can arrive while the app closes, after its screens lost their widgets."""
        return not self.query("#launch-command")

    def _check(self) -> None:
        self.query_one("#do", Button).disabled = True
        self._work_out(self.values(), self.unbounded)

    @work(thread=True, exclusive=True, group="launch-preview", exit_on_error=False)
    def _work_out(self, values: dict[str, str], unbounded: bool) -> None:
        result = preview(self._config, self._store, self._book(), values, self._cwd, self._cores,
                         unbounded)
        self.app.call_from_thread(self._show, values, unbounded, result)

    def _show(self, values: dict[str, str], unbounded: bool, result: Preview) -> None:
        if self._fields_gone() or (values, unbounded) != (self.values(), self.unbounded):
            return
        text = "\n".join(result.lines)
        if result.problem:
            text = f"✗ {result.problem}" + (f"\n\n{text}" if text else "")
        self.query_one("#launch-preview", Static).update(text)
        self._request = result.request if not result.problem else None
        self.query_one("#do", Button).disabled = self._request is None

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "do" and self._request is not None:
            self.dismiss(self._request)
        elif event.button.id == "cancel":
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)
