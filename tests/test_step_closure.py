"""optimizer.step(closure): the forward and backward run inside step (LBFGS, Lightning's
automatic optimization); the step is checked after the closure, and its ops are recorded."""
import torch

from graphguard import GraphGuard


def train(cut, opt_cls=torch.optim.SGD, steps=3, **kw):
    w = torch.nn.Parameter(torch.ones(3))
    gate_logit = torch.nn.Parameter(torch.tensor(1.0))
    x = torch.randn(8, 3)
    opt = opt_cls([w, gate_logit], **kw)

    def closure():
        opt.zero_grad()
        gate = (gate_logit > 0).float() if cut else torch.sigmoid(gate_logit)
        loss = ((x * w).sum(1) * gate).pow(2).mean()
        loss.backward()
        return loss

    with GraphGuard(mode="collect") as g:
        for _ in range(steps):
            opt.step(closure)
    return g


def test_cut_inside_closure_is_found():
    g = train(cut=True, lr=0.1)
    assert [(f.code, f.subject.name) for f in g.findings] == [("GG008", "gate_logit")]
    assert g.iteration == 3


def test_clean_closure_and_lbfgs_are_silent():
    assert train(cut=False, lr=0.1).findings == []
    g = train(cut=False, opt_cls=torch.optim.LBFGS, steps=2, max_iter=3)
    assert g.findings == [] and g.iteration == 2


def test_closure_as_keyword_and_lbfgs_cut():
    g = train(cut=True, opt_cls=torch.optim.LBFGS, steps=2, max_iter=3)
    assert ("GG008", "gate_logit") in {(f.code, f.subject.name) for f in g.findings}


def test_no_grad_step_calling_its_closure_is_fixed_at_the_call():
    """GG014 for a `@torch.no_grad()` step that calls the closure it was given: the fix goes on the
    call inside step (`with torch.enable_grad():`), not on the decorator (dropping it would make
    the step's in-place updates of the weights fail)."""
    from pathlib import Path

    from casekit import load_case, run_guarded

    path = Path(__file__).parent / "cases" / "gg014_no_grad_step_calls_closure.py"
    guard, _ = run_guarded(load_case(path).buggy)
    [f] = [f for f in guard.findings if f.code == "GG014"]
    call = [i for i, line in enumerate(path.read_text().splitlines(), 1) if line.strip() == "loss = loss_fn()"]
    assert [(r.location.line, r.op) for r in f.related if r.role == "fix-at"] == [(call[0], "torch.enable_grad()")]
