"""The SQLite file all of swarmdeck shares: jobs ledger, peaks, alerts, findings, kills, hooks.

Three parts: `schema` (the tables and every forward step), `verify` (looking at a file before
SQLite writes to it, and refusing one that is not ours and sound), `store` (connections and
transactions); `refusals` words what can go wrong. Callers import from here.
"""

from swarmdeck.state.refusals import MAKE_WRITABLE
from swarmdeck.state.schema import APPLICATION_ID, MIGRATIONS, Migration, latest_version
from swarmdeck.state.store import LOCK_TIMEOUT_S, StateStore, ThreadConnection, now
from swarmdeck.state.verify import VERIFIED_SUFFIX, file_uri

__all__ = [
    "APPLICATION_ID",
    "LOCK_TIMEOUT_S",
    "MAKE_WRITABLE",
    "MIGRATIONS",
    "VERIFIED_SUFFIX",
    "Migration",
    "StateStore",
    "ThreadConnection",
    "file_uri",
    "latest_version",
    "now",
]
