"""What a shell command runs: the simple commands (program + argv) a Bash call would start.

An agent told to run heavy work under the cage, and wanting its job done, hides the work
(`bash -c '…'`, `nohup … &`, `xargs pytest`, a script it just wrote), which a regex over the
text cannot follow. tree-sitter-bash reads the command as bash would, and this module walks the
tree, through wrappers, runners, nested shell strings and scripts (see `parse`). What cannot be
known before the command runs is kept in ShellFacts.unread, for a reminder.

tree_sitter is slow to import (it brings typing and importlib.resources), so this module is
imported only when heavy.py's prefilter cannot tell a command is light; plain classes with
slots stand in for dataclasses for the same reason (dataclasses imports inspect).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from swarmdeck.hooks.shell_words import (
    CAGES,
    PYTHON_PREFIX,
    RUNNER_VALUES,
    RUNNERS,
    SHELLS,
    SOURCE,
    STRING_RUNNERS,
    TMUX_NEW,
    TMUX_VALUES,
    WRAPPERS,
)

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

SCRIPT_LIMIT = 256 * 1024
"""Largest script read in command position; a larger one is judged by its name only."""
SCRIPT_DEPTH = 4
"""Scripts inside scripts are read this many levels deep."""
STRING_DEPTH = 16
"""`bash -c`/`eval` strings inside strings are parsed again this many levels deep."""



class Loop:
    """A while/until loop: whether it waits (sleeps, or loops on true) and under a timeout."""

    __slots__ = ("background", "kind", "sleeps", "text", "timeout")

    def __init__(self, kind: str, text: str, timeout: bool, background: int) -> None:
        self.kind = kind
        self.text = text
        self.timeout = timeout
        self.background = background
        self.sleeps = False
        """It runs `sleep`, or loops on `true`: it waits for something rather than works."""

    @property
    def waits(self) -> bool:
        return self.sleeps


class Command:
    """One simple command the shell would start, past every wrapper and runner."""

    __slots__ = (
        "argv", "assignments", "background", "caged", "dynamic", "loop", "text", "timeout", "via",
    )

    def __init__(self, argv: list[str], dynamic: bool, context: _Context, text: str) -> None:
        self.argv = argv
        self.dynamic = dynamic
        """The program's name is not known before it runs (`$CMD`, `$(which x)`)."""
        self.assignments = context.assignments
        self.background = context.background
        self.caged = context.caged
        self.loop = context.loop
        self.timeout = context.timeout
        self.via = context.via
        """How it is reached: "" at the top, else e.g. `bash -c`, `script ci.sh`."""
        self.text = text

    @property
    def program(self) -> str:
        return os.path.basename(self.argv[0]) if self.argv and not self.dynamic else ""

    def __repr__(self) -> str:
        return f"Command({self.argv!r}, via={self.via!r}, caged={self.caged})"


class _Context:
    __slots__ = ("assignments", "background", "caged", "depth", "loop", "piped", "scripts",
                 "stdin", "stdin_file", "timeout", "via")

    def __init__(self) -> None:
        self.assignments: tuple[str, ...] = ()
        self.background = 0
        self.caged = False
        self.loop: Loop | None = None
        self.timeout = False
        self.via = ""
        self.depth = 0
        self.scripts = 0
        self.stdin: tuple[str, ...] = ()
        """Here-documents and here-strings fed to the statement (`bash <<EOF`)."""
        self.stdin_file = ""
        """The file the statement reads as stdin (`bash < x.sh`)."""
        self.piped = False
        """The command reads the output of the one before it in a pipeline (`cat x | bash`)."""

    def but(self, **changes: object) -> _Context:
        copy = _Context()
        for name in self.__slots__:
            setattr(copy, name, changes.get(name, getattr(self, name)))
        return copy


class ShellFacts:
    """Everything one check learned from a command: its commands, loops, nested backgrounds."""

    __slots__ = ("commands", "loops", "nested_background", "scripts", "unread")

    def __init__(self) -> None:
        self.commands: list[Command] = []
        self.loops: list[Loop] = []
        self.nested_background: list[str] = []
        """Texts of `&` inside something already in the background, like `(make test &) &`."""
        self.scripts: list[str] = []
        """Scripts read, by real path, in the order met."""
        self.unread: list[str] = []
        """What runs outside the cage and cannot be judged before it runs, with why: a script in
        command position not read, text piped into a shell, a command word known at run time."""


_PARSER: list[Parser] = []


def _parser() -> Parser:
    if not _PARSER:
        from tree_sitter import Language, Parser
        from tree_sitter_bash import language

        _PARSER.append(Parser(Language(language())))
    return _PARSER[0]


def parse(command: str, cwd: str | None = None) -> ShellFacts:
    """The facts of `command` as bash would run it from `cwd` (scripts read relative to it).

    The walk follows lists, pipelines, subshells, `$(…)`, loops and backgrounding, then sees
    through wrappers (env, nohup, nice, timeout, xargs, sudo, …), runners (`uv run`,
    `poetry run`, `npx`, `python -m`), `bash -c`/`eval` strings (parsed again) and scripts in
    command position (`bash x.sh`, `./x.sh`, `source x.sh`, `bash < x.sh`), read as
    `read_script` allows, once per check, and walked again in each context that reaches them
    (caged or not, under a timeout or not, in the background or not), at most SCRIPT_DEPTH
    levels deep. `tmux new … CMD` and `script -c CMD` run their command string; `coproc CMD`
    runs CMD; a command word in braces (`{pytest,-q}`) is brace-expanded. What cannot be known
    before the command runs (text piped into a shell, a script not read, a command word only
    known at run time) goes to ShellFacts.unread. The caller's deadline (deadline.py) bounds
    the whole walk.
    """
    walker = _Walker(cwd if cwd and os.path.isdir(cwd) else os.getcwd())
    walker.source(command, _Context())
    return walker.facts


def simple_commands(command: str, cwd: str | None = None) -> list[list[str]]:
    """The argv of each simple command `command` runs, in order (for tests and the corpus)."""
    return [c.argv for c in parse(command, cwd).commands]


class _Walker:
    def __init__(self, cwd: str) -> None:
        self.cwd = cwd
        self.facts = ShellFacts()
        self.texts: dict[str, str] = {}
        """Scripts read, by real path: each is read once, walked in each context."""
        self.walked: set[tuple[object, ...]] = set()
        self.reading: list[str] = []
        """The scripts being walked, outermost first (a script calling itself stops there)."""

    def source(self, text: str, context: _Context) -> None:
        tree = _parser().parse(text.encode("utf-8", "surrogateescape"))
        self.node(tree.root_node, context)

    def node(self, node: Node, context: _Context) -> None:
        kind = node.type
        if kind == "command":
            self.command(node, context)
            return
        if kind == "while_statement":
            self.loop(node, context)
            return
        if kind == "ERROR" and "{" in _text(node):
            expanded = " ".join(word for part in _text(node).split()
                                for word in expand_braces(part))
            if expanded != _text(node):
                self._string(expanded, context, "brace expansion")
                return
        if kind == "redirected_statement":
            bodies = tuple(
                _redirect_body(child)
                for child in node.children
                if child.type in ("heredoc_redirect", "herestring_redirect")
            )
            if bodies:
                context = context.but(stdin=context.stdin + bodies)
            for child in node.children:
                if child.type == "file_redirect" and any(c.type == "<" for c in child.children):
                    target = child.child_by_field_name("destination")
                    if target is not None:
                        context = context.but(stdin_file=_value(target)[0])
        children = node.children
        if kind == "pipeline":
            for index, child in enumerate(children):
                self.node(child, context.but(piped=index > 0) if child.type != "|" else context)
            return
        for index, child in enumerate(children):
            if index + 1 < len(children) and children[index + 1].type == "&":
                if context.background:
                    self.facts.nested_background.append(_text(node))
                self.node(child, context.but(background=context.background + 1))
            else:
                self.node(child, context)

    def loop(self, node: Node, context: _Context) -> None:
        head = node.children[0].type if node.children else "while"
        loop = Loop(head, _text(node), context.timeout, context.background)
        self.facts.loops.append(loop)
        condition = node.child_by_field_name("condition")
        forever = {"while": {"true", ":"}, "until": {"false"}}.get(head, set())
        if condition is not None and _text(condition).strip().rstrip(";").strip() in forever:
            loop.sleeps = True  # `while true`: it waits until something breaks it
        inner = context.but(loop=loop)
        for child in node.children:
            self.node(child, inner)

    def command(self, node: Node, context: _Context) -> None:
        assignments: list[str] = list(context.assignments)
        words: list[tuple[str, bool]] = []
        bodies: list[str] = list(context.stdin)
        for index, child in enumerate(node.children):
            field = node.field_name_for_child(index)
            if child.type == "variable_assignment":
                assignments.append(_value(child)[0])
                self._substitutions(child, context)
            elif field == "name" or field == "argument":
                named = child.type == "command_name" and child.children
                word = child.children[0] if named else child
                words.append(_value(word))
                self._substitutions(child, context)
            elif child.type in ("heredoc_redirect", "herestring_redirect"):
                bodies.append(_redirect_body(child))
                self._substitutions(child, context)
            else:
                self._substitutions(child, context)
        if not words:
            return
        if words[0][1] and "{" in words[0][0]:
            words = [(word, True) for word in expand_braces(words[0][0])] + words[1:]
        here = context.but(assignments=tuple(assignments), stdin=())
        self.argv(words, here, _text(node), bodies)

    def _substitutions(self, node: Node, context: _Context) -> None:
        """Commands in `$(…)`, backticks and `<(…)` anywhere inside a word or redirect."""
        if node.type in ("command_substitution", "process_substitution"):
            self.node(node, context)
            return
        for child in node.children:
            if child.type in ("command_substitution", "process_substitution"):
                self.node(child, context)
            elif child.child_count:
                self._substitutions(child, context)

    def argv(
        self, words: list[tuple[str, bool]], context: _Context, text: str, bodies: list[str]
    ) -> None:
        """Unwrap wrappers and runners; emit the command that is left, or read its script."""
        while words:
            name, static = words[0]
            if not static:
                self.emit([w for w, _ in words], True, context, text)
                return
            program = os.path.basename(name)
            args = words[1:]
            if "=" in name and not name.startswith("="):
                context = context.but(assignments=(*context.assignments, name))
                words = args
                continue
            if program == "swarmdeck":
                inner = _caged(args)
                if inner is not None:
                    words, context = inner, context.but(caged=True)
                    continue
            if program in WRAPPERS:
                rest = _past_wrapper(program, args)
                if program == "command" and any(w in ("-v", "-V") for w, _ in args[:1]):
                    return
                if program == "timeout":
                    context = context.but(timeout=True)
                if program == "env":
                    rest, context = _env(args, context)
                if program == "xargs" and not rest:
                    rest = [("echo", True)]
                if program == "watch" and len(rest) == 1:
                    self.source(rest[0][0], context.but(via="watch"))
                    return
                words = rest
                if not words:
                    self.emit([program], False, context, text)
                    return
                continue
            if program == "eval":
                self._string(" ".join(w for w, _ in args), context, "eval")
                return
            if program in RUNNERS:
                rest = _past_runner(program, args)
                if rest is not None:
                    words = rest
                    continue
            if program.startswith(PYTHON_PREFIX) and _python_name(program):
                module = _python_module(args)
                if module is not None:
                    words = module
                    continue
                script = _python_script(args)
                if script is not None:
                    words = script
                    continue
            if program in SHELLS:
                self._shell(program, args, context, text, bodies)
                return
            if program in SOURCE:
                self.emit([w for w, _ in words], False, context, text)
                if args:
                    self._script(args[0][0], context, f"source {args[0][0]}")
                return
            if program == "find":
                self._find(words, context, text)
                return
            if program in STRING_RUNNERS:
                self.emit([w for w, _ in words], False, context, text)
                inner = _tmux_command(args) if program == "tmux" else _script_command(args)
                if inner is not None:
                    self._string(inner, context, program)
                return
            self.emit([w for w, _ in words], False, context, text)
            if program == "cd" and len(args) == 1 and args[0][1]:
                self._cd(args[0][0])
            if "/" in name:
                self._script(name, context, f"script {name}", executable=True)
            return

    def _cd(self, folder: str) -> None:
        """Follow `cd DIR` so that a later `./x.sh` is read where bash would find it."""
        target = os.path.join(self.cwd, os.path.expanduser(folder))
        if os.path.isdir(target):
            self.cwd = target

    def emit(self, argv: list[str], dynamic: bool, context: _Context, text: str) -> None:
        command = Command(argv, dynamic, context, text)
        if dynamic and not context.caged:
            self.facts.unread.append(f"`{text.strip()[:80]}`: its command word is known only"
                                     " when it runs")
        if context.loop is not None and command.program == "sleep":
            context.loop.sleeps = True
        self.facts.commands.append(command)

    def _shell(
        self, program: str, args: list[tuple[str, bool]], context: _Context, text: str,
        bodies: list[str],
    ) -> None:
        self.emit([program] + [w for w, _ in args], False, context, text)
        if program == "busybox":
            if args and args[0][0] in SHELLS:
                args = args[1:]
            else:
                return
        index = 0
        string = False
        stdin = False
        while index < len(args):
            word = args[index][0]
            if word == "--":
                index += 1
                break
            if word in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
                index += 2
                continue
            if word.startswith(("-", "+")) and len(word) > 1:
                if not word.startswith("--") and "c" in word[1:]:
                    string = True
                if word.startswith("-") and not word.startswith("--") and "s" in word[1:]:
                    stdin = True
                if word.startswith("-") and not word.startswith("--") and "n" in word[1:]:
                    return  # -n: read, never run
                index += 1
                continue
            break
        rest = args[index:]
        if string:
            if rest:
                self._string(rest[0][0], context, f"{program} -c")
            return
        if rest and not stdin:
            self._script(rest[0][0], context, f"{program} {rest[0][0]}")
            return
        for body in bodies:
            self._string(body, context, f"{program} <<")
        if context.stdin_file:
            self._script(context.stdin_file, context, f"{program} < {context.stdin_file}")
        elif context.piped and not bodies and not context.caged:
            self.facts.unread.append(f"`{text.strip()[:80]}`: the shell runs text piped into it")

    def _string(self, text: str, context: _Context, via: str) -> None:
        if context.depth >= STRING_DEPTH or not text.strip():
            return
        self.source(text, context.but(depth=context.depth + 1, via=via, stdin_file="",
                                      piped=False))

    def _find(self, words: list[tuple[str, bool]], context: _Context, text: str) -> None:
        argv = [w for w, _ in words]
        self.emit(argv, False, context, text)
        for index, word in enumerate(argv):
            if word in ("-exec", "-execdir", "-ok", "-okdir"):
                inner: list[tuple[str, bool]] = []
                for item in words[index + 1 :]:
                    if item[0] in (";", "+", "\\;"):
                        break
                    inner.append(item)
                if inner:
                    self.argv(inner, context.but(via="find -exec"), text, [])

    def _script(self, name: str, context: _Context, via: str, executable: bool = False) -> None:
        path = os.path.join(self.cwd, os.path.expanduser(name))
        real = os.path.realpath(path)
        if context.scripts >= SCRIPT_DEPTH:
            if not executable and not context.caged:
                self.facts.unread.append(f"{name}: scripts nested over {SCRIPT_DEPTH} deep")
            return
        text: str | None = self.texts.get(real)
        if text is None:
            text, problem = read_script(path)
            if text is None:
                if problem and problem != NOT_FOUND and not executable and not context.caged:
                    self.facts.unread.append(f"{name}: {problem}")
                return
            self.texts[real] = text
            self.facts.scripts.append(real)
        if real in self.reading or (executable and not _shell_text(text)):
            return
        # Walked again in each context that changes a guard's verdict; once per context.
        key = (real, context.caged, context.timeout, context.background, id(context.loop),
               context.assignments)
        if key in self.walked:
            return
        self.walked.add(key)
        self.reading.append(real)
        try:
            self.source(text, context.but(scripts=context.scripts + 1, via=via, stdin_file="",
                                          piped=False))
        finally:
            self.reading.pop()


NOT_FOUND = os.strerror(2)
"""read_script's reason for a missing file (ENOENT): bash fails on it, nothing runs."""


def read_script(path: str) -> tuple[str | None, str]:
    """A script's text, or None and why: only a regular file of at most SCRIPT_LIMIT bytes,
    opened without blocking (a FIFO in its place never hangs the hook)."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as error:
        return None, error.strerror or "cannot open"
    try:
        facts = os.fstat(fd)
        if not stat.S_ISREG(facts.st_mode):
            return None, "not a regular file"
        if facts.st_size > SCRIPT_LIMIT:
            return None, f"over {SCRIPT_LIMIT // 1024} KiB"
        chunks = []
        left = SCRIPT_LIMIT + 1
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as error:
        return None, error.strerror or "cannot read"
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > SCRIPT_LIMIT:
        return None, f"over {SCRIPT_LIMIT // 1024} KiB"
    if b"\0" in data[:4096]:
        return None, "not text"
    return data.decode("utf-8", "replace"), ""


def _shell_text(text: str) -> bool:
    """Whether an executable file is run by a shell: no `#!` line, or one naming a shell."""
    if not text.startswith("#!"):
        return True
    line = text[2:].split("\n", 1)[0].split()
    if not line:
        return True
    names = [os.path.basename(line[0])]
    if names[0] == "env":
        names += [word for word in line[1:] if not word.startswith("-")][:1]
    return names[-1] in SHELLS


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogateescape")


def _redirect_body(node: Node) -> str:
    for child in node.children:
        if child.type == "heredoc_body":
            return _text(child)
        if child.type in ("raw_string", "string", "word", "concatenation", "ansi_c_string"):
            return _value(child)[0]
    return ""


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a",
            "b": "\b", "e": "\x1b", "f": "\f", "v": "\v", "0": "\0"}


def _value(node: Node) -> tuple[str, bool]:
    """A word's value after quote removal, and whether it is known before the command runs."""
    kind = node.type
    text = _text(node)
    if kind == "word" or kind == "number":
        return _unescape(text), True
    if kind == "raw_string":
        return text[1:-1], True
    if kind == "ansi_c_string":
        return _ansi_c(text[2:-1]), True
    if kind in ("string", "translated_string", "concatenation"):
        parts: list[str] = []
        static = True
        for child in node.children:
            if child.type == '"' or child.type == '$"':
                continue
            if child.type == "string_content":
                parts.append(_unescape(_text(child), DOUBLE_QUOTED_ESCAPES))
                continue
            value, known = _value(child)
            parts.append(value)
            static = static and known
        return "".join(parts), static
    if kind == "variable_assignment":
        return text, True
    return text, False


DOUBLE_QUOTED_ESCAPES = '$`"\\\n'
"""What a backslash escapes inside double quotes; outside quotes it escapes any character."""


def _unescape(text: str, escapable: str | None = None) -> str:
    """Backslash removal: of any character (`escapable` None), or only of those in it."""
    if "\\" not in text:
        return text
    out = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and (
            escapable is None or text[index + 1] in escapable
        ):
            if text[index + 1] != "\n":
                out.append(text[index + 1])
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)


def _ansi_c(text: str) -> str:
    out = []
    index = 0
    while index < len(text):
        char = text[index]
        if char != "\\" or index + 1 >= len(text):
            out.append(char)
            index += 1
            continue
        code = text[index + 1]
        if code == "x":
            digits = ""
            while len(digits) < 2 and index + 2 + len(digits) < len(text) and text[
                index + 2 + len(digits)
            ] in "0123456789abcdefABCDEF":
                digits += text[index + 2 + len(digits)]
            if digits:
                out.append(chr(int(digits, 16)))
                index += 2 + len(digits)
                continue
        if code in "01234567":
            digits = ""
            while len(digits) < 3 and index + 1 + len(digits) < len(text) and text[
                index + 1 + len(digits)
            ] in "01234567":
                digits += text[index + 1 + len(digits)]
            out.append(chr(int(digits, 8)))
            index += 1 + len(digits)
            continue
        out.append(_ESCAPES.get(code, "\\" + code))
        index += 2
    return "".join(out)


def _option_end(args: list[tuple[str, bool]], with_value: frozenset[str]) -> int:
    """Index of the first word past the options (and their separate values)."""
    index = 0
    while index < len(args):
        word = args[index][0]
        if word == "--":
            return index + 1
        if not word.startswith("-") or word == "-":
            return index
        if word in with_value:
            index += 2
            continue
        index += 1
    return index


def _past_wrapper(program: str, args: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    with_value, positional = WRAPPERS[program]
    index = _option_end(args, with_value)
    if program in ("taskset", "chrt") and any(w in ("-p", "--pid") for w, _ in args[:index]):
        return []
    if program == "nice" and index < len(args) and args[index][0].lstrip("-").isdigit():
        index += 1
    return args[index + positional :]


def _env(
    args: list[tuple[str, bool]], context: _Context
) -> tuple[list[tuple[str, bool]], _Context]:
    with_value = WRAPPERS["env"][0]
    index = 0
    assignments = list(context.assignments)
    while index < len(args):
        word = args[index][0]
        if word in ("-S", "--split-string") and index + 1 < len(args):
            split = [(part, True) for part in args[index + 1][0].split()]
            return _env(split + args[index + 2 :], context.but(assignments=tuple(assignments)))
        if word.startswith("-S") and len(word) > 2:
            split = [(part, True) for part in word[2:].split()]
            return _env(split + args[index + 1 :], context.but(assignments=tuple(assignments)))
        if word in with_value:
            index += 2
            continue
        if word.startswith("-") and word != "-":
            index += 1
            continue
        if "=" in word:
            assignments.append(word)
            index += 1
            continue
        break
    return args[index:], context.but(assignments=tuple(assignments))


def _past_runner(program: str, args: list[tuple[str, bool]]) -> list[tuple[str, bool]] | None:
    subcommands = RUNNERS[program]
    if subcommands:
        first = _option_end(args, RUNNER_VALUES)
        if first >= len(args) or args[first][0] not in subcommands:
            return None
        args = args[first + 1 :]
    index = _option_end(args, RUNNER_VALUES)
    rest = args[index:]
    return rest or None


def _python_name(program: str) -> bool:
    tail = program[len(PYTHON_PREFIX) :]
    return all(char.isdigit() or char == "." for char in tail)


def _python_module(args: list[tuple[str, bool]]) -> list[tuple[str, bool]] | None:
    for index, (word, _) in enumerate(args):
        if word == "-m" and index + 1 < len(args):
            return args[index + 1 :]
        if word.startswith("-m") and len(word) > 2:
            return [(word[2:], True), *args[index + 1 :]]
        if word in ("-c", "-") or not word.startswith("-"):
            return None
        if word in ("-X", "-W", "-Q"):
            continue
    return None


def _python_script(args: list[tuple[str, bool]]) -> list[tuple[str, bool]] | None:
    index = 0
    while index < len(args):
        word = args[index][0]
        if word in ("-X", "-W"):
            index += 2
            continue
        if word.startswith("-"):
            if word.startswith("-c"):
                return None
            index += 1
            continue
        return args[index:] if word.endswith(".py") else None
    return None


def expand_braces(word: str) -> list[str]:
    """Bash's brace expansion of one unquoted word: `{pytest,-q}` is `pytest -q`, `a{b,c}d` is
    `abd acd`; nested braces expand from the first; a word without a comma list is itself."""
    start = word.find("{")
    while start >= 0:
        depth = 0
        for end in range(start, len(word)):
            depth += {"{": 1, "}": -1}.get(word[end], 0)
            if depth == 0:
                break
        else:
            return [word]
        inner = word[start + 1 : end]
        parts, depth, begin = [], 0, 0
        for index, char in enumerate(inner):
            depth += {"{": 1, "}": -1}.get(char, 0)
            if char == "," and depth == 0:
                parts.append(inner[begin:index])
                begin = index + 1
        if parts:
            parts.append(inner[begin:])
            head, tail = word[:start], word[end + 1 :]
            return [out for part in parts for out in expand_braces(head + part + tail)]
        start = word.find("{", start + 1)
    return [word]


def _tmux_command(args: list[tuple[str, bool]]) -> str | None:
    """The shell command `tmux [options] new|new-window|split-window [options] CMD` runs."""
    words = [w for w, _ in args]
    index = 0
    while index < len(words) and words[index] not in TMUX_NEW:
        if words[index] == "-c" and index + 1 < len(words):
            return words[index + 1]  # `tmux -c CMD`: tmux runs CMD as a shell command
        index += 2 if words[index] in TMUX_VALUES else 1
    index += 1
    while index < len(words) and words[index].startswith("-"):
        index += 2 if words[index] in TMUX_VALUES else 1
    rest = words[index:]
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else " ".join(rest)


def _script_command(args: list[tuple[str, bool]]) -> str | None:
    """The command `script -c CMD` (or `-qc CMD`, `--command[=]CMD`) runs."""
    words = [w for w, _ in args]
    for index, word in enumerate(words):
        if word.startswith("--command="):
            return word.split("=", 1)[1]
        if word == "--command" or (word.startswith("-") and not word.startswith("--")
                                   and "c" in word[1:]):
            after = word[word.index("c") + 1 :] if word != "--command" else ""
            if after:
                return after
            return words[index + 1] if index + 1 < len(words) else None
    return None


def caged_argv(words: list[str]) -> list[str] | None:
    """The words after `--` of `swarmdeck run|dispatch|gpu-run|peer run … -- COMMAND` (as the
    runner gets them), or None when `words` is no such command."""
    if not words or os.path.basename(words[0]) != "swarmdeck":
        return None
    inner = _caged([(word, True) for word in words[1:]])
    return None if inner is None else [word for word, _ in inner]


def _caged(args: list[tuple[str, bool]]) -> list[tuple[str, bool]] | None:
    """The command after `--` of `swarmdeck run|dispatch|gpu-run|peer run … -- COMMAND`."""
    if not args:
        return None
    sub = args[0][0]
    if sub not in CAGES or (sub == "peer" and (len(args) < 2 or args[1][0] != "run")):
        return None
    words = [w for w, _ in args]
    if "--" not in words:
        return None
    inner = args[words.index("--") + 1 :]
    return inner or None
