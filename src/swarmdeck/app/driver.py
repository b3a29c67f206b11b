"""Textual's Linux driver, whose input thread sleeps until there is input, and which ends the
app when its terminal goes away; built on the driver's public methods and attributes only.

Textual's input loop waits on the terminal with a 0.1 s timeout and looks at `exit_event`
between waits, so a control room left open wakes ten times a second. Here `exit_event` is an
`InputGate`: asked on the input thread, it blocks until input or the exit flag comes (a pipe of
its own wakes it) and passes the input on through a pipe that Textual's loop reads; after an
escape it waits out the escape delay and lets the loop turn once idle, so the parser's tick
sends a lone Escape. (Textual has no public hook for either.)

A terminal can go away under the app (tmux session killed, ssh dropped): SIGHUP comes, the
input hangs up (POLLHUP, EIO) and writes fail. Each ends the app with 129 (TERMINAL_GONE),
whichever comes first; the screen is written by a writer thread of our own that drops output
after a failed write, so nothing waits for ever on its queue. SIGTERM ends the app as quitting.

Ctrl-Z (SIGTSTP) is handled on the app's loop, not in the signal handler: a handler runs
between two bytecodes of whatever the main thread was doing, drawing included, and Textual's
restores the terminal right there and resumes in a SIGCONT handler, so a Ctrl-Z soon after `fg`
ran inside the resume and the app hung. On the loop, stopping and resuming are one step.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from queue import Queue
from types import FrameType
from typing import Any, TextIO

from textual import constants
from textual.app import App
from textual.drivers.linux_driver import LinuxDriver

from swarmdeck.exitcodes import ExitCode

READ_SIZE = 4096
MAX_QUEUED_WRITES = 30
"""Writes queued for the screen before `write` waits (Textual's writer holds as many)."""
ENDING_SIGNALS: dict[signal.Signals, int] = {
    signal.SIGHUP: ExitCode.TERMINAL_GONE,
    signal.SIGTERM: ExitCode.OK,
}
"""The signals that end the app while it runs, and the exit code each ends it with."""


class InputGate(threading.Event):
    """The driver's exit flag, and the only way input reaches Textual's loop.

    Set, it also writes a byte to a pipe, to wake the input thread. Asked on the input thread,
    `is_set` blocks until the terminal has input or the flag is set, and passes what it read
    on through a relay pipe, the one Textual's loop reads: so it knows of every byte the parser
    got, and after an escape it lets the loop turn idle until the parser's deadline passed."""

    def __init__(self, on_hangup: Callable[[], None]) -> None:
        """Args:
            on_hangup: Called, on the input thread, when the terminal's input hung up.
        """
        super().__init__()
        self._on_hangup = on_hangup
        self._wake_read, self._wake_write = -1, -1
        self._terminal = -1
        self._relay_read, self._relay_write = -1, -1
        self._input_thread: int | None = None
        self._escape_fed = False
        """Input passed on had an escape in it: the parser may hold it for the escape delay."""
        self._escape_at: float | None = None
        """When the parser was last fed an escape (at the latest)."""

    def open(self) -> None:
        """Make the wake-up pipe (the driver starts application mode)."""
        if self._wake_read < 0:
            self._wake_read, self._wake_write = os.pipe()
            os.set_blocking(self._wake_read, False)
            os.set_blocking(self._wake_write, False)

    def close(self) -> None:
        """Close the wake-up pipe (the driver closes, on quitting or suspending)."""
        for fd in (self._wake_read, self._wake_write):
            if fd >= 0:
                os.close(fd)
        self._wake_read, self._wake_write = -1, -1

    @contextlib.contextmanager
    def relaying(self, terminal: int) -> Iterator[int]:
        """While in this block, the calling thread is the input thread: `is_set` reads
        `terminal` for it and passes the input on to the descriptor this yields."""
        self._relay_read, self._relay_write = os.pipe()
        self._terminal, self._input_thread = terminal, threading.get_ident()
        self._escape_fed, self._escape_at = False, None
        try:
            yield self._relay_read
        finally:
            self._input_thread = None
            os.close(self._relay_read)
            os.close(self._relay_write)
            self._relay_read, self._relay_write = -1, -1

    def set(self) -> None:
        super().set()
        if self._wake_write >= 0:
            # A full pipe (BlockingIOError) holds unread wake-ups: the thread is woken already.
            with contextlib.suppress(BlockingIOError):
                os.write(self._wake_write, b"x")

    def is_set(self) -> bool:
        if super().is_set():
            return True
        if threading.get_ident() != self._input_thread or self._wake_read < 0:
            return False
        return self._wait()

    def _wait(self) -> bool:
        """Pass the next input on, or let the loop turn idle for the parser's deadline: True
        when the loop is to end (the flag, or the input hung up)."""
        if select.select([self._relay_read], [], [], 0)[0]:
            return False  # the loop has not read all it was given yet
        if self._escape_fed:
            # The loop read it and fed its parser before it asked again: the deadline runs.
            self._escape_fed, self._escape_at = False, time.monotonic()
        timeout = None
        if self._escape_at is not None:
            timeout = max(0.0, self._escape_at + constants.ESCAPE_DELAY - time.monotonic())
        poller = select.poll()
        poller.register(self._terminal, select.POLLIN)
        poller.register(self._wake_read, select.POLLIN)
        while True:
            ready = dict(poller.poll(None if timeout is None else timeout * 1000))
            if ready.get(self._wake_read):
                self._drain_wake_pipe()
            if super().is_set():
                return True
            if not ready:
                # The escape delay has passed: one idle round of the loop (its wait never ends
                # early) and its parser's tick sends a lone Escape. Input that comes meanwhile
                # waits in the terminal, for that round at most.
                self._escape_at = None
                return False
            if ready.get(self._terminal):
                return self._pass_on()

    def _pass_on(self) -> bool:
        """Read the terminal and pass it on; True when it hung up (EOF, EIO)."""
        try:
            data = os.read(self._terminal, READ_SIZE)
        except OSError:
            data = b""
        if not data:
            # Nothing more can come, and a read would return at once, for ever.
            self._on_hangup()
            return True
        os.write(self._relay_write, data)  # the relay is empty: READ_SIZE fits
        self._escape_fed = self._escape_fed or b"\x1b" in data
        return False

    def _drain_wake_pipe(self) -> None:
        # BlockingIOError: the pipe is empty, every wake-up is read.
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wake_read, READ_SIZE):
                pass


class TerminalOutput:
    """The terminal as the writer thread writes on it. The first write or flush that fails
    (EIO once the terminal hung up, EPIPE, a closed stream) means the terminal is gone:
    `on_gone` is told, once, and everything after is dropped."""

    def __init__(self, stream: TextIO, on_gone: Callable[[], None]) -> None:
        """Args:
            stream: Where the screen is drawn (stderr, as Textual's driver draws).
            on_gone: Called, on the writer thread, when a write first fails.
        """
        self._stream = stream
        self._on_gone = on_gone
        self.gone = False
        """Whether a write or flush failed: nothing is written any more."""

    def write(self, text: str) -> None:
        if not self.gone:
            try:
                self._stream.write(text)
            except (OSError, ValueError):
                self._went_away()

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except (OSError, ValueError):
                self._went_away()

    def _went_away(self) -> None:
        self.gone = True
        self._on_gone()


class ScreenWriter(threading.Thread):
    """Writes the screen on a thread of its own, flushing when its queue runs dry, as Textual's
    writer does; a terminal gone away ends no thread and leaves no writer waiting."""

    def __init__(self, output: TerminalOutput) -> None:
        super().__init__(daemon=True, name="swarmdeck-output")
        self._queue: Queue[str | None] = Queue(MAX_QUEUED_WRITES)
        self._output = output

    def write(self, text: str) -> None:
        """Queue text for the screen (dropped once the terminal is gone)."""
        if not self._output.gone:
            self._queue.put(text)

    def run(self) -> None:
        while (text := self._queue.get()) is not None:
            self._output.write(text)
            if self._queue.empty():
                self._output.flush()
        self._output.flush()

    def stop(self) -> None:
        """Write what is queued, then end the thread."""
        self._queue.put(None)
        self.join()


class QuietInputDriver(LinuxDriver):
    """LinuxDriver whose input thread costs nothing between keys."""

    def __init__(
        self,
        app: App,
        *,
        debug: bool = False,
        mouse: bool = True,
        size: tuple[int, int] | None = None,
    ) -> None:
        """Args:
            app: The App instance.
            debug: Enable debug mode.
            mouse: Enable mouse support.
            size: Initial size of the terminal or `None` to detect.
        """
        super().__init__(app, debug=debug, mouse=mouse, size=size)
        self.ended_app = app
        """The app this driver ends when its terminal goes away."""
        self.exit_event = self.gate = InputGate(self._terminal_gone)
        self.screen: ScreenWriter | None = None
        """The writer thread, from the start of application mode to `close`."""
        self._signals_before: dict[signal.Signals, Any] = {}
        """The handlers ENDING_SIGNALS had before application mode, put back when it stops."""
        self.application_mode = False
        """Whether the app owns the terminal: started and not stopped (nor suspended)."""
        self._app_loop: asyncio.AbstractEventLoop | None = None
        """The app's loop, once application mode has started: job control runs on it."""
        self._job_stopping = False
        """A Ctrl-Z is being handled: the terminal is given back until the job is continued."""
        signal.signal(signal.SIGTSTP, self._stop_requested)
        signal.signal(signal.SIGCONT, signal.SIG_DFL)

    def start_application_mode(self) -> None:
        self.gate.open()
        if self.screen is None:
            stream = sys.__stderr__
            assert stream is not None, "the screen is drawn on stderr"
            self.screen = ScreenWriter(TerminalOutput(stream, self._terminal_gone))
            self.screen.start()
        self._app_loop = asyncio.get_running_loop()
        self._catch_ending_signals(self._app_loop)
        super().start_application_mode()
        self.application_mode = True

    def write(self, data: str) -> None:
        """Queue data for the screen."""
        assert self.screen is not None, "Driver must be in application mode"
        self.screen.write(data)

    def stop_application_mode(self) -> None:
        self.application_mode = False
        super().stop_application_mode()
        for signum, handler in self._signals_before.items():
            signal.signal(signum, handler)
        self._signals_before = {}

    def close(self) -> None:
        super().close()
        if self.screen is not None:
            self.screen.stop()
            self.screen = None
        self.gate.close()

    def run_input_thread(self) -> None:
        """Textual's input loop, reading what the gate (`exit_event`) passes on from the
        terminal."""
        terminal = self.fileno
        with self.gate.relaying(terminal) as relay:
            # Textual's loop takes the descriptor it reads when it starts; the terminal's is
            # put back before the thread ends, before anything else uses it (the thread is
            # joined first).
            self.fileno = relay
            try:
                super().run_input_thread()
            finally:
                self.fileno = terminal

    def _catch_ending_signals(self, loop: asyncio.AbstractEventLoop) -> None:
        """While the app runs, SIGHUP and SIGTERM end it (with their codes) on its own loop.
        A signal ignored from the start (SIGHUP under `nohup`) stays ignored."""

        def end(signum: int, _frame: FrameType | None) -> None:
            # Called between two bytecodes of the main thread, the loop's: the loop is woken to
            # end the app when it can, never in the middle of what it was doing.
            with contextlib.suppress(RuntimeError):  # the loop is closed: the app has ended
                loop.call_soon_threadsafe(self._end_app, ENDING_SIGNALS[signal.Signals(signum)])

        for signum in ENDING_SIGNALS:
            if signum in self._signals_before or signal.getsignal(signum) == signal.SIG_IGN:
                continue
            try:
                self._signals_before[signum] = signal.signal(signum, end)
            except ValueError:
                # Not the main thread (an app run elsewhere): its runner handles signals.
                return

    def _stop_requested(self, _signum: int, _frame: FrameType | None) -> None:
        """SIGTSTP: stop the job; while the app owns the terminal, on the loop, once the
        terminal is given back. Otherwise (not started, ended, or suspended by the app for a
        program of its own) there is nothing to give back: the job stops at once."""
        if self._app_loop is not None and (self.application_mode or self._job_stopping):
            with contextlib.suppress(RuntimeError):  # the loop is closed: the app has ended
                self._app_loop.call_soon_threadsafe(self._stop_job)
                return
        os.kill(os.getpid(), signal.SIGSTOP)

    def _stop_job(self) -> None:
        """Give the terminal back, stop the job, and take the terminal again once continued."""
        if not self.application_mode:
            os.kill(os.getpid(), signal.SIGSTOP)
            return
        self._job_stopping = True
        try:
            self.suspend_application_mode()
            os.kill(os.getpid(), signal.SIGSTOP)  # returns once the job is continued (`fg`)
            self.resume_application_mode()
        finally:
            self._job_stopping = False
        self.ended_app.post_message(self.SignalResume())

    def _terminal_gone(self) -> None:
        """The terminal went away (its input hung up or a write failed): end the app, 129."""
        self._end_app(ExitCode.TERMINAL_GONE)

    def _end_app(self, code: int) -> None:
        # App.exit posts its message thread-safely; an app already closing takes no message,
        # and one whose loop is closed has ended already.
        with contextlib.suppress(RuntimeError):
            self.ended_app.exit(return_code=code)
