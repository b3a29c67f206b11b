"""Heavy work, named: the readable list of programs and subcommands, and what matches it.

One entry per line of `hooks.heavy`: a program, then the words its arguments must begin with
(`HeavyEntry` tells the grammar: globs, `...`, options). A command that only asks for its
version or help (LIGHT_FLAGS) is light. The words are matched against each simple command the
shell would run (shell_parse.py), so `grep pytest notes.txt` or `git commit -m "cargo test"`
stay light. `certainly_light` decides most commands without the parser, and never calls light
what the parser would not (tests/hooks/test_heavy_corpus.py checks both on the corpus).
"""

from __future__ import annotations

from swarmdeck.hooks.shell_words import COMMAND_LEADS, SCRIPT_PROGRAMS

HEAVY_COMMANDS: tuple[str, ...] = (
    "pytest", "py.test",
    "make ... test", "make ... tests", "make ... check", "make -j*", "make --jobs*",
    "gmake ... test", "gmake ... tests", "gmake ... check", "gmake -j*", "gmake --jobs*",
    "cargo build", "cargo b", "cargo test", "cargo t", "cargo bench", "cargo nextest",
    "cargo check", "cargo c", "cargo clippy", "cargo miri",
    "go test", "go build",
    "npm t", "npm test*", "npm build*", "npm run test*", "npm run build*",
    "npm run-script test*", "npm run-script build*",
    "pnpm t", "pnpm test*", "pnpm build*", "pnpm run test*", "pnpm run build*",
    "yarn t", "yarn test*", "yarn build*", "yarn run test*", "yarn run build*",
    "bun t", "bun test*", "bun build*", "bun run test*", "bun run build*",
    "jest", "vitest",
    "tox", "nox",
    "mvn", "mvnw", "gradle", "gradlew",
    "ctest", "cmake --build", "ninja", "meson test", "meson compile",
    "bazel build", "bazel test", "dotnet build", "dotnet test",
    "torch*", "torchrun", "deepspeed", "accelerate launch",
    "*bench*", "hyperfine",
    "qemu-system-*",
)
"""Default `hooks.heavy`: the work that must run under swarmdeck (the grammar: HeavyEntry)."""

LIGHT_FLAGS = frozenset(
    {"--version", "--help", "-h", "-V", "--collect-only", "--co", "--dry-run", "--just-print"}
)
"""A heavy program asked only for one of these does no heavy work (`pytest --version`)."""
ANY_WORDS = "..."
GUARD_WORDS = frozenset({"sleep", "crontab", "while", "until"})
"""Programs and keywords the timer and wait-loop guards look at."""
SEPARATORS = " \t\n;&|()`{}<>$!,"
"""`,` too: a brace list `{pytest,-q}` puts a program in command position."""
SEGMENT_BREAKS = ";&|()`{}\n"
FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


class HeavyEntry:
    """One line of `hooks.heavy`: the program's glob and the words its arguments begin with.

    `*` in a word stands for any text (`qemu-system-*`, `npm test*`); `...` stands for any
    words in between (`make ... check`: a `check` target anywhere); a word starting with `-` is
    an option that may stand anywhere (`make -j*`). Options (words starting with `-` or `+`)
    are skipped when the leading words are compared, so `cargo +nightly test --workspace` is
    `cargo test`."""

    __slots__ = ("anywhere", "leading", "program", "text")

    def __init__(self, text: str) -> None:
        words = text.split()
        self.text = " ".join(words)
        self.program = words[0] if words else ""
        self.anywhere = tuple(w for w in words[1:] if w.startswith("-"))
        self.leading = tuple(w for w in words[1:] if not w.startswith("-"))

    def matches(self, argv: list[str]) -> bool:
        if not argv:
            return False
        name = _basename(argv[0])
        # A glob also sees the path: `*bench*` is `./bench/run.sh` as the old patterns had it.
        if not (glob_match(self.program, name) or
                ("*" in self.program and glob_match(self.program, argv[0]))):
            return False
        args = argv[1:]
        if any(arg in LIGHT_FLAGS for arg in args):
            return False
        for option in self.anywhere:
            if not any(glob_match(option, arg) or arg.startswith(option.rstrip("*"))
                       for arg in args if arg.startswith("-")):
                return False
        words = [arg for arg in args if not arg.startswith(("-", "+"))]
        return _leading(self.leading, words)


def _leading(wanted: tuple[str, ...], words: list[str]) -> bool:
    if not wanted:
        return True
    head = wanted[0]
    if head == ANY_WORDS:
        rest = wanted[1:]
        return any(_leading(rest, words[start:]) for start in range(len(words) + 1))
    return bool(words) and glob_match(head, words[0]) and _leading(wanted[1:], words[1:])


def glob_match(pattern: str, text: str) -> bool:
    """`*` matches any text (fnmatch would import re on the hook path for this one rule)."""
    if "*" not in pattern:
        return pattern == text
    parts = pattern.split("*")
    if not text.startswith(parts[0]) or not text.endswith(parts[-1]):
        return False
    if len(parts[0]) + len(parts[-1]) > len(text):
        return False
    at = len(parts[0])
    end = len(text) - len(parts[-1])
    for part in parts[1:-1]:
        found = text.find(part, at, end)
        if found < 0:
            return False
        at = found + len(part)
    return True


def _basename(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def entries(lines: tuple[str, ...]) -> list[HeavyEntry]:
    return [HeavyEntry(line) for line in lines if line.split()]


def heavy_entry(argv: list[str], heavy: list[HeavyEntry]) -> HeavyEntry | None:
    """The first entry a simple command's words (as the shell would run them) match, or None."""
    for entry in heavy:
        if entry.matches(argv):
            return entry
    return None


def entry_problem(lines: tuple[str, ...]) -> str | None:
    """What is wrong with a `hooks.heavy` list, for the config's check; None when usable."""
    for number, line in enumerate(lines, start=1):
        words = line.split()
        if not words:
            return f"item {number} is empty: give a program, like \"pytest\" or \"cargo test\""
        if words[0].startswith("-") or words[0] == ANY_WORDS:
            return f"item {number} ({line!r}) must start with a program, like \"make ... test\""
        if words[0].strip("*") == "":
            return f"item {number} ({line!r}) would match every program"
    return None


def patterns_problem(patterns: tuple[str, ...]) -> str | None:
    """What is wrong with a `hooks.heavy_patterns` list (the user's own regexes, classify.py),
    for the config's check; None when every item is a regular expression."""
    import re

    for number, pattern in enumerate(patterns, start=1):
        try:
            re.compile(pattern)
        except re.error as err:
            return f"item {number} ({pattern!r}) is not a regular expression: {err}"
    return None


def certainly_light(
    command: str,
    heavy_lines: tuple[str, ...],
    literals: tuple[str, ...] | None,
    waits: bool = True,
) -> bool:
    """True only when no parse could find heavy work or a guard's case in `command`: no word
    could be the program of a heavy entry or of a guard (sleep, crontab, a loop, nested `&`),
    and nothing in command position could be a script, after quote removal.

    `literals`: strings one of which each of the user's own `hooks.heavy_patterns` needs
    (None: some pattern has none, so every command is parsed; empty: no patterns). `waits`:
    whether the timer or wait-loop guard is on (else sleeps, loops and `&` need no parse)."""
    if literals is None or "$'" in command:
        return False
    flat = command.replace("\\\n", "").replace("'", "").replace('"', "").replace("\\", "")
    if any(literal in command or literal in flat for literal in literals):
        return False
    lone = flat.replace("&&", "").replace(">&", "").replace("&>", "").replace("|&", "")
    if waits and lone.count("&") >= 2:
        return False
    guard_words = GUARD_WORDS if waits else frozenset()
    exact, globs = _programs(heavy_lines)
    for token in _tokens(flat):
        names = [token, _basename(token)]
        if token.startswith("-") and len(token) > 2:
            names.append(token[2:])
        if "=" in token:
            names.append(token.split("=", 1)[1])
        for name in names:
            if name in exact or name in guard_words:
                return False
            if any(glob_match(glob, name) for glob in globs):
                return False
    return not _script_in_command_position(flat)


def _programs(heavy_lines: tuple[str, ...]) -> tuple[set[str], list[str]]:
    exact: set[str] = set()
    globs: list[str] = []
    for line in heavy_lines:
        words = line.split()
        if not words:
            continue
        if "*" in words[0]:
            globs.append(words[0])
        else:
            exact.add(words[0])
    return exact, globs


def _tokens(text: str) -> list[str]:
    for separator in SEPARATORS[1:]:
        text = text.replace(separator, " ")
    return text.split()


def _script_in_command_position(flat: str) -> bool:
    """Whether any word that may stand in command position is a path, a shell or `source`."""
    if _dynamic_command_word(flat):
        return True
    text = flat.replace("$(", "(")
    for separator in SEGMENT_BREAKS[1:]:
        text = text.replace(separator, ";")
    for segment in text.split(";"):
        words = [w for w in segment.split() if not _assignment(w)]
        if not words:
            continue
        lead = _basename(words[0])
        if "/" in words[0] or lead in SCRIPT_PROGRAMS:
            return True
        if lead == "find":
            # Only what follows -exec runs; `find . -name x` names no program.
            starts = [i for i, word in enumerate(words) if word in FIND_EXEC]
            words = words[starts[0] :] if starts else words[:1]
        leads = lead in COMMAND_LEADS or lead.startswith("python")
        if leads and any("/" in word or word in SCRIPT_PROGRAMS for word in words[1:]):
            return True
    return False


def _dynamic_command_word(flat: str) -> bool:
    """Whether a command word is known only when it runs (`$X`, `$(which x) …`): the parser
    reminds of it (shell_parse.py's `unread`)."""
    text = flat
    for separator in ";&|\n":
        text = text.replace(separator, ";")
    for segment in text.split(";"):
        words = [w for w in segment.replace("(", " ( ").replace("{", " { ").split()
                 if not _assignment(w) and w not in ("(", "{", "!", "then", "do", "else")]
        if words and words[0][:1] in ("$", "`"):
            return True
    return False


def _assignment(word: str) -> bool:
    name, equals, _value = word.partition("=")
    return bool(equals) and name.replace("_", "a").isalnum() and not name[0].isdigit()


def runs_heavy_uncaged(
    command: str, heavy_lines: tuple[str, ...], patterns: tuple[str, ...] = (),
    cwd: str | None = None,
) -> bool:
    """Whether `command` runs heavy work outside the cage: a simple command of it matches the
    list, or one of the user's own regexes matches its words (for the watchdog's rule)."""
    import re
    import shlex

    from swarmdeck.hooks.shell_parse import parse

    listed = entries(heavy_lines)
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error:
            continue
    for item in parse(command, cwd).commands:
        if item.caged or item.dynamic:
            continue
        if heavy_entry(item.argv, listed) is not None:
            return True
        words = shlex.join(item.argv)
        if any(regex.search(words) for regex in compiled):
            return True
    return False
