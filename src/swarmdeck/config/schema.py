"""The config's schema: every key with its type, default, bounds and one-line doc.

Each section is a dataclass and each key one field: its type is the annotation, its default the
field's, and `metadata=about("doc", …)` its doc and bounds; a key without a default is
required. Loading (load.py), the `sources` map and `swarmdeck config show` (describe.py) all
read this one place, so a key is added by adding one field. The heavy list's and the heavy
patterns' grammar (and the default list) live beside the hook's classifier, in hooks/heavy.py.
"""

from collections.abc import Callable
from dataclasses import dataclass, field, fields, is_dataclass
from types import MappingProxyType
from typing import Any

from swarmdeck.hooks.heavy import HEAVY_COMMANDS, patterns_problem
from swarmdeck.hooks.heavy import entry_problem as heavy_entry_problem
from swarmdeck.sizes import SizeSpec

# No `from __future__ import annotations`: the fields' types are read as types (_hints).

Check = Callable[[Any], str | None]
"""An extra check on a converted value: returns what is wrong with it, or None."""

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
    check: Check | None = None


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


# re is imported by the checks that use it: a caged run on a cached config makes none of them.


def host_name_problem(name: str) -> str | None:
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
            check=patterns_problem,
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
"""What a guard may do with a call it refuses: nothing, add a reminder, or deny it."""
GUARD_PRESETS = ("remind", "strict")
"""`guards.preset`: every guard's mode where its own key is "" (guard_table.GUARDS)."""


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
            check=host_name_problem,
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
class Key:
    """A schema key as loading needs it: name, annotated type, default (or MISSING), rule."""

    name: str
    kind: Any
    default: Any
    rule: Rule


def _hints(cls: type) -> dict[str, Any]:
    """Each field's type. This module's annotations are evaluated when its classes are made,
    so a field's type is the type itself, as the loader compares it."""
    hints = {item.name: item.type for item in fields(cls)}
    if any(isinstance(kind, str) for kind in hints.values()):
        raise TypeError(f"{cls.__name__}: the config schema's annotations must be evaluated")
    return hints


def keys_of(cls: type) -> tuple[Key, ...]:
    """The keys of a section (or of a [[hosts]] table), in schema order."""
    hints = _hints(cls)
    return tuple(
        Key(item.name, hints[item.name], item.default, item.metadata["rule"])
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
    return [f"{section}.{key.name}" for section, cls in SECTIONS.items() for key in keys_of(cls)]


def default_config() -> Config:
    """The embedded defaults alone, as if no file existed."""
    return Config()


def number_text(value: float) -> str:
    """A bound or a value as errors and `config show` write it: 1, 0.25, 1e+06."""
    return f"{value:g}"
