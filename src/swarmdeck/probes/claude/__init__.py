"""Claude Code as seen from outside: sessions, subagents, live processes, hook activity, health.

Kept empty on purpose: the hook path imports single modules of this package, and importing the
package must not pull in the whole cluster.
"""
