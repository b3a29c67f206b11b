"""The kernel-log probe against real OOM kills of this machine, and against odd lines."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel_log import FakeKernelLog, written_by_tests
from swarmdeck.probes import kernel

MEMORY_ROOT = Path("/sys/fs/cgroup/memory")
_counter = itertools.count()

needs_memory_cgroup = pytest.mark.skipif(
    not os.access(MEMORY_ROOT, os.W_OK), reason="needs a writable v1 memory cgroup (root)"
)

HOG = "x = bytearray(256 * 1024 * 1024)\nfor i in range(0, len(x), 4096):\n    x[i] = 1\n"


@pytest.fixture(scope="module")
def caged_oom() -> Iterator[tuple[float, float, int, str]]:
    """A real OOM: a python hog in a 40M v1 memory cgroup, joined before it allocates."""
    name = f"swarmdeck-test-kernel-{os.getpid()}-{next(_counter)}"
    cage = MEMORY_ROOT / name
    cage.mkdir()
    try:
        (cage / "memory.limit_in_bytes").write_text("40M")
        before = time.time()
        hog = subprocess.Popen(
            [
                "sh",
                "-c",
                f'echo $$ > {cage}/cgroup.procs && exec "$0" -c "$1"',
                sys.executable,
                HOG,
            ],
        )
        assert hog.wait(timeout=30) == -9
        after = time.time()
        yield before, after, hog.pid, name
    finally:
        cage.rmdir()


@needs_memory_cgroup
def test_caged_oom_is_read_back_from_kmsg_as_inside_a_cap(caged_oom) -> None:
    before, after, pid, name = caged_oom
    log = kernel.kernel_log(since=before - 1, until=after + 1)
    assert log.read and log.source == "/dev/kmsg"
    kill = next(k for k in log.oom_kills if k.pid == pid)
    assert kill.scope == kernel.CGROUP and kill.inside_a_cap
    assert kill.constraint == "CONSTRAINT_MEMCG"
    assert kill.oom_memcg.endswith(name) and kill.task_memcg.endswith(name)
    assert kill.uid == os.getuid()
    assert kill.process.startswith("python")
    assert kill.anon_rss is not None and 20 * 2**20 < kill.anon_rss <= 41 * 2**20
    assert before - 1 <= kill.at <= after + 1


@needs_memory_cgroup
def test_caged_oom_is_read_back_from_dmesg_when_kmsg_cannot_be_opened(
    caged_oom, tmp_path: Path
) -> None:
    before, after, pid, name = caged_oom
    log = kernel.kernel_log(since=before - 1, until=after + 1, kmsg=tmp_path / "absent")
    assert log.read and log.source == "dmesg"
    kill = next(k for k in log.oom_kills if k.pid == pid)
    assert kill.scope == kernel.CGROUP and kill.task_memcg.endswith(name)


@needs_memory_cgroup
def test_oom_outside_the_window_is_not_reported(caged_oom) -> None:
    _, after, pid, _ = caged_oom
    log = kernel.kernel_log(since=after + 0.5)
    assert all(k.pid != pid for k in log.oom_kills)


@needs_memory_cgroup
def test_records_up_to_a_remembered_sequence_number_are_not_reported_again(caged_oom) -> None:
    _, _, pid, _ = caged_oom
    mark = kernel.last_seq()
    assert mark is not None
    assert all(k.pid != pid for k in kernel.kernel_log(after_seq=mark).oom_kills)
    assert any(k.pid == pid for k in kernel.kernel_log(after_seq=0).oom_kills)


WHOLE_MACHINE = [
    "6,900,5000000,-;python3 invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE),"
    " order=0, oom_score_adj=0",
    "6,901,5000100,-;oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,"
    "mems_allowed=0,global_oom,task_memcg=/user.slice/job,task=python3,pid=4242,uid=1000",
    "3,902,5000200,-;Out of memory: Killed process 4242 (python3) total-vm:9000000kB,"
    " anon-rss:8000000kB, file-rss:1000kB, shmem-rss:0kB, UID:1000 pgtables:16000kB"
    " oom_score_adj:0",
]


def test_constraint_none_is_a_whole_machine_oom() -> None:
    log = kernel.events_from(map(kernel.parse_kmsg_record, WHOLE_MACHINE), boot=1000.0)
    (kill,) = log.oom_kills
    assert (kill.pid, kill.process, kill.uid) == (4242, "python3", 1000)
    assert kill.scope == kernel.MACHINE and not kill.inside_a_cap
    assert kill.task_memcg == "/user.slice/job" and kill.oom_memcg == ""
    assert kill.anon_rss == 8_000_000 * 1024
    assert kill.at == pytest.approx(1005.0002)
    assert log.skipped == 0 and log.last_seq == 902


def test_killed_line_alone_is_classified_by_its_wording() -> None:
    lines = [
        "[  12.500000] Memory cgroup out of memory: Killed process 77 (cc1plus) total-vm:1kB,"
        " anon-rss:2048kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:4kB oom_score_adj:0",
        "[  13.000000] Out of memory: Killed process 78 (ld) total-vm:1kB, anon-rss:1kB,"
        " file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:4kB oom_score_adj:0",
    ]
    log = kernel.events_from(map(kernel.parse_dmesg_line, lines), boot=0.0)
    assert [(k.pid, k.scope) for k in log.oom_kills] == [(77, kernel.CGROUP), (78, kernel.MACHINE)]


# The shapes below are those real kernels print (values changed): a whole-machine OOM of a
# 6.x kernel as `dmesg` shows it, with the lines around it that are not kills.
WHOLE_MACHINE_DMESG = [
    "[81234.100001] python invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_ZERO),"
    " order=0, oom_score_adj=0",
    "[81234.100950] [   7811]     0  7811  6546210  3842522 39899136  1039052             0 python",
    "[81234.100952] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,"
    "global_oom,task_memcg=/init.scope,task=python,pid=7811,uid=0",
    "[81234.100990] Out of memory: Killed process 7811 (python) total-vm:26184840kB,"
    " anon-rss:15370088kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:38964kB oom_score_adj:0",
    "[81234.310000] oom_reaper: reaped process 7811 (python), now anon-rss:0kB, file-rss:0kB,"
    " shmem-rss:0kB",
]


def test_whole_machine_oom_as_dmesg_prints_it() -> None:
    log = kernel.events_from(map(kernel.parse_dmesg_line, WHOLE_MACHINE_DMESG), boot=0.0)
    (kill,) = log.oom_kills
    assert (kill.pid, kill.process, kill.uid, kill.scope) == (7811, "python", 0, kernel.MACHINE)
    assert kill.task_memcg == "/init.scope" and kill.anon_rss == 15370088 * 1024
    assert log.skipped == 0


def test_container_cgroup_oom_with_a_node_range_and_v2_paths() -> None:
    scope = "cri-containerd-0c4e.scope"
    pod = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod5d1e.slice"
    record = (
        "6,4410,912345678901,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),"
        f"cpuset={scope},mems_allowed=0-1,oom_memcg={pod},task_memcg={pod}/{scope},"
        "task=pt_main_thread,pid=461754,uid=0"
    )
    killed = (
        "3,4411,912345679000,-;Memory cgroup out of memory: Killed process 461754"
        " (pt_main_thread) total-vm:40112000kB, anon-rss:31000000kB, file-rss:81000kB,"
        " shmem-rss:0kB, UID:0 pgtables:64000kB oom_score_adj:999"
    )
    log = kernel.events_from(map(kernel.parse_kmsg_record, [record, killed]), boot=0.0)
    (kill,) = log.oom_kills
    assert kill.scope == kernel.CGROUP and kill.process == "pt_main_thread"
    assert kill.oom_memcg == pod and kill.task_memcg == f"{pod}/{scope}"


def test_older_kernels_announce_the_victim_then_print_a_bare_killed_line() -> None:
    lines = [
        # 4.19 to 5.0: the oom-kill line, then "Kill process … or sacrifice child".
        "[  500.000001] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
        "mems_allowed=0,oom_memcg=/build,task_memcg=/build/job,task=cc1plus,pid=9001,uid=1000",
        "[  500.000002] Memory cgroup out of memory: Kill process 9001 (cc1plus) score 1000 or"
        " sacrifice child",
        "[  500.000003] Killed process 9001 (cc1plus) total-vm:812000kB, anon-rss:700000kB,"
        " file-rss:9000kB, shmem-rss:0kB",
        # 3.10 (RHEL 7): no oom-kill line; the cgroups only in "Task in …".
        "[  600.000001] Task in /13 killed as a result of limit of /13",
        "[  600.000002] Memory cgroup out of memory: Kill process 42453 (memcg_test_1) score 0"
        " or sacrifice child",
        "[  600.000003] Killed process 42453 (memcg_test_1), UID 0, total-vm:7296kB,"
        " anon-rss:96kB, file-rss:164kB, shmem-rss:0kB",
        "[  700.000001] Out of memory: Kill process 9876 (java) score 900 or sacrifice child",
        "[  700.000002] Killed process 9876 (java), UID 1000, total-vm:9000000kB,"
        " anon-rss:8000000kB, file-rss:0kB, shmem-rss:0kB",
    ]
    log = kernel.events_from(map(kernel.parse_dmesg_line, lines), boot=0.0)
    build, caged, machine = log.oom_kills
    assert (build.pid, build.scope, build.oom_memcg, build.uid) == (
        9001,
        kernel.CGROUP,
        "/build",
        1000,
    )
    assert build.anon_rss == 700000 * 1024
    assert (caged.pid, caged.scope, caged.uid) == (42453, kernel.CGROUP, 0)
    assert caged.task_memcg == caged.oom_memcg == "/13" and caged.anon_rss == 96 * 1024
    assert (machine.pid, machine.scope, machine.uid) == (9876, kernel.MACHINE, 1000)
    assert machine.task_memcg == "" and log.skipped == 0


def test_a_bare_killed_line_with_nothing_before_it_is_a_kill_of_unknown_scope() -> None:
    line = "[  9.000000] Killed process 55 (make), UID 0, total-vm:1kB, anon-rss:4kB"
    (kill,) = kernel.events_from([kernel.parse_dmesg_line(line)], boot=0.0).oom_kills
    assert (kill.pid, kill.scope) == (55, kernel.UNKNOWN)


def test_dmesg_lines_with_the_printk_caller_field() -> None:
    lines = [
        "[ 2095.615130] [ T8092] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
        "mems_allowed=0,oom_memcg=/cage,task_memcg=/cage,task=python,pid=8092,uid=0",
        "[ 2095.615140] [ T8092] Memory cgroup out of memory: Killed process 8092 (python)"
        " total-vm:52348kB, anon-rss:30464kB, file-rss:5776kB, shmem-rss:0kB, UID:0"
        " pgtables:120kB oom_score_adj:0",
    ]
    (kill,) = kernel.events_from(map(kernel.parse_dmesg_line, lines), boot=0.0).oom_kills
    assert (kill.pid, kill.oom_memcg, kill.anon_rss) == (8092, "/cage", 30464 * 1024)


def test_unexpected_lines_are_skipped_and_counted() -> None:
    lines = [
        kernel.parse_kmsg_record("not a kmsg record at all"),
        kernel.parse_kmsg_record("6,1,100,-;oom-kill:constraint=CONSTRAINT_MEMCG,pid=notanumber"),
        kernel.parse_kmsg_record("3,2,200,-;Memory cgroup out of memory: Killed process soon"),
        kernel.parse_kmsg_record("6,3,300,-;an ordinary line about something else"),
    ]
    log = kernel.events_from(lines, boot=0.0)
    assert log.oom_kills == [] and log.skipped == 3


def test_nvidia_out_of_memory_lines_are_found() -> None:
    text = (
        "NVRM: nvAssertOkFailedNoLog: Assertion failed: Out of memory [NV_ERR_NO_MEMORY]"
        " (0x00000051) returned from pRmApi->AllocWithHandle"
    )
    log = kernel.events_from([kernel.parse_kmsg_record(f"3,7,2000000,-;{text}")], boot=100.0)
    (error,) = log.gpu_out_of_memory
    assert error.text == text and error.at == pytest.approx(102.0)


def test_nvidia_out_of_memory_lines_as_dmesg_prints_them() -> None:
    lines = [
        "[52595.758098] NVRM: nvCheckOkFailedNoLog: Check failed: Out of memory"
        " [NV_ERR_NO_MEMORY] (0x00000051) returned from _memdescAllocInternal(pMemDesc)"
        " @ mem_desc.c:1353",
        "[52595.759943] NVRM: sysmemConstruct_IMPL: *** Cannot allocate sysmem through fb heap",
        "[52595.760899] NVRM: nvAssertOkFailedNoLog: Assertion failed: Out of memory"
        " [NV_ERR_NO_MEMORY] (0x00000051) returned from pRmApi->Alloc(pRmApi, 1, 2, 3)"
        " @ nv_gpu_ops.c:4647",
    ]
    log = kernel.events_from(map(kernel.parse_dmesg_line, lines), boot=0.0)
    assert [e.since_boot for e in log.gpu_out_of_memory] == [52595.758098, 52595.760899]
    assert log.oom_kills == [] and log.skipped == 0


def test_continuation_lines_of_a_record_are_not_part_of_its_text() -> None:
    record = "6,5,10,-;usb 1-1: new device\n SUBSYSTEM=usb\n DEVICE=c189:1\n"
    line = kernel.parse_kmsg_record(record)
    assert line is not None and line.text == "usb 1-1: new device"


def test_unreadable_log_is_not_read_rather_than_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    log = kernel.kernel_log(kmsg=tmp_path / "absent")
    assert log.state == "not read" and not log.read
    assert "absent" in log.reason and "dmesg" in log.reason


NVRM = "NVRM: nvAssertOkFailedNoLog: Assertion failed: Out of memory [NV_ERR_NO_MEMORY]"


def test_a_file_of_records_is_read_as_a_kmsg_of_its_own(tmp_path: Path) -> None:
    log = FakeKernelLog(tmp_path)
    log.log_kmsg("an ordinary line")
    log.log_kmsg(NVRM)
    log.log_kmsg("another ordinary line")
    read = kernel.kernel_log(kmsg=log.kmsg, dmesg=("false",))
    assert read.read and read.source == str(log.kmsg)
    assert read.last_seq == 3
    assert read.gpu_out_of_memory
    assert not kernel.kernel_log(after_seq=2, kmsg=log.kmsg).gpu_out_of_memory


def test_the_dmesg_handed_in_is_the_one_read(tmp_path: Path) -> None:
    log = FakeKernelLog(tmp_path)
    subprocess.run(log.dmesg_command(NVRM), check=True)
    read = kernel.kernel_log(kmsg=tmp_path / "absent", dmesg=log.dmesg)
    assert read.read and read.source == "dmesg" and read.gpu_out_of_memory
    missing = kernel.kernel_log(kmsg=tmp_path / "absent", dmesg=("false",))
    assert missing.state == "not read" and "dmesg" in missing.reason


def test_the_suites_kernel_log_check_tells_test_lines_from_the_kernels_oom_reports() -> None:
    records = [
        (1, f"swarmdeck-test 0f3c {NVRM}"),
        (2, "NVRM: Xid (PCI:0000:01:00): 31, NV_ERR_NO_MEMORY"),
        (3, "oom-kill:constraint=CONSTRAINT_MEMCG,oom_memcg=/swarmdeck-test-kernel-9-0,pid=5"),
        (4, "Memory cgroup stats for /swarmdeck-test-kernel-9-0:"),
        (5, "Memory cgroup out of memory: Killed process 5 (python)"),
        (6, "eth0: link up"),
    ]
    assert written_by_tests(records) == [records[0][1], records[1][1]]
