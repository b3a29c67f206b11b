"""The watchdog: rules that flag stalled and wasteful work, findings that do not flap, kills
only by approval. The app and `swarmdeck watch` run the same engine (loop.py)."""
