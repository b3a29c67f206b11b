"""Claude Code hook entry points: read the stdin JSON, consult probes, print the contract JSON.

This package runs before every Bash call an agent makes, so its modules import lazily and keep
textual, rich and asyncssh out of the process (see entry.py for the order of work on the light
path).
"""
