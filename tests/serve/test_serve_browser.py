"""`swarmdeck serve` in a real headless Chromium: the page draws the control room's panels, a
request without the token gets 401 (page, files and websocket), read-only refuses an approve
from the browser, and with --allow-actions an approve from the browser stops a real caged job.
"""

from __future__ import annotations

import contextlib
import http.client
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from served import SWARMDECK, browser, need_chromium, open_screen, serving

from swarmdeck.app.main import PANELS
from swarmdeck.ledger.schema import RUNNING
from swarmdeck.probes.cgroups import cgroup_pids
from swarmdeck.probes.memory_book import ledger_jobs
from swarmdeck.probes.procs import identity
from swarmdeck.probes.store_rows import Finding
from swarmdeck.state import StateStore
from swarmdeck.watchdog.kills import request_kill
from waiting import wait_for

need_chromium()

TITLES = ("Hosts", "Jobs", "Agents", "GPUs", "Locks", "Watchdog", "Alerts")
WATCHDOG_KEY = str(PANELS.index("watchdog") + 1)


def _children(pid: int) -> list[int]:
    return [int(n) for n in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_the_page_draws_every_panel_and_stopping_serve_ends_its_app() -> None:
    with serving() as served, browser() as context:
        screen = open_screen(context, served.url)
        screen.wait_for_text(*TITLES, "read-only")
        # The token left the address bar for a cookie.
        assert screen.page.url == served.base + "/"
        apps = [identity(pid) for pid in _children(served.process.pid)]
        assert len(apps) == 1 and apps[0] is not None
        served.stop()
        assert served.process.returncode == 0
        wait_for(lambda: not apps[0].is_alive())


def _status(base: str, path: str, headers: dict[str, str] | None = None) -> int:
    where = urlsplit(base)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    try:
        connection.request("GET", path, headers=headers or {})
        return connection.getresponse().status
    finally:
        connection.close()


UPGRADE = {
    "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
}


def test_a_request_without_the_token_gets_401_page_files_and_websocket() -> None:
    with serving() as served, browser() as context:
        page = context.new_page()
        assert page.goto(served.base + "/").status == 401
        assert page.goto(served.base + "/?token=" + served.token[:-1] + "x").status == 401
        assert page.goto(served.base + "/static/js/textual.js").status == 401
        # A page's websocket, opened without the cookie the token leaves, gets no app.
        closed = page.evaluate(
            """url => new Promise(done => { const s = new WebSocket(url);
                s.onopen = () => done("opened"); s.onerror = () => done("refused"); })""",
            served.base.replace("http:", "ws:") + "/ws",
        )
        assert closed == "refused"
        base = served.base
        assert _status(base, "/ws", UPGRADE) == 401
        assert _status(base, "/ws", {**UPGRADE, "Cookie": "swarmdeck_token=wrong"}) == 401
        cookie = {"Cookie": f"swarmdeck_token={served.token}"}
        assert _status(base, "/ws", {**UPGRADE, **cookie}) == 101
        # Another site's page is refused even when the browser would send the cookie.
        assert _status(base, "/ws", {**UPGRADE, **cookie, "Origin": "http://evil.test"}) == 403
        assert _status(base, "/?token=" + served.token) == 303
        said = served.stop()
    # Printed once, as the URL to open; no request line (the first carries it) was logged.
    assert served.token not in said and "".join(served.printed).count(served.token) == 1


@contextlib.contextmanager
def caged_job_with_a_kill_request(home: Path) -> Iterator[tuple[int, StateStore]]:
    """A real caged job in this test's slice, a tree (a shell's sleep and the shell become
    sleep), and a pending kill request for it; yields the job's pid and the store."""
    store = StateStore.open_default()
    runner = subprocess.Popen([SWARMDECK, "run", "--", "sh", "-c", "sleep 300 & exec sleep 301"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        wait_for(lambda: any(j.state == RUNNING and j.pid for j in ledger_jobs(store)))
        [job] = [j for j in ledger_jobs(store) if j.state == RUNNING]
        finding = Finding(
            id=1, key=f"output_not_growing:job{job.id}", rule="output_not_growing",
            subject=f"job #{job.id}", severity="warning", message="stalled",
            first_seen_at=0.0, last_seen_at=0.0, count=1, acknowledged_at=None,
            job_id=job.id, pid=job.pid, start_ticks=job.start_ticks,
        )
        request_kill(store, finding, "tester", time.time())
        assert job.pid is not None
        yield job.pid, store
    finally:
        from cagekit import end_session

        end_session(runner.pid)
        if runner.poll() is None:
            runner.kill()
        runner.wait()


def _request_state(store: StateStore) -> str:
    with store.read() as conn:
        [state] = conn.execute("SELECT state FROM kill_requests").fetchone()
    return state


def test_read_only_refuses_an_approve_from_the_browser(isolated_home, own_slice) -> None:
    with caged_job_with_a_kill_request(isolated_home) as (pid, store), serving() as served, \
            browser() as context:
        screen = open_screen(context, served.url)
        screen.wait_for_text("Watchdog", "stalled")
        mark = len(screen.frames)
        screen.press(WATCHDOG_KEY, "y")
        screen.wait_for_text("read-only", "nothing is changed", since=mark)
        assert "Approve" not in screen.since(mark)
        assert identity(pid) is not None and _request_state(store) == "pending"


def test_with_allow_actions_an_approve_from_the_browser_stops_the_caged_job(
    isolated_home, own_slice
) -> None:
    with caged_job_with_a_kill_request(isolated_home) as (pid, store), \
            serving("--allow-actions") as served, browser() as context:
        job = identity(pid)
        assert job is not None
        [row] = [j for j in ledger_jobs(store) if j.state == RUNNING]
        cage = Path(row.cgroup or "")
        wait_for(lambda: len(cgroup_pids(cage)) == 2, seen=lambda: cgroup_pids(cage))
        screen = open_screen(context, served.url)
        screen.wait_for_text("Watchdog", "stalled")
        assert "read-only" not in screen.text()
        mark = len(screen.frames)
        screen.press(WATCHDOG_KEY)
        # The footer offers the panel's keys once the focus is in it (Textual moves the focus
        # after the key is handled): only then is `y` the Watchdog's.
        screen.wait_for_text("Approve kill", since=mark)
        mark = len(screen.frames)
        screen.press("y")
        screen.wait_for_text("Approve kill request", "Cancel", since=mark)
        # Cancel has the focus: tab to the approve button, then press it.
        screen.press("Tab", "Enter")
        wait_for(lambda: not job.is_alive(), seen=lambda: screen.text()[-1500:])
        # The whole tree: the shell's background sleep too.
        wait_for(lambda: not cgroup_pids(cage), seen=lambda: cgroup_pids(cage))
        wait_for(lambda: _request_state(store) == "approved")


@pytest.mark.parametrize("bind", ["127.0.0.2"])
def test_any_other_bind_address_warns(bind: str) -> None:
    with serving("--bind", bind) as served:
        assert f"http://{bind}:" in served.url
        assert _status(served.base, "/") == 401
        said = "".join(served.printed)
    assert f"warning: listening on {bind}" in said
