"""The config file: TOML over embedded defaults, checked against one schema, errors at file:line.

The schema is the section dataclasses below: each key is one field with its type (the
annotation), its default and a one-line doc: `field(default=…, metadata=about("doc"))`; a key
without a default is required. Loading, validation, the `sources` map and `swarmdeck config
show` all read that one place, so a key is added by adding one field. A file that cannot be
used as written stops with one ConfigError line naming the file, the line and the key; a
missing file means the defaults, silently, by design.
"""

import os

from swarmdeck import paths
from swarmdeck.durations import finite
from swarmdeck.errors import ConfigError, UsageError
from swarmdeck.hooks.heavy import HEAVY_COMMANDS
from swarmdeck.hooks.heavy import entry_problem as heavy_entry_problem
from swarmdeck.records import MISSING, MappingProxyType, dataclass, field, fields, is_dataclass
from swarmdeck.sizes import SizeSpec, format_size
from swarmdeck.text_paths import tidy

# This module's annotations are evaluated (see _hints), so `Any` must exist at run time; typing
# costs every caged run 3 ms to import, and there `object` stands in for it. collections.abc is
# not imported either (it imports collections, 2 ms): the mappings here are MappingProxyType,
# and a Rule's check, which no section holds, is annotated as text.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import tomllib
    from collections.abc import Callable
    from typing import Any

    from swarmdeck.toml_lines import KeyLines

    Check = Callable[[Any], str | None]
    """An extra check on a converted value: returns what is wrong with it, or None."""
else:
    Any = object

MAX_CONFIG_BYTES = 1024 * 1024
"""A config file larger than this is refused unread: a real one is a few KiB."""
MAX_DEPTH = 16
"""Arrays and tables nested deeper than this are refused: the schema needs three levels."""
DAY = 24 * 3600.0
WEEK = 7 * DAY
MAX_THREADS = 65536
"""The most threads a key or a job's --threads may give; the ledger keeps them as integers."""
MAX_SIZE = 64 * 1024**4
"""The largest absolute size any key takes (64T): more than any machine has, less than overflows."""
MAX_HOST_NAME = 64


@dataclass(frozen=True)
class Rule:
    """What the schema says about one key besides its type and default."""

    doc: str
    minimum: float | None = None
    above: float | None = None
    maximum: float | None = None
    check: "Check | None" = None


def about(
    doc: str,
    *,
    minimum: float | None = None,
    above: float | None = None,
    maximum: float | None = None,
    check: "Check | None" = None,
) -> dict[str, Rule]:
    """Field metadata for one key of the schema: its doc and the bounds a value must keep."""
    return {"rule": Rule(doc, minimum, above, maximum, check)}


def _size(text: str) -> SizeSpec:
    return SizeSpec.parse(text)


# re is imported by the checks that use it: a caged run on a cached config makes none of them,
# and would pay re's 1.6 ms import for nothing; paths are plain strings for pathlib's 4 ms.


def _regexes(patterns: tuple[str, ...]) -> str | None:
    import re

    for number, pattern in enumerate(patterns, start=1):
        try:
            re.compile(pattern)
        except re.error as err:
            return f"item {number} ({pattern!r}) is not a regular expression: {err}"
    return None


def _host_name(name: str) -> str | None:
    import re

    if len(name) <= MAX_HOST_NAME and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        return None
    shown = repr(name) if len(name) <= MAX_HOST_NAME else repr(name[:MAX_HOST_NAME]) + "…"
    return (
        f"{shown} is not a usable host name: up to {MAX_HOST_NAME} letters, digits, '.', '_',"
        ' \'-\', like "box2"'
    )


def _address(address: str) -> str | None:
    if address and not any(char.isspace() for char in address):
        return None
    return f'{address!r} is not an address: give a host name or IP, like "192.168.1.20"'


def _run_root(path: str) -> str | None:
    if path.strip() and path.strip("/") and "\n" not in path:
        return None
    return f'{path!r} is not a usable run root: give a folder like "swarmdeck-runs" or "/scratch"'


_SLICE_PART = r"[A-Za-z0-9_@:+-][A-Za-z0-9._@:+-]*"
"""One folder of a slice's name: a pattern compiled when a name is checked (re caches it), not
when the module loads: a caged run on a cached config checks none and would pay the compile."""
MAX_CGROUP_NAME = 255
"""The longest name one folder of a cgroup hierarchy may have (the kernel's NAME_MAX)."""


def slice_problem(setting: str) -> str | None:
    """Why `setting` (memory.slice, `demo --slice`) names no cgroup swarmdeck may make and cage
    jobs in, or None when it does: "" (chosen automatically), or folders of the hierarchy, a
    full path inside it or one relative to it, each named by letters, digits and ._@:+-.

    A slice is made with mkdir and jobs' cgroups beneath it: "..", "." or a name of nothing
    but slashes would put them outside the hierarchy, at its root or in a cgroup that is not
    swarmdeck's; a space or a control character would be a name no person can type back."""
    if setting == "":
        return None
    import re

    parts = [part for part in setting.split("/") if part]
    if parts and all(
        re.fullmatch(_SLICE_PART, part) and len(part.encode()) <= MAX_CGROUP_NAME for part in parts
    ):
        return None
    shown = repr(setting) if len(setting) <= 80 else repr(setting[:80]) + "…"
    return (
        f"{shown} is not a usable slice: give a cgroup name like \"swarmdeck-jobs\" (folders"
        " joined by '/', each of letters, digits and ._@:+- not starting with '.'), or \"\""
        " to have one chosen automatically"
    )




@dataclass(frozen=True)
class MemoryConfig:
    """The memory book of this host: what is kept back, how jobs are booked and capped."""

    reserve: SizeSpec = field(
        default=_size("2G"),
        metadata=about(
            "memory kept out of the job slice for everything else; slice cap = MemTotal − this",
            maximum=MAX_SIZE,
        ),
    )
    default_prediction: SizeSpec = field(
        default=_size("1G"),
        metadata=about("booking for a job with no history and no --cap", maximum=MAX_SIZE),
    )
    cap_factor: float = field(
        default=1.5,
        metadata=about(
            "a job's cap when no --cap is given: its booking times this", minimum=1, maximum=100
        ),
    )
    margin: SizeSpec = field(
        default=_size("256M"),
        metadata=about(
            "MemAvailable that must stay free beyond a new booking for it to be admitted",
            maximum=MAX_SIZE,
        ),
    )
    admission_wait: float = field(
        default=600.0,
        metadata=about(
            "seconds a job queues for room before it exits 252 (--wait overrides)",
            minimum=0,
            maximum=WEEK,
        ),
    )
    slice: str = field(
        default="",
        metadata=about(
            'parent cgroup of all caged jobs; "" = chosen automatically', check=slice_problem
        ),
    )
    sample_interval: float = field(
        default=0.5,
        metadata=about(
            "seconds between memory samples of a running job", minimum=0.01, maximum=60
        ),
    )


def heavy_thread_budget(setting: int, cores: int) -> int:
    """A host's registered heavy threads: `heavy_threads` when set, else its cores less one
    (one left for the agents and the shell), fixed whatever the load."""
    return setting or max(1, cores - 1)


@dataclass(frozen=True)
class CoresConfig:
    """How many threads heavy work may use on this host."""

    heavy_threads: int = field(
        default=0,
        metadata=about(
            "threads heavy jobs may use at once on this host (a dispatch prompt's `thread cap:`);"
            " 0 = the number of cores less one",
            minimum=0,
            maximum=MAX_THREADS,
        ),
    )


@dataclass(frozen=True)
class UiConfig:
    """The control room's pace and memory."""

    refresh_interval: float = field(
        default=2.0,
        metadata=about("seconds between refreshes of the app", minimum=0.05, maximum=3600),
    )
    history_minutes: int = field(
        default=10,
        metadata=about("minutes of history the sparklines show", minimum=1, maximum=1440),
    )
    bell: bool = field(
        default=False,
        metadata=about("ring the terminal bell when a session starts waiting for the person"),
    )


@dataclass(frozen=True)
class WatchdogConfig:
    """Thresholds of the watchdog's rules and the optional escalation policy."""

    tool_call_max: float = field(
        default=480.0,
        metadata=about(
            "seconds a single tool call may run before a finding", above=0, maximum=WEEK
        ),
    )
    idle_max: float = field(
        default=600.0,
        metadata=about(
            "seconds an agent may show no activity before a finding", above=0, maximum=WEEK
        ),
    )
    output_stall: float = field(
        default=1200.0,
        metadata=about(
            "seconds a job's output file may stop growing before a finding", above=0, maximum=WEEK
        ),
    )
    rss_line: SizeSpec = field(
        default=_size("8G"),
        metadata=about("resident memory of one process that raises a finding", maximum=MAX_SIZE),
    )
    thread_use_fraction: float = field(
        default=0.25,
        metadata=about(
            "a long run using under this share of its declared threads raises a finding",
            above=0,
            maximum=1,
        ),
    )
    long_run: float = field(
        default=1800.0,
        metadata=about(
            "seconds after which a run counts as long for the thread-use rule",
            above=0,
            maximum=WEEK,
        ),
    )
    escalate_after: int = field(
        default=0,
        metadata=about(
            "watchdog passes that see a finding unacknowledged before its process is stopped"
            " without approval; 0 = never",
            minimum=0,
            maximum=1000,
        ),
    )
    interval: float = field(
        default=30.0,
        metadata=about("seconds between watchdog passes", above=0, maximum=DAY),
    )
    min_duration: float = field(
        default=60.0,
        metadata=about(
            "seconds a rule's condition must hold before its finding shows", minimum=0
        ),
    )
    merge_interval: float = field(
        default=120.0,
        metadata=about(
            "seconds a cleared finding stays open; if it comes back meanwhile it is one finding",
            minimum=0,
        ),
    )
    history: int = field(
        default=60, metadata=about("snapshots the watchdog keeps to compare with", minimum=2)
    )
    repeat_max: int = field(
        default=3,
        metadata=about(
            "times the same command may return the same output before a finding", minimum=2
        ),
    )


@dataclass(frozen=True)
class HooksConfig:
    """What the Claude Code hooks treat as heavy and how many subagents may run at once."""

    heavy: tuple[str, ...] = field(
        default=HEAVY_COMMANDS,
        metadata=about(
            "heavy work: a program and the words its arguments begin with; `*` any text, `...`"
            " any words, `-x` an option anywhere",
            check=heavy_entry_problem,
        ),
    )
    heavy_patterns: tuple[str, ...] = field(
        default=(),
        metadata=about(
            "your own regexes (re.search) that also mark a shell command as heavy, tried on the"
            " command's first 8 KiB",
            check=_regexes,
        ),
    )
    max_running_subagents: int = field(
        default=0,
        metadata=about(
            "subagents allowed to run at once across sessions; 0 = no limit",
            minimum=0,
            maximum=1000,
        ),
    )


GUARD_MODES = ("off", "remind", "deny")
GUARD_PRESETS = ("remind", "strict")


def _mode(value: str) -> str | None:
    if value == "" or value in GUARD_MODES:
        return None
    return f'{value!r} is not a mode: give "off", "remind", "deny", or "" for the preset\'s'


def _preset(value: str) -> str | None:
    if value in GUARD_PRESETS:
        return None
    return f'{value!r} is not a preset: give "remind" (the hooks remind) or "strict" (they deny)'


def _mode_field(guard: str) -> Any:
    return field(
        default="",
        metadata=about(f'mode of the {guard} guard: off, remind or deny; "" = the preset\'s',
                       check=_mode),
    )


def _write_scopes(items: tuple[str, ...]) -> str | None:
    for number, item in enumerate(items, start=1):
        kind, colon, _globs = item.partition(":")
        if not colon or not kind.strip():
            return (f"item {number} ({item!r}) is not AGENT_TYPE: GLOB…, like "
                    '"reviewer: docs/** notes/*"')
    return None


@dataclass(frozen=True)
class GuardsConfig:
    """What the hooks refuse: each guard's mode, and the facts some guards check against."""

    preset: str = field(
        default="remind",
        metadata=about(
            '"remind": the hooks add a reminder and let the call run (as before); "strict":'
            " every guard denies",
            check=_preset,
        ),
    )
    heavy_outside_cage: str = _mode_field("heavy-outside-cage")
    heavy_by_subagent: str = _mode_field("heavy-by-subagent")
    timer: str = _mode_field("timer")
    wait_loop: str = _mode_field("wait-loop")
    run_scope: str = _mode_field("run-scope (off in both presets)")
    subagent_limit: str = _mode_field("subagent-limit (hooks.max_running_subagents)")
    dispatch_lines: str = _mode_field("dispatch-lines")
    dispatch_types: str = _mode_field("dispatch-types")
    thread_cap: str = _mode_field("thread-cap")
    placeholders: str = _mode_field("placeholders")
    scratch_lock: str = _mode_field("scratch-lock")
    write_scope: str = _mode_field("write-scope")
    continuation: str = _mode_field("continuation")
    handback: str = _mode_field("handback")
    heavy_prefix: str = field(
        default="",
        metadata=about(
            'the declaration a main agent\'s heavy command must start with, like'
            ' "SWARMDECK_HEAVY=commit"; "" = none needed'
        ),
    )
    dispatch_required_lines: tuple[str, ...] = field(
        default=("heavy tests: do not run",),
        metadata=about("lines every subagent's prompt must hold (case is ignored)"),
    )
    forbidden_subagent_types: tuple[str, ...] = field(
        default=("general-purpose",),
        metadata=about("subagent types that may not be dispatched"),
    )
    write_scopes: tuple[str, ...] = field(
        default=(),
        metadata=about(
            'where each agent type may write, one "AGENT_TYPE: GLOB GLOB…" per item; a type'
            " not listed may write anywhere",
            check=_write_scopes,
        ),
    )


@dataclass(frozen=True)
class GpuConfig:
    """Which GPU processes are expected and how to make the cards free for a GPU job."""

    allowlist: tuple[str, ...] = field(
        default=(), metadata=about("process names that may hold a GPU without counting as foreign")
    )
    stop_commands: tuple[str, ...] = field(
        default=(),
        metadata=about("shell commands gpu-run runs to free the cards before its job starts"),
    )


@dataclass(frozen=True)
class LocksConfig:
    """Where workspace locks apply."""

    work_root: str = field(
        default="", metadata=about('folder whose subfolders workspace locks cover; "" = any folder')
    )


@dataclass(frozen=True)
class HostConfig:
    """A second host reached over ssh, one [[hosts]] table."""

    name: str = field(
        metadata=about(
            "the host's name in swarmdeck (unique): how commands, status and the app name it",
            check=_host_name,
        )
    )
    address: str = field(metadata=about("host name or IP address to connect to", check=_address))
    port: int = field(default=22, metadata=about("ssh port", minimum=1, maximum=65535))
    user: str = field(default="", metadata=about('ssh user; "" = the current user'))
    known_hosts: str = field(
        default="",
        metadata=about('known_hosts file to verify its host key; "" = ~/.ssh/known_hosts'),
    )
    identity: str = field(
        default="", metadata=about('private key file; "" = the ssh agent and default keys')
    )
    enabled: bool = field(
        default=True, metadata=about("false keeps the host listed but never used for jobs")
    )
    heavy_threads: int = field(
        default=0,
        metadata=about(
            "threads heavy jobs may use there; 0 = its number of cores",
            minimum=0,
            maximum=MAX_THREADS,
        ),
    )
    reserve: SizeSpec | None = field(
        default=None,
        metadata=about("memory kept back there; unset = its own config's", maximum=MAX_SIZE),
    )
    swarmdeck: str = field(
        default="swarmdeck", metadata=about("the swarmdeck command on that host")
    )
    timeout: float = field(
        default=8.0,
        metadata=about(
            "seconds to wait for it to answer before it shows as not read", above=0, maximum=600
        ),
    )
    run_root: str = field(
        default="swarmdeck-runs",
        metadata=about(
            "folder there that holds each peer run's copy (RUNROOT/LABEL-ID); relative = under "
            "the ssh user's home",
            check=_run_root,
        ),
    )
    job_cap: SizeSpec | None = field(
        default=None,
        metadata=about("the largest memory cap one job may have there; unset = its whole slice"),
    )
    toolchains: tuple[str, ...] = field(
        default=("python3 --version", "git --version"),
        metadata=about(
            "shell commands whose output must read the same here and there before a peer run"
        ),
    )
    reconnect_for: float = field(
        default=60.0,
        metadata=about(
            "seconds a connection lost during a peer run is tried again before giving up",
            minimum=0,
        ),
    )


@dataclass(frozen=True)
class SlurmConfig:
    """A Slurm cluster reached through its client commands (sinfo, squeue, sbatch, sacct, …)."""

    enabled: bool = field(
        default=False,
        metadata=about("read the cluster's nodes and jobs, and allow `swarmdeck run --on slurm`"),
    )
    conf: str = field(
        default="",
        metadata=about('slurm.conf the client commands read (SLURM_CONF); "" = their default'),
    )
    partition: str = field(
        default="", metadata=about('partition jobs go to and whose nodes are shown; "" = default')
    )
    account: str = field(default="", metadata=about('account jobs are charged to; "" = default'))
    sbatch_args: tuple[str, ...] = field(
        default=(), metadata=about('extra sbatch arguments for every job, like ["--qos=low"]')
    )
    output_dir: str = field(
        default="",
        metadata=about(
            "folder, seen by the nodes and this host alike, for job output files; "
            '"" = the state folder'
        ),
    )
    poll_interval: float = field(
        default=0.25,
        metadata=about("seconds between looks at a submitted job", above=0, maximum=60),
    )
    timeout: float = field(
        default=5.0,
        metadata=about(
            "seconds a client command may take before the cluster shows as not read",
            above=0,
            maximum=120,
        ),
    )


def _default_sources() -> MappingProxyType[str, str]:
    return MappingProxyType({key: "default" for key in schema_keys()})


@dataclass(frozen=True)
class Config:
    """The effective configuration: the file's values over the embedded defaults."""

    memory: MemoryConfig = field(default_factory=MemoryConfig)
    cores: CoresConfig = field(default_factory=CoresConfig)
    ui: UiConfig = field(default_factory=UiConfig)
    watchdog: WatchdogConfig = field(default_factory=WatchdogConfig)
    hooks: HooksConfig = field(default_factory=HooksConfig)
    guards: GuardsConfig = field(default_factory=GuardsConfig)
    gpu: GpuConfig = field(default_factory=GpuConfig)
    locks: LocksConfig = field(default_factory=LocksConfig)
    slurm: SlurmConfig = field(default_factory=SlurmConfig)
    hosts: tuple[HostConfig, ...] = ()
    path: str | None = None
    """The file the values came from; None when there was none."""
    sources: MappingProxyType[str, str] = field(default_factory=_default_sources)
    """Dotted key ("memory.reserve", "hosts[box2].port") → "default" or "FILE:LINE"."""

    def host(self, name: str) -> HostConfig | None:
        """The [[hosts]] entry called `name`, if there is one."""
        return next((host for host in self.hosts if host.name == name), None)


@dataclass(frozen=True)
class ConfigLine:
    """One row of `swarmdeck config show`."""

    key: str
    value: str
    source: str
    doc: str
    items: tuple[str, ...] = ()
    """A list's items, each as it would be written in the file; empty for any other value."""


@dataclass(frozen=True)
class _Key:
    """A schema key as loading needs it: name, annotated type, default (or MISSING), rule."""

    name: str
    kind: Any
    default: Any
    rule: Rule


def _hints(cls: type) -> dict[str, Any]:
    """Each field's type. This module's annotations are evaluated when its classes are made
    (it has no `from __future__ import annotations`), so a field's type is the type itself:
    reading it spares every start typing.get_type_hints, about 3 ms for the sections."""
    hints = {item.name: item.type for item in fields(cls)}
    if any(isinstance(kind, str) for kind in hints.values()):
        raise TypeError(f"{cls.__name__}: the config schema's annotations must be evaluated")
    return hints


def _keys(cls: type) -> tuple[_Key, ...]:
    hints = _hints(cls)
    return tuple(
        _Key(item.name, hints[item.name], item.default, item.metadata["rule"])
        for item in fields(cls)
    )


SECTIONS: MappingProxyType[str, type] = MappingProxyType(
    {
        item.name: kind
        for item in fields(Config)
        if is_dataclass(kind := _hints(Config)[item.name])
    }
)
"""Section name → its dataclass, in file order; [[hosts]] is separate (an array of tables)."""


def schema_keys() -> list[str]:
    """Every dotted key of the sections, in schema order (hosts' keys are per host)."""
    return [f"{section}.{key.name}" for section, cls in SECTIONS.items() for key in _keys(cls)]


def default_config() -> Config:
    """The embedded defaults alone, as if no file existed."""
    return Config()


def load_config(path: os.PathLike[str] | str | None = None) -> Config:
    """The effective config from `path` (default: paths.config_path()); a missing file means
    the defaults, unless SWARMDECK_CONFIG names it: a path given on purpose must exist."""
    name = tidy(paths.config_path_text() if path is None else os.fspath(path))
    text = _read(name)
    if text is None:
        if name == paths.explicit_config_text():
            raise ConfigError(
                f"config {name} does not exist, and SWARMDECK_CONFIG names it: create it, or "
                "unset SWARMDECK_CONFIG for the embedded defaults"
            )
        return Config()
    return parse_config(text, name)


def parse_config(text: str, path: os.PathLike[str] | str) -> Config:
    """Check TOML `text` (read from `path`, named in errors) and build the Config it gives."""
    # Here, not at the top: a start that finds the config cached (config_cache.py) never parses
    # TOML, and tomllib brings typing and string with it.
    import tomllib

    from swarmdeck.toml_lines import KeyLines

    path = tidy(os.fspath(path))
    too_deep = f"config {path}: values nested over {MAX_DEPTH} levels deep; the schema needs 3"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(_one_line(_syntax_message(path, text, err))) from None
    except RecursionError:
        raise ConfigError(too_deep) from None
    if _depth(data, MAX_DEPTH):
        raise ConfigError(too_deep)
    return _Loader(path, KeyLines(text)).config(data)


def describe_config(config: Config) -> list[ConfigLine]:
    """Every key with its effective value, where that value came from and what it means."""
    rows = []
    for section, cls in SECTIONS.items():
        values = getattr(config, section)
        for key in _keys(cls):
            dotted = f"{section}.{key.name}"
            rows.append(_row(dotted, getattr(values, key.name), config, key))
    for host in config.hosts:
        for key in _keys(HostConfig):
            dotted = f"hosts[{host.name}].{key.name}"
            rows.append(_row(dotted, getattr(host, key.name), config, key))
    return rows


def _row(dotted: str, value: Any, config: Config, key: _Key) -> ConfigLine:
    bounds = range_text(key)
    doc = f"{key.rule.doc} ({bounds})" if bounds else key.rule.doc
    items = tuple(_value_text(item) for item in value) if isinstance(value, tuple) else ()
    source = config.sources.get(dotted, "default")
    return ConfigLine(dotted, _value_text(value), source, doc, items)


def range_text(key: "_Key") -> str:
    """A number's bounds as `config show` states them ("range 1 to 100"); "" for other keys."""
    rule = key.rule
    if key.kind in (SizeSpec, SizeSpec | None):
        top = format_size(int(rule.maximum)) if rule.maximum is not None else ""
        return f"range 0 to {top} or 1% to 100%" if top else ""
    if key.kind not in (int, float):
        return ""
    if rule.minimum is not None and rule.maximum is not None:
        return f"range {_number(rule.minimum)} to {_number(rule.maximum)}"
    parts = []
    if rule.minimum is not None:
        parts.append(f"at least {_number(rule.minimum)}")
    if rule.above is not None:
        parts.append(f"above {_number(rule.above)}")
    if rule.maximum is not None:
        parts.append(f"at most {_number(rule.maximum)}")
    return "range " + ", ".join(parts) if parts else ""


def _value_text(value: Any) -> str:
    """A value as it would be written in the file."""
    if value is None:
        return "(not set)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, SizeSpec):
        return f'"{value}"'
    if isinstance(value, str):
        if "\\" in value and "'" not in value and "\n" not in value:
            return f"'{value}'"
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, tuple):
        return "[" + ", ".join(_value_text(item) for item in value) + "]"
    return repr(value)


def _read(path: str) -> str | None:
    """The file's text; None when there is no file (defaults apply); ConfigError when unreadable.

    It is opened without blocking and must be a regular file of at most MAX_CONFIG_BYTES: a
    FIFO, a device or a huge file is refused in one line instead of hanging or eating memory.
    """
    from swarmdeck.regular_files import FileTooLarge, NotRegularFile, read_regular

    try:
        data = read_regular(path, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        if os.path.islink(path):
            raise ConfigError(
                f"config {path}: cannot read it: "
                f"it links to {_one_line(os.readlink(path))}, which does not exist"
            ) from None
        return None
    except NotRegularFile as err:
        raise ConfigError(f"config {path}: cannot read it: {err}") from None
    except FileTooLarge:
        raise ConfigError(
            f"config {path}: it is over {format_size(MAX_CONFIG_BYTES)} ({MAX_CONFIG_BYTES}"
            " bytes); a config is a few KiB: is this the right file?"
        ) from None
    except OSError as err:
        raise ConfigError(f"config {path}: cannot read it: {err.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ConfigError(
            f"config {path}:{line}: not UTF-8 text (byte {err.start + 1}); TOML files are UTF-8"
        ) from None


def _one_line(text: str) -> str:
    """`text` with control characters escaped, so a message stays on one line."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def _depth(value: Any, limit: int) -> bool:
    """Whether arrays and tables in `value` nest deeper than `limit` (walked without recursion)."""
    stack = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if level >= limit:
            return True
        stack.extend((child, level + 1) for child in children)
    return False


def _syntax_message(path: str, text: str, err: "tomllib.TOMLDecodeError") -> str:
    import re

    reason = str(err)
    lines = text.splitlines()
    found = re.search(r"at line (\d+)", reason)
    line = int(found.group(1)) if found else max(1, len(lines))
    source = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    near = f" near {source!r}" if source else ""
    return f"config {path}:{line}: TOML syntax error{near}: {reason}"


class _Invalid(Exception):
    """A value that breaks the schema; the loader adds file, line and key."""


class _Loader:
    """Turns parsed TOML into a Config, naming file:line and the key for the first problem."""

    def __init__(self, path: str, lines: "KeyLines") -> None:
        self.path = path
        self.lines = lines
        self.sources: dict[str, str] = {}

    def config(self, data: dict[str, Any]) -> Config:
        for name, value in data.items():
            if name not in SECTIONS and name != "hosts":
                self._unknown_top_level(name, value)
        sections = {
            name: self._section(name, cls, data.get(name, {})) for name, cls in SECTIONS.items()
        }
        hosts = self._hosts(data.get("hosts", []))
        return Config(
            **sections, hosts=hosts, path=self.path, sources=MappingProxyType(self.sources)
        )

    def fail(self, where: tuple[str | int, ...], key: str, problem: str) -> ConfigError:
        line = self.lines.line_of(where)
        return ConfigError(_one_line(f"config {self.path}:{line}: {key}: {problem}"))

    def _unknown_top_level(self, name: str, value: Any) -> None:
        known = [*SECTIONS, "hosts"]
        if isinstance(value, dict):
            problem = f"unknown section [{name}]" + _suggest(name, known, "[{}]")
        else:
            owners = [section for section, cls in SECTIONS.items() if name in _names(cls)]
            if owners:
                hint = f"; did you mean {owners[0]}.{name} (under [{owners[0]}])?"
            else:
                hint = _suggest(name, known, "[{}]")
            problem = "unknown key outside any section" + hint
        raise self.fail((name,), name, problem)

    def _section(self, name: str, cls: type, table: Any) -> Any:
        if not isinstance(table, dict):
            raise self.fail((name,), name, f"expected a table [{name}], got {_describe(table)}")
        return self._build(cls, table, name, (name,), f"[{name}]")

    def _hosts(self, tables: Any) -> tuple[HostConfig, ...]:
        if not isinstance(tables, list) or not all(isinstance(item, dict) for item in tables):
            raise self.fail(
                ("hosts",), "hosts", f"expected [[hosts]] tables, got {_describe(tables)}"
            )
        if tables:
            # Only for a file with [[hosts]]: the light paths that read no peers skip it.
            from swarmdeck.probes.machine import local_host_name as own_name
        hosts: list[HostConfig] = []
        first_line: dict[str, int] = {}
        for index, table in enumerate(tables):
            name = table.get("name")
            usable = isinstance(name, str) and _host_name(name) is None
            label = f"hosts[{name}]" if usable else f"hosts[#{index + 1}]"
            host = self._build(HostConfig, table, label, ("hosts", index), "[[hosts]]")
            line = self.lines.line_of(("hosts", index, "name"))
            if host.name in first_line:
                raise self.fail(
                    ("hosts", index, "name"),
                    f"{label}.name",
                    f"duplicate host name {host.name!r}, "
                    f"first given at line {first_line[host.name]}",
                )
            first_line[host.name] = line
            if host.name.lower() == own_name().lower():
                raise self.fail(
                    ("hosts", index, "name"),
                    f"{label}.name",
                    f"{host.name!r} is this machine's own name, which its own jobs are listed"
                    " under: [[hosts]] lists the other machines; remove this entry or give the"
                    " peer's own name",
                )
            hosts.append(host)
        return tuple(hosts)

    def _build(
        self,
        cls: type,
        table: dict[str, Any],
        label: str,
        where: tuple[str | int, ...],
        container: str,
    ) -> Any:
        """An instance of `cls` from `table`; `label` prefixes keys, `container` names the table."""
        keys = _keys(cls)
        names = [key.name for key in keys]
        for name in table:
            if name not in names:
                problem = "unknown key" + _suggest(name, names, f"{label}.{{}}")
                raise self.fail((*where, name), f"{label}.{name}", problem)
        values: dict[str, Any] = {}
        for key in keys:
            dotted = f"{label}.{key.name}"
            if key.name in table:
                try:
                    values[key.name] = _convert(key, table[key.name])
                except _Invalid as bad:
                    raise self.fail((*where, key.name), dotted, str(bad)) from None
                self.sources[dotted] = f"{self.path}:{self.lines.line_of((*where, key.name))}"
            elif key.default is MISSING:
                raise self.fail(where, dotted, f"missing: every {container} table needs {key.name}")
            else:
                self.sources[dotted] = "default"
        return cls(**values)


def _names(cls: type) -> list[str]:
    return [item.name for item in fields(cls)]


def _suggest(name: str, known: list[str], form: str) -> str:
    import difflib  # only a bad file needs it; the hook path loads the config on every call

    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    if close:
        return f"; did you mean {form.format(close[0])}?"
    return "; known: " + ", ".join(form.format(item) for item in known)


def _describe(value: Any) -> str:
    """A TOML value as a person would name it in an error."""
    if isinstance(value, bool):
        return f"a boolean ({'true' if value else 'false'})"
    if isinstance(value, int):
        return f"a whole number ({value})"
    if isinstance(value, float):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return f"a date/time ({value})"


def _convert(key: _Key, value: Any) -> Any:
    """The value in the key's type, or _Invalid saying what is wrong with it."""
    kind = key.kind
    if kind is bool:
        if not isinstance(value, bool):
            raise _Invalid(f"expected true or false, got {_describe(value)}")
        result: Any = value
    elif kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Invalid(f"expected a whole number, got {_describe(value)}")
        result = value
    elif kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _Invalid(f"expected a number, got {_describe(value)}")
        if not finite(value):
            raise _Invalid(f"expected a finite number, got {value}")
        result = float(value)
    elif kind is str:
        if not isinstance(value, str):
            raise _Invalid(f"expected a string, got {_describe(value)}")
        result = value
    elif kind == tuple[str, ...]:
        result = _strings(value)
    elif kind in (SizeSpec, SizeSpec | None):
        result = _size_value(value)
    else:
        raise TypeError(f"config key {key.name} has a type the loader does not know: {kind}")
    _check_bounds(key.rule, result)
    return result


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise _Invalid(f"expected an array of strings, got {_describe(value)}")
    for number, item in enumerate(value, start=1):
        if not isinstance(item, str):
            raise _Invalid(f"expected an array of strings, item {number} is {_describe(item)}")
    return tuple(value)


def _size_value(value: Any) -> SizeSpec:
    """A size as the config writes it: with a unit, since `reserve = 4` meaning four bytes is a
    trap; zero alone needs none."""
    if isinstance(value, str):
        if value.strip().isdigit() and int(value) != 0:
            raise _Invalid(_no_unit(value.strip()))
        try:
            return SizeSpec.parse(value)
        except UsageError as err:
            raise _Invalid(err.message) from None
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise _Invalid(f'size {value} is negative: give one like "2G" or "10%"')
        if value != 0:
            raise _Invalid(_no_unit(str(value)))
        return SizeSpec.of_bytes(value)
    raise _Invalid(f'expected a size like "2G" or "10%", got {_describe(value)}')


def _no_unit(number: str) -> str:
    return (
        f'size {number} has no unit: write "{number}B" for bytes, or K, M, G or T (powers of '
        f'1024) as in "4G", or a percent like "10%"'
    )


def _check_bounds(rule: Rule, value: Any) -> None:
    if isinstance(value, SizeSpec):
        top = rule.maximum
        if top is not None and value.absolute is not None and value.absolute > top:
            raise _Invalid(f"must be at most {format_size(int(top))}, got {value}")
        return
    if rule.minimum is not None and value < rule.minimum:
        raise _Invalid(f"must be at least {_number(rule.minimum)}, got {_number(value)}")
    if rule.above is not None and value <= rule.above:
        raise _Invalid(f"must be above {_number(rule.above)}, got {_number(value)}")
    if rule.maximum is not None and value > rule.maximum:
        raise _Invalid(f"must be at most {_number(rule.maximum)}, got {_number(value)}")
    if rule.check is not None:
        problem = rule.check(value)
        if problem:
            raise _Invalid(problem)


def _number(value: float) -> str:
    return f"{value:g}"
