"""Textual's Linux driver with an input thread that sleeps until there is input.

Textual's own input thread wakes ten times a second to look at its exit flag, whether or not a
key came: for a control room left open for hours that is a third of what it costs at rest. This
driver's thread blocks on the terminal and on a pipe of its own, which the exit flag writes to
when it is set (on quitting, suspending or Ctrl+Z), so the thread wakes only for input or to
leave. After input it waits one escape delay more, so a lone Escape still reaches the app as a
key (the parser tells it from the start of a sequence only by the time that passes).
Everything else (modes, resize, suspend and resume, the writer thread) is Textual's.
"""

from __future__ import annotations

import contextlib
import os
import selectors
from codecs import getincrementaldecoder
from threading import Event

from textual import constants
from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.app import App
from textual.drivers.linux_driver import LinuxDriver

READ_SIZE = 4096
SLACK = 0.01
"""Seconds past the escape delay: the parser's deadline has surely passed when the wait ends."""


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

    def start_application_mode(self) -> None:
        if self._wake_read < 0:
            self._wake_read, wake_write = os.pipe()
            os.set_blocking(self._wake_read, False)
            os.set_blocking(wake_write, False)
            self._exit.wake_fd = wake_write
        super().start_application_mode()

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
                    data = os.read(fileno, READ_SIZE)
                    if not data:
                        # End of input (a pipe, or a terminal hung up): nothing more can come,
                        # and an empty read would otherwise return at once, forever.
                        selector.unregister(fileno)
                        continue
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
