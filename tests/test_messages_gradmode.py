"""The grad-mode family's messages by id (issue 31): GG009 loss-without-grad, GG014
no-grad-forward, GG015 checkpoint-no-grad-input. Each message is produced by a real small program
(a case file of tests/cases, or one written here), and asserted on its id, the subject's name and
the line; never on the sentence. One `ignore=[id]` check per rule with several messages."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from casekit import CASES, load_case, run_guarded

# a loss computed with grad mode off from nothing that requires grad: no cut is recorded, so
# GG009 can only say it was computed under no_grad (GG014 names the `with` block)
UNDER_NO_GRAD = textwrap.dedent("""\
    import torch

    w = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.SGD([w], lr=0.1)


    def buggy():
        with torch.no_grad():
            loss = (torch.ones(3) * 2).sum()
            try:
                loss.backward()
            except RuntimeError:
                pass
""")


def _ids(path: Path, code: str, **guard) -> set[tuple[str, str | None, int | None]]:
    """(message id, subject name, line) of the findings of `code` that `path`'s buggy() makes."""
    g, _ = run_guarded(load_case(path).buggy, **guard)
    return {(f.message_id, f.subject.name, f.location.line if f.location else None)
            for f in g.findings if f.code == code}


def _case(stem: str) -> Path:
    return CASES / f"{stem}.py"


# ---- GG009 ------------------------------------------------------------------------------------
@pytest.mark.parametrize("stem,expected", [
    # a cut by an op (argmax), a loss made from nothing that requires grad, a loss reaching no
    # parameter through a cut (fresh inputs only): three stories of one program
    ("gg009_cut_point_names", {("GG009.cut", "picked", 36), ("GG009.nothing-requires-grad", "penalty", 43),
                               ("GG009.fresh-inputs-only", "value", 50)}),
    ("gg009_rewrapped_loss", {("GG009.rewrapped-after-cut", "loss", 22), ("GG009.rewrapped", "total", 28)}),
    ("gg009_term_cut_accumulator", {("GG009.term-cut-accumulator", "total", 39)}),
    ("gg009_added_dead_term", {("GG009.added-dead-term", "dice_loss", 43)}),
])
def test_gg009_messages(stem, expected):
    assert expected <= _ids(_case(stem), "GG009")


def test_gg009_under_no_grad(tmp_path):
    path = tmp_path / "under_no_grad.py"
    path.write_text(UNDER_NO_GRAD)
    assert ("GG009.under-no-grad", "loss", 11) in _ids(path, "GG009")


def test_gg009_severities_are_the_messages():
    from graphguard.rules import message_for_id

    assert message_for_id("GG009.cut").severity == "error"
    assert message_for_id("GG009.added-dead-term").severity == "warning"
    assert message_for_id("GG009.term-cut-accumulator").severity == "warning"


def test_gg009_ignore_one_message():
    found = _ids(_case("gg009_cut_point_names"), "GG009", ignore=["GG009.cut"])
    assert {i for i, _, _ in found} == {"GG009.nothing-requires-grad", "GG009.fresh-inputs-only"}


# ---- GG014 ------------------------------------------------------------------------------------
@pytest.mark.parametrize("stem,expected", [
    ("gg014_inference_cache_in_eval", ("GG014.inference-saved", "self.table", 17)),
    ("gg014_validation_backward_in_no_grad", ("GG014.loss-under-no-grad", "loss", 18)),
    ("gg014_inference_mode_forces_enable_grad", ("GG014.inference-loss", "energy", 17)),
    ("gg014_no_grad_helper_half_model", ("GG014.part-under-no-grad", "model.q_out", 48)),
])
def test_gg014_messages(stem, expected):
    assert expected in _ids(_case(stem), "GG014")


def test_gg014_ignore_one_message(tmp_path):
    path = tmp_path / "under_no_grad.py"
    path.write_text(UNDER_NO_GRAD)
    assert ("GG014.loss-under-no-grad", "loss", 11) in _ids(path, "GG014")
    assert _ids(path, "GG014", ignore=["GG014.loss-under-no-grad"]) == set()


# ---- GG015 ------------------------------------------------------------------------------------
def test_gg015_message():
    assert _ids(_case("gg015_first_segment_function"), "GG015") == {("GG015.no-grad-input", "batch", 25)}
