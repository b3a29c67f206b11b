"""Boot the guest of `make test-v2` and run the cgroup v2 tier inside it, in one boot.

The guest is this machine's Debian kernel under qemu (virtme-ng, TCG: a KVM guest stalls here,
nested) on this machine's own root file system, read-only; only the results folder under .cache/
is shared writable. One boot takes about half a minute, so every v2 test runs in the one pytest
run of tests_v2/guest/inside.sh, and this script reads its junit XML back. Where the guest
cannot be had (no qemu, no kernel image, no virtme-ng), the tier is skipped with one line.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache"
VNG = CACHE / "vng" / "bin" / "vng"
GUEST_TIMEOUT = 1200
"""Seconds one guest may take, boot included, before it is stopped and the tier fails: a bound
for a guest that hangs, above the 13 and 2 minutes the two took on two cores shared at a load
of about 12."""
RESULT = re.compile(r"^(\S+::\S+) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
"""A test's line in the guest's verbose pytest log."""
SYSTEMD_IMAGE = CACHE / "systemd.img"
"""The systemd guest's root file system (tests_v2/systemd/make_root.sh), made once and kept;
each boot writes to a throwaway snapshot of it."""


@dataclass(frozen=True)
class Tally:
    passed: int
    failed: int
    skipped: int


def newest_kernel() -> Path | None:
    """The newest Debian kernel image in /boot (linux-image-amd64)."""

    def version(path: Path) -> list[int]:
        return [int(n) for n in re.findall(r"\d+", path.name)]

    images = sorted(Path("/boot").glob("vmlinuz-*"), key=version)
    return images[-1] if images else None


def missing() -> str:
    """What the guest needs and this machine lacks, or ""."""
    if not VNG.exists():
        return f"virtme-ng is not installed in {VNG.parent.parent} (make test-v2 installs it)"
    if shutil.which("qemu-system-x86_64") is None:
        return "qemu-system-x86_64 is not installed (Debian package qemu-system-x86)"
    if newest_kernel() is None:
        return "no kernel image in /boot (Debian package linux-image-amd64)"
    return ""


def tally(junit: Path) -> Tally:
    suites = ElementTree.parse(junit).getroot()
    tests = failed = skipped = 0
    for suite in suites.iter("testsuite"):
        tests += int(suite.get("tests", 0))
        failed += int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skipped += int(suite.get("skipped", 0))
    return Tally(tests - failed - skipped, failed, skipped)


def boot(name: str, command: list[str], extra: list[str]) -> tuple[Tally | None, float]:
    """Boot one guest that runs `command` with its results folder as its first argument."""
    out = CACHE / "test-v2" / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    env = dict(os.environ, PATH=f"{VNG.parent}:{os.environ.get('PATH', '')}")
    argv = [
        str(VNG), "--disable-kvm", "--run", str(newest_kernel()), "--memory", "2G",
        "--cpus", "2", "--rwdir", str(out), *extra, "--", command[0], str(out), *command[1:],
    ]
    started = time.monotonic()
    guest = subprocess.Popen(argv, cwd=ROOT, env=env, start_new_session=True)
    try:
        guest.wait(timeout=GUEST_TIMEOUT)
    except subprocess.TimeoutExpired:
        print(f"test-v2: the {name} guest did not finish in {GUEST_TIMEOUT} s", flush=True)
    finally:
        # qemu runs in the guest's session: nothing of it outlives this script.
        if guest.poll() is None:
            os.killpg(guest.pid, signal.SIGKILL)
        guest.wait()
    took = time.monotonic() - started
    junit = out / "junit.xml"
    if junit.exists():
        return tally(junit), took
    return log_tally(out / "pytest.log"), took


def log_tally(log: Path) -> Tally | None:
    """What the guest's log says of the tests that ended, when it was stopped before its junit
    XML was written; a stopped run counts as one failure more."""
    if not log.exists():
        return None
    ended = [m[2] for line in log.read_text().splitlines() if (m := RESULT.match(line))]
    passed = sum(status in ("PASSED", "XFAIL") for status in ended)
    skipped = ended.count("SKIPPED")
    return Tally(passed, len(ended) - passed - skipped + 1, skipped)


def systemd_image() -> str:
    """Make the systemd guest's image unless it is there; why it cannot be had, or ""."""
    if SYSTEMD_IMAGE.exists():
        return ""
    if shutil.which("debootstrap") is None or shutil.which("mkfs.ext4") is None:
        return "debootstrap or mkfs.ext4 is not installed (Debian packages debootstrap, e2fsprogs)"
    print("test-v2: making the systemd guest's root file system (once, some minutes)", flush=True)
    made = subprocess.run(
        ["sh", str(ROOT / "tests_v2/systemd/make_root.sh"), str(SYSTEMD_IMAGE)], check=False
    )
    if made.returncode != 0 or not SYSTEMD_IMAGE.exists():
        return f"tests_v2/systemd/make_root.sh failed (see {SYSTEMD_IMAGE}.log)"
    return ""


def source_archive(path: Path) -> None:
    """What the systemd guest runs: the source tree and its checks, as a tar on its second disk."""

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        return None if "__pycache__" in info.name or info.name.endswith(".egg-info") else info

    with tarfile.open(path, "w") as archive:
        archive.add(ROOT / "src", "src", filter=keep)
        archive.add(ROOT / "tests_v2" / "systemd", "tests_v2/systemd", filter=keep)


def boot_systemd() -> tuple[Tally | None, float]:
    """Boot the systemd guest (qemu itself: its init must be systemd, not virtme-ng's) and read
    its PASS/FAIL lines from the console."""
    out = CACHE / "test-v2" / "systemd"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    archive = out / "run.tar"
    source_archive(archive)
    kernel = newest_kernel()
    assert kernel is not None
    initrd = kernel.with_name(kernel.name.replace("vmlinuz", "initrd.img"))
    argv = [
        "qemu-system-x86_64", "-accel", "tcg", "-m", "2G", "-smp", "2", "-nographic",
        "-no-reboot", "-kernel", str(kernel), "-initrd", str(initrd),
        "-append", "root=/dev/vda rw console=ttyS0 quiet panic=-1",
        "-drive", f"file={SYSTEMD_IMAGE},format=raw,if=virtio,snapshot=on",
        "-drive", f"file={archive},format=raw,if=virtio,readonly=on",
    ]
    started = time.monotonic()
    passed = failed = 0
    counted = False
    with open(out / "console.log", "w") as log:
        guest = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, errors="replace", start_new_session=True,
        )
        assert guest.stdout is not None
        try:
            for line in guest.stdout:
                log.write(line)
                log.flush()
                text = line.strip()
                if text.startswith(("PASS ", "FAIL ", "    ", "systemd guest:")):
                    print(text if not text.startswith("    ") else line.rstrip(), flush=True)
                passed += text.startswith("PASS ")
                failed += text.startswith("FAIL ")
                counted = counted or text.startswith("systemd guest:")
                if time.monotonic() - started > GUEST_TIMEOUT:
                    print(f"test-v2: the systemd guest did not finish in {GUEST_TIMEOUT} s")
                    break
        finally:
            if guest.poll() is None:
                os.killpg(guest.pid, signal.SIGKILL)
            guest.wait()
    took = time.monotonic() - started
    return (Tally(passed, failed, 0) if counted else None), took


def main(tests: list[str]) -> int:
    """Boot each guest; `tests` (pytest node ids) narrow the v2 guest's run and TEST_V2_GUESTS
    ("v2", "systemd") picks the guests, while developing."""
    why = missing()
    if why:
        print(f"test-v2 skipped: {why}")
        return 0
    total = Tally(0, 0, 0)
    lines = []
    ok = True
    results: list[tuple[str, Tally | None, float]] = []
    guests = os.environ.get("TEST_V2_GUESTS", "v2 systemd").split()
    if "v2" in guests:
        results.append(("v2", *boot("v2", ["tests_v2/guest/inside.sh", *tests], [])))
    if "systemd" in guests and not tests:
        why_not = systemd_image()
        if why_not:
            lines.append(f"systemd guest skipped: {why_not}")
        else:
            results.append(("systemd", *boot_systemd()))
    for name, result, took in results:
        if result is None:
            ok = False
            lines.append(f"{name} guest: no results came back ({took:.0f} s)")
            continue
        total = Tally(
            total.passed + result.passed, total.failed + result.failed,
            total.skipped + result.skipped,
        )
        lines.append(
            f"{name} guest: {result.passed} passed, {result.failed} failed,"
            f" {result.skipped} skipped in {took:.0f} s"
        )
    for line in lines:
        print(f"test-v2: {line}", flush=True)
    ok = ok and total.failed == 0
    print(f"{total.passed} passed, {total.failed} failed, {total.skipped} skipped")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
