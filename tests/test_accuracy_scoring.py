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


def _crash_case() -> dict:
    return {"file": "inplace-saved-tensor/ddpg_agent_learn.py", "category": "inplace-saved-tensor",
            "offender": {"name": "actor_loss", "line": 50}, "fix_lines": [50],
            "symptom": {"kind": "raises"}}


def _finding(before_crash: bool) -> dict:
    path = str(Path(__file__).resolve().parents[1] / "benchmarks/realbugs/cases/inplace-saved-tensor/ddpg_agent_learn.py")
    return {"code": "GG005", "severity": "error", "before_crash": before_crash,
            "subject": {"name": "actor_loss", "created_at": {"file": path, "line": 50}},
            "location": {"file": path, "line": 57}}


def test_an_account_after_the_crash_is_not_a_detection() -> None:
    """A finding with before_crash false (GG903 relabelled with the family's code) counts in its own
    column, and not as detected, exact, located or named."""
    from accuracy import Outcome, _score_graphguard, score

    late = Outcome("inplace-saved-tensor/ddpg_agent_learn.py", "graphguard", "ok", 0.0)
    _score_graphguard(_crash_case(), {"findings": [_finding(False)]}, late, Path("."))
    assert (late.detected, late.exact, late.located, late.named, late.early) == (False,) * 5
    assert late.after_only
    early = Outcome("inplace-saved-tensor/ddpg_agent_learn.py", "graphguard", "ok", 0.0)
    _score_graphguard(_crash_case(), {"findings": [_finding(False), _finding(True)]}, early, Path("."))
    assert (early.detected, early.exact, early.located, early.named, early.early) == (True,) * 5
    assert not early.after_only
    s = score([_crash_case()], [late])
    assert (s.detected, s.after_only, s.buggy, s.crash) == (0, 1, 1, 1)
