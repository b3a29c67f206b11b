"""The demo's Claude Code sessions: placeholder processes named in `sessions/<pid>.json`, and
transcripts whose subagents start, run tool calls and finish while the person watches.

Each session is a script, a generator that appends lines to its transcripts and yields how many
seconds to wait before its next step; one thread steps every script when its time comes. The
lines are written as Claude Code writes them, so the real sessions probe reads them.
"""

from __future__ import annotations

import heapq
import itertools
import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from swarmdeck.demo.lines import VERSION, Line, Transcript, dumps
from swarmdeck.probes.claude.sessions import project_folder_name
from swarmdeck.probes.procs import start_ticks

Script = Iterator[float]
"""Appends a session's next lines at each step and yields the seconds until the one after."""

PLACEHOLDER = "import time\nwhile True:\n    time.sleep(3600)\n"
"""What a demo session's process runs: it only has to be alive, as a Claude Code process is."""


@dataclass
class DemoSession:
    """One Claude Code session of the scene: its transcript folder and its live process."""

    claude_dir: Path
    name: str
    cwd: Path
    status: str = "busy"
    waiting_for: str | None = None
    session_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    process: subprocess.Popen[bytes] | None = None
    main: Transcript = field(init=False)

    def __post_init__(self) -> None:
        self.cwd.mkdir(parents=True, exist_ok=True)
        self.main = Transcript(self.session_id, str(self.cwd), branch=f"demo/{self.name}")
        self.project_dir.mkdir(parents=True, exist_ok=True)

    @property
    def project_dir(self) -> Path:
        return self.claude_dir / "projects" / project_folder_name(str(self.cwd))

    @property
    def transcript_path(self) -> Path:
        return self.project_dir / f"{self.session_id}.jsonl"

    def write(self, line: Line) -> None:
        append(self.transcript_path, line)

    def agent_path(self, agent_id: str) -> Path:
        return self.project_dir / self.session_id / "subagents" / f"agent-{agent_id}.jsonl"

    def start_process(self) -> None:
        """Start the session's stand-in process and write its `sessions/<pid>.json`."""
        self.process = subprocess.Popen(
            [sys.executable, "-S", "-c", PLACEHOLDER, f"claude-demo-{self.name}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.write_pid_file()

    def write_pid_file(self) -> None:
        assert self.process is not None
        pid = self.process.pid
        data = {
            "pid": pid,
            "sessionId": self.session_id,
            "cwd": str(self.cwd),
            "startedAt": int(time.time() * 1000),
            "updatedAt": int(time.time() * 1000),
            "version": VERSION,
            "kind": "interactive",
            "entrypoint": "cli",
            "name": self.name,
            "status": self.status,
            "procStart": start_ticks(pid),
        }
        if self.waiting_for:
            data["waitingFor"] = self.waiting_for
        folder = self.claude_dir / "sessions"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{pid}.json").write_text(json.dumps(data))

    def stop_process(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        (self.claude_dir / "sessions" / f"{self.process.pid}.json").unlink(missing_ok=True)


def append(path: Path, line: Line) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        handle.write(dumps(line))


def _agent_id() -> str:
    return "a" + uuid.uuid4().hex[:16]


def _tool_id() -> str:
    return "toolu_01" + uuid.uuid4().hex[:22]


@dataclass(frozen=True)
class Task:
    """One background subagent: what it is for and the tool calls it makes."""

    description: str
    agent_type: str
    calls: tuple[tuple[str, str, str], ...]
    """(tool name, command or path, what it answers), in order."""
    status: str = "completed"


def background_agent(session: DemoSession, task: Task, step: float) -> Script:
    """Dispatch `task` as a background agent, run its calls `step` seconds apart, finish it."""
    dispatch = _tool_id()
    agent_id = _agent_id()
    session.write(session.main.agent(dispatch, task.description, task.description, task.agent_type))
    session.write(session.main.async_launched(dispatch, agent_id, task.description))
    path = session.agent_path(agent_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_name(f"agent-{agent_id}.meta.json").write_text(
        json.dumps(
            {"agentType": task.agent_type, "description": task.description, "toolUseId": dispatch}
        )
    )
    agent = Transcript(session.session_id, session.main.cwd, session.main.branch, agent_id)
    append(path, agent.prompt(task.description))
    yield step
    for name, argument, answer in task.calls:
        call = _tool_id()
        if name == "Bash":
            append(path, agent.bash(call, argument, f"run {argument.split()[0]}"))
        else:
            append(path, agent.tool_use(call, name, {"file_path": argument}))
        yield step
        append(path, agent.result(call, answer))
        yield step / 2
    append(path, agent.text(f"{task.description}: done."))
    yield step / 2
    summary = f"{task.description} {'finished' if task.status == 'completed' else 'failed'}"
    session.write(session.main.notification(agent_id, dispatch, task.status, summary))
    session.write(session.main.text(f"The {task.agent_type} agent reports: {summary}."))


def rounds(session: DemoSession, tasks: list[Task], step: float, pause: float) -> Script:
    """The session's tasks one after another, over and over, `pause` seconds between them."""
    session.write(session.main.prompt(f"Work through the {session.name} backlog."))
    while True:
        for task in tasks:
            yield from background_agent(session, task, step)
            yield pause


def stuck_on_a_wait_loop(session: DemoSession, tasks: list[Task], step: float) -> Script:
    """A main session whose own Bash call is a wait loop with no timeout, never answered, while
    its subagents keep working: what the watchdog's tool-call and wait-loop rules catch."""
    session.write(session.main.prompt("Build the cage and wait for the artifacts."))
    session.write(
        session.main.bash(
            _tool_id(),
            "until test -f build/artifacts.done; do sleep 5; done",
            "wait for the build",
        )
    )
    yield step
    while True:
        for task in tasks:
            yield from background_agent(session, task, step)
            yield step


def waiting_for_permission(session: DemoSession) -> Script:
    """A session that asked the person for a permission and waits: its pid file says so."""
    session.write(session.main.prompt("Clean the docs build and publish it."))
    yield 0.5
    session.write(session.main.bash(_tool_id(), "rm -rf site/ && mkdocs build", "rebuild docs"))
    while True:
        yield 3600.0


class ScriptRunner:
    """Steps every script in one thread, each when its time comes, until stopped."""

    def __init__(self) -> None:
        self._queue: list[tuple[float, int, Script]] = []
        self._order = itertools.count()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="demo-transcripts", daemon=True)
        self.failure: BaseException | None = None

    def add(self, script: Script, after: float = 0.0) -> None:
        heapq.heappush(self._queue, (time.monotonic() + after, next(self._order), script))

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        try:
            while self._queue and not self._stop.is_set():
                at, order, script = self._queue[0]
                if self._stop.wait(max(0.0, at - time.monotonic())):
                    return
                heapq.heappop(self._queue)
                try:
                    delay = next(script)
                except StopIteration:
                    continue
                heapq.heappush(self._queue, (time.monotonic() + delay, order, script))
        except OSError as error:
            # The scene's folder went away under the writer: nothing more to write.
            self.failure = error


API_TASKS = [
    Task(
        "Map the HTTP handlers",
        "Explore",
        (
            ("Bash", "rg -n 'def handle_' src/", "src/api/jobs.py:41: def handle_submit(...)"),
            ("Read", "src/api/jobs.py", "  41  def handle_submit(request):"),
            ("Bash", "git log --oneline -5 -- src/api", "3f2a1c9 jobs: stream output"),
        ),
    ),
    Task(
        "Review the retry logic",
        "code-reviewer",
        (
            ("Read", "src/api/retry.py", "  12  def backoff(attempt):"),
            ("Bash", "pytest -q tests/api/test_retry.py", "4 passed in 0.41s"),
        ),
    ),
    Task(
        "Bisect the flaky upload test",
        "general-purpose",
        (
            ("Bash", "git bisect start HEAD v0.3.0", "Bisecting: 12 revisions left to test"),
            ("Bash", "pytest -q -x tests/api/test_upload.py", "1 failed, 6 passed"),
        ),
        status="failed",
    ),
]
CAGE_TASKS = [
    Task(
        "Write tests for the v1 cage",
        "general-purpose",
        (
            ("Read", "src/cage/v1.py", "   1  \"\"\"Cages on cgroup v1\"\"\""),
            ("Bash", "swarmdeck run --cap 2G -- pytest -q tests/cage", "12 passed in 3.2s"),
        ),
    ),
    Task(
        "Profile the allocator",
        "Plan",
        (
            ("Bash", "swarmdeck run --cap 4G -- python bench/alloc.py", "p50 1.2 ms, p99 9 ms"),
            ("Read", "bench/results/alloc.txt", "p50 1.2 ms"),
        ),
    ),
]


def scripted_sessions(claude_dir: Path, work: Path, step: float) -> tuple[
    list[DemoSession], list[tuple[Callable[[], Script], float]]
]:
    """The scene's three sessions and, for each, its script and when it starts."""
    api = DemoSession(claude_dir, "api", work / "api")
    cage = DemoSession(claude_dir, "cage", work / "cage")
    docs = DemoSession(
        claude_dir,
        "docs",
        work / "docs",
        status="waiting",
        waiting_for="permission: Bash(rm -rf site/ && mkdocs build)",
    )
    scripts: list[tuple[Callable[[], Script], float]] = [
        (lambda: rounds(api, API_TASKS, step, pause=step * 3), 0.0),
        (lambda: stuck_on_a_wait_loop(cage, CAGE_TASKS, step), step),
        (lambda: waiting_for_permission(docs), 0.0),
    ]
    return [api, cage, docs], scripts
