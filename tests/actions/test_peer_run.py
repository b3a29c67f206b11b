"""`swarmdeck peer run|check|cleanup` against a real SSH server on 127.0.0.1 (asyncssh's, with
a generated host key and key authentication) that runs the same installed swarmdeck in a peer
root of the test's own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import asyncssh
import pytest
from cagekit import SWARMDECK, hog
from peerkit import start_peer

from ssh_server import servers as servers
from swarmdeck.actions.hosts.peer_ledger import ledger_id
from swarmdeck.cli import main
from swarmdeck.probes.procs import read_stat
from swarmdeck.state import StateStore


def peer_rows(host: str = "box2") -> list[dict]:
    store = StateStore.open_default()
    try:
        with store.read() as conn:
            rows = conn.execute("SELECT * FROM jobs WHERE host = ? ORDER BY id", (host,))
            return [dict(row) for row in rows.fetchall()]
    finally:
        store.close()


def test_full_peer_run_brings_its_artifact_back_and_leaves_nothing(
    tmp_path: Path, servers, v1_slice: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    peer = start_peer(tmp_path, servers, v1_slice)
    monkeypatch.chdir(peer.work)
    code = main([
        "peer", "run", "box2", "--label", "art", "--fetch", "out/result.txt", "--",
        "sh", "-c", "sh job.sh; mkdir out; cat src/data.txt > out/result.txt; uname -n",
    ])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert "hello from <box2>" in out
    assert os.uname().nodename not in out
    assert (peer.work / "out" / "result.txt").read_text() == "payload\n"
    assert list(peer.run_root.iterdir()) == []
    [row] = peer_rows()
    assert (row["state"], row["exit_code"]) == ("done", 0)
    assert row["run_dir"].startswith(str(peer.run_root)) and row["pid"] and row["start_ticks"]


@pytest.mark.parametrize("status", [7, 250])
def test_the_remote_exit_code_is_the_exit_code_here(
    tmp_path: Path, servers, v1_slice: Path, monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    peer = start_peer(tmp_path, servers, v1_slice)
    monkeypatch.chdir(peer.work)
    command = ["sh", "-c", "exit 7"] if status == 7 else ["--cap", "64M", "--", *hog(200)]
    args = ["peer", "run", "box2", "--", *command] if status == 7 else [
        "peer", "run", "box2", *command]
    assert main(args) == status
    [row] = peer_rows()
    assert (row["state"], row["exit_code"]) == ("done", status)
    assert row["declared_cap"] == ("" if status == 7 else "64M")
    assert list(peer.run_root.iterdir()) == []


def test_a_disabled_host_refuses_with_78_and_nothing_runs_anywhere(
    tmp_path: Path, servers, v1_slice: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    peer = start_peer(tmp_path, servers, v1_slice, extra_host="enabled = false\n")
    monkeypatch.chdir(peer.work)
    assert main(["peer", "run", "box2", "--", "touch", str(tmp_path / "ran")]) == 78
    assert "disabled" in capfd.readouterr().err
    assert not (tmp_path / "ran").exists() and not peer.run_root.exists()
    assert peer.server.connections == 0 and peer_rows() == []


def test_an_unknown_host_refuses_with_78(tmp_path: Path, capfd) -> None:
    assert main(["peer", "run", "nowhere", "--", "true"]) == 78
    assert "no [[hosts]] entry named 'nowhere'" in capfd.readouterr().err


def test_a_wrong_host_key_is_refused_and_nothing_is_copied(
    tmp_path: Path, servers, v1_slice: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    peer = start_peer(tmp_path, servers, v1_slice)
    peer.server.known_hosts(tmp_path / "known_hosts", asyncssh.generate_private_key("ssh-ed25519"))
    monkeypatch.chdir(peer.work)
    assert main(["peer", "run", "box2", "--", "touch", str(tmp_path / "ran")]) == 78
    assert "host key not trusted" in capfd.readouterr().err
    assert not (tmp_path / "ran").exists() and not peer.run_root.exists()


def test_a_cap_over_the_hosts_cap_for_one_job_is_refused(
    tmp_path: Path, servers, v1_slice: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    peer = start_peer(tmp_path, servers, v1_slice, extra_host='job_cap = "100M"\n')
    monkeypatch.chdir(peer.work)
    assert main(["peer", "run", "box2", "--cap", "200M", "--", "true"]) == 78
    assert "over box2's cap for one job" in capfd.readouterr().err
    assert not peer.run_root.exists()


@pytest.mark.parametrize(
    ("cap", "says"),
    [
        ("99999999999999999999999G", "the most a size may be"),
        ("0.5K", "--cap 0.5K is under 4M, the least a job can be given"),
    ],
    ids=["over 64T", "under 4M"],
)
def test_a_cap_no_job_may_be_given_is_a_usage_error_and_nothing_runs(
    cap: str, says: str, tmp_path: Path, servers, v1_slice: Path,
    monkeypatch: pytest.MonkeyPatch, capfd,
) -> None:
    peer = start_peer(tmp_path, servers, v1_slice)
    monkeypatch.chdir(peer.work)
    assert main(["peer", "run", "box2", "--cap", cap, "--", "true"]) == 251
    err = capfd.readouterr().err
    assert says in err and err.count("\n") == 1
    assert not peer.run_root.exists() and peer_rows() == []


@pytest.mark.parametrize("threads", ["0", "-3", "99999999999999999999", "1.5"])
def test_threads_no_job_may_declare_are_refused_here_before_any_peer_is_reached(
    threads: str, capfd
) -> None:
    assert main(["peer", "run", "box2", "--threads", threads, "--", "true"]) == 251
    err = capfd.readouterr().err
    assert err == f"swarmdeck: --threads {threads}: give a number from 1 to 65536\n"


def test_differing_toolchains_refuse_unless_accepted(
    tmp_path: Path, servers, v1_slice: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    # Here the variable is unset, there the peer's environment sets it: one line differs.
    peer = start_peer(tmp_path, servers, v1_slice,
                      extra_host='toolchains = ["echo ${SWARMDECK_STATE_DIR##*/}"]\n')
    text = (tmp_path / "config.toml").read_text().replace('toolchains = ["git --version"]\n', "")
    (tmp_path / "config.toml").write_text(text)
    monkeypatch.chdir(peer.work)
    assert main(["peer", "run", "box2", "--", "true"]) == 78
    err = capfd.readouterr().err
    assert "toolchains differ on box2" in err and "peer-state   <- differs" in err
    assert main(["peer", "run", "box2", "--accept-toolchain", "--", "true"]) == 0


HOSTILE = "it's a \"job\"; $(touch HACKED) `touch HACKED` & | > x"


def test_hostile_labels_commands_and_paths_arrive_as_text(
    tmp_path: Path, servers, v1_slice: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    peer = start_peer(tmp_path, servers, v1_slice)
    monkeypatch.chdir(peer.work)
    target = f"out dir/{HOSTILE}.txt"
    code = main([
        "peer", "run", "box2", "--label", HOSTILE, "--fetch", target, "--",
        "sh", "-c", 'mkdir -p "out dir" && printf %s "$1" > "out dir/$1.txt"', "sh", HOSTILE,
    ])
    assert code == 0, capfd.readouterr().err
    assert (peer.work / target).read_text() == HOSTILE
    [row] = peer_rows()
    assert row["label"] == HOSTILE
    for folder in (tmp_path, Path.cwd(), peer.run_root.parent):
        assert not list(folder.rglob("HACKED"))
    assert list(peer.run_root.iterdir()) == []


@pytest.mark.parametrize("path", ["/etc/passwd", "../outside", "a/../../b"])
def test_a_fetch_path_leaving_the_tree_is_refused_before_anything_runs(
    tmp_path: Path, servers, v1_slice: Path, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    peer = start_peer(tmp_path, servers, v1_slice)
    monkeypatch.chdir(peer.work)
    assert main(["peer", "run", "box2", "--fetch", path, "--", "true"]) == 251
    assert peer.server.connections == 0


def test_a_dropped_connection_during_a_run_is_made_again_and_no_output_is_lost(
    tmp_path: Path, servers, v1_slice: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    peer = start_peer(tmp_path, servers, v1_slice)
    monkeypatch.chdir(peer.work)
    marker = tmp_path / "halfway"
    script = (f"for i in 1 2 3 4 5; do echo line $i; done; touch '{marker}'; "
              f"while [ -e '{marker}' ]; do sleep 0.05; done; "
              "for i in 6 7 8 9 10; do echo line $i; done; exit 3")

    ended = tmp_path / "ended"
    # The driver's look at whether the job has ended comes only once it has (a loaded peer
    # answers late): whatever it has not read of the output by then, it must still read.
    peer.server.hold = lambda command: "echo running" in command and not ended.exists()

    def drop_when_halfway() -> None:
        wait_for(marker.exists)
        peer.server.drop_connections()
        since_drop = len(peer.server.commands)
        # The second half is written only once the driver has read the output again on a
        # new connection: a plain read answered, or a follow begun.
        wait_for(lambda: any(
            command.text.startswith("tail ") and (command.answered or " -f " in command.text)
            for command in peer.server.commands[since_drop:]))
        marker.unlink()
        wait_for(lambda: any(peer.run_root.glob("*/.swarmdeck-peer/rc")))
        ended.touch()

    dropper = threading.Thread(target=drop_when_halfway)
    dropper.start()
    code = main(["peer", "run", "box2", "--", "sh", "-c", script])
    dropper.join()
    out = capfd.readouterr().out
    assert code == 3
    assert [line for line in out.splitlines() if line.startswith("line")] == [
        f"line {n}" for n in range(1, 11)
    ]
    assert peer.server.connections >= 2
    assert list(peer.run_root.iterdir()) == []


def wait_for(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)]
)
def test_a_signal_here_stops_the_remote_tree_fetches_and_removes_the_copy(
    tmp_path: Path, servers, v1_slice: Path, signum: int, code: int
) -> None:
    peer = start_peer(tmp_path, servers, v1_slice)
    pids = tmp_path / "pids"
    script = (f"echo $$ > '{pids}'; echo partial > written.txt; sleep 600 & echo $! >> '{pids}';"
              " wait")
    driver = subprocess.Popen(
        [SWARMDECK, "peer", "run", "box2", "--fetch", "written.txt", "--", "sh", "-c", script],
        cwd=peer.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    wait_for(lambda: pids.exists() and len(pids.read_text().split()) == 2)
    remote = [int(pid) for pid in pids.read_text().split()]
    driver.send_signal(signum)
    assert driver.wait(timeout=60) == code, driver.stderr.read().decode() if driver.stderr else ""
    for pid in remote:
        stat = read_stat(pid)
        assert stat is None or stat.state == "Z", f"remote process {pid} still runs"
    assert (peer.work / "written.txt").read_text() == "partial\n"
    assert list(peer.run_root.iterdir()) == []
    [row] = peer_rows()
    assert (row["state"], row["exit_code"]) == ("done", code)


def test_peer_check_says_usable_with_versions_cage_and_toolchains(
    tmp_path: Path, servers, v1_slice: Path, capfd
) -> None:
    start_peer(tmp_path, servers, v1_slice)
    assert main(["peer", "check", "box2"]) == 0
    out = capfd.readouterr().out
    assert "host key verified" in out and "(same)" in out and "same format" in out
    assert f"cgroup-v1 at {v1_slice}" in out
    assert "git --version" in out and "usable:" in out


def test_peer_check_refuses_another_snapshot_format_with_78(
    tmp_path: Path, servers, v1_slice: Path, capfd
) -> None:
    # A peer whose swarmdeck answers with a snapshot lacking the keys this side reads.
    fake = tmp_path / "old-swarmdeck"
    fake.write_text('#!/bin/sh\ncase "$1" in --version) echo swarmdeck 0.0.1;;'
                    ' *) echo \'{"hosts": [{"name": "x"}]}\';; esac\n')
    fake.chmod(0o755)
    start_peer(tmp_path, servers, v1_slice, extra_host=f'swarmdeck = "{fake}"\n')
    assert main(["peer", "check", "box2"]) == 78
    err = capfd.readouterr().err
    assert "speaks another snapshot format (swarmdeck 0.0.1; missing taken_at" in err


def test_peer_check_of_a_wrong_host_key_is_78_with_the_reason(
    tmp_path: Path, servers, v1_slice: Path, capfd
) -> None:
    peer = start_peer(tmp_path, servers, v1_slice)
    peer.server.known_hosts(tmp_path / "known_hosts", asyncssh.generate_private_key("ssh-ed25519"))
    assert main(["peer", "check", "box2"]) == 78
    assert "host key not trusted" in capfd.readouterr().err


def test_cleanup_stops_and_removes_a_run_whose_driver_died(
    tmp_path: Path, servers, v1_slice: Path
) -> None:
    peer = start_peer(tmp_path, servers, v1_slice)
    pids = tmp_path / "pids"
    driver = subprocess.Popen(
        [SWARMDECK, "peer", "run", "box2", "--", "sh", "-c", f"echo $$ > '{pids}'; sleep 600"],
        cwd=peer.work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    wait_for(pids.exists)
    wait_for(lambda: bool(pids.read_text().strip()))
    job = int(pids.read_text())
    driver.kill()
    driver.wait()
    assert read_stat(job) is not None and list(peer.run_root.iterdir())
    assert main(["peer", "cleanup", "box2"]) == 0
    stat = read_stat(job)
    assert stat is None or stat.state == "Z"
    assert list(peer.run_root.iterdir()) == []
    [row] = peer_rows()
    assert (row["state"], row["outcome"], row["exit_code"]) == (
        "lost", "cleaned: its driver died", 255
    )
    assert main(["peer", "cleanup", "box2"]) == 0  # nothing left: says so, changes nothing


def test_a_detached_peer_run_returns_at_once_and_its_row_follows_it_to_the_end(
    tmp_path: Path, servers, v1_slice: Path, capfd
) -> None:
    peer = start_peer(tmp_path, servers, v1_slice)
    go = tmp_path / "go"
    done = subprocess.run(
        [SWARMDECK, "peer", "run", "box2", "--detach", "--label", "bg", "--", "sh", "-c",
         f"echo started; while [ ! -e '{go}' ]; do sleep 0.05; done; echo finished; exit 4"],
        cwd=peer.work, capture_output=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert b"runs detached on box2" in done.stdout
    assert main(["status", "--json"]) == 0
    jobs = json.loads(capfd.readouterr().out)["jobs"]
    [job] = [job for job in jobs if job["host"] == "box2"]
    assert (job["label"], job["state"], job["runner_alive"]) == ("bg", "running", True)
    go.touch()
    wait_for(lambda: peer_rows()[0]["state"] == "done")
    [row] = peer_rows()
    assert row["exit_code"] == 4 and row["detached"] == 1
    wait_for(lambda: "finished" in Path(row["output_path"]).read_text())
    wait_for(lambda: list(peer.run_root.iterdir()) == [])


def test_attach_follows_a_run_whose_driver_died_to_its_end(
    tmp_path: Path, servers, v1_slice: Path, capfd
) -> None:
    peer = start_peer(tmp_path, servers, v1_slice)
    pids, go = tmp_path / "pids", tmp_path / "go"
    script = (f"echo $$ > '{pids}'; while [ ! -e '{go}' ]; do sleep 0.05; done; "
              "echo late; echo r > result.txt; exit 6")
    driver = subprocess.Popen(
        [SWARMDECK, "peer", "run", "box2", "--", "sh", "-c", script],
        cwd=peer.work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    wait_for(lambda: pids.exists() and pids.read_text().strip() != "")
    driver.kill()
    driver.wait()
    [row] = peer_rows()
    assert main(["peer", "attach", "box2", str(row["id"] + 1)]) == 78  # no such run
    go.touch()
    assert main(["peer", "attach", "box2", str(row["id"]), "--fetch", "result.txt"]) == 6
    assert "late" in capfd.readouterr().out
    assert (peer.work / "result.txt").read_text() == "r\n"
    assert list(peer.run_root.iterdir()) == []
    assert peer_rows()[0]["state"] == "done"


def fake_tar_on_the_peer(tmp_path: Path, peer, then: str) -> Path:
    """A `tar` first on the peer's PATH that writes part of the tree, marks that it did, then
    does `then` (fails as a full disk does, or waits to be cut off)."""
    folder = tmp_path / "peer-bin"
    folder.mkdir()
    marker = tmp_path / "copy-halfway"
    (folder / "tar").write_text(
        "#!/bin/sh\nhead -c 512 > /dev/null; mkdir -p src; echo half > src/data.txt; "
        f"touch '{marker}'; {then}\n")
    (folder / "tar").chmod(0o755)
    peer.server.env["PATH"] = f"{folder}{os.pathsep}{peer.server.env['PATH']}"
    return marker


@pytest.mark.parametrize("failure", ["disk full", "stream cut"])
def test_a_copy_that_fails_halfway_leaves_no_partial_run_directory(
    tmp_path: Path, servers, v1_slice: Path, monkeypatch: pytest.MonkeyPatch, capfd,
    failure: str,
) -> None:
    peer = start_peer(tmp_path, servers, v1_slice)
    then = ("echo 'tar: src/data.txt: Cannot write: No space left on device' >&2; exit 2"
            if failure == "disk full" else "sleep 600")
    marker = fake_tar_on_the_peer(tmp_path, peer, then)
    monkeypatch.chdir(peer.work)
    dropper = threading.Thread(target=lambda: (wait_for(marker.exists),
                                               peer.server.drop_connections()))
    if failure == "stream cut":
        dropper.start()
    code = main(["peer", "run", "box2", "--label", "part", "--", "touch", "ran"])
    if failure == "stream cut":
        dropper.join()
    err = capfd.readouterr().err
    assert code == 78, err
    assert marker.exists() and "copy failed" in err
    assert list(peer.run_root.iterdir()) == [], err
    [row] = peer_rows()
    assert row["state"] == "done" and row["outcome"].startswith("not started")


def test_cleanup_removes_a_partial_copy_whose_driver_died_before_the_job_started(
    tmp_path: Path, servers, v1_slice: Path, capfd
) -> None:
    peer = start_peer(tmp_path, servers, v1_slice)
    marker = fake_tar_on_the_peer(tmp_path, peer, "sleep 600")
    driver = subprocess.Popen(
        [SWARMDECK, "peer", "run", "box2", "--label", "part", "--", "touch", "ran"],
        cwd=peer.work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    wait_for(marker.exists)
    driver.kill()
    driver.wait()
    [row] = peer_rows()
    [partial] = list(peer.run_root.iterdir())
    store = StateStore.open_default()
    try:
        ledger = ledger_id(store)
    finally:
        store.close()
    assert partial.name == f"part-{row['id']}-{ledger}" and row["run_dir"] is None
    # Another host's or ledger's copy in the same run root is not this ledger's to remove,
    # nor one named as copies were before they carried their ledger's id.
    theirs = ["theirs-1", f"part-{row['id']}", f"part-{row['id']}-{'0' * 32}"]
    for name in theirs:
        (peer.run_root / name).mkdir()
    assert main(["peer", "cleanup", "box2"]) == 0
    assert partial.name in capfd.readouterr().out
    assert sorted(path.name for path in peer.run_root.iterdir()) == sorted(theirs)
    assert peer_rows()[0]["state"] == "lost"


PR_SET_CHILD_SUBREAPER = 36


def zombie_children() -> set[int]:
    """Zombies whose parent is this test process."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            state, parent = stat.rsplit(")", 1)[1].split()[:2]
            if state == "Z" and int(parent) == os.getpid():
                found.add(int(entry.name))
    return found


def test_a_peer_run_leaves_no_zombie_on_a_peer_whose_init_does_not_reap(
    tmp_path: Path, servers, v1_slice: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The test process serves ssh and, made a subreaper that never waits for strays, stands in
    # for a peer's PID 1 that does not reap orphans: whatever the run orphans there stays here.
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    peer = start_peer(tmp_path, servers, v1_slice)
    monkeypatch.chdir(peer.work)
    before = zombie_children()
    assert libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    try:
        assert main(["peer", "run", "box2", "--", "sh", "-c", "echo hi; sleep 0.3"]) == 0
        owned = {child.pid for child in peer.server.children}
        deadline = time.monotonic() + 5
        while (left := zombie_children() - before - owned) and time.monotonic() < deadline:
            time.sleep(0.05)
        names = sorted(Path(f"/proc/{pid}/comm").read_text().strip() for pid in left)
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        for pid in zombie_children() - before - {c.pid for c in peer.server.children}:
            os.waitpid(pid, 0)
    assert not names, f"zombies left on the peer side: {names}"


def test_a_workload_run_only_on_the_peer_learns_its_peak_here_and_there(
    tmp_path: Path, servers, v1_slice: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each peer run is a fresh copy folder there: fingerprinted by that folder, the workload
    never learned. Now its peak is recorded here under the fingerprint made here, and the
    peer's runner books the second run from the first's history."""
    from swarmdeck.actions.jobrecord import past_runs

    peer = start_peer(tmp_path, servers, v1_slice)
    monkeypatch.chdir(peer.work)
    command = ["peer", "run", "box2", "--", *hog(24, hold=0.2)]
    assert main(command) == 0
    assert main(command) == 0
    first, second = peer_rows()
    assert first["fingerprint"] == second["fingerprint"]
    assert first["peak"] is not None and first["peak"] >= 24 << 20
    store = StateStore.open_default()
    try:
        learned = past_runs(store, first["fingerprint"])
    finally:
        store.close()
    assert len(learned) == 2 and all(run.peak >= 24 << 20 for run in learned)
    there = StateStore(tmp_path / "peer-state" / "state.db")
    try:
        with there.read() as conn:
            vias = [row[0] for row in conn.execute("SELECT admitted_via FROM jobs ORDER BY id")]
    finally:
        there.close()
    assert vias == ["default", "history"]
