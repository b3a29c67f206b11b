"""Fixtures of the watchdog's tests (defined in scene_kit.py beside the helpers they share)."""

from scene_kit import live_session, processes, store, tree

__all__ = ["live_session", "processes", "store", "tree"]
