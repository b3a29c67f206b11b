"""Snapshot items as table rows: the cells both the app's panels and `swarmdeck status` show.

Kept apart from Textual (only Rich's Text is used), so the command line prints the same facts,
formatted by the same functions, without importing the app.
"""
