"""A real single-node Slurm cluster in one folder: munge, MariaDB, slurmdbd, slurmctld, slurmd.

Started as root without systemd (reference/slurm.md says how), on free loopback ports, with
memory a consumable resource (`CR_Core_Memory`) and the cgroup v1 memory controller enforcing
`--mem`, so a job over its cap really ends OUT_OF_MEMORY. The node is called `sdnode`, not this
machine's host name, so its ledger rows never mix with the local host's memory book.

Only one such cluster can run on a machine at a time: the client tools find munge through the
fixed socket /run/munge/munge.socket.2 and the daemons put their cgroups under fixed names.
A lock file makes a second test run wait for the first, for LOCK_WAIT seconds at most: then it
says who holds the machine (ClusterBusy) and its Slurm tests are skipped, never timed out.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

NODE = "sdnode"
PARTITION = "debug"
CLUSTER = "sdtest"
NODE_CPUS = 2
NODE_MEMORY_MIB = 4096
BINARIES = (
    "munged", "mariadbd", "mariadb-install-db", "mariadb", "slurmdbd", "slurmctld", "slurmd",
    "sbatch", "squeue", "sinfo", "sacct", "sacctmgr", "scontrol", "scancel",
)
DEFAULT_MUNGE_SOCKET = Path("/run/munge/munge.socket.2")
MACHINE_LOCK = Path("/run/lock/swarmdeck-test-slurm.lock")
NODE_CGROUPS = tuple(
    Path("/sys/fs/cgroup") / controller / f"slurm_{NODE}"
    for controller in ("memory", "cpuacct", "freezer", "cpuset", "devices", "pids")
)
"""What slurmd makes for the node in the cgroup v1 hierarchies it uses, and leaves when it ends."""
START_TIMEOUT = 60.0
LOCK_WAIT = 45.0
"""Seconds a test run waits for another run's cluster to let the machine go."""


class ClusterBusy(Exception):
    """Another test run's cluster holds this machine."""


def remove_node_cgroups() -> None:
    """Remove the node's cgroups slurmd left, deepest first: once its jobs' steps are gone they
    hold nothing, and the machine is not the test run's to leave them on."""
    for top in NODE_CGROUPS:
        if not top.is_dir():
            continue
        below = sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
        for cgroup in [*below, top]:
            for _ in range(50):
                try:
                    cgroup.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)  # a step's last process is still leaving


def missing_binaries() -> list[str]:
    """The commands a test cluster needs that this machine does not have."""
    return [name for name in BINARIES if shutil.which(name) is None]


def why_no_cluster() -> str | None:
    """Why a test cluster cannot start here, or None when it can."""
    missing = missing_binaries()
    if missing:
        return (
            "Slurm tests skipped: missing " + ", ".join(missing)
            + " (bash .ci/run installs slurmctld slurmd slurm-client slurmdbd munge mariadb-server)"
        )
    if os.geteuid() != 0:
        return "Slurm tests skipped: the test cluster's daemons must start as root"
    if not Path("/sys/fs/cgroup/memory").is_dir():
        return "Slurm tests skipped: no cgroup v1 memory controller at /sys/fs/cgroup/memory"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(check, what: str, timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    pause = 0.05
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"test cluster: {what} did not happen within {timeout:g} s")
        time.sleep(pause)
        pause = min(pause * 1.5, 0.5)


@dataclass
class SlurmCluster:
    """The cluster's folder, its ports and its daemons; `start` brings it up, `stop` down."""

    root: Path
    node_memory_mib: int = NODE_MEMORY_MIB
    """The node's RealMemory: what `--mem` bookings on it may add up to."""
    node_cpus: int = NODE_CPUS
    """The node's CPUs; more than the machine has are taken as configured (config_overrides):
    a bench where cores must never be what limits the cluster."""
    scheduler: str = ""
    """SchedulerParameters, when not Slurm's defaults (a bench runs backfill every second)."""
    env: dict[str, str] = field(default_factory=dict)
    started_in: float = 0.0
    """Seconds `start` took."""
    _procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    _lock_fd: int | None = None
    _socket_link_made: bool = False
    _ports: dict[str, int] = field(default_factory=dict)

    @property
    def conf(self) -> Path:
        return self.root / "etc" / "slurm.conf"

    @property
    def munge_socket(self) -> Path:
        return self.root / "munge" / "munge.sock"

    def client_env(self) -> dict[str, str]:
        """The environment client commands need: SLURM_CONF naming this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *argv: str, check: bool = True, timeout: float = 30) -> str:
        done = subprocess.run(
            argv, env=self.client_env(), capture_output=True, text=True, timeout=timeout
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()}")
        return done.stdout

    # ---- start ------------------------------------------------------------------------------

    def start(self) -> None:
        began = time.monotonic()
        self._take_machine_lock()
        for name in ("etc", "munge", "db", "state", "spool", "log", "run"):
            (self.root / name).mkdir(parents=True, exist_ok=True)
        self._ports = {name: free_port() for name in ("ctld", "slurmd", "dbd", "mysql")}
        self._start_munge()
        self._start_mariadb()
        self._write_configs()
        self._start_slurmdbd()
        self.run("sacctmgr", "-i", "add", "cluster", CLUSTER)
        self._spawn("slurmctld", ["slurmctld", "-D", "-f", str(self.conf)])
        self._wait_for("slurmctld", self._controller_answers, "slurmctld answering")
        self._spawn("slurmd", ["slurmd", "-D", "-N", NODE, "-f", str(self.conf)])
        self._wait_for("slurmd", self._node_idle, f"node {NODE} idle")
        self.started_in = time.monotonic() - began

    def _take_machine_lock(self) -> None:
        MACHINE_LOCK.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(MACHINE_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    holder = os.pread(fd, 200, 0).decode(errors="replace").strip()
                    os.close(fd)
                    raise ClusterBusy(
                        f"another test run's cluster holds this machine "
                        f"({holder or MACHINE_LOCK}) for over {LOCK_WAIT:g} s"
                    ) from None
                time.sleep(0.5)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} in {os.getcwd()}".encode(), 0)
        self._lock_fd = fd

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.root / "log" / f"{name}.out", "ab")  # noqa: SIM115 - the child keeps it
        with log:
            self._procs[name] = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, env=self.client_env(),
                start_new_session=True,
            )

    def _wait_for(self, name: str, check, what: str) -> None:
        """Wait for `check`, failing at once (with the log's last lines) when `name` died."""
        proc = self._procs[name]

        def ready() -> bool:
            if proc.poll() is not None:
                tail = (self.root / "log" / f"{name}.out").read_text(errors="replace")
                raise RuntimeError(f"test cluster: {name} exited {proc.returncode}: {tail[-600:]}")
            return check()

        wait_for(ready, what)

    def _start_munge(self) -> None:
        key = self.root / "munge" / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o600)
        self._spawn(
            "munged",
            [
                "munged", "-F", "-f", "--key-file", str(key), "--socket", str(self.munge_socket),
                "--pid-file", str(self.root / "munge" / "munged.pid"),
                "--log-file", str(self.root / "log" / "munged.log"),
                "--seed-file", str(self.root / "munge" / "munged.seed"),
            ],
        )
        wait_for(self.munge_socket.exists, "munge socket")
        # Client tools such as sacct look for munge at the default socket whatever AuthInfo
        # says; the machine lock makes this cluster the only one pointing it anywhere.
        DEFAULT_MUNGE_SOCKET.parent.mkdir(parents=True, exist_ok=True)
        if DEFAULT_MUNGE_SOCKET.is_symlink() or not DEFAULT_MUNGE_SOCKET.exists():
            with contextlib.suppress(FileNotFoundError):
                DEFAULT_MUNGE_SOCKET.unlink()
            DEFAULT_MUNGE_SOCKET.symlink_to(self.munge_socket)
            self._socket_link_made = True

    def _start_mariadb(self) -> None:
        data = self.root / "db" / "data"
        subprocess.run(
            [
                "mariadb-install-db", f"--datadir={data}", "--user=root",
                "--auth-root-authentication-method=normal", "--skip-test-db",
            ],
            check=True, capture_output=True, timeout=120,
        )
        self._spawn(
            "mariadbd",
            [
                "mariadbd", "--no-defaults", f"--datadir={data}",
                f"--socket={self.root / 'db' / 'mysqld.sock'}", "--bind-address=127.0.0.1",
                f"--port={self._ports['mysql']}", f"--pid-file={self.root / 'db' / 'mysqld.pid'}",
                "--user=root", "--skip-name-resolve", "--innodb-buffer-pool-size=32M",
                "--innodb-log-file-size=8M",
            ],
        )
        wait_for(lambda: self._sql("SELECT 1"), "MariaDB answering")
        self._sql(
            "CREATE DATABASE slurm_acct_db; "
            "CREATE USER 'slurm'@'127.0.0.1'; "
            "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'",
            check=True,
        )

    def _sql(self, statement: str, check: bool = False) -> bool:
        done = subprocess.run(
            ["mariadb", "--no-defaults", f"--socket={self.root / 'db' / 'mysqld.sock'}",
             "-uroot", "-e", statement],
            capture_output=True, text=True, timeout=30,
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"MariaDB: {statement}: {done.stderr.strip()}")
        return done.returncode == 0

    def _write_configs(self) -> None:
        r, p = self.root, self._ports
        auth = f"AuthType=auth/munge\nAuthInfo=socket={self.munge_socket}\n"
        self.conf.write_text(
            f"ClusterName={CLUSTER}\n"
            f"SlurmctldHost={socket.gethostname()}(127.0.0.1)\nMailProg=/bin/true\n"
            "SlurmUser=root\nSlurmdUser=root\n"
            f"SlurmctldPort={p['ctld']}\nSlurmdPort={p['slurmd']}\n"
            f"{auth}"
            f"StateSaveLocation={r / 'state'}\nSlurmdSpoolDir={r / 'spool'}\n"
            f"SlurmctldPidFile={r / 'run' / 'slurmctld.pid'}\n"
            f"SlurmdPidFile={r / 'run' / 'slurmd.pid'}\n"
            f"SlurmctldLogFile={r / 'log' / 'slurmctld.log'}\n"
            f"SlurmdLogFile={r / 'log' / 'slurmd.log'}\n"
            "ProctrackType=proctrack/cgroup\nTaskPlugin=task/cgroup\n"
            "JobAcctGatherType=jobacct_gather/cgroup\nJobAcctGatherFrequency=1\n"
            "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core_Memory\n"
            + (f"SchedulerParameters={self.scheduler}\n" if self.scheduler else "")
            + ("SlurmdParameters=config_overrides\n" if self.node_cpus != NODE_CPUS else "")
            + "AccountingStorageType=accounting_storage/slurmdbd\n"
            f"AccountingStorageHost=127.0.0.1\nAccountingStoragePort={p['dbd']}\n"
            "MpiDefault=none\nReturnToService=2\nSchedulerType=sched/backfill\n"
            "KillWait=2\nMinJobAge=600\nInactiveLimit=0\nWaitTime=0\nMessageTimeout=5\n"
            "SlurmctldTimeout=10\nSlurmdTimeout=30\n"
            f"NodeName={NODE} NodeHostname={socket.gethostname()} NodeAddr=127.0.0.1 "
            f"CPUs={self.node_cpus} RealMemory={self.node_memory_mib} State=UNKNOWN\n"
            f"PartitionName={PARTITION} Nodes={NODE} Default=YES MaxTime=INFINITE State=UP\n"
        )
        (r / "etc" / "cgroup.conf").write_text(
            "CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup\n"
            "ConstrainRAMSpace=yes\nConstrainSwapSpace=no\n"
        )
        dbd = r / "etc" / "slurmdbd.conf"
        dbd.write_text(
            f"{auth}DbdAddr=127.0.0.1\nDbdHost=localhost\nDbdPort={p['dbd']}\nSlurmUser=root\n"
            f"PidFile={r / 'run' / 'slurmdbd.pid'}\nLogFile={r / 'log' / 'slurmdbd.log'}\n"
            "StorageType=accounting_storage/mysql\n"
            f"StorageHost=127.0.0.1\nStoragePort={p['mysql']}\n"
            "StorageUser=slurm\nStorageLoc=slurm_acct_db\n"
        )
        dbd.chmod(0o600)

    def _start_slurmdbd(self) -> None:
        self._spawn("slurmdbd", ["slurmdbd", "-D"])
        wait_for(
            lambda: subprocess.run(
                ["sacctmgr", "-n", "list", "cluster"], env=self.client_env(),
                capture_output=True, timeout=10,
            ).returncode == 0,
            "slurmdbd answering",
        )

    def _controller_answers(self) -> bool:
        return subprocess.run(
            ["scontrol", "ping"], env=self.client_env(), capture_output=True, timeout=10
        ).returncode == 0

    def _node_idle(self) -> bool:
        done = subprocess.run(
            ["sinfo", "-h", "-n", NODE, "-o", "%t"], env=self.client_env(),
            capture_output=True, text=True, timeout=10,
        )
        return done.stdout.strip() == "idle"

    # ---- while running ---------------------------------------------------------------------

    def stop_controller(self) -> None:
        """Stop slurmctld alone, as a cluster whose controller went away."""
        self._stop("slurmctld")

    def start_controller(self) -> None:
        self._spawn("slurmctld", ["slurmctld", "-D", "-f", str(self.conf)])
        self._wait_for("slurmctld", self._controller_answers, "slurmctld answering again")
        self._wait_for("slurmd", self._node_idle, f"node {NODE} idle again")

    def wait_node_idle(self) -> None:
        self._wait_for("slurmd", self._node_idle, f"node {NODE} idle again")

    def jobs_in_queue(self) -> list[str]:
        return self.run("squeue", "-h", "-o", "%i").split()

    # ---- stop ------------------------------------------------------------------------------

    def _stop(self, name: str) -> None:
        proc = self._procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)

    def stop(self) -> None:
        if "slurmctld" in self._procs:
            # Jobs still queued or running would leave slurmstepd processes behind.
            subprocess.run(["scancel", "--full", "-u", "root"], env=self.client_env(),
                           capture_output=True, timeout=10, check=False)
        for name in ("slurmd", "slurmctld", "slurmdbd", "mariadbd", "munged"):
            self._stop(name)
        remove_node_cgroups()
        if self._socket_link_made:
            self._socket_link_made = False
            with contextlib.suppress(OSError):
                if DEFAULT_MUNGE_SOCKET.readlink() == self.munge_socket:
                    DEFAULT_MUNGE_SOCKET.unlink()
        if self._lock_fd is not None:
            os.ftruncate(self._lock_fd, 0)
            os.close(self._lock_fd)
            self._lock_fd = None
