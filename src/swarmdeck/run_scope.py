"""The run-scope declaration: `SWARMDECK_SCOPE='kind=…; what=…; scope=…; why=…' swarmdeck run
-- CMD`. The run-scope guard (hooks/guards.py) asks heavy work for it; the runner keeps it with
the job (jobs.scope), so the job's detail says what the run was for. A leaf: both the hook
path and the runner's path import it."""

SCOPE_VARIABLE = "SWARMDECK_SCOPE"
SCOPE_KINDS = ("full", "items", "light", "target")
"""What a run covers: everything, a selection, a light check, one build target."""
SCOPE_KEPT = 1000
"""Characters of a declaration kept with the job."""
