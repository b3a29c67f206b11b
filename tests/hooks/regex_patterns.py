"""The twelve regexes that were `hooks.heavy_patterns` by default before the heavy list.

They stay as a demanding user config: a user's own patterns still go through classify.py and
the literal prefilter, and these are the hardest realistic ones (each linear in the command).
"""

# Heavy-command patterns match where a command starts: at the beginning, after ; & | ( ` or a
# newline, past env assignments and wrappers (env, nice, time, timeout N, uv run, python -m …),
# with an optional path before the command name; so `grep pytest` or `pip install pytest` is
# light. Each is linear in the command: a repeated part can never run past the next separator
# (`_WORD` excludes them), and the path before a name is taken whole, never backtracked into
# (`_DIR` is an atomic group), so no input makes the engine retry a run once per start.
_WORD = r"[^\s;&|()`]"
_DIR = r"(?>(?:" + _WORD + r"*/)?)"
_VALUE = r"(?:'[^'\n]*'|\"[^\"\n]*\"|[^\s;&|()`'\"])*"
_LEAD = (
    r"(?:^|[;&|(`\n])\s*+(?=[\w./~$'\"-])"
    r"(?:(?:\w+=" + _VALUE + r"|sudo|env|nice(?:\s+-n)?(?:\s+-?\d+)?|time|exec|do|then|else|"
    r"timeout\s+" + _WORD + r"+|(?:uv|poetry|pipenv|pdm|hatch)\s+run|"
    + _DIR + r"python[\d.]*(?:\s+-[\w-]+)*)\s++)*"
)
_AT = _LEAD + _DIR
_END = r"(?=$|[\s;&|)`])"
_SEGMENT = r"[^;&|\n()`]"
HEAVY_PATTERNS: tuple[str, ...] = (
    _AT + r"(?:pytest|py\.test)" + _END,
    _AT + r"g?make\b" + _SEGMENT + r"*?\s(?:-j\s*\d*|--jobs" + _WORD + r"*|test|tests|check)"
    + _END,
    _AT + r"cargo\s+(?:\+" + _WORD + r"+\s+)?(?:build|b|test|t|bench|nextest|check|c|clippy)"
    + _END,
    _AT + r"go\s+(?:test|build)" + _END,
    _AT + r"(?:npm|pnpm|yarn|bun)\s+(?:t|(?:run(?:-script)?\s+)?(?:test|build)[\w:-]*)" + _END,
    _AT + r"(?:tox|nox)" + _END,
    _AT + r"(?:mvnw?|gradlew?)" + _END,
    _AT + r"ctest" + _END,
    _AT + r"cmake\s+(?:" + _SEGMENT + r"*\s)?--build" + _END,
    _AT + r"ninja" + _END,
    _AT + r"(?:torch" + _WORD + r"*|torchrun|deepspeed|accelerate\s+launch)" + _END,
    _LEAD + r"(?:" + _WORD + r"*bench" + _WORD + r"*|" + _DIR + r"hyperfine)" + _END,
)
"""Regexes (re.search) that mark a shell command as heavy."""
