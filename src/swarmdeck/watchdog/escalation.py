"""The escalation policy, off by default: when `watchdog.escalate_after` watchdog passes saw a
finding without anyone acknowledging it, its subject is stopped without waiting for approval.

Only a finding whose subject is a process (pid and start ticks) can escalate; the stop itself
goes through the same supervised-set and identity checks as an approved kill.
"""

from __future__ import annotations

from swarmdeck.probes.store_rows import Finding


def escalates(finding: Finding, escalate_after: int) -> bool:
    """True when the policy stops this finding's subject now."""
    return (
        escalate_after > 0
        and finding.count >= escalate_after
        and finding.acknowledged_at is None
        and finding.pid is not None
        and finding.start_ticks is not None
    )
