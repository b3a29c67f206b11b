"""Errors a user can meet: each carries the one line to print and the exit code to leave with."""

from swarmdeck.exitcodes import ExitCode


class SwarmdeckError(Exception):
    """A failure the user must see as one clear line, never as a traceback."""

    exit_code: int = ExitCode.USAGE

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code

    @property
    def message(self) -> str:
        return str(self)


class UsageError(SwarmdeckError):
    """Bad arguments or bad input: exit 251."""

    exit_code = ExitCode.USAGE


class ConfigError(SwarmdeckError):
    """The config file cannot be used as written: exit 251."""

    exit_code = ExitCode.USAGE


class StateError(SwarmdeckError):
    """The state database cannot be opened safely: exit 251, the file left untouched."""

    exit_code = ExitCode.USAGE


class RefusedError(SwarmdeckError):
    """Refused before anything ran (preflight failed, peer disabled): exit 78."""

    exit_code = ExitCode.REFUSED
