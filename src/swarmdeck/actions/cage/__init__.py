"""Memory cages: one capped cgroup per job, all under one capped slice, on whichever backend works.

`open_backend` picks the first usable site (delegated cgroup v2, writable cgroup v1 memory,
`systemd-run --scope`) and imports only that backend. The shared types live in `base.py`.
"""

from __future__ import annotations

from swarmdeck.actions.cage.base import (
    JOB_PREFIX,
    Backend,
    Cage,
    CageError,
    join_cgroup,
    remove_cgroup,
    write_value,
)
from swarmdeck.probes.cgroups import SCOPE, V1, V2, SliceSite, chosen_site, slice_sites, why_no_site

__all__ = [
    "JOB_PREFIX",
    "Backend",
    "Cage",
    "CageError",
    "backend_for",
    "join_cgroup",
    "open_backend",
    "remove_cgroup",
    "write_value",
]


def backend_for(site: SliceSite) -> Backend:
    """The backend object for an available site."""
    if site.backend == V2:
        from swarmdeck.actions.cage.v2 import V2Backend

        return V2Backend(site)
    if site.backend == V1:
        from swarmdeck.actions.cage.v1 import V1Backend

        return V1Backend(site)
    if site.backend == SCOPE:
        from swarmdeck.actions.cage.scope import ScopeBackend

        return ScopeBackend(site)
    raise CageError(f"unknown cage backend {site.backend}")


def open_backend(slice_setting: str) -> Backend:
    """The first usable backend for the configured slice, or CageError (exit 251) saying why."""
    sites = slice_sites(slice_setting)
    site = chosen_site(sites)
    if site is None:
        raise CageError(
            "no memory cage can be set up here, so nothing was run ("
            + why_no_site(sites)
            + "); run as root where cgroup v1 memory is writable, delegate a cgroup v2 subtree"
            " with the memory controller, or set memory.slice to a writable cgroup"
        )
    return backend_for(site)
