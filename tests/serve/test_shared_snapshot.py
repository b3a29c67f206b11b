"""Every browser's app reads the snapshot the server's one probe wrote: the reader gives back
what the writer took, waits for a newer one, and refuses a file others could have written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from swarmdeck.config import load_config
from swarmdeck.serve.shared_snapshot import SNAPSHOT_FILE, ProbeWriter, SnapshotReader
from swarmdeck.state import StateStore


def _writer(home: Path) -> ProbeWriter:
    folder = home / "shared"
    folder.mkdir(mode=0o700)
    return ProbeWriter(load_config(), StateStore.open_default(), folder)


def test_readers_get_the_snapshot_the_writer_took_and_wait_for_the_next(isolated_home) -> None:
    writer = _writer(isolated_home)
    writer.write_one()
    first, second = SnapshotReader(writer.folder, 0.0), SnapshotReader(writer.folder, 0.0)
    taken = first()
    assert second().taken_at == taken.taken_at
    # Nothing newer within its wait: the same snapshot again, not a probe of its own.
    assert first() is taken
    writer.write_one()
    assert first().taken_at > taken.taken_at and writer.rounds == 2


def test_a_snapshot_file_others_may_write_is_refused(isolated_home) -> None:
    writer = _writer(isolated_home)
    writer.write_one()
    os.chmod(writer.folder / SNAPSHOT_FILE, 0o666)
    with pytest.raises(PermissionError):
        SnapshotReader(writer.folder, 0.0)()
