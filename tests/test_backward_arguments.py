"""The guard reads a backward call's arguments without consuming them: generators, iterators and
single tensors passed as `inputs` / `outputs` / `grad_outputs` / `grad_tensors` of
`torch.autograd.grad`, `torch.autograd.backward` and `Tensor.backward` reach the real call
unchanged (a generator `model.parameters()` read by the guard first made PyTorch raise "`inputs`
argument to `grad()` cannot be empty"), and the results are the same as without the guard."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from graphguard import GraphGuard


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))


def _loss(m: nn.Module) -> torch.Tensor:
    torch.manual_seed(1)
    return m(torch.randn(5, 3)).pow(2).mean()


INPUT_FORMS = {
    "generator": lambda m: m.parameters(),
    "genexpr": lambda m: (p for p in m.parameters()),
    "iterator": lambda m: iter(list(m.parameters())),
    "map": lambda m: map(lambda p: p, m.parameters()),
    "list": lambda m: list(m.parameters()),
    "tuple": lambda m: tuple(m.parameters()),
}


def _grad_run(form, guarded: bool, **kw):
    m = _model()
    loss = _loss(m)
    if guarded:
        with GraphGuard(mode="raise") as g:
            out = torch.autograd.grad(loss, form(m), **kw)
        assert not g.findings
    else:
        out = torch.autograd.grad(loss, form(m), **kw)
    return [o.detach().clone() for o in out]


@pytest.mark.parametrize("form", sorted(INPUT_FORMS))
@pytest.mark.parametrize("create_graph", [False, True])
def test_grad_inputs_forms(form, create_graph):
    plain = _grad_run(INPUT_FORMS[form], False, create_graph=create_graph)
    guarded = _grad_run(INPUT_FORMS[form], True, create_graph=create_graph)
    assert len(plain) == len(guarded) == 4
    for a, b in zip(plain, guarded):
        assert torch.equal(a, b)


def test_grad_inputs_keyword_generator():
    m = _model()
    loss = _loss(m)
    with GraphGuard(mode="raise"):
        out = torch.autograd.grad(outputs=loss, inputs=m.parameters(), create_graph=True)
    assert len(out) == 4


def test_grad_single_tensor_and_generator_outputs():
    m = _model()
    w = m[0].weight
    with GraphGuard(mode="raise"):
        loss = _loss(m)
        (g1,) = torch.autograd.grad(loss, w, retain_graph=True)
        (g2,) = torch.autograd.grad((x for x in [loss]), w,
                                    grad_outputs=(o for o in [torch.ones(())]))
    assert torch.equal(g1, g2)


@pytest.mark.parametrize("form", sorted(INPUT_FORMS))
def test_backward_inputs_forms(form):
    grads = []
    for guarded in (False, True):
        m = _model()
        loss = _loss(m)
        if guarded:
            with GraphGuard(mode="raise") as g:
                loss.backward(inputs=INPUT_FORMS[form](m))
            assert not g.findings
        else:
            loss.backward(inputs=INPUT_FORMS[form](m))
        grads.append([p.grad.clone() for p in m.parameters()])
    for a, b in zip(*grads):
        assert torch.equal(a, b)


def test_autograd_backward_generators():
    grads = []
    for guarded in (False, True):
        m = _model()
        loss = _loss(m)
        if guarded:
            with GraphGuard(mode="raise"):
                torch.autograd.backward((t for t in [loss]), grad_tensors=iter([torch.ones(())]),
                                        inputs=m.parameters())
        else:
            torch.autograd.backward((t for t in [loss]), grad_tensors=iter([torch.ones(())]),
                                    inputs=m.parameters())
        grads.append([p.grad.clone() for p in m.parameters()])
    for a, b in zip(*grads):
        assert torch.equal(a, b)


def test_backward_single_tensor_input():
    m = _model()
    loss = _loss(m)
    with GraphGuard(mode="raise"):
        loss.backward(inputs=m[0].weight)
    assert m[0].weight.grad is not None and m[2].weight.grad is None


@pytest.mark.parametrize("retain,create", [(None, False), (True, False), (False, False), (None, True),
                                           (False, True)])
def test_plain_tensor_backward_is_bound_as_the_general_binder_binds_it(retain, create):
    from graphguard.capture import backward as bw

    x = torch.randn(3, requires_grad=True)
    loss = (x * 2).sum()
    args, kwargs = (loss, None, retain, create), {"inputs": None}
    assert bw.plain_tensor_backward(args, kwargs)
    fast = bw.bind_backward("backward", torch.autograd.backward, args, kwargs)
    a = bw._BIND_BACKWARD(*args, **kwargs)
    general = bw.BackwardArgs([a["tensors"]], [], [], create if retain is None else bool(retain), create)
    assert fast.roots[0] is loss and fast[1:] == general[1:]
    # anything else takes the general path
    assert not bw.plain_tensor_backward((loss, torch.ones(()), retain, create), kwargs)
    assert not bw.plain_tensor_backward(args, {"inputs": [x]})
