"""The shell's vocabulary as the hooks read it: shells, wrappers, runners and command leads.

The parser (shell_parse.py) walks past these words, the prefilter and the workload label
(heavy.py, classify.py) read them on every light call; tables alone, so the light path loads
them without the parser and its tree-sitter grammar.
"""

from __future__ import annotations

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "busybox"})
SOURCE = frozenset({"source", "."})
PYTHON_PREFIX = "python"
WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    # program: (options that take a separate value, positional words before the command)
    "env": (frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}), 0),
    "nohup": (frozenset(), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "-n", "-p", "-P", "-u", "--class", "--classdata"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), 0),
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "sudo": (
        frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user",
                   "--group", "--chdir", "--prompt", "--role", "--type", "--other-user"}),
        0,
    ),
    "doas": (frozenset({"-u", "-C"}), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}), 0),
    "setsid": (frozenset(), 0),
    "taskset": (frozenset(), 1),
    "chrt": (frozenset(), 1),
    "xargs": (
        frozenset({"-n", "-P", "-L", "-I", "-i", "-d", "-a", "-E", "-e", "-s", "-l",
                   "--max-args", "--max-procs", "--max-lines", "--delimiter", "--arg-file",
                   "--replace", "--eof", "--max-chars"}),
        0,
    ),
    "watch": (frozenset({"-n", "--interval", "-d"}), 0),
    "strace": (frozenset({"-o", "-e", "-p", "-s", "-u"}), 0),
    "valgrind": (frozenset(), 0),
    "catchsegv": (frozenset(), 0),
    "unbuffer": (frozenset(), 0),
    "flock": (frozenset({"-w", "--timeout", "-E"}), 1),
    "systemd-run": (frozenset({"-u", "--unit", "-p", "--property", "-E", "--setenv"}), 0),
    "parallel": (frozenset({"-j", "--jobs", "-S"}), 0),
    "coproc": (frozenset(), 0),
}
"""Programs that run the command given after their options (and `positional` words)."""
RUNNERS: dict[str, tuple[str, ...]] = {
    "uv": ("run",), "poetry": ("run",), "pipenv": ("run",), "pdm": ("run",), "hatch": ("run",),
    "rye": ("run",), "pixi": ("run",), "conda": ("run",), "mamba": ("run",),
    "micromamba": ("run",), "pipx": ("run",), "npm": ("exec", "x"), "pnpm": ("exec", "dlx"),
    "yarn": ("exec", "dlx"), "bun": ("x",), "uvx": (), "npx": (), "bunx": (),
}
"""Runners: `PROGRAM [SUBCOMMAND] [options] COMMAND …` runs COMMAND (no subcommand: always)."""
RUNNER_VALUES = frozenset(
    {"--with", "--python", "-p", "--project", "--directory", "--package", "--extra", "--group",
     "--env-file", "--index", "-n", "--name", "--prefix", "-e", "--environment", "--spec",
     "-w", "--with-requirements", "--from", "-c", "--call"}
)
"""Runner options that take a separate value (`uv run --with X cmd`, `conda run -n env cmd`)."""
TMUX_NEW = frozenset({"new", "new-session", "new-window", "neww", "split-window", "splitw"})
"""tmux commands whose trailing words are a shell command the new pane runs."""
TMUX_VALUES = frozenset({"-c", "-e", "-F", "-n", "-s", "-t", "-x", "-y", "-f", "-l", "-p",
                         "-L", "-S"})
"""tmux options (global and of TMUX_NEW) that take a separate value."""
STRING_RUNNERS = frozenset({"tmux", "script"})
"""Programs that run a command string given among their arguments (`script -c CMD`)."""
CAGES = {"run": 1, "dispatch": 1, "gpu-run": 1, "peer": 2}
"""`swarmdeck SUB … -- COMMAND` forms that run COMMAND under the cage (peer: `peer run`)."""
RESERVED_LEADS = frozenset(
    {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time", "coproc", "case"}
)
"""Words after which a command starts, for the prefilter's notion of command position."""
COMMAND_LEADS = frozenset(
    {*WRAPPERS, *RUNNERS, *RESERVED_LEADS, *STRING_RUNNERS, "eval", "find", "swarmdeck", "then",
     "do"}
)
"""Leading words after which any later word of a simple command may be the program run."""
SCRIPT_PROGRAMS = SHELLS | SOURCE
"""Programs whose first argument (or here-document) is shell code read from elsewhere."""
