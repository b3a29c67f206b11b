"""Actions by keypress under Pilot, end to end on real parts: a stale lock released and a live
one refused, a finished job rerun in a real cage, and read-only mode refusing every action
from its key and from the command palette."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pilot_waits import launch_form, probed, until
from textual.command import CommandList, CommandPalette
from textual.widgets import Button, Input

from ledger_rows import add_job
from swarmdeck.actions import lock
from swarmdeck.actions.fingerprint import fingerprint
from swarmdeck.actions.run_request import checked_threads, thread_count
from swarmdeck.app.commands import ACTIONS, ConfirmScreen
from swarmdeck.app.help import NAVIGATION, HelpScreen
from swarmdeck.app.launch import LaunchScreen, request_from
from swarmdeck.app.main import SwarmdeckApp
from swarmdeck.config import load_config
from swarmdeck.errors import SwarmdeckError
from swarmdeck.probes import locks
from swarmdeck.probes.memory_book import ledger_jobs
from swarmdeck.probes.procs import identity
from swarmdeck.state import StateStore

MIB = 1 << 20


def dead_holder() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A lock held by a live process, and one whose holder is gone (stale)."""
    holder = subprocess.Popen(["sleep", "60"])
    try:
        me = identity(holder.pid)
        assert me is not None
        lock.acquire(tmp_path / "live", session="A", command="make", holder=me)
        lock.acquire(tmp_path / "gone", session="B", command="test", holder=me)
        stale = locks.lock_file_for(tmp_path / "gone")
        record = json.loads(stale.read_text())
        record["pid"] = dead_holder()
        stale.write_text(json.dumps(record))
        yield locks.lock_file_for(tmp_path / "live"), stale
    finally:
        holder.kill()
        holder.wait()


async def select_row(pilot, app: SwarmdeckApp, panel_key: str, table_id: str, key: str) -> None:
    await pilot.press(panel_key)
    table = app.query_one(f"#{table_id}")
    table.move_cursor(row=table.get_row_index(key))
    await pilot.pause()


async def rerun_lines(pilot, app: SwarmdeckApp, job_id: int) -> str:
    """`r` on the job's row: the lines the rerun modal shows (its booking, its command line)."""
    await select_row(pilot, app, "2", "jobs-table", str(job_id))
    await pilot.press("r")
    await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the rerun modal")
    return str(app.screen.query_one("#confirm-lines").render())


async def test_l_releases_a_stale_lock_and_refuses_a_live_one(held) -> None:
    live, stale = held
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await select_row(pilot, app, "5", "locks-table", f"lock:{live}")
        await pilot.press("l")
        assert not isinstance(app.screen, ConfirmScreen)
        assert live.exists()
        await select_row(pilot, app, "5", "locks-table", f"lock:{stale}")
        await pilot.press("l")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("enter")
        assert stale.exists(), "Cancel is focused: enter alone changes nothing"
        await pilot.press("l", "tab", "enter")
        await until(pilot, lambda: not stale.exists(), "the stale lock gone")
        assert live.exists()


async def test_r_reruns_a_finished_job_in_its_cage_and_the_new_row_completes(
    caged: Path, isolated_home: Path
) -> None:
    store = StateStore.open_default()
    first = add_job(store, label="exits three", state="done", argv=["sh", "-c", "exit 3"],
                    cwd=str(isolated_home), exit_code=3, outcome="exit 3", cap=64 * MIB,
                    started_at=time.time() - 5, ended_at=time.time() - 4)
    app = SwarmdeckApp(load_config(), store)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        shown = await rerun_lines(pilot, app, first)
        wanted = "swarmdeck run --detach --cap 64M --label 'exits three' -- sh -c 'exit 3'"
        assert wanted in shown
        await pilot.press("tab", "enter")

        def rerun_done() -> bool:
            rows = [j for j in ledger_jobs(store) if j.id != first]
            return bool(rows) and rows[0].state == "done"

        await until(pilot, rerun_done, "the rerun finished")
        [again] = [j for j in ledger_jobs(store) if j.id != first]
        assert again.exit_code == 3 and again.argv == ["sh", "-c", "exit 3"]
        assert again.cap == 64 * MIB
        await probed(pilot)
        assert app.query_one("#jobs-table").row_count == 2


@pytest.mark.parametrize(("key", "verb"), [("r", "rerunning"), ("m", "migrating")])
async def test_r_and_m_refuse_a_moved_job_whose_copy_still_runs_on_the_peer(
    isolated_home: Path, key: str, verb: str
) -> None:
    """A job withdrawn here because it moved runs there as another row of this ledger: while
    that copy runs, rerunning (or moving) it here would run it twice; both keys say so alike."""
    (isolated_home / "config.toml").write_text('[[hosts]]\nname = "box2"\naddress = "127.0.0.1"\n')
    store = StateStore.open_default()
    copy = add_job(store, label="slow build", host="box2", state="running",
                   argv=["make", "all"], cwd=str(isolated_home), admitted_via="peer",
                   started_at=time.time() - 60)
    moved = add_job(store, label="slow build", state="moved", argv=["make", "all"],
                    cwd=str(isolated_home), exit_code=242, outcome=f"moved to box2 (job {copy})",
                    admitted_via="cap", ended_at=time.time() - 60)
    app = SwarmdeckApp(load_config(), store)
    async with app.run_test(size=(160, 40)) as pilot:
        await probed(pilot)
        await select_row(pilot, app, "2", "jobs-table", str(moved))
        await pilot.press(key)
        await pilot.pause(0.2)
        assert app.screen is app.screen_stack[0]
    why = (f"job {moved} moved to box2 as job {copy}, which is running there: {verb} it would"
           " run it twice; wait until it ends there")
    assert any(why in note for note in _notes(app)), _notes(app)
    with store.read() as conn:
        assert conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 2, "nothing started"


@pytest.mark.parametrize(
    ("history", "says"),
    [
        (False, "booked 64M (via cap), cap 64M"),
        (True, "booked 11M (via history), cap 64M"),
    ],
    ids=["no-history", "history"],
)
async def test_the_rerun_modal_says_how_the_rerun_is_booked(
    caged: Path, isolated_home: Path, history: bool, says: str
) -> None:
    """What the modal says of the booking is the runner's own booking of that line: at its
    --cap with no recorded peaks, from them (under the cap) with some."""
    store = StateStore.open_default()
    argv = ["sh", "-c", "exit 3"]
    first = add_job(store, label="exits three", state="done", argv=argv, cwd=str(isolated_home),
                    exit_code=3, outcome="exit 3", cap=64 * MIB,
                    started_at=time.time() - 5, ended_at=time.time() - 4)
    if history:
        with store.transaction() as conn:
            conn.execute(
                "INSERT INTO peaks (fingerprint, job_id, peak, hit_ceiling, cap, outcome)"
                " VALUES (?, ?, ?, 0, ?, 'ok')",
                (fingerprint(argv, isolated_home), first, 10 * MIB, 64 * MIB),
            )
    app = SwarmdeckApp(load_config(), store)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        shown = await rerun_lines(pilot, app, first)
    assert says in shown, shown
    assert ("via cap" if history else "via history") not in shown, shown


async def test_r_on_a_job_that_hit_its_own_cap_opens_the_form_with_twice_the_cap(
    isolated_home: Path,
) -> None:
    store = StateStore.open_default()
    first = add_job(store, label="grows", state="done", argv=["python3", "grow.py"],
                    cwd=str(isolated_home), exit_code=250, outcome="own cap", cap=160 * MIB,
                    hit_ceiling=1, timeout=90.0, threads=2, started_at=time.time() - 5,
                    ended_at=time.time() - 4)
    app = SwarmdeckApp(load_config(), store)
    async with app.run_test(size=(120, 40)) as pilot:
        await probed(pilot)
        await select_row(pilot, app, "2", "jobs-table", str(first))
        await pilot.press("r")
        assert isinstance(app.screen, LaunchScreen)
        values = app.screen.values()
        assert values["command"] == "python3 grow.py" and values["cap"] == "320M"
        assert values["cwd"] == str(isolated_home) and values["label"] == "grows"
        assert (values["threads"], values["timeout"]) == ("2", "90")
        request = request_from(values, isolated_home)
        assert (request.timeout, request.threads, request.cap) == (90.0, 2, "320M")
        preview = app.screen.query_one("#launch-preview")
        await until(pilot, lambda: "--timeout 90" in str(preview.render()),
                    "the rerun's line keeps its --timeout")
        title = str(app.screen.query_one("Label").render())
        assert "hit its own cap of 160M" in title
        await pilot.press("escape")
        assert not isinstance(app.screen, LaunchScreen)
        assert [job.id for job in ledger_jobs(store)] == [first]


async def test_readonly_refuses_every_action_from_its_key_and_the_palette(held) -> None:
    _live, stale = held
    app = SwarmdeckApp(load_config(), StateStore.open_default(), readonly=True)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await select_row(pilot, app, "5", "locks-table", f"lock:{stale}")
        for action in ACTIONS:
            await pilot.press(action.key)
            assert not isinstance(app.screen, ConfirmScreen), action.key
            app.call_later(getattr(app, f"action_{action.action}"))
            await pilot.pause()
            assert not isinstance(app.screen, ConfirmScreen), action.action
        titles = [command.title for command in app.get_system_commands(app.screen)]
        assert not any(action.description in title for title in titles for action in ACTIONS)
        assert not any(title.endswith(f"({key})") for title in titles for key in "akyd")
        assert stale.exists()
        notes = [n.message for n in app._notifications]
        assert sum("read-only" in note for note in notes) == 2 * len(ACTIONS), notes


def _notes(app: SwarmdeckApp) -> list[str]:
    return [n.message for n in app._notifications]


@pytest.mark.parametrize(
    "keys",
    [["n"], ["2", "r"], ["5", "l"], ["2", "m"], ["6", "a"], ["6", "k"], ["6", "y"], ["6", "d"],
     ["7", "a"]],
    ids=lambda keys: "-".join(keys),
)
async def test_under_readonly_every_action_key_says_read_only(keys: list[str]) -> None:
    app = SwarmdeckApp(load_config(), StateStore.open_default(), readonly=True)
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.press(*keys)
        await pilot.pause()
        notes = _notes(app)
        assert len(notes) == 1 and notes[0].startswith("read-only"), notes


@pytest.mark.parametrize("key", ["y", "d"])
async def test_approve_or_deny_with_no_pending_request_says_so(key: str) -> None:
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.press("6", key)
        await pilot.pause()
        assert _notes(app) == ["no kill request is pending: `k` on a finding asks for one"]


async def test_every_action_is_in_the_palette_with_its_key() -> None:
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(120, 35)) as pilot:
        await pilot.pause()
        titles = [command.title for command in app.get_system_commands(app.screen)]
        for action in ACTIONS:
            assert f"{action.description} ({action.key})" in titles
        for key in ("a", "k", "y", "d"):
            assert any(title.endswith(f"({key})") for title in titles), key


async def test_the_launch_form_starts_in_the_apps_launch_folder(isolated_home: Path) -> None:
    """The folder comes from the app (the one it was started from, unless told), not from
    wherever the process happens to be when `n` is pressed; a blank folder means that one."""
    folder = isolated_home / "proj"
    folder.mkdir()
    store = StateStore.open_default()
    app = SwarmdeckApp(load_config(), store, launch_cwd=folder)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await launch_form(pilot)
        assert screen.query_one("#launch-cwd", Input).value == str(folder)
        cores = app.snapshot.hosts[0].cores.count
        assert screen.query_one("#launch-threads", Input).placeholder == (
            f"cores it will keep busy, 1–{cores}"
        )
        preview = screen.query_one("#launch-preview")
        await until(pilot, lambda: "✗ command: type the command to run" in str(preview.render()),
                    "what the empty form lacks, in the form's words")
    values = {"command": "true", "cwd": "", "cap": "", "label": "", "threads": "", "timeout": ""}
    assert request_from(values, folder).cwd == folder
    assert request_from(values, folder).timeout is None
    assert SwarmdeckApp(load_config(), store).launch_cwd == Path.cwd()


@pytest.mark.parametrize(
    ("timeout", "says"),
    [("soon", "--timeout soon is not a number of seconds: give one like 600"),
     ("0", "--timeout 0 is no time at all: give more than 0 seconds")],
)
def test_the_launch_form_refuses_a_timeout_the_runner_would(
    tmp_path: Path, timeout: str, says: str
) -> None:
    values = {"command": "true", "cwd": "", "cap": "", "label": "", "threads": "",
              "timeout": timeout}
    with pytest.raises(SwarmdeckError, match=f"^{says}$"):
        request_from(values, tmp_path)


async def test_the_launch_form_takes_the_threads_its_hint_names(isolated_home: Path) -> None:
    """The threads field's placeholder names this host's cores as its range, and the form takes
    that range: one thread more is the form's problem, Launch disabled, saying the range."""
    app = SwarmdeckApp(load_config(), StateStore.open_default(), launch_cwd=isolated_home)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await launch_form(pilot)
        cores = app.snapshot.hosts[0].cores.count
        threads = screen.query_one("#launch-threads", Input)
        assert threads.placeholder.endswith(f", 1–{cores}")
        preview = screen.query_one("#launch-preview")
        screen.query_one("#launch-command", Input).value = "true"
        threads.value = str(cores + 1)
        wanted = f"✗ --threads {cores + 1}: give a number from 1 to {cores}"
        await until(pilot, lambda: str(preview.render()).startswith(wanted), "the range refused")
        assert screen.query_one("#do", Button).disabled
        threads.value = str(cores)
        await until(pilot, lambda: not str(preview.render()).startswith("✗ --threads"),
                    "the range's top taken")


@pytest.mark.parametrize("given", ["many", "1.5", "0", "-3", "99999"])
async def test_the_launch_form_words_every_bad_thread_count_as_the_runner_does(
    isolated_home: Path, given: str
) -> None:
    """A thread count that is no number, or a number out of range, is one problem in one
    wording, the runner's (`swarmdeck run --threads`), with the form's range: this host's
    cores."""
    app = SwarmdeckApp(load_config(), StateStore.open_default(), launch_cwd=isolated_home)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await launch_form(pilot)
        cores = app.snapshot.hosts[0].cores.count
        preview = screen.query_one("#launch-preview")
        screen.query_one("#launch-command", Input).value = "true"
        screen.query_one("#launch-threads", Input).value = given
        wanted = f"✗ --threads {given}: give a number from 1 to {cores}"
        await until(pilot, lambda: str(preview.render()).startswith(wanted), wanted)
        assert screen.query_one("#do", Button).disabled
    values = {"command": "true", "cwd": "", "cap": "", "label": "", "threads": given}
    with pytest.raises(SwarmdeckError) as unread:
        request_from(values, isolated_home)
    with pytest.raises(SwarmdeckError) as runner:
        thread_count(given)
        checked_threads(int(given))
    assert unread.value.message == runner.value.message, "cores not read: the runner's range"


async def test_n_shows_the_booking_and_the_command_line_then_launches(
    caged: Path, isolated_home: Path
) -> None:
    store = StateStore.open_default()
    app = SwarmdeckApp(load_config(), store)
    async with app.run_test(size=(120, 40)) as pilot:
        await probed(pilot)
        await pilot.press("n")
        assert isinstance(app.screen, LaunchScreen)
        screen = app.screen
        launch = screen.query_one("#do", Button)
        preview = screen.query_one("#launch-preview")
        screen.query_one("#launch-cwd", Input).value = str(isolated_home)
        screen.query_one("#launch-threads", Input).value = "many"
        screen.query_one("#launch-command", Input).value = "sh -c 'exit 5'"
        await until(pilot, lambda: "--threads many" in str(preview.render()), "the problem")
        assert launch.disabled
        screen.query_one("#launch-threads", Input).value = "1"
        screen.query_one("#launch-cap", Input).value = "64M"
        await until(pilot, lambda: not launch.disabled, "a valid form")
        shown = str(preview.render())
        assert "booked 64M (via cap), cap 64M" in shown and "fits now" in shown
        assert "swarmdeck run --detach --cap 64M --threads 1 -- sh -c 'exit 5'" in shown
        launch.press()
        await pilot.pause()
        assert not isinstance(app.screen, LaunchScreen)

        def finished() -> bool:
            jobs = list(ledger_jobs(store))
            return bool(jobs) and jobs[0].state == "done"

        await until(pilot, finished, "the launched job finished")
        [job] = list(ledger_jobs(store))
        assert job.exit_code == 5 and job.cap == 64 * MIB and job.threads == 1


@pytest.mark.parametrize(
    ("cap", "says"),
    [
        ("1G", "never fits: the slice is 256M (exit 252)"),
        ("99999999999999999999999G", "the most a size may be"),
    ],
)
async def test_n_refuses_a_cap_the_slice_can_never_hold(
    caged: Path, isolated_home: Path, cap: str, says: str
) -> None:
    """Launch stays disabled, saying why, rather than start a job that can only end in 252 or
    in a cap the ledger cannot store."""
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await launch_form(pilot)
        preview = screen.query_one("#launch-preview")
        screen.query_one("#launch-cwd", Input).value = str(isolated_home)
        screen.query_one("#launch-command", Input).value = "true"
        screen.query_one("#launch-cap", Input).value = cap
        await until(pilot, lambda: says in str(preview.render()), "the refusal")
        assert str(preview.render()).startswith("✗ ")
        assert screen.query_one("#do", Button).disabled


async def test_every_key_the_help_lists_is_in_the_palette_by_name() -> None:
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        keys = [(key, what) for key, what in app.screen._keys if (key, what) not in NAVIGATION]
        await pilot.press("escape")
        titles = [command.title for command in app.get_system_commands(app.screen)]
    for key, what in keys:
        name = what.split(" (in ")[0]
        assert any(title == name or (title.startswith(name) and title.endswith(f"({key})"))
                   for title in titles), (key, what)


async def test_typing_focus_in_the_palette_offers_each_panel_and_focuses_it() -> None:
    app = SwarmdeckApp(load_config(), StateStore.open_default())
    async with app.run_test(size=(120, 35)) as pilot:
        await probed(pilot)
        await pilot.press("ctrl+p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette), "the palette")
        await pilot.press(*"focus gpus")
        results = app.screen.query_one(CommandList)
        await until(pilot, lambda: results.option_count > 0, "a match")
        assert "Focus GPUs (4)" in str(results.get_option_at_index(0).prompt)
        await pilot.press("enter")
        await until(
            pilot,
            lambda: app.focused is not None
            and any(node.id == "gpus" for node in app.focused.ancestors_with_self),
            "the GPUs panel focused",
        )


@pytest.mark.parametrize(
    ("recorded", "line", "not_in_line"),
    [
        ({"timeout": 1.0, "booked": 64 * MIB, "cap": 96 * MIB}, "--timeout 1", "--cap"),
        ({"booked": 8 * MIB, "cap": 64 * MIB}, "--cap 64M", "--timeout"),
        ({"booked": 64 * MIB, "cap": 1 << 40, "oom_score_adj": 1000}, "--unbounded", "--cap"),
        ({"declared_cap": "50%", "booked": 8 * MIB, "cap": 64 * MIB}, "--cap 50%", "64M"),
        ({"declared_cap": "", "timeout": 1.0, "booked": 8 * MIB, "cap": 64 * MIB}, "--timeout 1",
         "--cap"),
        ({"declared_cap": "96M", "booked": 64 * MIB, "cap": 96 * MIB}, "--cap 96M", "--unb"),
    ],
    ids=["timeout-no-cap", "cap-given", "unbounded", "declared-share", "declared-none",
         "declared-as-made"],
)
async def test_the_rerun_line_is_the_command_the_person_ran(
    isolated_home: Path, recorded: dict, line: str, not_in_line: str,
) -> None:
    """The rerun's `swarmdeck run` line has the limits the job ran under: its --timeout, and
    --cap as it was given, recorded in its row (a share stays a share; none given is none,
    even where the cage's cap is no booking × cap_factor; one given stays, even where it is).
    A row from before the ledger recorded it tells from its cap: one the runner made from the
    booking is no --cap."""
    store = StateStore.open_default()
    first = add_job(store, label="limited", state="done", argv=["sleep", "5"],
                    cwd=str(isolated_home), exit_code=253, outcome="timed out",
                    started_at=time.time() - 5, ended_at=time.time() - 4, **recorded)
    app = SwarmdeckApp(load_config(), store)
    async with app.run_test(size=(160, 40)) as pilot:
        await probed(pilot)
        shown = await rerun_lines(pilot, app, first)
    command = next(text for text in shown.splitlines() if "swarmdeck run" in text)
    assert line in command and not_in_line not in command, command
