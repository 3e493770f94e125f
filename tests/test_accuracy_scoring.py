"""benchmarks/accuracy.py's name matching: the offender as the program writes it, seen from the
method that makes it (`self.x`) or from the training loop (`model.block.x`)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from accuracy import same_name  # noqa: E402


@pytest.mark.parametrize("found, offender", [
    ("model.fc2", "model.fc2"),
    ("model.fc2", "self.fc2"),
    ("self.fc2", "model.fc2"),
    ("model.attn.rel_h", "self.rel_h"),  # a parameter made in a submodule's forward
    ("net.blocks.0.conv.weight", "self.conv.weight"),
    ("total_loss['BoxLoss']", "total_loss"),  # an entry of a dict of running sums
])
def test_same_object_seen_from_two_places(found: str, offender: str) -> None:
    assert same_name(found, offender)


@pytest.mark.parametrize("found, offender", [
    (None, "hidden"),
    ("model.fc1", "self.fc2"),
    ("model.xrel_h", "self.rel_h"),  # a suffix of a name, not of the path
    ("rel_h", "self.rel_h"),
    ("hidden", "self.hidden.weight"),
    ("total_loss_2['BoxLoss']", "total_loss"),
    ("losses", "losses[0]"),
])
def test_different_objects(found: str | None, offender: str) -> None:
    assert not same_name(found, offender)
