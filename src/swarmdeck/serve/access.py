"""Who may open the served control room: the holder of a token, checked on every request.

The token is made at start (or read from a `--token-file`), printed once in the URL to open,
and kept in a 0600 file. The first page load carries it in the query; the answer sets it as an
HttpOnly, SameSite=Strict cookie and sends the browser to the bare page, so the token leaves
the address bar and the page's websocket and static files carry the cookie. Every comparison is
constant-time (hmac.compare_digest) and nothing here writes the token to a log.
"""

from __future__ import annotations

import hmac
import os
import re
import secrets
import stat
from pathlib import Path

from swarmdeck.errors import UsageError
from swarmdeck.paths import PRIVATE_FILE_MODE

TOKEN_FILE_NAME = "serve-token"
"""The token's file in the state folder when no `--token-file` names one."""
QUERY_KEY = "token"
"""The URL query key the printed URL carries the token in."""
COOKIE_NAME = "swarmdeck_token"
"""The cookie the first page load leaves in the browser, carrying the token after it."""
MIN_TOKEN_LENGTH = 16
"""A fixed token shorter than this is refused: it could be guessed."""
TOKEN_CHARACTERS = re.compile(r"[A-Za-z0-9._~-]+")
"""What a token may hold: characters a URL carries as they are."""


def new_token() -> str:
    """A fresh random token: 256 bits, URL-safe."""
    return secrets.token_urlsafe(32)


def token_matches(given: str | None, token: str) -> bool:
    """True when `given` is the token; constant-time whatever `given` holds."""
    return given is not None and hmac.compare_digest(
        given.encode("utf-8", "surrogateescape"), token.encode("utf-8")
    )


def write_token(path: Path, token: str) -> None:
    """Keep `token` in `path`, readable by this user alone (written beside it, then moved)."""
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE_FILE_MODE)
    try:
        os.write(fd, f"{token}\n".encode())
    finally:
        os.close(fd)
    os.replace(partial, path)


def read_token(path: Path) -> str:
    """The fixed token `path` holds; UsageError (one line) when others may read it, or it is not
    a token a URL can carry."""
    try:
        st = os.stat(path)
        text = path.read_text(encoding="utf-8", errors="strict")
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or "not text"
        raise UsageError(f"cannot read the token file {path} ({reason})") from None
    if st.st_mode & 0o077:
        raise UsageError(
            f"token file {path} may be read by others (mode {stat.S_IMODE(st.st_mode):o}):"
            f" run chmod 600 {path}"
        )
    token = text.strip()
    if len(token) < MIN_TOKEN_LENGTH or not TOKEN_CHARACTERS.fullmatch(token):
        raise UsageError(
            f"token file {path} must hold one token of at least {MIN_TOKEN_LENGTH} letters,"
            " digits or . _ ~ -; or remove it and serve makes one"
        )
    return token


def serving_token(token_file: Path | None, state_folder: Path) -> tuple[str, Path]:
    """The token to serve with and the file that keeps it: `token_file`'s when it exists,
    else a new one written there (or, without `token_file`, to the state folder's file)."""
    if token_file is not None and token_file.exists():
        return read_token(token_file), token_file
    path = token_file if token_file is not None else state_folder / TOKEN_FILE_NAME
    token = new_token()
    try:
        write_token(path, token)
    except OSError as error:
        raise UsageError(f"cannot write the token file {path} ({error.strerror})") from None
    return token, path
