"""Where no memory cage can be set up, the demo says so in one line and runs its jobs uncaged,
each marked so in the ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarmdeck.demo.scene import Scene, SceneSettings
from swarmdeck.probes.cgroups import chosen_site, slice_sites
from swarmdeck.probes.memory_book import ledger_jobs


def test_a_machine_without_cages_gets_the_scene_uncaged_and_told_so(
    tmp_path: Path, demo_slice: str | None
) -> None:
    # A slice whose parent does not exist: neither v1 nor v2 can hold it here.
    unusable = f"{demo_slice or 'swarmdeck-test-none'}/absent/slice"
    if chosen_site(slice_sites(unusable)) is not None:
        pytest.skip("this machine offers a systemd scope for any slice name")
    said: list[str] = []
    scene = Scene(
        SceneSettings(step=0.5, slice_name=unusable), root=tmp_path / "scene", say=said.append
    )
    try:
        scene.start()
        assert scene.store is not None
        labels = [job.label for job in ledger_jobs(scene.store)]
    finally:
        scene.stop()
    assert len(said) == 1 and "no memory cage can be set up here" in said[0], said
    assert "does not exist" in said[0]
    assert not scene.caged and scene.slice_path is None
    assert len(labels) == 5 and all(label.endswith("(uncaged)") for label in labels), labels
    assert not (tmp_path / "scene").exists()
