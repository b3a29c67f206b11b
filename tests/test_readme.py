"""The README's commands run as it shows them, and its tables say what the code says, so the
README cannot drift from what is really there."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import cagekit as kit
import pytest

from swarmdeck.cli import main
from swarmdeck.cli.command_line import COMMANDS
from swarmdeck.config import default_config, schema_keys
from swarmdeck.demo.jobs import SLICE_MIB, demo_jobs
from swarmdeck.exitcodes import ExitCode

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BIN = Path(sys.executable).parent
SWARMDECK = str(BIN / "swarmdeck")


def blocks(text: str = README) -> list[list[str]]:
    """The lines of every fenced code block."""
    found: list[list[str]] = []
    current: list[str] | None = None
    for line in text.splitlines():
        if line.strip().startswith("```"):
            if current is None:
                current = []
            else:
                found.append(current)
                current = None
        elif current is not None:
            current.append(line.strip())
    return found


def shown_commands(text: str = README) -> list[tuple[str, list[str]]]:
    """Each `$ command` line of the code blocks, comment cut, with the lines shown after it."""
    found = []
    for block in blocks(text):
        for index, line in enumerate(block):
            if not line.startswith("$ "):
                continue
            command = re.sub(r"\s+#.*$", "", line[2:]).strip()
            output = []
            for after in block[index + 1 :]:
                if after.startswith("$ "):
                    break
                output.append(after)
            found.append((command, output))
    return found


def the_command(prefix: str, showing: str = "") -> tuple[list[str], list[str]]:
    """The first README command starting with `prefix` (and shown printing `showing`), as argv,
    and the output shown after it."""
    matches = [
        (c, out) for c, out in shown_commands() if c.startswith(prefix) and showing in " ".join(out)
    ]
    assert matches, f"the README shows no `{prefix}` command printing {showing!r}"
    command, output = matches[0]
    return shlex.split(command), output


def table(heading: str) -> list[list[str]]:
    """The rows (cells stripped of backticks) of the first table whose header row starts so."""
    rows: list[list[str]] = []
    inside = False
    for line in README.splitlines():
        cells = [cell.strip().strip("`") for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and not inside and cells[0] == heading:
            inside = True
            continue
        if inside:
            if not line.startswith("|"):
                break
            if set(line) <= set("|- "):
                continue
            rows.append(cells)
    assert rows, f"no table headed {heading!r}"
    return rows


def run(argv: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def _help(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main([*argv, "--help"])
    return out.getvalue()


def test_the_quick_start_is_the_two_make_commands() -> None:
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    first = blocks(quick)[0]
    assert [line.split("#")[0].strip() for line in first] == ["make run", "make test"]
    makefile = (ROOT / "Makefile").read_text()
    for target in ("run", "test", "pictures"):
        assert re.search(rf"^{target}:", makefile, re.M), target


def test_every_command_the_readme_shows_exists_with_the_options_it_uses() -> None:
    shown = [argv for argv in (shlex.split(c) for c, _ in shown_commands()) if argv]
    assert shown
    for argv in shown:
        if argv[0] != "swarmdeck":
            continue
        words = argv[1 : argv.index("--")] if "--" in argv else argv[1:]
        assert words[0] in COMMANDS, argv
        path = [words[0]] + [w for w in words[1:2] if not w.startswith("-") and w.isalpha()]
        helptext = _help(path)
        for option in (w.split("=")[0] for w in words if w.startswith("--")):
            assert option in helptext, (argv, option)


def test_the_commands_table_lists_every_command() -> None:
    listed = " ".join(row[0] for row in table("command"))
    for command in COMMANDS:
        assert f"swarmdeck {command}" in listed or f"{command} " in listed, command


def test_status_and_config_show_run_as_the_quick_start_shows(tmp_path: Path) -> None:
    status, _ = the_command("swarmdeck status")
    done = run(status)
    assert done.returncode == 0, done.stderr
    assert "Hosts" in done.stdout and "Jobs" in done.stdout
    show, _ = the_command("swarmdeck config show")
    done = run(show)
    assert done.returncode == 0, done.stderr
    for key in schema_keys():
        assert key.split(".")[0] in done.stdout


def test_the_run_that_hits_its_cap_says_and_exits_as_the_readme_shows(tmp_path: Path) -> None:
    slice_path = kit.new_slice()
    try:
        kit.write_config(Path(os.environ["SWARMDECK_CONFIG"]), slice_path, 512 * kit.MIB)
        argv, shown = the_command("swarmdeck run", showing="(exit 250)")
        done = run(argv, cwd=tmp_path)
    finally:
        kit.remove_tree(slice_path)
    assert done.returncode == ExitCode.OWN_CAP, done.stderr
    assert done.stderr.strip().splitlines()[-1] == shown[-1]


def test_hooks_install_writes_the_settings_the_readme_names(tmp_path: Path) -> None:
    user, _ = the_command("swarmdeck hooks install")
    done = run(user)
    assert done.returncode == 0, done.stderr
    settings = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json"
    events = set(json.loads(settings.read_text())["hooks"])
    section = README.split("## Using it with Claude Code", 1)[1].split("\n## ", 1)[0]
    named = re.search(r"Install merges entries for (.+?) into", section, re.S)
    assert named is not None
    assert set(re.findall(r"[A-Z][A-Za-z]+", named.group(1))) == events
    project, _ = the_command("swarmdeck hooks install --project")
    done = run(project, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / ".claude" / "settings.json").is_file()
    again = run(project, cwd=tmp_path)
    assert "nothing changed" in again.stdout


def test_the_exit_code_table_names_only_real_codes() -> None:
    real = {int(code) for code in ExitCode}
    rows = table("code")
    listed = {int(row[0]) for row in rows if row[0].isdigit()}
    assert listed <= real
    assert {250, 251, 252, 253, 254} <= listed


def test_the_watchdog_table_is_the_config_schema() -> None:
    rows = {row[0]: row[1] for row in table("key")}
    schema = {key for key in schema_keys() if key.startswith("watchdog.")}
    assert set(rows) == schema
    defaults = default_config().watchdog
    for key, shown in rows.items():
        value = getattr(defaults, key.split(".", 1)[1])
        assert shown.removesuffix(" s") == str(value).removesuffix(".0") or shown == str(value)


def app_keys(include_hidden: bool = False) -> set[str]:
    """Every key the control room's app and panels bind and show (modals left out); with
    `include_hidden`, the bound keys the footer does not show too (the number keys)."""
    import importlib
    import inspect
    import pkgutil

    from textual.binding import Binding
    from textual.screen import ModalScreen

    import swarmdeck.app

    keys: set[str] = set()
    for info in pkgutil.iter_modules(swarmdeck.app.__path__):
        module = importlib.import_module(f"swarmdeck.app.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__ or issubclass(cls, ModalScreen):
                continue
            for binding in cls.__dict__.get("BINDINGS", []):
                if isinstance(binding, Binding) and (binding.show or include_hidden):
                    keys.add(binding.key_display or binding.key)
    return keys


BUILT_IN_KEYS = {"ctrl+p", "tab", "enter"}
"""Keys the README lists that Textual gives every app: the palette, focus cycling, select."""
KEY_NAMES = {"esc": "escape"}


def listed_keys(cell: str) -> set[str]:
    """The keys of one keypress cell: `a`, `b` and ranges like `1`–`7`."""
    keys: set[str] = set()
    for part in re.split(r"`?,\s*`?", cell):
        if "`–`" in part:
            first, last = part.split("`–`")
            keys.update(str(n) for n in range(int(first), int(last) + 1))
        else:
            keys.add(KEY_NAMES.get(part, part))
    return keys


def test_listed_keys_reads_lists_and_ranges() -> None:
    assert listed_keys("1`–`3`, `tab") == {"1", "2", "3", "tab"}
    assert listed_keys("enter`, `esc") == {"enter", "escape"}


def test_the_keys_table_is_the_apps_bindings() -> None:
    listed = set().union(*(listed_keys(row[0]) for row in table("keypress")))
    assert app_keys() <= listed
    assert listed - BUILT_IN_KEYS <= app_keys(include_hidden=True)


def _slug(heading: str) -> str:
    """The anchor a Markdown renderer gives a heading (lower case, spaces to '-')."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_every_link_to_the_docs_leads_to_a_file_and_heading_that_exist() -> None:
    for text in [README, *(path.read_text() for path in (ROOT / "docs").glob("*.md"))]:
        for target, anchor in re.findall(r"\]\((docs/[^)#]+|[a-z]+\.md)(?:#([^)]+))?\)", text):
            path = ROOT / target if target.startswith("docs/") else ROOT / "docs" / target
            assert path.is_file(), target
            if anchor:
                headings = re.findall(r"^#+ (.+)$", path.read_text(), re.M)
                assert anchor in {_slug(h) for h in headings}, (target, anchor)


def test_no_doc_has_two_sections_of_one_name() -> None:
    """Two sections of one name share one anchor: a link reaches only the first, and the
    facts of the two drift apart."""
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        slugs = [_slug(h) for h in re.findall(r"^#+ (.+)$", path.read_text(), re.M)]
        assert len(slugs) == len(set(slugs)), (path.name, sorted(
            {slug for slug in slugs if slugs.count(slug) > 1}
        ))


def test_the_panels_table_names_every_panel() -> None:
    import importlib
    import inspect
    import pkgutil

    import swarmdeck.app
    from swarmdeck.app.panel import SnapshotPanel

    titles = {"Agents"}
    for info in pkgutil.iter_modules(swarmdeck.app.__path__):
        module = importlib.import_module(f"swarmdeck.app.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, SnapshotPanel) and cls.TITLE:
                titles.add(cls.TITLE)
    assert {row[0] for row in table("panel")} == titles


def _shape(line: str) -> str:
    """A line of a hook's reminder with what differs between machines taken out: the host's
    name, every figure, the GPU cell and the path the command was started by."""
    line = re.sub(r"^- \S+ \(here\):", "- HOST (here):", line)
    line = re.sub(r"(no GPU|GPU free .*)$", "GPU", line)
    line = re.sub(r"\S*/swarmdeck run", "swarmdeck run", line)
    return re.sub(r"\d+(?:\.\d+)?", "N", line)


def test_shape_hides_what_differs_between_machines() -> None:
    assert _shape("- vm (here): 2 cores · load 0.65 · memory room 21.6G · no GPU") == (
        "- HOST (here): N cores · load N · memory room NG · GPU"
    )
    assert _shape("Run it as: /x/bin/swarmdeck run -- a") == "Run it as: swarmdeck run -- a"


def test_the_heavy_command_reminder_reads_as_the_readme_shows_it() -> None:
    [shown] = [block for block in blocks() if any("is a heavy command" in b for b in block)]
    command = re.search(r"`([^`]+)` is a heavy command", shown[0])
    assert command is not None
    payload = {
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command.group(1)},
    }
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [SWARMDECK, "hook", "pre-tool-use"], input=json.dumps(payload), env=env,
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"].splitlines()
    # On a machine whose load is above its cores the conclusion says so (the README names that
    # form below the example): the example is the form of a machine with cores to spare.
    said = [re.sub(r", but its cores are saturated \([^)]*\)|It shares them with what runs now"
                   r" and runs slower\. ", "", line) for line in said]
    assert [_shape(line) for line in shown] == [_shape(line) for line in said]


def test_every_exit_code_has_its_words_and_the_run_table_lists_those_a_job_can_end_with() -> None:
    from swarmdeck.exitcodes import MEANING

    assert set(MEANING) == set(ExitCode) - {ExitCode.OK}
    listed = {int(row[0]) for row in table("code") if row[0].isdigit()}
    # 141 is a printing command's and 129 the control room's (told beside the commands), 255 a
    # ledger row's (told below).
    beside = {ExitCode.READER_GONE, ExitCode.TERMINAL_GONE, ExitCode.LOST}
    assert listed == {int(code) for code in MEANING} - beside
    assert "exit code 255" in README and "with 141" in README and "with 129" in README


def test_the_readme_tells_what_output_that_cannot_be_written_exits_with() -> None:
    from swarmdeck.cli.output import UNWRITABLE_EXIT

    told = " ".join(README.split("A command whose output cannot", 1)[1].split(".", 1)[0].split())
    assert told.endswith(f"exits {int(UNWRITABLE_EXIT)}; where stderr cannot be written either, "
                         "nothing is said, and a caged run still exits with its command's own "
                         "status")


def test_the_demo_paragraph_gives_the_scene_s_own_sizes_and_labels() -> None:
    demo = " ".join(README.split("## See it first", 1)[1].split("\n## ", 1)[0].split())
    queued = next(spec for spec in demo_jobs() if spec.queued)
    idle = next(spec for spec in demo_jobs() if spec.mode == "idle")
    assert f"{SLICE_MIB} MiB slice" in demo
    assert f"`{queued.label}` stays queued (its {queued.cap_mib} MiB" in demo
    assert f"the kill frees {idle.cap_mib} MiB" in demo
