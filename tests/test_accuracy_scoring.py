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
    ("metrics.tracker.train_losses['total']", "self.train_losses"),  # an entry, seen from a method
    ("self.sums['a'][0]", "trainer.sums"),
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


@pytest.mark.parametrize("found, offender", [
    ("model.decoder.linear", "model.decoder.linear.weight"),
    ("self.pool.score", "explainer.pool.score.bias"),
    ("net.rnn", "net.rnn.weight_hh_l0"),
])
def test_a_module_names_its_parameter(found: str, offender: str) -> None:
    """A finding about a whole layer left without gradient names each of its parameters."""
    assert same_name(found, offender, kind="module")
    assert not same_name(found, offender, kind="parameter")


@pytest.mark.parametrize("found, offender", [
    ("model", "model.fc"),  # a module's parent is not the module
    ("model.decoder", "model.decoder.linear.weight"),  # nor the parameter's grandparent
    ("model.decoder.linear", "model.decoder.linear2.weight"),
])
def test_a_module_does_not_name_others(found: str, offender: str) -> None:
    assert not same_name(found, offender, kind="module")


def test_a_clean_program_graphguard_breaks_is_a_false_alarm() -> None:
    from accuracy import Outcome, _alarm_text, _score_graphguard

    clean = {"file": "clean/x.py", "clean": True}
    quiet = Outcome("clean/x.py", "graphguard", "ok", 0.0)
    _score_graphguard(clean, {"findings": [{"code": "GG103", "severity": "info"}]}, quiet, Path("."))
    assert not quiet.alarm
    broken = Outcome("clean/x.py", "graphguard", "raised", 0.0)
    _score_graphguard(clean, {"findings": []}, broken, Path("."))
    assert broken.alarm
    assert _alarm_text(broken) == "raised under graphguard"
    warned = Outcome("clean/x.py", "graphguard", "ok", 0.0)
    _score_graphguard(clean, {"findings": [{"code": "GG008", "severity": "warning"}]}, warned, Path("."))
    assert warned.alarm and _alarm_text(warned) == "GG008"
