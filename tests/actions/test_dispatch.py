"""`swarmdeck dispatch` against this host's real book (a small slice of the test's own) and a
real peer (asyncssh's server on 127.0.0.1 running the same swarmdeck)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cagekit import MIB, mem_total, new_slice, remove_tree
from peerkit import start_peer

from ssh_server import servers as servers
from swarmdeck.actions.dispatch import choose
from swarmdeck.actions.hosts.base import Fit, JobSpec
from swarmdeck.actions.hosts.local import LocalHost
from swarmdeck.cli import main
from swarmdeck.config import load_config
from swarmdeck.state import StateStore


@pytest.fixture
def local_slice() -> Iterator[Path]:
    path = new_slice()
    try:
        yield path
    finally:
        remove_tree(path)


def this_host(slice_path: Path, slice_mib: int, prediction: str) -> str:
    """This side's [memory] section: its own slice of `slice_mib` MiB."""
    return (
        f'[memory]\nslice = "{slice_path}"\nreserve = "{mem_total() - slice_mib * MIB}B"\n'
        f'default_prediction = "{prediction}"\nmargin = "1M"\nadmission_wait = 0.0\n'
        "sample_interval = 0.05\n\n"
    )


def rows(table: str) -> list[dict]:
    store = StateStore.open_default()
    try:
        with store.read() as conn:
            return [dict(row) for row in conn.execute(f"SELECT * FROM {table} ORDER BY id")]
    finally:
        store.close()


def test_dispatch_runs_on_the_peer_when_this_host_is_full(
    tmp_path: Path, servers, v1_slice: Path, local_slice: Path, monkeypatch, capfd
) -> None:
    peer = start_peer(tmp_path, servers, v1_slice, extra=this_host(local_slice, 64, "128M"))
    monkeypatch.chdir(peer.work)
    assert main(["dispatch", "--", "sh", "-c", "echo ran on $(uname -n)"]) == 0
    out, err = capfd.readouterr()
    assert "ran on <box2>" in out and "dispatched to box2" in err
    [job] = rows("jobs")
    assert (job["host"], job["state"], job["exit_code"], job["cap"]) == (
        "box2", "done", 0, 192 * MIB)
    [sent] = rows("dispatches")
    assert (sent["host"], sent["booked"], sent["job_id"], sent["exit_code"]) == (
        "box2", 128 * MIB, job["id"], 0)


def test_dispatch_runs_here_first_when_this_host_has_room(
    tmp_path: Path, servers, v1_slice: Path, local_slice: Path, monkeypatch, capfd
) -> None:
    peer = start_peer(tmp_path, servers, v1_slice, extra=this_host(local_slice, 512, "32M"))
    monkeypatch.chdir(peer.work)
    assert main(["dispatch", "--", "sh", "-c", "echo here; exit 5"]) == 5
    out, _ = capfd.readouterr()
    assert "here" in out
    [job] = rows("jobs")
    assert job["host"] != "box2" and job["exit_code"] == 5
    assert rows("dispatches")[0]["host"] == job["host"]


def test_dispatch_exits_241_when_no_host_can_ever_fit(
    tmp_path: Path, servers, v1_slice: Path, local_slice: Path, monkeypatch, capfd
) -> None:
    peer = start_peer(tmp_path, servers, v1_slice, extra=this_host(local_slice, 64, "1G"))
    monkeypatch.chdir(peer.work)
    assert main(["dispatch", "--", "touch", str(tmp_path / "ran")]) == 241
    assert "no host can ever fit" in capfd.readouterr().err
    assert not (tmp_path / "ran").exists() and rows("jobs") == [] and rows("dispatches") == []


def test_a_peer_that_could_not_be_read_is_not_read_not_never(
    tmp_path: Path, local_slice: Path, monkeypatch, capfd
) -> None:
    """This host can never hold 1G in its 64M slice; the peer does not answer. That peer is
    "not read", which may change: the dispatch waits (here 0 s) and exits 252, not 241."""
    (tmp_path / "config.toml").write_text(
        this_host(local_slice, 64, "1G")
        + '[[hosts]]\nname = "box2"\naddress = "127.0.0.1"\nport = 1\ntimeout = 2\n')
    monkeypatch.chdir(tmp_path)
    ran = tmp_path / "ran"
    assert main(["dispatch", "--wait", "0", "--", "touch", str(ran)]) == 252
    err = capfd.readouterr().err
    assert "no host can ever fit" not in err and "box2: not read" in err
    assert not ran.exists() and rows("jobs") == []


def test_dispatch_exits_244_for_a_long_job_that_would_occupy_one_host(
    tmp_path: Path, servers, v1_slice: Path, local_slice: Path, monkeypatch, capfd
) -> None:
    peer = start_peer(tmp_path, servers, v1_slice, extra=this_host(local_slice, 64, "128M"))
    monkeypatch.chdir(peer.work)
    args = ["dispatch", "--estimate-wall", "9000", "--", "touch", str(tmp_path / "ran")]
    assert main(args) == 244
    assert "would occupy box2 alone" in capfd.readouterr().err
    assert not (tmp_path / "ran").exists() and rows("jobs") == []
    assert main(["dispatch", "--estimate-wall", "600", "--", "true"]) == 0


def test_a_learned_cap_under_the_floor_is_raised_to_it_never_refused(
    tmp_path: Path, local_slice: Path, monkeypatch, capfd
) -> None:
    """`date` peaks near 1M: its learned booking makes a cap under the 4M floor, which the
    second dispatch gave the runner as a byte count it then refused (251)."""
    (tmp_path / "config.toml").write_text(this_host(local_slice, 512, "32M"))
    monkeypatch.chdir(tmp_path)
    assert main(["dispatch", "--", "date"]) == 0
    assert main(["dispatch", "--", "date"]) == 0, capfd.readouterr().err
    _, second = rows("jobs")
    assert second["admitted_via"] == "history" and second["cap"] == 4 * MIB
    assert second["declared_cap"] == "4M"


def test_two_quick_dispatches_do_not_both_take_the_same_room(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("")
    store = StateStore.open_default()
    try:
        here = LocalHost(load_config(), store)
        job = JobSpec(("make",), tmp_path, "make", booking=300 * MIB, cap=450 * MIB)
        # Both see the same figures: the peer's reading does not show the first job yet.
        fits = {here.name: Fit(here.name, False, False, reason="full"),
                "box2": Fit("box2", True, True, room=400 * MIB)}
        peer = type("Peer", (), {"name": "box2", "kind": "ssh"})()
        first = choose(store, [here, peer], fits, job)
        second = choose(store, [here, peer], fits, job)
    finally:
        store.close()
    assert first is not None and first.host is peer
    assert second is None
    assert [(row["host"], row["booked"]) for row in rows("dispatches")] == [("box2", 300 * MIB)]
    assert json.loads(rows("dispatches")[0]["argv"]) == ["make"]


def gpu_rows(foreign: bool) -> list[dict]:
    """The `gpus` rows of a peer's snapshot: one card, its one compute process foreign or run
    under a gpu-run wrapper. No GPU here: the rows are built from the real types, not read."""
    from swarmdeck.probes.gpu import GpuCard, GpuProcess, GpuSnapshot

    process = GpuProcess(4242, 2 << 30, "python", "ann", "python train.py", False,
                         holder=None if foreign else 4240)
    card = GpuCard(0, "H100", "GPU-0", 80 << 30, 2 << 30, 78 << 30, 5, 3, 40, [process])
    return [row.to_json() for row in GpuSnapshot("ok", cards=[card]).as_rows()]


@pytest.mark.parametrize(("foreign", "fits_now"), [(False, True), (True, False)])
def test_a_gpu_job_fits_a_peer_only_when_its_cached_reading_has_a_free_card(
    tmp_path: Path, foreign: bool, fits_now: bool
) -> None:
    from peer_figures import peer_host_object
    from swarmdeck.actions.hosts.ssh import SshHost
    from swarmdeck.probes.peer_cache import reading_of, write_reading

    (tmp_path / "config.toml").write_text(
        '[[hosts]]\nname = "box2"\naddress = "127.0.0.1"\nport = 1\n')
    figures = peer_host_object(room=400 * MIB, machine_room=400 * MIB, slice_cap=512 * MIB)
    write_reading(reading_of("box2", figures, time.time(), gpu_rows(foreign)))
    host_config = load_config().host("box2")
    assert host_config is not None
    peer = SshHost(host_config)
    try:
        job = JobSpec(("train",), tmp_path, "train", booking=64 * MIB, cap=96 * MIB, gpu=True)
        fit = peer.fits(job)
        plain = peer.fits(JobSpec(("make",), tmp_path, "make", booking=64 * MIB, cap=96 * MIB))
    finally:
        peer.close()
    assert (fit.now, fit.ever, fit.gpus_free) == (fits_now, True, int(fits_now))
    assert fit.reason == ("" if fits_now else "every GPU there has a foreign process on it")
    assert plain.now


def test_a_gpu_job_does_not_fit_a_peer_that_gave_no_gpu_figures(tmp_path: Path) -> None:
    from peer_figures import peer_host_object
    from swarmdeck.actions.hosts.ssh import SshHost
    from swarmdeck.probes.peer_cache import reading_of, write_reading

    (tmp_path / "config.toml").write_text(
        '[[hosts]]\nname = "box2"\naddress = "127.0.0.1"\nport = 1\n')
    figures = peer_host_object(room=400 * MIB, machine_room=400 * MIB, slice_cap=512 * MIB)
    write_reading(reading_of("box2", figures, time.time()))
    host_config = load_config().host("box2")
    assert host_config is not None
    peer = SshHost(host_config)
    try:
        fit = peer.fits(JobSpec(("t",), tmp_path, "t", booking=64 * MIB, cap=96 * MIB, gpu=True))
    finally:
        peer.close()
    assert (fit.now, fit.gpus_free, fit.reason) == (False, None, "no GPU figures from it")


def test_a_gpu_job_never_fits_a_peer_whose_reading_says_it_has_no_gpu(tmp_path: Path) -> None:
    from peer_figures import peer_host_object
    from swarmdeck.actions.hosts.ssh import SshHost
    from swarmdeck.probes.gpu import GpuSnapshot
    from swarmdeck.probes.peer_cache import reading_of, write_reading

    (tmp_path / "config.toml").write_text(
        '[[hosts]]\nname = "box2"\naddress = "127.0.0.1"\nport = 1\n')
    figures = peer_host_object(room=400 * MIB, machine_room=400 * MIB, slice_cap=512 * MIB)
    no_gpu = [row.to_json() for row in GpuSnapshot("no GPU", "NVML sees no device").as_rows()]
    write_reading(reading_of("box2", figures, time.time(), no_gpu))
    host_config = load_config().host("box2")
    assert host_config is not None
    peer = SshHost(host_config)
    try:
        fit = peer.fits(JobSpec(("t",), tmp_path, "t", booking=64 * MIB, cap=96 * MIB, gpu=True))
    finally:
        peer.close()
    assert (fit.now, fit.ever) == (False, False)
    assert fit.reason == "no GPU card there (NVML sees no device)"


@pytest.fixture
def scripted_gpus(monkeypatch: pytest.MonkeyPatch):
    """This host's NVML, scripted: these machines have no GPU (tests/nvml_standin.py)."""
    from nvml_standin import ScriptedNvml
    from swarmdeck.probes import nvml as nvml_module

    def use(standin: ScriptedNvml) -> None:
        monkeypatch.setattr(nvml_module, "_shared", nvml_module.Nvml(standin))

    return use


def test_a_gpu_job_exits_241_at_once_when_no_host_has_a_gpu(
    tmp_path: Path, local_slice: Path, monkeypatch, capfd, scripted_gpus
) -> None:
    import pynvml

    from nvml_standin import ScriptedNvml

    scripted_gpus(ScriptedNvml(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND))
    (tmp_path / "config.toml").write_text(this_host(local_slice, 512, "1M"))
    monkeypatch.chdir(tmp_path)
    ran = tmp_path / "ran"
    assert main(["dispatch", "--gpu", "--wait", "5", "--", "touch", str(ran)]) == 241
    err = capfd.readouterr().err
    assert "no host can ever fit this job (1M booked and a GPU)" in err
    assert ": no GPU card here (" in err and "(exit 241)" in err
    assert err.count("\n") == 1
    assert not ran.exists() and rows("jobs") == [] and rows("dispatches") == []


def test_a_gpu_job_waits_while_every_card_here_is_held_by_a_foreign_process(
    tmp_path: Path, local_slice: Path, monkeypatch, capfd, scripted_gpus
) -> None:
    import subprocess

    from nvml_standin import GIB, ScriptedCard, ScriptedNvml

    holder = subprocess.Popen(["sleep", "60"])
    try:
        scripted_gpus(ScriptedNvml([ScriptedCard(processes=[(holder.pid, GIB)])]))
        (tmp_path / "config.toml").write_text(this_host(local_slice, 512, "1M"))
        monkeypatch.chdir(tmp_path)
        ran = tmp_path / "ran"
        assert main(["dispatch", "--gpu", "--wait", "0", "--", "touch", str(ran)]) == 252
    finally:
        holder.kill()
        holder.wait()
    err = capfd.readouterr().err
    assert ": every GPU here has a foreign process on it (exit 252)" in err
    assert not ran.exists() and rows("jobs") == []
