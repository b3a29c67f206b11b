"""The background reader of the configured peers, made only where a peer is configured.

Reading a peer needs the SSH library (asyncssh, and the cryptography it brings: about 17 MB
resident and a tenth of a second to import). It is loaded here, when the first peer is, so the
control room and the browser view of a machine without peers carry neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from swarmdeck.config import Config
    from swarmdeck.probes.peer import PeerProber


def background_peer_prober(config: Config) -> PeerProber | None:
    """A prober that reads every configured peer in the background (a slow peer shows as "not
    read" and never holds up a snapshot); None when no peer is configured."""
    if not config.hosts:
        return None
    from swarmdeck.probes.peer import PeerProber

    return PeerProber(wait=False)
