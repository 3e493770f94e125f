"""A graph consumed by a backward the guard never saw (before the `with`, or in a notebook cell run
before `%graphguard on`), then backwarded again inside the guard: GG001 before PyTorch's crash,
naming the tensor as the user wrote it, with the line that made it and the backward's line.
Clean twins (the earlier backward retained its graph; a fresh forward inside; an old graph
nobody consumed) stay silent."""
from __future__ import annotations

import sys

import pytest
import torch
import torch.nn as nn

from graphguard import GraphGuard, GraphMisuseError
from lines import marker_lines
from nbkit import SETUP



line_of = marker_lines(__file__)  # the line that ends with `# <marker>`


def reference_target(retain: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """A target computed once from a trainable tensor, with a backward run on it (outside any
    guard): that backward frees its graph unless `retain`."""
    torch.manual_seed(0)
    w = torch.randn(4, requires_grad=True)
    base = torch.randn(4, requires_grad=True)
    ref = (base * 2).exp()
    ref.sum().backward(retain_graph=retain)
    return w, ref


def fit(w: torch.Tensor, ref: torch.Tensor, steps: int, fresh_from: int | None = None) -> None:
    opt = torch.optim.SGD([w], lr=0.1)
    for step in range(steps):
        target = ref if fresh_from is None or step == fresh_from else torch.ones(4)
        loss = ((w - target) ** 2).sum()
        loss.backward()  # FIT-BACKWARD
        opt.step()
        opt.zero_grad()


def test_plain_torch_crashes():
    w, ref = reference_target()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        fit(w, ref, 2)


def _the_finding(guard: GraphGuard):
    found = [f for f in guard.findings if f.severity in ("error", "warning")]
    assert [f.code for f in found] == ["GG001"], [(f.code, f.subject.name) for f in found]
    return found[0]


@pytest.mark.parametrize("record_iterations", [2, 0])
def test_tensor_consumed_before_the_guard_is_reported_before_the_crash(record_iterations):
    # made in a helper that has returned: the line that assigns the user's name for it
    w, ref = reference_target(); made = sys._getframe().f_lineno  # noqa: E702
    guard = GraphGuard(record_iterations=record_iterations)
    with pytest.raises(GraphMisuseError):  # graphguard's error, before PyTorch's own
        with guard:
            fit(w, ref, 2)
    f = _the_finding(guard)
    assert f.before_crash and f.subject.name == "ref"
    assert f.subject.created_at.line == made
    assert f.location.line == line_of("FIT-BACKWARD")
    assert [r.location.line for r in f.related if r.role == "fix-at"] == [made]
    assert w.grad is None  # nothing ran: the guard stopped before the backward


def test_reached_first_in_light_mode():
    w, ref = reference_target(); made = sys._getframe().f_lineno  # noqa: E702
    guard = GraphGuard(mode="collect", record_iterations=2)
    with pytest.raises(RuntimeError, match="second time"):  # collect: PyTorch's error follows
        with guard:
            fit(w, ref, 8, fresh_from=6)
    f = _the_finding(guard)
    assert f.before_crash and f.subject.name == "ref" and f.iteration == 6
    assert (f.subject.created_at.line, f.location.line) == (made, line_of("FIT-BACKWARD"))


def test_the_whole_graph_backwarded_again():
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    out = torch.tanh(model(torch.randn(5, 3)))
    loss = out.pow(2).mean()  # LOSS-MADE
    loss.backward()  # as a notebook cell run before the guard would
    guard = GraphGuard(mode="collect")
    with pytest.raises(RuntimeError, match="second time"):
        with guard:
            loss.backward()  # AGAIN
    f = _the_finding(guard)
    assert f.before_crash and f.subject.name == "loss"
    assert (f.subject.created_at.line, f.location.line) == (line_of("LOSS-MADE"), line_of("AGAIN"))


def test_retained_before_the_guard_is_quiet():
    w, ref = reference_target(retain=True)
    with GraphGuard() as guard:
        fit(w, ref, 1)  # the one backward over the retained graph: fine
    assert [f for f in guard.findings if f.severity != "info"] == []


def test_fresh_forward_inside_is_quiet():
    w, _ = reference_target()
    torch.manual_seed(1)
    base = torch.randn(4, requires_grad=True)
    with GraphGuard() as guard:
        opt = torch.optim.SGD([w, base], lr=0.1)
        for _ in range(3):
            ref = (base * 2).exp()
            ((w - ref) ** 2).sum().backward()
            opt.step()
            opt.zero_grad()
    assert [f for f in guard.findings if f.severity != "info"] == []


def test_old_graph_never_consumed_is_quiet():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    loss = model(torch.randn(5, 3)).pow(2).mean()  # built before the guard, not yet backwarded
    with GraphGuard() as guard:
        loss.backward()
    assert [f for f in guard.findings if f.severity != "info"] == []
    assert all(p.grad is not None for p in model.parameters())


# ---- a notebook: the cell that consumed the graph ran before `%graphguard on` ---------------------
def test_notebook_cell_before_the_session_guard(tmp_path):
    pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    from test_integrations_notebook import outputs, run

    nb = run(["%load_ext graphguard", SETUP,
              "train_step()",  # unguarded: frees ref's graph
              "%graphguard on",
              "train_step()",  # guarded: runs into it again
              "%graphguard off"], tmp_path)
    assert outputs(nb.cells[2], "error") == ""
    second = nb.cells[4]
    assert outputs(second, "error").startswith("GraphMisuseError")  # before PyTorch's error
    assert "GG001 stale-graph [error] `ref`" in outputs(second, "text")
