"""torch.func's grad, vjp, jacrev and hessian refuse to run while any saved-tensor hooks are on the
stack. The guard keeps its own hooks on while it records, so without care a correct MAML or
per-sample-gradient program would crash only because it runs under the guard. These tests run such
programs in every phase of the guard (recorded and light iterations), check that they compute
exactly what they compute without it, and that misuse after a transform is still reported.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn
from torch.func import functional_call, grad, hessian, jacrev, vjp

from graphguard import GraphGuard, GraphMisuseError
from lines import marker_lines

line_of = marker_lines(__file__)


def maml_like(steps: int = 6) -> nn.Module:
    """An inner step by torch.func.grad, an outer step by backward: a correct program."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x, y = torch.randn(8, 4), torch.randn(8, 1)

    def compute_loss(params: dict, inp: torch.Tensor) -> torch.Tensor:
        return ((functional_call(net, params, (inp,)) - y) ** 2).mean()

    for _ in range(steps):
        params = dict(net.named_parameters())
        g = grad(compute_loss)(params, x)
        fast = {k: v - 0.1 * g[k] for k, v in params.items()}
        opt.zero_grad()
        compute_loss(fast, x).backward()
        opt.step()
    return net


def other_transforms() -> list[torch.Tensor]:
    torch.manual_seed(1)
    w = torch.randn(3)

    def f(v: torch.Tensor) -> torch.Tensor:
        return (v.sin() * w).sum()

    x = torch.randn(3)
    out, pullback = vjp(f, x)
    return [out, pullback(torch.ones(()))[0], jacrev(f)(x), hessian(f)(x)]


def test_plain_torch_refuses_a_transform_under_saved_tensor_hooks():
    # why the guard must lift its hooks: with any pair on the stack, torch.func raises
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        with pytest.raises(RuntimeError, match="saved tensor hooks"):
            maml_like(steps=1)


@pytest.mark.parametrize("mode", ["raise", "collect"])
def test_maml_with_func_grad_runs_and_computes_the_same(mode):
    plain = maml_like()
    with GraphGuard(mode=mode) as gg:
        guarded = maml_like()
    assert gg.findings == []
    for a, b in zip(plain.parameters(), guarded.parameters()):
        assert torch.equal(a, b)


def test_vjp_jacrev_hessian_under_the_guard_match_plain():
    plain = other_transforms()
    with GraphGuard() as gg:
        guarded = other_transforms()
    assert gg.findings == []
    for a, b in zip(plain, guarded):
        assert torch.equal(a, b)


def test_hooks_go_back_after_the_transform_and_come_off_at_exit():
    with GraphGuard() as gg:
        assert gg.rec.saved_hooks_on  # recording: the hooks are on
        other_transforms()
        assert gg.rec.saved_hooks_on
        assert torch._C._autograd._top_saved_tensors_default_hooks(True) is not None
    assert torch._C._autograd._top_saved_tensors_default_hooks(True) is None
    assert torch.autograd.graph.disable_saved_tensors_hooks.__module__ == "torch.autograd.graph"


def backward_twice_after_a_transform() -> None:
    torch.manual_seed(0)
    net = nn.Linear(4, 1)
    x = torch.randn(8, 4)
    grad(lambda p: functional_call(net, p, (x,)).pow(2).mean())(dict(net.named_parameters()))
    hidden = net(x).tanh()  # HIDDEN
    hidden.sum().backward()
    hidden.mean().backward()  # SECOND


def test_plain_torch_fails_on_the_second_backward_through_it():
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        backward_twice_after_a_transform()


def test_misuse_after_a_transform_is_still_reported_with_its_names():
    with pytest.raises(GraphMisuseError):
        with GraphGuard() as gg:
            backward_twice_after_a_transform()
    first = gg.findings[0]
    assert first.code == "GG003"  # two backwards of one iteration through one graph
    assert first.subject.name == "hidden"
    assert first.subject.created_at.line == line_of("HIDDEN")
    assert first.location.line == line_of("SECOND")
