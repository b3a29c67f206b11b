"""gpu-run with real processes and the real kernel log. These machines have no GPU: the cards
are a scripted NVML stand-in (tests/nvml_standin.py) listing real processes as their users."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pynvml
import pytest

from kernel_log import FakeKernelLog
from nvml_standin import GIB, ScriptedCard, ScriptedNvml
from swarmdeck.actions import quiesce
from swarmdeck.actions.quiesce import GpuRunSettings
from swarmdeck.errors import RefusedError
from swarmdeck.exitcodes import ExitCode
from swarmdeck.probes.gpu import QuiesceHolder
from swarmdeck.probes.nvml import Nvml
from swarmdeck.probes.procs import identity, read_stat
from waiting import wait_for


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path / "quiesce"


class Service:
    """A real process standing for an inference server that holds a card. It is not a child of
    the test process (whose own children would count as the wrapper's), so it is started
    through a shell that leaves it to init."""

    def __init__(self) -> None:
        out = subprocess.run(
            ["sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!"],
            capture_output=True,
            text=True,
            check=True,
        )
        self.pid = int(out.stdout)
        # The shell's fork is `sh` until it has run `sleep`: a card's process read before then
        # would not be the service it stands for.
        wait_for(lambda: Path(f"/proc/{self.pid}/comm").read_text().strip() == "sleep")

    def alive(self) -> bool:
        stat = read_stat(self.pid)
        return stat is not None and stat.state not in ("Z", "X")

    def kill(self, signum: int = signal.SIGKILL) -> None:
        if self.alive():
            os.kill(self.pid, signum)

    def wait_gone(self, timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        return not self.alive()


@pytest.fixture
def service() -> Iterator[Service]:
    proc = Service()
    try:
        yield proc
    finally:
        proc.kill()


def cards_with(*pids: int) -> Nvml:
    return Nvml(ScriptedNvml([ScriptedCard(processes=[(pid, GIB) for pid in pids])]))


def run(
    argv: list[str],
    nvml: Nvml,
    folder: Path,
    said: list[str],
    log: FakeKernelLog | None = None,
    **settings,
) -> int:
    """gpu-run with the test's own kernel log (an empty one unless `log` is given)."""
    log = log or FakeKernelLog(folder.parent)
    return quiesce.gpu_run(
        argv,
        GpuRunSettings(poll=0.05, stop_timeout=1.0, **settings),
        nvml=nvml,
        folder=folder,
        kmsg=log.kmsg,
        dmesg=log.dmesg,
        say=said.append,
    )


def test_clean_cards_run_the_command_and_pass_its_status_through(folder: Path) -> None:
    said: list[str] = []
    assert run(["sh", "-c", "exit 3"], cards_with(), folder, said) == 3
    assert run(["sh", "-c", "kill -9 $$"], cards_with(), folder, said) == 128 + 9
    assert list(folder.glob("*.json")) == []


def test_foreign_process_refuses_with_78_naming_it_and_is_not_killed(
    folder: Path, service, tmp_path: Path
) -> None:
    ran = tmp_path / "ran"
    with pytest.raises(RefusedError) as refused:
        run(["touch", str(ran)], cards_with(service.pid), folder, [])
    assert refused.value.exit_code == ExitCode.REFUSED
    message = refused.value.message
    assert f"pid {service.pid}" in message and "user root" in message and "sleep 60" in message
    assert not ran.exists()
    assert service.alive()
    assert list(folder.glob("*.json")) == []


def test_waiting_for_a_foreign_process_runs_once_it_has_gone(
    folder: Path, service, tmp_path: Path
) -> None:
    def end_it() -> None:
        time.sleep(0.3)
        service.kill()

    threading.Thread(target=end_it).start()
    said: list[str] = []
    status = run(["true"], cards_with(service.pid), folder, said, wait=True, say_every=0.1)
    assert status == 0
    assert any(f"pid {service.pid}" in line and "waiting" in line for line in said)


def test_waiting_past_the_limit_refuses(folder: Path, service) -> None:
    with pytest.raises(RefusedError, match="waited"):
        run(["true"], cards_with(service.pid), folder, [], wait=True, wait_timeout=0.2)


def test_stop_commands_free_allowlisted_services_and_are_read_back(
    folder: Path, service, tmp_path: Path
) -> None:
    said: list[str] = []
    status = run(
        ["true"],
        cards_with(service.pid),
        folder,
        said,
        allowlist=["sleep"],
        stop_commands=[f"kill {service.pid}"],
    )
    assert status == 0
    assert service.wait_gone()
    assert any(f"stopping: kill {service.pid}" in line for line in said)


def test_service_that_does_not_stop_refuses_with_78(folder: Path, service) -> None:
    with pytest.raises(RefusedError, match=f"pid {service.pid} .* still holds the card"):
        run(
            ["true"],
            cards_with(service.pid),
            folder,
            [],
            allowlist=["sleep"],
            stop_commands=["true"],
        )
    assert service.alive()


def test_cards_whose_processes_cannot_be_listed_refuse_with_78(folder: Path, tmp_path) -> None:
    card = ScriptedCard(
        errors={"nvmlDeviceGetComputeRunningProcesses": pynvml.NVML_ERROR_NO_PERMISSION}
    )
    ran = tmp_path / "ran"
    with pytest.raises(RefusedError, match="GPU 0: cannot tell who uses it") as refused:
        run(["touch", str(ran)], Nvml(ScriptedNvml([card])), folder, [])
    assert "Insufficient Permissions" in refused.value.message
    assert not ran.exists()


def test_stop_that_cannot_be_read_back_refuses_with_78(folder: Path, service, tmp_path) -> None:
    card = ScriptedCard(processes=[(service.pid, GIB)])
    stopping, injected = tmp_path / "stopping", tmp_path / "injected"

    def listing_fails_once_stopping() -> None:
        deadline = time.monotonic() + 10
        while not stopping.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        card.errors["nvmlDeviceGetComputeRunningProcesses"] = pynvml.NVML_ERROR_UNKNOWN
        injected.touch()

    watcher = threading.Thread(target=listing_fails_once_stopping)
    watcher.start()
    try:
        with pytest.raises(RefusedError, match="stop commands ran but GPU 0: cannot tell"):
            run(
                ["true"],
                Nvml(ScriptedNvml([card])),
                folder,
                [],
                allowlist=["sleep"],
                stop_commands=[
                    f"touch {stopping}; for _ in $(seq 3000); do [ -e {injected} ] && break;"
                    f" sleep 0.01; done; kill {service.pid}"
                ],
            )
    finally:
        watcher.join()


def register_as(folder: Path, pid: int, ticks: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    holder = QuiesceHolder(pid, ticks, "other job", 1.0, True)
    (folder / f"{pid}-{ticks}.json").write_text(holder.to_text())


def test_another_live_wrapper_means_services_are_not_stopped_again(
    folder: Path, service, tmp_path: Path
) -> None:
    other = identity(service.pid)
    assert other is not None
    register_as(folder, other.pid, other.start_ticks)
    marker = tmp_path / "stopped"
    said: list[str] = []
    status = run(["true"], cards_with(), folder, said, stop_commands=[f"touch {marker}"])
    assert status == 0 and not marker.exists()
    assert any(f"already quiesced by gpu-run {service.pid}" in line for line in said)


def test_stale_registrations_dead_or_reused_are_ignored(
    folder: Path, service, tmp_path: Path
) -> None:
    live = identity(service.pid)
    assert live is not None
    register_as(folder, live.pid, live.start_ticks + 1)
    gone = subprocess.Popen(["true"])
    gone_id = identity(gone.pid)
    gone.wait()
    if gone_id is not None:
        register_as(folder, gone_id.pid, gone_id.start_ticks)
    marker = tmp_path / "stopped"
    status = run(["true"], cards_with(), folder, [], stop_commands=[f"touch {marker}"])
    assert status == 0 and marker.exists()
    assert list(folder.glob("*.json")) == []


def test_command_under_a_live_wrapper_is_not_foreign(folder: Path, tmp_path: Path) -> None:
    parent = subprocess.Popen(["sh", "-c", "sleep 60 & wait"])
    children = Path(f"/proc/{parent.pid}/task/{parent.pid}/children")
    try:
        wait_for(lambda: children.read_text().split())
        me = identity(parent.pid)
        assert me is not None
        register_as(folder, me.pid, me.start_ticks)
        [child] = children.read_text().split()
        assert run(["true"], cards_with(int(child)), folder, []) == 0
    finally:
        parent.kill()
        parent.wait()


def test_no_gpu_refuses_with_78(folder: Path) -> None:
    with pytest.raises(RefusedError, match="no GPU"):
        run(["true"], Nvml(ScriptedNvml(cards=[])), folder, [])


NVRM = "NVRM: nvAssertOkFailedNoLog: Assertion failed: Out of memory [NV_ERR_NO_MEMORY]"


def test_nv_err_no_memory_logged_during_the_run_exits_245(folder: Path, tmp_path: Path) -> None:
    log = FakeKernelLog(tmp_path)
    line = f"swarmdeck-test {uuid.uuid4().hex} {NVRM}"
    said: list[str] = []
    status = run(log.kmsg_command(line), cards_with(), folder, said, log=log)
    assert status == ExitCode.GPU_OUT_OF_MEMORY
    assert any(line in message for message in said)


def test_nv_err_no_memory_is_found_through_dmesg_when_kmsg_cannot_be_opened(
    folder: Path, tmp_path: Path
) -> None:
    log = FakeKernelLog(tmp_path)
    line = f"swarmdeck-test {uuid.uuid4().hex} {NVRM}"
    status = quiesce.gpu_run(
        log.dmesg_command(line),
        GpuRunSettings(),
        nvml=cards_with(),
        folder=folder,
        kmsg=tmp_path / "absent",
        dmesg=log.dmesg,
        say=lambda _: None,
    )
    assert status == ExitCode.GPU_OUT_OF_MEMORY


def test_nv_err_no_memory_logged_before_the_run_does_not_count(
    folder: Path, tmp_path: Path
) -> None:
    log = FakeKernelLog(tmp_path)
    log.log_kmsg(f"swarmdeck-test {uuid.uuid4().hex} {NVRM}")
    assert run([sys.executable, "-c", "pass"], cards_with(), folder, [], log=log) == 0


def test_unreadable_kernel_log_keeps_the_status_and_says_so(
    folder: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    said: list[str] = []
    status = quiesce.gpu_run(
        ["/bin/true"],
        GpuRunSettings(),
        nvml=cards_with(),
        folder=folder,
        kmsg=tmp_path / "absent",
        say=said.append,
    )
    assert status == 0
    assert any("kernel log not read" in line for line in said)
