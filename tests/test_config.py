"""Config: defaults without a file, values with their file:line, one clear line for a bad file."""

import dataclasses
import json
import os
from pathlib import Path

import pytest

from swarmdeck.config import (
    SECTIONS,
    Config,
    ConfigLine,
    HostConfig,
    default_config,
    describe_config,
    load_config,
    schema_keys,
)
from swarmdeck.errors import ConfigError
from swarmdeck.exitcodes import ExitCode
from swarmdeck.hooks.heavy import HEAVY_COMMANDS, entries, heavy_entry
from swarmdeck.hooks.shell_parse import parse
from swarmdeck.sizes import SizeSpec

G, M = 1024**3, 1024**2


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def config_error(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.exit_code == ExitCode.USAGE
    message = caught.value.message
    assert "\n" not in message
    return message


def test_missing_file_gives_the_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path / "absent.toml")
    assert config == default_config()
    assert config.path is None
    assert config.hosts == ()
    assert set(config.sources.values()) == {"default"}
    assert set(config.sources) == set(schema_keys())


def test_defaults_are_the_documented_ones() -> None:
    config = default_config()
    assert config.memory.reserve == SizeSpec.of_bytes(2 * G)
    assert config.memory.default_prediction == SizeSpec.of_bytes(G)
    assert config.memory.cap_factor == 1.5
    assert config.memory.margin == SizeSpec.of_bytes(256 * M)
    assert config.memory.admission_wait == 600
    assert config.memory.slice == ""
    assert config.memory.sample_interval == 0.5
    assert config.cores.heavy_threads == 0
    assert config.ui.refresh_interval == 2.0
    assert config.ui.history_minutes == 10
    watchdog = config.watchdog
    assert (watchdog.tool_call_max, watchdog.idle_max, watchdog.output_stall) == (480, 600, 1200)
    assert watchdog.rss_line == SizeSpec.of_bytes(8 * G)
    assert watchdog.thread_use_fraction == 0.25
    assert (watchdog.long_run, watchdog.escalate_after, watchdog.interval) == (1800, 0, 30)
    assert config.hooks.heavy_patterns == ()
    assert config.hooks.heavy == HEAVY_COMMANDS
    assert config.hooks.max_running_subagents == 0
    assert config.gpu.allowlist == ()
    assert config.gpu.stop_commands == ()
    assert config.locks.work_root == ""


def test_config_path_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, '[memory]\nreserve = "3G"\n')
    monkeypatch.setenv("SWARMDECK_CONFIG", str(path))
    config = load_config()
    assert config.path == str(path)
    assert config.memory.reserve == SizeSpec.of_bytes(3 * G)


def test_every_schema_key_has_a_one_line_doc() -> None:
    for cls in [*SECTIONS.values(), HostConfig]:
        for item in dataclasses.fields(cls):
            doc = item.metadata["rule"].doc
            assert doc.strip(), f"{cls.__name__}.{item.name} has no doc"
            assert "\n" not in doc


def test_every_default_passes_its_own_checks(tmp_path: Path) -> None:
    """Writing every default into a file must load back to the defaults: no rule rejects them."""
    lines = []
    for section in SECTIONS:
        lines.append(f"[{section}]")
        prefix = f"{section}."
        lines += [
            f"{row.key.removeprefix(prefix)} = {row.value}"
            for row in describe_config(default_config())
            if row.key.startswith(prefix)
        ]
    config = load_config(write(tmp_path, "\n".join(lines) + "\n"))
    assert dataclasses.replace(config, path=None, sources=default_config().sources) == Config()


def test_values_override_defaults_and_say_where_they_came_from(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "# swarmdeck\n"
        "[memory]\n"
        'reserve = "10%"\n'
        "cap_factor = 2\n"
        "\n"
        "[hooks]\n"
        "heavy_patterns = [\n"
        '  "make = b",\n'
        "  'pytest',\n"
        "]\n"
        "max_running_subagents = 3\n",
    )
    config = load_config(path)
    assert config.path == str(path)
    assert config.memory.reserve == SizeSpec.of_percent(10)
    assert config.memory.cap_factor == 2.0
    assert isinstance(config.memory.cap_factor, float)
    assert config.hooks.heavy_patterns == ("make = b", "pytest")
    assert config.hooks.max_running_subagents == 3
    assert config.sources["memory.reserve"] == f"{path}:3"
    assert config.sources["memory.cap_factor"] == f"{path}:4"
    assert config.sources["hooks.heavy_patterns"] == f"{path}:7"
    assert config.sources["hooks.max_running_subagents"] == f"{path}:11"
    assert config.sources["memory.margin"] == "default"


def test_dotted_keys_at_the_top_level_are_found(tmp_path: Path) -> None:
    path = write(tmp_path, '\nmemory.reserve = "3G"\nui.history_minutes = 5\n')
    config = load_config(path)
    assert config.memory.reserve == SizeSpec.of_bytes(3 * G)
    assert config.sources["memory.reserve"] == f"{path}:2"
    assert config.sources["ui.history_minutes"] == f"{path}:3"


def test_size_keys_take_bytes_only_when_the_unit_says_so(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, '[memory]\nmargin = "1048576B"\n'))
    assert config.memory.margin == SizeSpec.of_bytes(M)
    zero = load_config(write(tmp_path, "[memory]\nmargin = 0\n"))
    assert zero.memory.margin == SizeSpec.of_bytes(0)


def test_hosts_are_read_with_their_defaults(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "[[hosts]]\n"
        'name = "box2"\n'
        'address = "192.168.1.20"\n'
        "port = 2222\n"
        'reserve = "4G"\n'
        "\n"
        "[[hosts]]\n"
        'name = "box3"\n'
        'address = "box3.lan"\n'
        "enabled = false\n"
        "timeout = 3\n",
    )
    config = load_config(path)
    box2, box3 = config.hosts
    assert box2 == HostConfig(
        name="box2", address="192.168.1.20", port=2222, reserve=SizeSpec.of_bytes(4 * G)
    )
    assert (box2.user, box2.known_hosts, box2.identity, box2.swarmdeck) == ("", "", "", "swarmdeck")
    assert box2.enabled and box2.heavy_threads == 0 and box2.timeout == 8.0
    assert box3.reserve is None and not box3.enabled and box3.timeout == 3.0
    assert config.host("box3") is box3
    assert config.host("box9") is None
    assert config.sources["hosts[box2].port"] == f"{path}:4"
    assert config.sources["hosts[box3].enabled"] == f"{path}:10"
    assert config.sources["hosts[box3].port"] == "default"


def test_config_is_immutable() -> None:
    config = default_config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.memory.cap_factor = 3.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.sources["memory.reserve"] = "x"  # type: ignore[index]


def test_describe_config_gives_a_row_per_key_with_value_source_and_doc(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[memory]\nreserve = "3G"\n[gpu]\nallowlist = ["Xorg"]\n'
        '[[hosts]]\nname = "box2"\naddress = "10.0.0.2"\n',
    )
    rows = {row.key: row for row in describe_config(load_config(path))}
    assert rows["memory.reserve"] == ConfigLine(
        "memory.reserve", '"3G"', f"{path}:2", rows["memory.reserve"].doc
    )
    assert rows["memory.cap_factor"].value == "1.5"
    assert rows["memory.cap_factor"].source == "default"
    assert rows["gpu.allowlist"].value == '["Xorg"]'
    assert rows["hosts[box2].address"].source == f"{path}:7"
    assert rows["hosts[box2].reserve"].value == "(not set)"
    assert rows["hosts[box2].enabled"].value == "true"
    assert set(rows) == set(schema_keys()) | {
        f"hosts[box2].{item.name}" for item in dataclasses.fields(HostConfig)
    }
    assert all(row.doc for row in rows.values())


@pytest.mark.parametrize(
    ("text", "key", "line", "problem"),
    [
        ('[memroy]\nreserve = "1G"\n', "memroy", 1, "did you mean [memory]"),
        ('[memory]\n\nreserv = "1G"\n', "memory.reserv", 3, "did you mean memory.reserve"),
        ('reserve = "1G"\n', "reserve", 1, "did you mean memory.reserve"),
        ("[ui]\nrefresh_interval = true\n", "ui.refresh_interval", 2, "got a boolean"),
        ("[cores]\nheavy_threads = true\n", "cores.heavy_threads", 2, "got a boolean"),
        ("[ui]\nhistory_minutes = 1.5\n", "ui.history_minutes", 2, "whole number"),
        ("[locks]\nwork_root = 5\n", "locks.work_root", 2, "expected a string"),
        (
            '[[hosts]]\nname = "a"\naddress = "b"\nenabled = "yes"\n',
            "hosts[a].enabled",
            4,
            "true or false",
        ),
        ('[memory]\nreserve = "-1G"\n', "memory.reserve", 2, "negative"),
        ("[memory]\nreserve = -5\n", "memory.reserve", 2, "negative"),
        ('[memory]\nmargin = "lots"\n', "memory.margin", 2, "not a number with a unit"),
        ('[memory]\nmargin = "0%"\n', "memory.margin", 2, "above 0%"),
        ("[memory]\nmargin = 1.5\n", "memory.margin", 2, "expected a size"),
        ("[memory]\nadmission_wait = -1\n", "memory.admission_wait", 2, "at least 0"),
        ("[watchdog]\nescalate_after = -2\n", "watchdog.escalate_after", 2, "at least 0"),
        ("[memory]\nsample_interval = 0\n", "memory.sample_interval", 2, "at least 0.01"),
        ("[memory]\nsample_interval = nan\n", "memory.sample_interval", 2, "finite"),
        ("[memory]\ncap_factor = 0.9\n", "memory.cap_factor", 2, "at least 1"),
        ("[watchdog]\nthread_use_fraction = 1.5\n", "watchdog.thread_use_fraction", 2, "at most 1"),
        ('[[hosts]]\nname = "a"\naddress = "b"\nport = 70000\n', "hosts[a].port", 4, "at most"),
        ('[hooks]\nheavy_patterns = ["ok", "(unclosed"]\n', "hooks.heavy_patterns", 2, "item 2"),
        ('[gpu]\nallowlist = "Xorg"\n', "gpu.allowlist", 2, "array of strings"),
        ("[gpu]\nstop_commands = [1]\n", "gpu.stop_commands", 2, "item 1"),
        ("memory = 5\n", "memory", 1, "expected a table"),
        ('[hosts]\nname = "a"\n', "hosts", 1, "[[hosts]] tables"),
        (
            '[[hosts]]\nname = "a"\naddress = "x"\n\n[[hosts]]\nname = "a"\naddress = "y"\n',
            "hosts[a].name",
            6,
            "duplicate host name 'a', first given at line 2",
        ),
        ('[[hosts]]\naddress = "x"\n', "hosts[#1].name", 1, "missing"),
        ('[[hosts]]\nname = "a"\n[[hosts]]\nname = "b"\n', "hosts[a].address", 1, "missing"),
        ('[[hosts]]\nname = "a b"\naddress = "x"\n', "hosts[#1].name", 2, "'a b' is not"),
        ('[[hosts]]\nname = "a"\naddress = ""\n', "hosts[a].address", 3, "not an address"),
        (
            '[[hosts]]\nname = "a"\naddress = "x"\nadress = "y"\n',
            "hosts[a].adress",
            4,
            "did you mean",
        ),
        ("[memory]\nreserve = 2G\n", "reserve", 2, "TOML syntax error"),
        ('[memory]\nreserve = "2G"\nreserve = "3G"\n', "reserve", 3, "TOML syntax error"),
    ],
)
def test_bad_file_names_file_key_and_line(
    tmp_path: Path, text: str, key: str, line: int, problem: str
) -> None:
    path = write(tmp_path, text)
    message = config_error(path)
    assert f"{path}:{line}:" in message
    assert key in message
    assert problem in message


@pytest.mark.parametrize("spelled", [str.lower, str.upper], ids=["as-is", "upper"])
def test_a_host_named_as_this_machine_is_refused_with_its_line(tmp_path: Path, spelled) -> None:
    """The ledger writes this machine's own jobs under its name: a [[hosts]] entry by that name
    would be read as a second host holding the same jobs, and every one listed twice."""
    own = spelled(os.uname().nodename)
    path = write(tmp_path, f'[[hosts]]\nname = "box2"\naddress = "x"\n\n[[hosts]]\nname = "{own}"\n'
                 'address = "127.0.0.1"\n')
    message = config_error(path)
    assert f"{path}:6: hosts[{own}].name: {own!r} is this machine's own name" in message
    assert "[[hosts]] lists the other machines" in message


def test_syntax_error_reuses_tomllib_position(tmp_path: Path) -> None:
    message = config_error(write(tmp_path, '[memory]\ncap_factor = 1.5\nslice = "unterminated\n'))
    assert ":3:" in message
    assert "line 3, column" in message


def test_syntax_error_at_end_of_document_points_at_the_last_line(tmp_path: Path) -> None:
    message = config_error(write(tmp_path, "[gpu]\nallowlist = [\n  'Xorg',\n"))
    assert ":3:" in message
    assert "end of document" in message


def test_lines_inside_multiline_strings_are_not_taken_for_keys(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[memory]\nslice = """\ncap_factor = 2\n"""\ncap_factor = 0.5\n',
    )
    assert f"{path}:5: memory.cap_factor:" in config_error(path)


def test_lines_inside_multiline_arrays_are_not_taken_for_keys(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "[gpu]\n"
        "allowlist = [\n"
        '  "a ]",  # a comment ]\n'
        "  '''\n"
        "stop_commands = 1\n"
        "''',\n"
        "]\n"
        "stop_commands = [1]\n",
    )
    assert f"{path}:8: gpu.stop_commands:" in config_error(path)


def test_inline_table_errors_point_at_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, '# top\nmemory = { reserve = "2G", cap_factor = 0.5 }\n')
    assert f"{path}:2: memory.cap_factor: must be at least 1" in config_error(path)


def test_quoted_and_spaced_keys_are_found(tmp_path: Path) -> None:
    path = write(tmp_path, '[ memory ]\n"reserve" = "1G"\n  margin    =   "-1M"\n')
    assert f"{path}:3: memory.margin:" in config_error(path)


def test_array_of_inline_host_tables_falls_back_to_the_array_line(tmp_path: Path) -> None:
    path = write(tmp_path, '\nhosts = [\n  { name = "a", address = "x", port = 0 },\n]\n')
    assert f"{path}:2: hosts[a].port: must be at least 1" in config_error(path)


def test_directory_instead_of_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.unlink()
    path.mkdir()
    message = config_error(path)
    assert str(path) in message
    assert "directory" in message


def test_path_through_a_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("")
    path = tmp_path / "plain" / "config.toml"
    message = config_error(path)
    assert str(path) in message
    assert "cannot read" in message


def test_dangling_link_is_an_error_not_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.unlink()
    path.symlink_to(tmp_path / "gone.toml")
    message = config_error(path)
    assert str(path) in message
    assert "does not exist" in message


def test_file_that_is_not_utf8_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(b'[memory]\nslice = "\xff"\n')
    message = config_error(path)
    assert f"{path}:2:" in message
    assert "UTF-8" in message


def test_unreadable_file_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, '[memory]\nreserve = "1G"\n')
    path.chmod(0)
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        # Root reads any file, so the child drops to nobody to meet the permission check.
        os.close(read_end)
        if os.geteuid() == 0:
            os.setgid(65534)
            os.setuid(65534)
        try:
            load_config(path)
            result = "no error"
        except ConfigError as err:
            result = err.message
        os.write(write_end, result.encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        message = pipe.read().decode()
    os.waitpid(child, 0)
    assert str(path) in message
    assert "Permission denied" in message


@pytest.mark.parametrize(
    "setting",
    ["../../x", "..", "swarmdeck/../../x", "/sys/fs/cgroup/memory/../x", "./x", "/", "//", " ",
     "a b", "x\\n", "jobs;rm", "x" * 256, "$HOME"],
)
def test_a_slice_that_is_no_safe_cgroup_name_is_refused_at_load(
    tmp_path: Path, setting: str
) -> None:
    text = f"[memory]\nslice = {json.dumps(setting)}\n"
    message = config_error(write(tmp_path, text))
    assert "config.toml:2: memory.slice: " in message, message
    assert "is not a usable slice" in message and 'like "swarmdeck-jobs"' in message, message


@pytest.mark.parametrize(
    "setting",
    ["", "swarmdeck", "swarmdeck-cliinput", "jobs.slice", "user.slice/swarmdeck@1000",
     "/sys/fs/cgroup/memory/swarmdeck-test-1", "team/swarmdeck_2/", "x" * 255],
)
def test_a_slice_of_safe_names_loads(tmp_path: Path, setting: str) -> None:
    text = f"[memory]\nslice = {json.dumps(setting)}\n"
    assert load_config(write(tmp_path, text)).memory.slice == setting


def heavy(command: str) -> bool:
    """Heavy by the default list, through the shell parser (the twelve regexes it replaced
    were checked against these same commands)."""
    listed = entries(default_config().hooks.heavy)
    return any(
        not item.dynamic and heavy_entry(item.argv, listed) for item in parse(command).commands
    )


@pytest.mark.parametrize(
    "command",
    [
        "pytest",
        "pytest -x tests",
        "python -m pytest tests/",
        ".venv/bin/python -m pytest -q",
        "python3.11 -m pytest",
        "cd repo && pytest",
        "uv run pytest",
        "FOO=1 timeout 600 pytest -q",
        "for i in 1 2; do pytest; done",
        "make test",
        "make -j8",
        "make -C build -j 4",
        "nice -n 10 make -j8",
        "cargo build --release",
        "cargo +nightly test",
        "go test ./...",
        "npm test",
        "npm run build",
        "pnpm run test:unit",
        "tox -e py311",
        "nox -s tests",
        "mvn package",
        "./gradlew build",
        "ctest --output-on-failure",
        "cmake --build build -j",
        "ninja -C build",
        "python bench/memory.py",
        "./bench/run.sh",
        "python -m torch.distributed.run train.py",
        "torchrun train.py",
        "(cd a; cargo test)",
    ],
)
def test_default_heavy_patterns_catch_heavy_commands(command: str) -> None:
    assert heavy(command)


@pytest.mark.parametrize(
    "command",
    [
        "nvidia-smi",
        "nvidia-smi -l 1",
        "git status",
        "pip install pytest",
        "grep -r pytest .",
        "cat pytest.ini",
        "ls bench",
        "make",
        "make install",
        "cargo fmt",
        "npm install",
        'echo "run pytest later"',
        'git commit -m "fix make -j8"',
        "python script.py",
        "python -m pip install tox",
        "cmake -S . -B build",
        "ruff check",
    ],
)
def test_default_heavy_patterns_leave_light_commands_alone(command: str) -> None:
    assert not heavy(command)
