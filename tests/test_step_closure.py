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
