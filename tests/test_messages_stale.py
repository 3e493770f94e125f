"""The stale/double/carried family's messages (issue 31, item 1) and its one classifier (issue 29,
item 3): GG001 stale-graph, GG003 double-backward, GG004 carried-state, GG101 graph-leak, GG102
retain-graph-growth.

Each declared message is produced by a case of tests/cases and selected by its id, with the
subject's name and the finding's line; `ignore=[id]` leaves out that story only. The family's
decision (`shared/stale.decide`) is checked as a truth table over all of its facts. Nothing here
reads a finding's prose.
"""
from __future__ import annotations

import dataclasses
import itertools

import pytest

from casekit import CASES, load_case, run_guarded
from graphguard.rules import ALL_RULES
from graphguard.rules.shared.stale import StaleFacts, decide

# message id -> (case, subject name, line): every message of the family, from a real program
PRODUCED_BY = {
    "GG001.freed": ("gg001_encoder_memory_built_before_loop", "memory", 33),
    "GG001.retained": ("gg102_frozen_anchor", "anchor", 23),
    "GG001.loss-carried": ("gg001_accumulator_not_reset", "total", 32),
    "GG001.consumed-outside": ("gg001_consumed_before_guard", "features", 23),
    "GG003.second-backward": ("gg003_two_losses", "features", 15),
    "GG004.freed": ("gg004_rnn_hidden", "hidden", 19),
    "GG004.retained": ("gg102_streaming_encoder", "h", 44),
    "GG004.stepped-weights": ("gg004_previous_output_as_target", "last_output", 29),
    "GG102.carried-state": ("gg102_streaming_encoder", "h", 44),
    "GG102.built-once": ("gg102_style_target", "style_gram", 29),
    "GG102.rewalked": ("gg102_per_step_backward_in_unroll", "state", 24),
    "GG101.kept-tensor": ("gg101_total_loss", "total_loss", 47),
    "GG101.kept-in-container": ("gg101_loss_list", "train_losses", 34),
    "GG101.module-state": ("gg101_module_running_statistic", "net[0].tracker.scale", 16),
}

FAMILY = ("GG001", "GG003", "GG004", "GG101", "GG102")


def _findings(case: str, **guard) -> list[tuple[str, str | None, int | None]]:
    mod = load_case(CASES / f"{case}.py")
    g, _ = run_guarded(mod.buggy, **guard)
    return [(f.message_id, f.subject.name, f.location and f.location.line) for f in g.findings]


def test_every_message_of_the_family_is_produced_here():
    declared = {m.id for r in ALL_RULES if r.code in FAMILY for m in r.messages}
    assert declared == set(PRODUCED_BY)


@pytest.mark.parametrize("mid", sorted(PRODUCED_BY))
def test_message_is_produced(mid):
    case, name, line = PRODUCED_BY[mid]
    assert (mid, name, line) in _findings(case)


# one program per rule with several messages: the ignored story goes, the others stay
IGNORED = [
    # (case, ignored id, a finding of the same program that stays)
    ("gg001_backward_again_after_step", "GG001.freed", ("GG001.loss-carried", "err", 24)),
    ("gg001_backward_again_after_step", "GG001.loss-carried", ("GG001.freed", "feats", 36)),
    ("gg102_streaming_encoder", "GG004.retained", ("GG102.carried-state", "h", 44)),
    ("gg102_streaming_encoder", "GG102.carried-state", ("GG004.retained", "h", 44)),
    ("gg102_frozen_anchor", "GG001.retained", ("GG102.built-once", "anchor", 23)),
    # GG101 tells one story per program: ignoring another of its messages leaves this one
    ("gg101_loss_list", "GG101.kept-tensor", ("GG101.kept-in-container", "train_losses", 34)),
]


def test_ignore_a_graph_leak_message():
    assert not any(mid == "GG101.kept-tensor" for mid, _, _ in
                   _findings("gg101_total_loss", ignore=["GG101.kept-tensor"]))


@pytest.mark.parametrize("case,ignored,stays", IGNORED, ids=lambda v: v if isinstance(v, str) else None)
def test_ignore_one_message(case, ignored, stays):
    got = _findings(case, ignore=[ignored])
    assert ignored not in {mid for mid, _, _ in got}
    assert stays in got


# ---- the classifier as a truth table --------------------------------------------------------
FLAGS = [f.name for f in dataclasses.fields(StaleFacts) if f.name != "kind"]


def _all_facts():
    for kind in ("none", "freed", "retained"):
        for values in itertools.product((False, True), repeat=len(FLAGS)):
            yield StaleFacts(kind, **dict(zip(FLAGS, values)))


def _expected(f: StaleFacts) -> tuple[str | None, str | None]:
    """The family's rules as the rule docs state them, written independently of `decide`."""
    if f.kind == "none":
        return ("GG001", "consumed-outside") if f.consumed_outside and not f.has_inputs else (None, None)
    same_round = f.steps_known and f.one_round  # the steps since were one training step's
    kept_counts = f.kept and f.stepped and not same_round
    if f.carried or f.rerun or kept_counts:
        return "GG004", f.kind
    if f.kind == "retained":
        # the same line re-running a retained graph: a tensor built once; another line: a
        # deliberate second backward (GAN generator step), nobody's
        return ("GG001", "retained") if f.same_call_line else (None, None)
    if f.holds_earlier_loss and not f.built_together:
        return "GG001", "loss-carried"
    later_round = f.steps_known and not f.one_round
    two_losses_of_one_step = f.built_together or same_round if f.same_call_line \
        else f.built_together or not later_round
    return ("GG003", "second-backward") if two_losses_of_one_step else ("GG001", "freed")


def test_the_classifier_truth_table():
    table = list(_all_facts())
    assert len(table) == 3 * 2 ** len(FLAGS)
    for f in table:
        assert decide(f) == _expected(f), f


def test_a_freed_part_always_has_one_owner_and_a_retained_one_never_goes_to_gg003():
    for f in _all_facts():
        code, _ = decide(f)
        if f.kind == "freed":
            assert code in ("GG001", "GG003", "GG004"), f
        elif f.kind == "retained":
            assert code != "GG003", f


@pytest.mark.parametrize("facts,owner", [
    # `ref` built before the loop, backwarded every iteration by one line
    (StaleFacts("freed", stepped=True, steps_known=True, same_call_line=True), ("GG001", "freed")),
    # two losses sharing a trunk, one backward each, in one iteration
    (StaleFacts("freed"), ("GG003", "second-backward")),
    # `for l in losses.values(): l.backward()`: one line, losses built together
    (StaleFacts("freed", same_call_line=True, built_together=True), ("GG003", "second-backward")),
    # peer models, each optimizer stepping in turn over outputs computed before the loop
    (StaleFacts("freed", stepped=True, steps_known=True, one_round=True, same_call_line=True),
     ("GG003", "second-backward")),
    # `loss.backward(); opt.step(); loss.backward()` from another line
    (StaleFacts("freed", stepped=True, steps_known=True), ("GG001", "freed")),
    # `total += loss_t` never reset: the earlier loss held whole
    (StaleFacts("freed", same_call_line=True, holds_earlier_loss=True), ("GG001", "loss-carried")),
    # an RNN hidden state carried without detach
    (StaleFacts("freed", carried=True, same_call_line=True), ("GG004", "freed")),
    # a running value kept from last iteration, after a step
    (StaleFacts("retained", kept=True, stepped=True), ("GG004", "retained")),
    # ... before any step: each backward closes an iteration, not a carried state
    (StaleFacts("retained", kept=True), (None, None)),
    # truncated BPTT, one backward per chunk: the forward ran again on the stored state
    (StaleFacts("freed", rerun=True), ("GG004", "freed")),
    # GAN generator step through D's retained output
    (StaleFacts("retained"), (None, None)),
    # a notebook cell's backward before `%graphguard on`
    (StaleFacts("none", consumed_outside=True), ("GG001", "consumed-outside")),
    (StaleFacts("none", consumed_outside=True, has_inputs=True), (None, None)),
])
def test_named_rows_of_the_table(facts, owner):
    assert decide(facts) == owner
