"""Stop a whole process tree without ever signalling a stranger.

Identity is (pid, start ticks); every process is pinned with a pidfd and its start ticks are
compared after pinning, so a pid reused in between is never signalled. Only processes the
control room supervises (a ledger job's tree, members of its cage) may be stopped, and never a
tree that holds the stopping process or one of its ancestors: it would freeze the one process
that was to thaw it (an agent approving its own session's kill). A stopper killed halfway
leaves nothing frozen: a guardian finishes its stop (stop_guard.py). How a stop goes (freeze,
TERM, grace, KILL) is told on `stop_tree`.
"""

from __future__ import annotations

import os
import select
import signal
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from swarmdeck.actions.stop_guard import StopGuard
from swarmdeck.breaks import broken
from swarmdeck.errors import RefusedError
from swarmdeck.probes.procs import ProcessIdentity, StatLine, process_table, read_stat

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable

MAX_FREEZE_ROUNDS = 20
"""Re-listing stops when a round finds no newborn; a fork bomb cannot keep it going forever."""
KILL_CONFIRM = 2.0
"""How long to wait for SIGKILLed processes to be gone before reporting survivors."""
STOP_CONFIRM = 1.0
"""How long a freeze round waits for its SIGSTOPs to take hold (a process in the kernel's
uninterruptible sleep stops only when it leaves it)."""
FROZEN_CONFIRM = 5.0
"""How long a cgroup v2 freeze is waited for (cgroup.events says `frozen 1`); a member in the
kernel's uninterruptible sleep is frozen only when it leaves it."""
CGROUP_KILL_ROUNDS = 5
"""Frozen rounds of SIGKILL over a cage's members; one suffices unless a member was still
leaving the kernel when the freeze was given up on."""


class NotSupervisedError(RefusedError):
    """The process is not one the control room supervises, so it is not ours to signal."""


class OwnTreeError(RefusedError):
    """The tree to stop holds the process stopping it, or one of its ancestors."""


@dataclass
class StopReport:
    """What a tree stop did."""

    signalled: list[ProcessIdentity] = field(default_factory=list)
    """Every process that was frozen and told to terminate."""
    killed: list[ProcessIdentity] = field(default_factory=list)
    """The ones still alive after the grace period, sent SIGKILL."""
    survivors: list[ProcessIdentity] = field(default_factory=list)
    """Still alive after SIGKILL (a process stuck in the kernel); normally empty."""


def children_map(table: dict[int, StatLine]) -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for stat in table.values():
        children.setdefault(stat.ppid, []).append(stat.pid)
    return children


def _alive_in(table: dict[int, StatLine], ident: ProcessIdentity) -> bool:
    stat = table.get(ident.pid)
    return stat is not None and stat.start_ticks == ident.start_ticks and stat.state != "Z"


def tree_of(
    roots: Iterable[ProcessIdentity], table: dict[int, StatLine]
) -> list[ProcessIdentity]:
    """The live roots and all their descendants, parents before children."""
    children = children_map(table)
    order: list[ProcessIdentity] = []
    seen: set[int] = set()
    queue = [ident for ident in roots if _alive_in(table, ident)]
    while queue:
        ident = queue.pop(0)
        if ident.pid in seen:
            continue
        seen.add(ident.pid)
        order.append(ident)
        for child in sorted(children.get(ident.pid, ())):
            stat = table[child]
            if stat.state != "Z" and child not in seen:
                queue.append(ProcessIdentity(child, stat.start_ticks))
    return order


def own_line(table: dict[int, StatLine]) -> set[int]:
    """This process and its ancestors: what a stop must never freeze."""
    line: set[int] = set()
    stat = table.get(os.getpid())
    while stat is not None and stat.pid not in line:
        line.add(stat.pid)
        parent = table.get(stat.ppid)
        # A child starts after its parent; a "parent" that started later is a reused pid.
        stat = parent if parent is not None and parent.start_ticks <= stat.start_ticks else None
    return line


def is_supervised(
    target: ProcessIdentity,
    supervised: Collection[ProcessIdentity],
    table: dict[int, StatLine],
) -> bool:
    """True when target is a supervised process or descends from one (checked by identity)."""
    if broken("no-supervised-check"):
        return True
    ident: ProcessIdentity | None = target
    seen: set[int] = set()
    while ident is not None and ident.pid not in seen:
        if ident in supervised:
            return True
        seen.add(ident.pid)
        stat = table.get(ident.pid)
        if stat is None or stat.start_ticks != ident.start_ticks or stat.ppid <= 0:
            return False
        parent = table.get(stat.ppid)
        # A child starts after its parent; a "parent" that started later is a reused pid.
        if parent is None or parent.start_ticks > stat.start_ticks:
            return False
        ident = ProcessIdentity(parent.pid, parent.start_ticks)
    return False


class PinnedProcess:
    """One process held by a pidfd, valid only if its start ticks matched once it was held.

    A pidfd names one process for good, so a check made after opening it cannot be outrun by
    the pid's reuse: whatever is signalled through it is the process whose ticks were checked.
    """

    def __init__(self, ident: ProcessIdentity) -> None:
        self.ident = ident
        self.fd: int | None = None
        self.valid = False
        try:
            self.fd = os.pidfd_open(ident.pid)
        except ProcessLookupError:
            return
        except OSError:
            # No pidfd support (old kernel): fall back to checking identity before each signal.
            self.fd = None
        stat = read_stat(ident.pid)
        self.valid = stat is not None and stat.start_ticks == ident.start_ticks
        if not self.valid:
            self.close()

    def send(self, sig: int) -> bool:
        """Deliver sig to exactly this process; False when it is gone."""
        if not self.valid:
            return False
        try:
            if self.fd is not None:
                signal.pidfd_send_signal(self.fd, sig)
            else:
                stat = read_stat(self.ident.pid)
                if stat is None or stat.start_ticks != self.ident.start_ticks:
                    self.valid = False
                    return False
                os.kill(self.ident.pid, sig)
        except ProcessLookupError:
            self.valid = False
            return False
        return True

    def exited(self) -> bool:
        if not self.valid:
            return True
        if self.fd is not None:
            return _readable([self.fd], 0.0) != []
        stat = read_stat(self.ident.pid)
        return stat is None or stat.start_ticks != self.ident.start_ticks or stat.state == "Z"

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _readable(fds: list[int], timeout: float) -> list[int]:
    """The pidfds among fds whose process exited, waiting up to timeout for the first.

    poll(), not select(): a tree of a thousand processes pins a thousand pidfds, and select()
    refuses any descriptor numbered 1024 or above.
    """
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return [fd for fd, _ in poller.poll(timeout * 1000)]


def _wait_all_exited(pinned: Iterable[PinnedProcess], timeout: float) -> list[PinnedProcess]:
    """Wait until every pinned process exited or the timeout passed; returns the living."""
    deadline = time.monotonic() + timeout
    living = [p for p in pinned if not p.exited()]
    while living and time.monotonic() < deadline:
        fds = [p.fd for p in living if p.fd is not None]
        pause = min(0.05, max(0.0, deadline - time.monotonic()))
        if fds and len(fds) == len(living):
            _readable(fds, pause)
        else:
            time.sleep(pause)
        living = [p for p in living if not p.exited()]
    return living


def _wait_stopped(handles: Iterable[PinnedProcess], timeout: float) -> None:
    """Wait until every handle's process is stopped or gone.

    SIGSTOP takes hold only when its process next leaves the kernel, so a process still running
    on another core can fork after the signal was sent. Once it is stopped it forks no more, and
    the next listing holds every child it will ever have.
    """
    deadline = time.monotonic() + timeout
    waiting = list(handles)
    while waiting:
        waiting = [handle for handle in waiting if not _stopped(handle)]
        if not waiting or time.monotonic() >= deadline:
            return
        time.sleep(0.001)


def _stopped(handle: PinnedProcess) -> bool:
    stat = read_stat(handle.ident.pid)
    return stat is None or stat.start_ticks != handle.ident.start_ticks or stat.state in "TtZX"


def stop_tree(
    target: ProcessIdentity | None,
    supervised: Collection[ProcessIdentity],
    grace: float = 5.0,
    members: Callable[[], Iterable[int]] | None = None,
    cgroup: str | None = None,
) -> StopReport:
    """Stop target and its descendants, plus the processes `members` lists (a cage's). With
    `cgroup`, the cage's cgroup v2 directory, its members are stopped by freezing it first
    (where the kernel has cgroup.freeze), then the rest of target's tree as without.

    Raises NotSupervisedError, before any signal, when target is alive but is neither a
    supervised process nor a descendant of one; OwnTreeError when what it would stop holds this
    process or one of its ancestors.

    The tree is frozen top-down with SIGSTOP, listed again until no newborn escapes, sent
    SIGTERM bottom-up, thawed with SIGCONT; after the grace period the tree is frozen and
    listed again, so a child born during the grace is found too, and all of it gets SIGKILL. A
    cgroup v2 cage is frozen whole with its cgroup.freeze instead (the kernel holds every
    member, and any child it forks, until the thaw), its members listed, pinned and signalled
    while frozen, TERM before the grace and KILL after it. cgroup.kill is not used: it spares
    nobody, and a stop must spare its own line.
    """
    target_stat = read_stat(target.pid) if target is not None else None
    target_alive = (
        target is not None
        and target_stat is not None
        and target_stat.start_ticks == target.start_ticks
        and target_stat.state != "Z"
    )
    if not target_alive and not (members() if members else []):
        # Nothing left to stop: spare the scan of every process on the machine.
        return StopReport()
    table = process_table()
    if target is not None and _alive_in(table, target) and not is_supervised(
        target, supervised, table
    ):
        raise NotSupervisedError(
            f"process {target.pid} is not a job or agent swarmdeck supervises; not signalling it"
        )
    mine = own_line(table)
    held = _held(target, members, table, mine)
    if held:
        raise OwnTreeError(
            f"stopping process {target.pid if target else held[0]}'s tree would stop this"
            f" command itself (pid {os.getpid()}, through pid {held[0]}); run it from outside"
            " that tree, from another terminal"
        )
    pinned: dict[int, PinnedProcess] = {}
    guard = StopGuard.start(finish_stop)
    try:
        report = StopReport()
        if cgroup is not None and members is not None and freezable(cgroup):
            report = _frozen_stop(cgroup, members, pinned, grace, mine, guard)
            table = process_table()
        more = _freeze_and_stop(
            lambda now: _roots(target, members, now), table, pinned, grace, mine, guard
        )
        report.signalled += more.signalled
        report.killed += more.killed
        report.survivors += more.survivors
    except BaseException:
        if guard is not None:
            guard.abandon()  # the guardian finishes the stop, as if this process had died
        raise
    finally:
        for handle in pinned.values():
            handle.close()
    if guard is not None:
        guard.done()
    return report


def would_stop_itself(
    target: ProcessIdentity | None, members: Callable[[], Iterable[int]] | None = None
) -> bool:
    """Whether a stop of target's tree and the processes `members` lists would reach this
    process or one of its ancestors: what stop_tree refuses (OwnTreeError), asked before."""
    table = process_table()
    return bool(_held(target, members, table, own_line(table)))


def _held(
    target: ProcessIdentity | None,
    members: Callable[[], Iterable[int]] | None,
    table: dict[int, StatLine],
    mine: set[int],
) -> list[int]:
    """The pids of this process's own line (`mine`) that the stop would reach."""
    return [ident.pid for ident in tree_of(_roots(target, members, table), table)
            if ident.pid in mine]


def finish_stop(told: Iterable[ProcessIdentity]) -> StopReport:
    """Finish a stop whose stopper died halfway (actions/stop_guard.py): the processes it had
    started to freeze, and their descendants, are stopped at once, without a grace."""
    roots = list(told)
    pinned: dict[int, PinnedProcess] = {}
    try:
        return _freeze_and_stop(lambda now: roots, process_table(), pinned, 0.0)
    finally:
        for handle in pinned.values():
            handle.close()


def _roots(
    target: ProcessIdentity | None,
    members: Callable[[], Iterable[int]] | None,
    table: dict[int, StatLine],
) -> list[ProcessIdentity]:
    """The target and the members listed now, as the table knows them."""
    roots = [target] if target is not None else []
    for pid in members() if members else ():
        stat = table.get(pid)
        if stat is not None:
            roots.append(ProcessIdentity(pid, stat.start_ticks))
    return roots


def _freeze_and_stop(
    roots: Callable[[dict[int, StatLine]], list[ProcessIdentity]],
    table: dict[int, StatLine],
    pinned: dict[int, PinnedProcess],
    grace: float,
    spared: Collection[int] = (),
    guard: StopGuard | None = None,
) -> StopReport:
    """STOP top-down until no newborn escapes, TERM bottom-up, CONT, KILL after the grace;
    never a pid of `spared` (the stopping process's own line, should one join later). The
    `guard` hears of each round's processes before they are frozen. Whoever lived through the
    grace is frozen again with what it started meanwhile, and all of that is killed."""
    order = _stop_newborn(roots, table, pinned, spared, guard)
    report = StopReport(signalled=[handle.ident for handle in order])
    if not order:
        return report
    for handle in reversed(order):
        handle.send(signal.SIGTERM)
    for handle in reversed(order):
        handle.send(signal.SIGCONT)
    living = _wait_all_exited(order, grace)
    # The living ran through the grace and may have forked: hold them, then their newborns.
    held = [handle for handle in living if handle.send(signal.SIGSTOP)]
    _wait_stopped(held, STOP_CONFIRM)
    late = _stop_newborn(roots, process_table(), pinned, spared, guard)
    report.signalled += [handle.ident for handle in late]
    doomed = living + late
    for handle in doomed:
        if handle.send(signal.SIGKILL):
            report.killed.append(handle.ident)
    report.survivors = [handle.ident for handle in _wait_all_exited(doomed, KILL_CONFIRM)]
    return report


def _stop_newborn(
    roots: Callable[[dict[int, StatLine]], list[ProcessIdentity]],
    table: dict[int, StatLine],
    pinned: dict[int, PinnedProcess],
    spared: Collection[int],
    guard: StopGuard | None,
) -> list[PinnedProcess]:
    """SIGSTOP, top-down, the processes of the roots' trees not pinned yet, round after round
    until one finds no newborn; the ones it stopped, in that order."""
    order: list[PinnedProcess] = []
    for _ in range(MAX_FREEZE_ROUNDS):
        newborn = [ident for ident in tree_of(roots(table), table)
                   if ident.pid not in pinned and ident.pid not in spared]
        if not newborn:
            break
        if guard is not None:
            guard.record(newborn)
        frozen: list[PinnedProcess] = []
        for ident in newborn:
            handle = PinnedProcess(ident)
            pinned[ident.pid] = handle
            if handle.send(signal.SIGSTOP):
                frozen.append(handle)
        order.extend(frozen)
        _wait_stopped(frozen, STOP_CONFIRM)
        table = process_table()
    return order


def freezable(cgroup: str) -> bool:
    """Whether `cgroup` is a cgroup v2 directory with the freezer (kernel 5.2 and later)."""
    return os.path.exists(os.path.join(cgroup, "cgroup.freeze"))


def _set_frozen(cgroup: str, frozen: bool) -> bool:
    """Freeze or thaw a cgroup; False when it is gone (or refuses)."""
    try:
        with open(os.path.join(cgroup, "cgroup.freeze"), "w") as file:
            file.write("1" if frozen else "0")
    except OSError:
        return False
    return True


def _wait_frozen(cgroup: str, timeout: float) -> None:
    """Wait until cgroup.events says the cgroup is frozen, it is gone, or timeout passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(os.path.join(cgroup, "cgroup.events")) as file:
                events = file.read().split()
        except OSError:
            return
        if "frozen" in events and events[events.index("frozen") + 1] == "1":
            return
        time.sleep(0.001)


def _signal_frozen(
    cgroup: str,
    members: Callable[[], Iterable[int]],
    pinned: dict[int, PinnedProcess],
    sig: int,
    spared: Collection[int],
    guard: StopGuard | None,
) -> list[PinnedProcess]:
    """Freeze the cage, send `sig` to each member (pinned, its start ticks checked; never one
    of `spared`), thaw it; the members it reached. Frozen, no member can fork a child the
    listing misses: a child starts in its parent's cgroup, frozen as well."""
    if not _set_frozen(cgroup, True):
        return []
    try:
        _wait_frozen(cgroup, FROZEN_CONFIRM)
        idents = []
        for pid in members():
            stat = read_stat(pid)
            if stat is not None and pid not in spared and stat.state != "Z":
                idents.append(ProcessIdentity(pid, stat.start_ticks))
        if guard is not None and idents:
            guard.record(idents)
        reached = []
        for ident in idents:
            handle = pinned.get(ident.pid)
            if handle is None or handle.ident != ident:
                if handle is not None:
                    handle.close()
                handle = pinned[ident.pid] = PinnedProcess(ident)
            if handle.send(sig):
                reached.append(handle)
        return reached
    finally:
        _set_frozen(cgroup, False)


def _frozen_stop(
    cgroup: str,
    members: Callable[[], Iterable[int]],
    pinned: dict[int, PinnedProcess],
    grace: float,
    spared: Collection[int],
    guard: StopGuard | None,
) -> StopReport:
    """TERM every member of a frozen cage, thaw it, and after the grace KILL, frozen again,
    whoever is in it then, children born during the grace included."""
    told = _signal_frozen(cgroup, members, pinned, signal.SIGTERM, spared, guard)
    report = StopReport(signalled=[handle.ident for handle in told])
    _wait_all_exited(told, grace)
    doomed: list[PinnedProcess] = []
    for _ in range(CGROUP_KILL_ROUNDS):
        killed = _signal_frozen(cgroup, members, pinned, signal.SIGKILL, spared, guard)
        if not killed:
            break
        doomed += killed
        report.killed += [handle.ident for handle in killed]
        _wait_all_exited(killed, KILL_CONFIRM)
    report.survivors = [handle.ident for handle in doomed if not handle.exited()]
    return report
