"""`swarmdeck serve`: the control room in a browser, through textual-serve.

Each browser connection runs its own app process (textual-serve's way: a command per
websocket; app/served.py), and every one reads the snapshot that the server's one probe thread
writes (shared_snapshot.py): a viewer costs its drawing, not a probe of its own. Who may see
and act is access.py's: a token on every request, read-only unless asked otherwise.
"""
