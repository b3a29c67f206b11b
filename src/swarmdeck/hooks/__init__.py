"""Claude Code hook entry points: read the stdin JSON, consult probes, print the contract JSON.

This package runs before every Bash call an agent makes, so its modules import lazily and never
import textual, rich or asyncssh (see entry.py for the order of work on the light path).
"""
