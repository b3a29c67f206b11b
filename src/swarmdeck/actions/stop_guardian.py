"""The stop guardian as a program of its own: what a stopper with threads (the app) starts,
since it cannot fork one (actions/stop_guard.py). It reads the stopper's pipe on its stdin and,
should the stopper die halfway, finishes the stop with kill.finish_stop.

A module apart so that stop_guard.py, which kill.py imports, never imports kill.py back.
"""

from __future__ import annotations

from swarmdeck.actions.kill import finish_stop
from swarmdeck.actions.stop_guard import guard

if __name__ == "__main__":
    guard(0, finish_stop)
