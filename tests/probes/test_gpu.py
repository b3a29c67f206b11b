"""The GPU probe. These machines have no GPU: apart from the first test (the real pynvml, which
finds no library here) every test drives a scripted NVML stand-in (tests/nvml_standin.py)."""

from __future__ import annotations

import importlib
import json
import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pynvml
import pytest

from nvml_standin import GIB, ScriptedCard, ScriptedNvml
from swarmdeck.probes import gpu
from swarmdeck.probes.nvml import NO_GPU, NOT_READ, READY, Nvml
from swarmdeck.probes.procs import identity, own_identity

RESERVED = 512 * 1024**2


def json_rows(snapshot: gpu.GpuSnapshot) -> list[dict[str, object]]:
    """The snapshot's `gpus` rows as `status --json` prints them."""
    return [row.to_json() for row in snapshot.as_rows()]


def _started(proc: subprocess.Popen[bytes], within: float = 10.0) -> None:
    """Wait until `proc` runs its own command line: just after fork, and while it execs on a busy
    machine, /proc shows the parent's or an empty one."""
    want = "\0".join(proc.args).encode()  # type: ignore[arg-type]
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{proc.pid}/cmdline").read_bytes().rstrip(b"\0") == want:
                return
        except OSError:
            pass
        time.sleep(0.01)
    raise AssertionError(f"{proc.args} did not start within {within} s")


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Two real processes to stand as GPU compute processes: `sleep` and a python."""
    procs = [
        subprocess.Popen(["sleep", "60"]),
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]),
    ]
    try:
        for proc in procs:
            _started(proc)
        yield procs
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_real_nvml_without_a_gpu_is_the_no_gpu_state() -> None:
    snapshot = gpu.gpu_snapshot(nvml=Nvml())
    assert snapshot.state == NO_GPU and snapshot.cards == []
    assert snapshot.summary().startswith("no GPU")
    assert json_rows(snapshot)[0]["index"] is None and json_rows(snapshot)[0]["state"] == NO_GPU


@pytest.mark.parametrize(
    "error", [pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, pynvml.NVML_ERROR_DRIVER_NOT_LOADED]
)
def test_missing_library_or_driver_is_no_gpu_not_an_error(error: int) -> None:
    snapshot = gpu.gpu_snapshot(nvml=Nvml(ScriptedNvml(init_error=error)))
    assert snapshot.state == NO_GPU and snapshot.reason


def test_no_device_is_no_gpu() -> None:
    assert gpu.gpu_snapshot(nvml=Nvml(ScriptedNvml(cards=[]))).state == NO_GPU


def test_unexpected_init_failure_is_not_read_and_tried_again() -> None:
    standin = ScriptedNvml(init_error=pynvml.NVML_ERROR_NO_PERMISSION)
    nvml = Nvml(standin)
    first = gpu.gpu_snapshot(nvml=nvml)
    assert first.state == NOT_READ and "Permissions" in first.reason
    standin.init_error = None
    assert gpu.gpu_snapshot(nvml=nvml).state == READY


@pytest.mark.parametrize(
    "failing",
    [
        {"nvmlDeviceGetCount": pynvml.NVML_ERROR_UNKNOWN},
        {
            "nvmlDeviceGetCount": pynvml.NVML_ERROR_GPU_IS_LOST,
            "nvmlShutdown": pynvml.NVML_ERROR_GPU_IS_LOST,
        },
    ],
)
def test_a_failing_device_count_and_shutdown_are_a_state_not_a_crash(
    failing: dict[str, int],
) -> None:
    snapshot = gpu.gpu_snapshot(nvml=Nvml(ScriptedNvml(failing=failing)))
    assert snapshot.state == NOT_READ and snapshot.reason.startswith("device count:")


def test_no_device_with_a_failing_shutdown_is_still_no_gpu() -> None:
    standin = ScriptedNvml(cards=[], failing={"nvmlShutdown": pynvml.NVML_ERROR_UNINITIALIZED})
    assert gpu.gpu_snapshot(nvml=Nvml(standin)).state == NO_GPU


def test_nvml_is_initialised_once_and_kept() -> None:
    standin = ScriptedNvml()
    nvml = Nvml(standin)
    for _ in range(3):
        gpu.gpu_snapshot(nvml=nvml)
    assert standin.calls.count("nvmlInitWithFlags") == 1
    assert "nvmlShutdown" not in standin.calls


def test_cards_with_processes_marked_allowlisted_or_foreign(sleepers) -> None:
    sleep, python = sleepers
    cards = [
        ScriptedCard(processes=[(sleep.pid, 3 * GIB), (python.pid, None)]),
        ScriptedCard(name="NVIDIA A10", used=0, total=24 * GIB),
    ]
    snapshot = gpu.gpu_snapshot(["sleep"], nvml=Nvml(ScriptedNvml(cards)))
    assert snapshot.state == READY and snapshot.driver_version == "575.57.08"
    first, second = snapshot.cards
    # Memory struct v2: the driver's reservation is neither used nor free.
    assert (first.memory_total, first.memory_used, first.memory_free) == (
        80 * GIB,
        2 * GIB,
        78 * GIB - RESERVED,
    )
    assert (first.utilization, first.memory_utilization, first.temperature) == (37, 12, 41)
    by_pid = {p.pid: p for p in first.process_list}
    assert by_pid[sleep.pid].allowlisted and not by_pid[sleep.pid].foreign
    assert by_pid[sleep.pid].used_memory == 3 * GIB and by_pid[sleep.pid].name == "sleep"
    assert by_pid[python.pid].foreign and by_pid[python.pid].used_memory == "n/a"
    assert by_pid[python.pid].user == "root" and "time.sleep(60)" in by_pid[python.pid].command
    assert second.name == "NVIDIA A10" and second.process_list == []
    assert snapshot.summary() == "2 GPUs, 2.0/104 GiB used"
    json.dumps(json_rows(snapshot))


def test_allowlist_entries_are_globs_on_name_or_program() -> None:
    assert gpu.is_allowlisted("ollama", "/usr/bin/ollama serve", ["ollama"])
    assert gpu.is_allowlisted("python3", "/opt/venv/bin/vllm-server --port 1", ["vllm*"])
    assert not gpu.is_allowlisted("python3", "python3 train.py", ["vllm*", "ollama"])


def test_unsupported_field_is_na_and_missing_function_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    card = ScriptedCard(errors={"nvmlDeviceGetTemperature": pynvml.NVML_ERROR_NOT_SUPPORTED})
    nvml = Nvml(ScriptedNvml([card], absent=("nvmlDeviceGetUUID",)))
    with caplog.at_level(logging.WARNING, logger="swarmdeck.probes.nvml"):
        first = gpu.gpu_snapshot(nvml=nvml)
        gpu.gpu_snapshot(nvml=nvml)
    (only,) = first.cards
    assert only.temperature == "n/a" and only.uuid == "n/a"
    assert only.memory_used == 2 * GIB
    assert [r.message for r in caplog.records].count(
        "NVML function nvmlDeviceGetUUID is not in this driver; its values show n/a"
    ) == 1


def test_nvml_raising_mid_query_marks_those_values_not_read() -> None:
    cards = [
        ScriptedCard(),
        ScriptedCard(errors={"nvmlDeviceGetMemoryInfo": pynvml.NVML_ERROR_GPU_IS_LOST}),
        ScriptedCard(errors={"nvmlDeviceGetHandleByIndex": pynvml.NVML_ERROR_UNKNOWN}),
        ScriptedCard(
            errors={"nvmlDeviceGetComputeRunningProcesses": pynvml.NVML_ERROR_NO_PERMISSION}
        ),
    ]
    snapshot = gpu.gpu_snapshot(nvml=Nvml(ScriptedNvml(cards)))
    fine, lost, unknown, no_procs = snapshot.cards
    assert fine.memory_used == 2 * GIB
    assert lost.memory_used == lost.memory_total == "not read: GPU is lost"
    assert lost.utilization == 37 and lost.name == "NVIDIA H100 80GB HBM3"
    assert unknown.problem == "not read: Unknown Error"
    assert no_procs.processes == "not read: Insufficient Permissions"
    rows = json_rows(snapshot)
    assert rows[2]["state"] == "not read" and rows[1]["memory_used"] == "not read: GPU is lost"


def test_memory_falls_back_to_struct_v1_where_the_driver_or_binding_lacks_v2() -> None:
    old_driver = ScriptedNvml(absent=("nvmlDeviceGetMemoryInfo_v2",))
    old_binding = ScriptedNvml(missing_bindings=("nvmlMemory_v2",))
    for standin in (old_driver, old_binding):
        (card,) = gpu.gpu_snapshot(nvml=Nvml(standin)).cards
        assert (card.memory_used, card.memory_free) == (2 * GIB + RESERVED, 78 * GIB - RESERVED)
    assert "nvmlDeviceGetMemoryInfo_v2" not in old_binding.calls


@pytest.mark.parametrize(
    ("absent", "missing_bindings", "called"),
    [
        ((), (), "nvmlDeviceGetTemperatureV"),
        (("nvmlDeviceGetTemperatureV",), (), "nvmlDeviceGetTemperature"),
        ((), ("nvmlDeviceGetTemperatureV",), "nvmlDeviceGetTemperature"),
        (("nvmlDeviceGetTemperature",), (), "nvmlDeviceGetTemperatureV"),
    ],
)
def test_temperature_is_read_by_whichever_call_driver_and_binding_have(
    absent: tuple[str, ...], missing_bindings: tuple[str, ...], called: str
) -> None:
    standin = ScriptedNvml(absent=absent, missing_bindings=missing_bindings)
    (card,) = gpu.gpu_snapshot(nvml=Nvml(standin)).cards
    assert card.temperature == 41 and called in standin.calls


def test_a_driver_without_process_listing_v3_is_asked_with_v2(sleepers) -> None:
    standin = ScriptedNvml(
        [ScriptedCard(processes=[(sleepers[0].pid, GIB)])],
        absent=("nvmlDeviceGetComputeRunningProcesses_v3",),
    )
    (card,) = gpu.gpu_snapshot(nvml=Nvml(standin)).cards
    assert [(p.pid, p.used_memory) for p in card.process_list] == [(sleepers[0].pid, GIB)]
    assert "nvmlDeviceGetComputeRunningProcesses_v2" in standin.calls


def test_library_mismatch_of_the_unversioned_listing_is_na_not_a_crash(sleepers) -> None:
    """pynvml's unversioned nvmlDeviceGetComputeRunningProcesses raises
    NVMLLibraryMismatchError (not an NVMLError) when the driver lacks the _v3 behind it."""
    standin = ScriptedNvml(
        [ScriptedCard(processes=[(sleepers[0].pid, GIB)])],
        absent=("nvmlDeviceGetComputeRunningProcesses_v3",),
        missing_bindings=(
            "nvmlDeviceGetComputeRunningProcesses_v3",
            "nvmlDeviceGetComputeRunningProcesses_v2",
        ),
    )
    with pytest.raises(pynvml.NVMLLibraryMismatchError):
        standin.nvmlDeviceGetComputeRunningProcesses(standin.nvmlDeviceGetHandleByIndex(0))
    (card,) = gpu.gpu_snapshot(nvml=Nvml(standin)).cards
    assert card.processes == "n/a" and card.memory_used == 2 * GIB


def test_mig_card_reads_na_for_load_and_process_memory(sleepers) -> None:
    card = ScriptedCard(mig=True, processes=[(sleepers[0].pid, GIB)])
    (read,) = gpu.gpu_snapshot(["sleep"], nvml=Nvml(ScriptedNvml([card]))).cards
    assert read.utilization == read.memory_utilization == "n/a"
    (process,) = read.process_list
    assert process.used_memory == "n/a" and process.allowlisted
    assert read.memory_used == 2 * GIB and read.temperature == 41


def test_text_given_as_bytes_by_an_older_binding_reads_as_text() -> None:
    snapshot = gpu.gpu_snapshot(nvml=Nvml(ScriptedNvml(bytes_strings=True)))
    (card,) = snapshot.cards
    assert card.name == "NVIDIA H100 80GB HBM3" and card.uuid.startswith("GPU-")
    assert snapshot.driver_version == "575.57.08"


def test_memory_not_available_passed_through_raw_is_na() -> None:
    assert gpu._process_memory(pynvml.NVML_VALUE_NOT_AVAILABLE_ulonglong.value) == "n/a"
    assert gpu._process_memory(None) == "n/a"
    assert gpu._process_memory(3 * GIB) == 3 * GIB


def test_nvml_shut_down_by_someone_else_is_started_again_on_the_next_snapshot() -> None:
    card = ScriptedCard(errors={"nvmlDeviceGetMemoryInfo": pynvml.NVML_ERROR_UNINITIALIZED})
    standin = ScriptedNvml([card])
    nvml = Nvml(standin)
    (first,) = gpu.gpu_snapshot(nvml=nvml).cards
    assert first.memory_used == "not read: Uninitialized"
    card.errors.clear()
    (second,) = gpu.gpu_snapshot(nvml=nvml).cards
    assert second.memory_used == 2 * GIB
    assert standin.calls.count("nvmlInitWithFlags") == 2


def test_the_standin_refuses_names_the_real_pynvml_does_not_have() -> None:
    standin = ScriptedNvml()
    with pytest.raises(AssertionError, match="real pynvml has no"):
        standin.nvmlDeviceGetComputeProcesses  # noqa: B018
    assert standin.NVMLError_NotSupported is pynvml.NVMLError_NotSupported


def write_registration(folder: Path, pid: int, ticks: int, command: str = "train") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{pid}-{ticks}.json"
    path.write_text(gpu.QuiesceHolder(pid, ticks, command, 1.0, True).to_text())
    return path


def test_quiesce_holders_alive_gone_or_reused(tmp_path: Path) -> None:
    me = own_identity()
    gone = subprocess.Popen(["true"])
    gone_id = identity(gone.pid)
    gone.wait()
    folder = tmp_path / "q"
    write_registration(folder, me.pid, me.start_ticks)
    write_registration(folder, me.pid, me.start_ticks + 5)
    if gone_id is not None:
        write_registration(folder, gone_id.pid, gone_id.start_ticks)
    (folder / "junk.json").write_text("{not json")
    holders = {(h.pid, h.start_ticks): h for h in gpu.quiesce_holders(folder)}
    assert holders[(me.pid, me.start_ticks)].alive
    reused = holders[(me.pid, me.start_ticks + 5)]
    assert not reused.alive and reused.reason == "pid reused"
    if gone_id is not None:
        assert not holders[(gone_id.pid, gone_id.start_ticks)].alive
    assert len(holders) == (3 if gone_id else 2)


def test_process_under_a_live_gpu_run_is_its_holders_not_foreign(tmp_path: Path) -> None:
    me = own_identity()
    folder = tmp_path / "q"
    write_registration(folder, me.pid, me.start_ticks)
    child = subprocess.Popen(["sh", "-c", "sleep 60"])
    try:
        card = ScriptedCard(processes=[(child.pid, GIB)])
        snapshot = gpu.gpu_snapshot(nvml=Nvml(ScriptedNvml([card])), quiesce=folder)
    finally:
        child.kill()
        child.wait()
    (process,) = snapshot.cards[0].process_list
    assert process.holder == me.pid and not process.foreign
    assert [h.pid for h in snapshot.live_holders] == [me.pid]


def test_bench_gpu_check_says_no_gpu_here_and_exits_cleanly() -> None:
    script = Path(__file__).parents[2] / "bench" / "gpu_check.py"
    done = subprocess.run(
        [sys.executable, str(script), "--calls", "3"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "no GPU" in done.stdout and not done.stderr


@pytest.fixture
def gpu_check() -> ModuleType:
    """bench/gpu_check.py as a module."""
    sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
    try:
        return importlib.import_module("gpu_check")
    finally:
        sys.path.pop(0)


def test_bench_gpu_check_on_a_scripted_card_reports_cards_and_cost(
    gpu_check: ModuleType,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    sleepers,
) -> None:
    from swarmdeck.probes import nvml as nvml_module

    card = ScriptedCard(processes=[(sleepers[0].pid, GIB)])
    monkeypatch.setattr(nvml_module, "_shared", Nvml(ScriptedNvml([card])))
    monkeypatch.setattr(gpu_check, "CUDA_HOLDERS", {})
    assert gpu_check.main(["--calls", "3"]) == 0
    out = capsys.readouterr().out
    assert "GPU 0: NVIDIA H100 80GB HBM3" in out and f"pid {sleepers[0].pid} sleep" in out
    assert "neither torch nor cupy" in out and "median of 3" in out
    listed = sleepers[0].pid
    assert gpu_check.see_process(listed, set(), 1.0).startswith(f"seen: pid {listed} on GPU 0")
    elsewhere = gpu_check.see_process(sleepers[1].pid, set(), 0.3)
    assert f"new compute pid(s) [{listed}]" in elsewhere and "pid namespace" in elsewhere
    assert gpu_check.see_process(sleepers[1].pid, {listed}, 0.3).startswith("NOT seen: pid")


def test_bench_gpu_check_starts_its_cuda_child_or_says_why_not(
    gpu_check: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gpu_check, "CUDA_HOLDERS", {"json": "import time"})
    child, how = gpu_check.start_cuda_process(10.0)
    assert child is not None and how == "started with json"
    child.kill()
    child.wait()
    monkeypatch.setattr(gpu_check, "CUDA_HOLDERS", {"json": "import time; time.sleep(30)"})
    child, how = gpu_check.start_cuda_process(0.3)
    assert child is None and "did not allocate on the GPU within 0.3 s" in how
