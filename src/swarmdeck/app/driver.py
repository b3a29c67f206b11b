"""Textual's Linux driver with an input thread that sleeps until there is input, and that ends
the app when its terminal goes away.

Textual's own input thread wakes ten times a second to look at its exit flag, whether or not a
key came: for a control room left open for hours that is a third of what it costs at rest. This
driver's thread blocks on the terminal and on a pipe of its own, which the exit flag writes to
when it is set (on quitting, suspending or Ctrl+Z), so the thread wakes only for input or to
leave. After input it waits one escape delay more, so a lone Escape still reaches the app as a
key (the parser tells it from the start of a sequence only by the time that passes).

A terminal can go away under the app (its tmux session killed, its ssh dropped): then SIGHUP
comes, reads end (EOF or EIO) and writes fail. Each of the three ends the app with 129
(TERMINAL_GONE), whichever comes first; a failed read ends the input thread rather than
spinning or dying with a traceback, and after a failed write the screen's output is dropped, so
Textual's writer thread lives on and nothing waits forever on its queue. SIGTERM ends the app
as quitting does. Everything else (modes, resize, suspend and resume, the writer thread) is
Textual's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import selectors
import signal
from codecs import getincrementaldecoder
from collections.abc import Callable
from threading import Event
from types import FrameType
from typing import Any, TextIO

from textual import constants
from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.app import App
from textual.drivers.linux_driver import LinuxDriver

from swarmdeck.exitcodes import ExitCode

READ_SIZE = 4096
SLACK = 0.01
"""Seconds past the escape delay: the parser's deadline has surely passed when the wait ends."""
ENDING_SIGNALS: dict[signal.Signals, int] = {
    signal.SIGHUP: ExitCode.TERMINAL_GONE,
    signal.SIGTERM: ExitCode.OK,
}
"""The signals that end the app while it runs, and the exit code each ends it with."""


class WakingEvent(Event):
    """An Event that also writes a byte to a pipe when set, to wake a thread blocked on it."""

    def __init__(self) -> None:
        super().__init__()
        self.wake_fd: int | None = None
        """The pipe's writing end while a thread may be blocked on its reading end."""

    def set(self) -> None:
        super().set()
        if self.wake_fd is None:
            return
        # A full pipe (BlockingIOError) holds unread wake-ups: the thread is woken already.
        with contextlib.suppress(BlockingIOError):
            os.write(self.wake_fd, b"x")


class TerminalOutput:
    """The terminal as Textual's writer thread writes on it. The first write or flush that
    fails (EIO once the terminal hung up, EPIPE, a closed stream) means the terminal is gone:
    `on_gone` is told, once, and everything after is dropped, so the thread never dies of it
    and whoever puts output on its queue is never left waiting."""

    def __init__(self, stream: TextIO, on_gone: Callable[[], None]) -> None:
        """Args:
            stream: Where the screen is drawn (stderr, as Textual's driver draws).
            on_gone: Called, on the writer thread, when a write first fails.
        """
        self._stream = stream
        self._on_gone = on_gone
        self.gone = False
        """Whether a write or flush failed: nothing is written any more."""

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                self._stream.write(text)
            except (OSError, ValueError):
                self._went_away()
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except (OSError, ValueError):
                self._went_away()

    def fileno(self) -> int:
        return self._stream.fileno()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def _went_away(self) -> None:
        self.gone = True
        self._on_gone()


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
        self._exit = WakingEvent()
        self.exit_event = self._exit
        self._wake_read = -1
        """The pipe the input thread blocks on besides the terminal; open from the start of
        application mode to `close`, which Textual also calls when it suspends the app."""
        self._file = TerminalOutput(self._file, self._terminal_gone)
        self._signals_before: dict[signal.Signals, Any] = {}
        """The handlers ENDING_SIGNALS had before application mode, put back when it stops."""

    def start_application_mode(self) -> None:
        if self._wake_read < 0:
            self._wake_read, wake_write = os.pipe()
            os.set_blocking(self._wake_read, False)
            os.set_blocking(wake_write, False)
            self._exit.wake_fd = wake_write
        self._catch_ending_signals(asyncio.get_running_loop())
        super().start_application_mode()

    def stop_application_mode(self) -> None:
        super().stop_application_mode()
        for signum, handler in self._signals_before.items():
            signal.signal(signum, handler)
        self._signals_before = {}

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

    def _terminal_gone(self) -> None:
        """The terminal went away (a read ended or a write failed): end the app with 129."""
        self._end_app(ExitCode.TERMINAL_GONE)

    def _end_app(self, code: int) -> None:
        # App.exit posts its message thread-safely; an app already closing takes no message,
        # and one whose loop is closed has ended already.
        with contextlib.suppress(RuntimeError):
            self._app.exit(return_code=code)

    def close(self) -> None:
        super().close()
        wake_write, self._exit.wake_fd = self._exit.wake_fd, None
        if wake_write is not None:
            os.close(wake_write)
        if self._wake_read >= 0:
            os.close(self._wake_read)
        self._wake_read = -1

    def run_input_thread(self) -> None:
        """Wait for input or the exit flag, and dispatch events."""
        fileno = self.fileno
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        selector = selectors.PollSelector()
        selector.register(fileno, selectors.EVENT_READ)
        selector.register(self._wake_read, selectors.EVENT_READ)
        timeout: float | None = None
        try:
            while not self.exit_event.is_set():
                ready = selector.select(timeout)
                if not ready:
                    timeout = None
                for key, _mask in ready:
                    if key.fd == self._wake_read:
                        self._drain_wake_pipe()
                        continue
                    try:
                        data = os.read(fileno, READ_SIZE)
                    except OSError:
                        data = b""  # EIO: the terminal hung up, as an empty read says too
                    if not data:
                        # End of input (a terminal hung up, a pipe closed): nothing more can
                        # come, and a read would return at once, forever. The app ends.
                        self._terminal_gone()
                        return
                    timeout = constants.ESCAPE_DELAY + SLACK
                    for event in parser.feed(decode(data)):
                        self.process_message(event)
                for event in parser.tick():
                    self.process_message(event)
        finally:
            selector.close()
            try:
                for _event in parser.feed(""):
                    pass
            except (EOFError, ParseError):
                pass

    def _drain_wake_pipe(self) -> None:
        # BlockingIOError: the pipe is empty, every wake-up is read.
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wake_read, READ_SIZE):
                pass
