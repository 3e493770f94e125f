"""A sweep over PyTorch features the other suites do not exercise: each program below is small,
correct training code (a fixed seed, a few iterations past the light-mode switch, tiny tensors).
Under the guard, in raise mode and through `graphguard run`, each must (a) give no finding (or
only the finding its entry names, with the reason), (b) run without any exception from graphguard,
(c) end with every tensor it returns bit-identical to a plain run, and (d) leave torch's global
state (modes, hooks, patched functions) as it found it."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any, Callable

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from graphguard import GraphGuard, GraphGuardWarning
from test_hygiene import state as global_state

STEPS = 4  # past record_iterations=2: recorded iterations, then light mode
Result = dict[str, torch.Tensor]


def _params(*modules: nn.Module, **extra: torch.Tensor) -> Result:
    out: Result = {}
    for i, m in enumerate(modules):
        for k, v in m.state_dict().items():
            out[f"{i}.{k}"] = v.detach().clone()
        for k, p in m.named_parameters():
            if p.grad is not None:
                out[f"{i}.grad.{k}"] = p.grad.detach().clone()
    for k, v in extra.items():
        out[k] = v.detach().clone()
    return out


def _data(n: int = 8, d: int = 4, out: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(n, d), torch.randn(n, out)


def _mlp(d: int = 4, h: int = 8, out: int = 2) -> nn.Module:
    return nn.Sequential(nn.Linear(d, h), nn.Tanh(), nn.Linear(h, out))


# ---------------------------------------------------------------- forward-mode AD

def forward_ad_dual_numbers() -> Result:
    """A directional-derivative penalty computed with dual numbers, trained through."""
    import torch.autograd.forward_ad as fwAD
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(STEPS):
        x, y = _data()
        v = torch.randn_like(x)
        opt.zero_grad()
        with fwAD.dual_level():
            out = fwAD.unpack_dual(model(fwAD.make_dual(x, v)))
            loss = F.mse_loss(out.primal, y) + 0.1 * out.tangent.pow(2).mean()
        loss.backward()
        opt.step()
    return _params(model)


def func_jvp_penalty() -> Result:
    """torch.func.jvp of the model in its input, its tangent in the loss (forward over reverse)."""
    from torch.func import jvp
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(STEPS):
        x, y = _data()
        v = torch.randn_like(x)
        opt.zero_grad()
        out, tangent = jvp(model, (x,), (v,))
        loss = F.mse_loss(out, y) + 0.1 * tangent.pow(2).mean()
        loss.backward()
        opt.step()
    return _params(model)


def func_jvp_as_a_metric() -> Result:
    """jvp as a diagnostic of the trained model, between steps, under no_grad and not."""
    from torch.func import jvp
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    norms = []
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        with torch.no_grad():
            _, t = jvp(model, (x,), (torch.ones_like(x),))
        norms.append(t.norm())
        _, t2 = jvp(lambda inp: model(inp).sum(), (x,), (torch.ones_like(x),))
        norms.append(t2.detach())
    return _params(model, norms=torch.stack(norms))


# ---------------------------------------------------------------- saved-tensor hooks

def save_on_cpu_forward() -> Result:
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        with torch.autograd.graph.save_on_cpu(pin_memory=False):
            loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    return _params(model)


def user_saved_tensor_hooks() -> Result:
    """The user's own pack/unpack hooks (a compressing store, half of the forward only)."""
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    packed: list[int] = []

    def pack(t: torch.Tensor) -> Any:
        packed.append(t.numel())
        return (t.dtype, t.to(torch.float64))

    def unpack(p: Any) -> torch.Tensor:
        return p[1].to(p[0])

    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            h = model[1](model[0](x))
        loss = F.mse_loss(model[2](h), y)
        loss.backward()
        opt.step()
    assert packed
    return _params(model, packed=torch.tensor(packed))


def allow_mutation_on_saved_tensors() -> Result:
    """Under torch.autograd.graph.allow_mutation_on_saved_tensors an in-place change of a saved
    tensor is legal: PyTorch saves a copy for the backward."""
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        with torch.autograd.graph.allow_mutation_on_saved_tensors():
            h = torch.tanh(model[0](x))
            out = model[2](h)
            h.mul_(2.0)  # h is saved by tanh and by the Linear; legal here
            loss = F.mse_loss(out, y) + h.mean()
            loss.backward()
        opt.step()
    return _params(model)


# ---------------------------------------------------------------- autograd.functional

def functional_jacobian_penalty() -> Result:
    """An input-Jacobian penalty (create_graph=True, vectorize=True), trained through."""
    from torch.autograd.functional import jacobian
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(STEPS):
        x, y = _data(n=3)
        opt.zero_grad()
        jac = jacobian(lambda inp: model(inp).sum(0), x, create_graph=True, vectorize=True)
        loss = F.mse_loss(model(x), y) + 0.01 * jac.pow(2).sum()
        loss.backward()
        opt.step()
    return _params(model)


def functional_hessian_vjp_hvp() -> Result:
    """hessian, vjp, jvp and hvp of the loss as diagnostics between optimizer steps."""
    from torch.autograd.functional import hessian, hvp, jvp, vhp, vjp
    torch.manual_seed(0)
    w = torch.randn(3, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.05)
    x = torch.randn(6, 3)
    y = torch.randn(6)
    stats = []

    def loss_of(w_: torch.Tensor) -> torch.Tensor:
        return ((x @ w_ - y) ** 2).mean() + w_.pow(4).sum() * 0.01

    for _ in range(STEPS):
        opt.zero_grad()
        loss = loss_of(w)
        loss.backward()
        opt.step()
        H = hessian(loss_of, w.detach(), vectorize=True)
        H2 = hessian(loss_of, w.detach())
        _, g = vjp(loss_of, w.detach())
        _, jv = jvp(loss_of, w.detach(), torch.ones(3))
        _, hv = hvp(loss_of, w.detach(), torch.ones(3))
        _, vh = vhp(loss_of, w.detach(), torch.ones(3))
        stats += [H.sum(), H2.sum(), g.sum(), jv.sum(), hv.sum(), vh.sum()]
    return {"w": w.detach().clone(), "stats": torch.stack(stats)}


def hvp_power_iteration_in_training() -> Result:
    """Hessian-vector products by double backward on the live parameters, next to training."""
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    params = list(model.parameters())
    v = [torch.randn_like(p) for p in params]
    for _ in range(STEPS):
        x, y = _data()
        loss = F.mse_loss(model(x), y)
        grads = torch.autograd.grad(loss, params, create_graph=True)
        hv = torch.autograd.grad(grads, params, grad_outputs=v)
        norm = torch.sqrt(sum((h ** 2).sum() for h in hv))
        v = [h / norm for h in hv]
        opt.zero_grad()
        for p, g in zip(params, grads):
            p.grad = g.detach()
        opt.step()
    return _params(model, v0=v[0])


# ---------------------------------------------------------------- hooks

def tensor_hooks_and_retain_grad() -> Result:
    """A hook that rescales an intermediate's gradient, retain_grad on it, its .grad read."""
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    seen = []
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        h = model[0](x)
        h.retain_grad()
        h.register_hook(lambda g: g * 0.5)
        a = model[1](h)
        a.retain_grad()
        loss = F.mse_loss(model[2](a), y)
        loss.backward()
        seen += [h.grad.sum(), a.grad.sum()]
        opt.step()
    return _params(model, seen=torch.stack(seen))


def param_hooks_clip_per_parameter() -> Result:
    """Parameter hooks registered once, clamping each gradient as it is computed."""
    torch.manual_seed(0)
    model = _mlp()
    for p in model.parameters():
        p.register_hook(lambda g: g.clamp(-0.05, 0.05))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    return _params(model)


def module_full_backward_hooks() -> Result:
    """register_full_backward_hook that scales grad_input, a pre hook that scales grad_output."""
    torch.manual_seed(0)
    model = _mlp()
    grads_seen = []
    model[2].register_full_backward_pre_hook(lambda m, go: (go[0] * 2.0,))

    def hook(m: nn.Module, gi: Any, go: Any) -> Any:
        grads_seen.append(go[0].norm().detach())
        return tuple(None if g is None else g * 0.5 for g in gi)

    model[1].register_full_backward_hook(hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    return _params(model, seen=torch.stack(grads_seen))


def multi_grad_hook() -> Result:
    """torch.autograd.graph.register_multi_grad_hook over two intermediates ("all" and "any")."""
    from torch.autograd.graph import register_multi_grad_hook
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    norms = []
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        h = model[0](x)
        a = model[1](h)
        out = model[2](a)
        register_multi_grad_hook((h, a), lambda gs: norms.append(
            sum(g.norm() for g in gs if g is not None).detach()))
        register_multi_grad_hook((h, a), lambda g: norms.append(g.norm().detach()), mode="any")
        F.mse_loss(out, y).backward()
        opt.step()
    return _params(model, norms=torch.stack(norms))


def post_accumulate_grad_optimizer_in_backward() -> Result:
    """The "optimizer step in backward" recipe: one optimizer per parameter, stepped from its
    register_post_accumulate_grad_hook while the backward runs."""
    torch.manual_seed(0)
    model = _mlp()
    opts = {p: torch.optim.SGD([p], lr=0.1, momentum=0.9) for p in model.parameters()}

    def step_hook(p: torch.Tensor) -> None:
        opts[p].step()
        opts[p].zero_grad()

    handles = [p.register_post_accumulate_grad_hook(step_hook) for p in model.parameters()]
    for _ in range(STEPS):
        x, y = _data()
        F.mse_loss(model(x), y).backward()
    for h in handles:
        h.remove()
    return _params(model)


def anomaly_detection_training() -> Result:
    """The user's own detect_anomaly around the training step."""
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Anomaly Detection has been enabled"
            with torch.autograd.detect_anomaly():
                F.mse_loss(model(x), y).backward()
        opt.step()
    return _params(model)


# ---------------------------------------------------------------- custom Functions

class _ScaleInplace(torch.autograd.Function):
    """Multiplies its input in place (mark_dirty)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, s: float) -> torch.Tensor:
        ctx.s = s
        x.mul_(s)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> Any:
        return g * ctx.s, None


class _SortWithIndex(torch.autograd.Function):
    """Sorted values and their (non-differentiable) indices."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> Any:
        vals, idx = x.sort(dim=-1)
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx)
        return vals, idx

    @staticmethod
    def backward(ctx: Any, gv: torch.Tensor, gi: Any) -> torch.Tensor:
        (idx,) = ctx.saved_tensors
        out = torch.zeros_like(gv)
        out.scatter_(-1, idx, gv)
        return out


class _Cube(torch.autograd.Function):
    """setup_context style (torch >= 2.0), once_differentiable backward."""

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x ** 3

    @staticmethod
    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        (x,) = inputs
        ctx.save_for_backward(x)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return g * 3 * x ** 2


class _ClampST(torch.autograd.Function):
    """A straight-through clamp with materialized grads off and a vmap rule."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x.clamp(-1, 1)

    @staticmethod
    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        ctx.set_materialize_grads(False)

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        return g


def custom_functions() -> Result:
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        h = model[0](x)
        h2 = _ScaleInplace.apply(h * 1.0, 0.5)   # a fresh non-leaf modified in place
        vals, idx = _SortWithIndex.apply(h2)
        a = _Cube.apply(torch.tanh(vals))
        a = _ClampST.apply(a)
        out = model[2](a)
        loss = F.mse_loss(out, y) + 0.0 * idx.float().sum()
        loss.backward()
        opt.step()
    return _params(model)


# ---------------------------------------------------------------- TorchScript and torch.compile

# NOTE [TorchScript's executor has a memory]
# A scripted or traced function shares one graph executor per compiled type for the whole process,
# and which graph it runs (profiled, specialized, or a fallback after a failed specialization)
# depends on every call it has seen before, in any test. Two runs of the same program in one
# process can then take different graphs and differ in the last bits, with or without the guard.
# The TorchScript programs run with the executor's optimizations off, so each run takes the same
# graph whatever ran earlier, and "bit-identical under the guard" tests the guard, not the history.
def _no_jit_history(program: Callable[[], Result]) -> Callable[[], Result]:
    def run() -> Result:
        with torch.jit.optimized_execution(False):
            return program()
    run.__name__ = program.__name__
    run.__doc__ = program.__doc__
    return run


@_no_jit_history
def jit_scripted_module() -> Result:
    torch.manual_seed(0)
    model = torch.jit.script(_mlp())
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


@_no_jit_history
def jit_scripted_function_in_loss() -> Result:
    torch.manual_seed(0)

    @torch.jit.script
    def smooth_l1(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        d = (a - b).abs()
        return torch.where(d < 1.0, 0.5 * d * d, d - 0.5).mean()

    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        smooth_l1(model(x), y).backward()
        opt.step()
    return _params(model)


def _compiled_model(backend: str) -> Result:
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = _mlp()
    cmodel = torch.compile(model, backend=backend)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        F.mse_loss(cmodel(x), y).backward()
        opt.step()
    return _params(model)


def compile_model_eager() -> Result:
    return _compiled_model("eager")


def compile_model_aot_eager() -> Result:
    return _compiled_model("aot_eager")


def compile_training_step_eager() -> Result:
    """A whole training step compiled: forward, backward and optimizer step inside."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    @torch.compile(backend="eager")
    def train_step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    losses = [train_step(*_data()) for _ in range(STEPS)]
    return _params(model, losses=torch.stack(losses))


def compile_training_step_aot_eager() -> Result:
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    @torch.compile(backend="aot_eager")
    def train_step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    losses = [train_step(*_data()) for _ in range(STEPS)]
    return _params(model, losses=torch.stack(losses))


# ---------------------------------------------------------------- mixed precision, optimizers

def autocast_bf16_grad_scaler() -> Result:
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 8)
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        with torch.amp.autocast("cpu", dtype=torch.bfloat16):
            out = model(x)
            loss = F.mse_loss(out.float(), y)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
    return _params(model, scale=torch.tensor(scaler.get_scale()))


def _opt_run(make: Callable[[Any], torch.optim.Optimizer], clip: str = "") -> Result:
    torch.manual_seed(0)
    model = _mlp()
    opt = make(model.parameters())
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad(set_to_none=False)
        F.mse_loss(model(x), y).backward()
        if clip == "norm":
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5, foreach=True)
        elif clip == "value":
            torch.nn.utils.clip_grad_value_(model.parameters(), 0.01, foreach=True)
        elif clip == "norm-inf":
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5, norm_type=math.inf,
                                           error_if_nonfinite=True)
        opt.step()
    sd = opt.state_dict()["state"]
    extra = {f"opt.{i}.{k}": v for i, st in sd.items() for k, v in st.items()
             if isinstance(v, torch.Tensor)}
    return _params(model, **extra)


def optim_foreach_zero_grad_keep() -> Result:
    return _opt_run(lambda p: torch.optim.Adam(p, lr=0.01, foreach=True), clip="norm")


def optim_nadam_radam_foreach() -> Result:
    r1 = _opt_run(lambda p: torch.optim.NAdam(p, lr=0.01, foreach=True), clip="value")
    r2 = _opt_run(lambda p: torch.optim.RAdam(p, lr=0.01, foreach=True, decoupled_weight_decay=True))
    return {**{f"a.{k}": v for k, v in r1.items()}, **{f"b.{k}": v for k, v in r2.items()}}


def optim_fused_adagrad() -> Result:
    return _opt_run(lambda p: torch.optim.Adagrad(p, lr=0.05, fused=True), clip="norm-inf")


def optim_fused_sgd_adamw() -> Result:
    r1 = _opt_run(lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, fused=True))
    r2 = _opt_run(lambda p: torch.optim.AdamW(p, lr=0.01, fused=True))
    return {**{f"a.{k}": v for k, v in r1.items()}, **{f"b.{k}": v for k, v in r2.items()}}


def optim_lr_scheduler_chain() -> Result:
    """OneCycleLR and a param group added mid-training with its own lr."""
    torch.manual_seed(0)
    model = _mlp()
    head = nn.Linear(2, 1)
    opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=2 * STEPS)
    for i in range(2 * STEPS):
        if i == STEPS:
            opt.add_param_group({"params": head.parameters(), "lr": 0.01})
        x, y = _data()
        opt.zero_grad()
        out = model(x)
        loss = F.mse_loss(out, y)
        if i >= STEPS:
            loss = loss + head(out).pow(2).mean()
        loss.backward()
        opt.step()
        if i < STEPS:
            sched.step()
    return _params(model, head)


# ---------------------------------------------------------------- parametrizations

def parametrize_orthogonal_and_weight_norm() -> Result:
    from torch.nn.utils import parametrizations, parametrize
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    parametrizations.orthogonal(model[0])
    parametrizations.weight_norm(model[2])
    parametrizations.spectral_norm(model[4])
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for i in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        if i % 2:
            with parametrize.cached():
                out = model(x)
        else:
            out = model(x)
        F.mse_loss(out, y).backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        final = model(torch.ones(1, 4))
    return _params(model, final=final)


def user_parametrization_symmetric() -> Result:
    from torch.nn.utils import parametrize

    class Symmetric(nn.Module):
        def forward(self, X: torch.Tensor) -> torch.Tensor:
            return X.triu() + X.triu(1).transpose(-1, -2)

    torch.manual_seed(0)
    layer = nn.Linear(4, 4)
    parametrize.register_parametrization(layer, "weight", Symmetric())
    opt = torch.optim.Adam(layer.parameters(), lr=0.01)
    for _ in range(STEPS):
        x = torch.randn(8, 4)
        opt.zero_grad()
        layer(x).pow(2).mean().backward()
        opt.step()
    parametrize.remove_parametrizations(layer, "weight", leave_parametrized=True)
    return _params(layer)


def old_weight_norm_hook() -> Result:
    """The deprecated forward-pre-hook weight_norm (recomputes weight from g and v each forward)."""
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        layer = torch.nn.utils.weight_norm(nn.Linear(4, 2))
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        F.mse_loss(layer(x), y).backward()
        opt.step()
    return _params(layer)


# ---------------------------------------------------------------- complex, attention, functional_call

def complex_parameters() -> Result:
    torch.manual_seed(0)
    w = nn.Parameter(torch.randn(4, 4, dtype=torch.cfloat))
    opt = torch.optim.Adam([w], lr=0.01)
    for _ in range(STEPS):
        x = torch.randn(8, 4, dtype=torch.cfloat)
        target = torch.randn(8, 4, dtype=torch.cfloat)
        opt.zero_grad()
        out = x @ w
        loss = (out - target).abs().pow(2).mean() + torch.view_as_real(out).pow(2).mean() * 0.01
        loss.backward()
        opt.step()
    return {"w": torch.view_as_real(w.detach()).clone()}


def complex_fft_layer() -> Result:
    torch.manual_seed(0)
    spectral = nn.Parameter(torch.randn(5, dtype=torch.cfloat) * 0.1)
    opt = torch.optim.SGD([spectral], lr=0.1)
    for _ in range(STEPS):
        x = torch.randn(4, 8)
        opt.zero_grad()
        y = torch.fft.irfft(torch.fft.rfft(x) * spectral, n=8)
        F.mse_loss(y, x.flip(-1)).backward()
        opt.step()
    return {"s": torch.view_as_real(spectral.detach()).clone()}


def multihead_attention_and_sdpa() -> Result:
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, batch_first=True, dropout=0.0)
    proj = nn.Linear(8, 24)
    opt = torch.optim.Adam(list(mha.parameters()) + list(proj.parameters()), lr=0.01)
    mask = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
    for _ in range(STEPS):
        x = torch.randn(2, 5, 8)
        opt.zero_grad()
        a, w = mha(x, x, x, attn_mask=mask, need_weights=True)
        q, k, v = proj(x).view(2, 5, 3, 2, 4).permute(2, 0, 3, 1, 4)
        b = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        loss = a.pow(2).mean() + b.pow(2).mean() + w.var()
        loss.backward()
        opt.step()
    return _params(mha, proj)


def transformer_with_key_padding_mask() -> Result:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True, norm_first=True)
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    opt = torch.optim.AdamW(enc.parameters(), lr=0.01)
    for _ in range(STEPS):
        x = torch.randn(3, 5, 8)
        pad = torch.zeros(3, 5, dtype=torch.bool)
        pad[0, 3:] = True
        opt.zero_grad()
        out = enc(x, src_key_padding_mask=pad)
        out.masked_fill(pad[..., None], 0).pow(2).mean().backward()
        opt.step()
    enc.eval()
    with torch.no_grad():  # the fast path (nested tensors off, eval, no grad)
        final = enc(torch.randn(3, 5, 8), src_key_padding_mask=pad)
    return _params(enc, final=final)


def functional_call_stateless() -> Result:
    """torch.func.functional_call and nn.utils.stateless with parameters held apart."""
    from torch.func import functional_call
    from torch.nn.utils import stateless
    torch.manual_seed(0)
    model = _mlp()
    params = {k: v.detach().clone().requires_grad_() for k, v in model.named_parameters()}
    opt = torch.optim.SGD(params.values(), lr=0.1)
    for i in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        if i % 2:
            out = functional_call(model, params, (x,))
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                out = stateless.functional_call(model, params, (x,))
        F.mse_loss(out, y).backward()
        opt.step()
    return {k: v.detach().clone() for k, v in params.items()}


def functional_call_fast_weights() -> Result:
    """One inner SGD step on fast weights (first order), then an outer update of the model."""
    from torch.func import functional_call
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(STEPS):
        x, y = _data()
        params = dict(model.named_parameters())
        inner = F.mse_loss(functional_call(model, params, (x,)), y)
        grads = torch.autograd.grad(inner, list(params.values()))
        fast = {k: p - 0.1 * g for (k, p), g in zip(params.items(), grads)}
        outer = F.mse_loss(functional_call(model, fast, (x + 0.1,)), y)
        opt.zero_grad()
        outer.backward()
        opt.step()
    return _params(model)


# ---------------------------------------------------------------- phases, legal in-place

def requires_grad_toggling_per_phase() -> Result:
    """A GAN-style alternation: each phase freezes the other network with requires_grad_."""
    torch.manual_seed(0)
    G = _mlp(2, 8, 4)
    D = _mlp(4, 8, 1)
    opt_g = torch.optim.Adam(G.parameters(), lr=0.01)
    opt_d = torch.optim.Adam(D.parameters(), lr=0.01)
    for _ in range(STEPS):
        real = torch.randn(8, 4)
        z = torch.randn(8, 2)
        D.requires_grad_(True)
        opt_d.zero_grad()
        fake = G(z)
        d_loss = F.softplus(D(fake.detach())).mean() + F.softplus(-D(real)).mean()
        d_loss.backward()
        opt_d.step()
        D.requires_grad_(False)
        opt_g.zero_grad()
        F.softplus(-D(fake)).mean().backward()
        opt_g.step()
    D.requires_grad_(True)
    return _params(G, D)


def freeze_then_unfreeze_backbone() -> Result:
    torch.manual_seed(0)
    backbone = _mlp(4, 8, 8)
    head = nn.Linear(8, 2)
    opt = torch.optim.SGD(list(backbone.parameters()) + list(head.parameters()), lr=0.05)
    for i in range(2 * STEPS):
        backbone.requires_grad_(i >= STEPS)
        x, y = _data()
        opt.zero_grad()
        F.mse_loss(head(backbone(x)), y).backward()
        opt.step()
    return _params(backbone, head)


def legal_inplace_updates() -> Result:
    """In-place ops that are legal: on an output no op saved, under no_grad, on .data (EMA), a
    Parameter's data swapped by the user's weight clipping, a buffer updated in forward."""
    torch.manual_seed(0)
    model = _mlp()
    ema = _mlp()
    ema.load_state_dict(model.state_dict())
    ema.requires_grad_(False)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    running = torch.zeros(2)
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        out = model(x)
        out.add_(1.0)              # Linear's output: nothing saved it (addmm saves its inputs)
        out.mul_(0.5)
        s = out.sigmoid()
        loss = F.mse_loss(s, y.sigmoid())
        loss.backward()
        opt.step()
        with torch.no_grad():
            for pe, p in zip(ema.parameters(), model.parameters()):
                pe.mul_(0.9).add_(p, alpha=0.1)
            model[0].weight.clamp_(-1, 1)
            running.mul_(0.9).add_(out.detach().mean(0), alpha=0.1)
        for pe, p in zip(ema.parameters(), model.parameters()):
            pe.data.copy_(pe.data * 0.5 + p.data * 0.5)
        model[2].bias.data.zero_()
    return _params(model, ema, running=running)


def inplace_relu_and_index_put() -> Result:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(inplace=True), nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        out = model(x)
        mask = y > 0
        out = out.clone()
        out[~mask] = 0.0           # index_put_ on a clone (clone saves nothing)
        out[:, 0] += 1.0
        F.mse_loss(out, y.clamp(min=0)).backward()
        opt.step()
    return _params(model)


def frozen_transformer_features() -> Result:
    """A frozen pretrained encoder in eval (grad on, nothing of it requires grad: its fast path)
    feeding a trainable head, and a validation pass under inference_mode."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval().requires_grad_(False)
    mha = nn.MultiheadAttention(8, 2, batch_first=True).eval().requires_grad_(False)
    head = nn.Linear(8, 1)
    opt = torch.optim.SGD(head.parameters(), lr=0.1)
    vals = []
    for _ in range(STEPS):
        x = torch.randn(3, 5, 8)
        opt.zero_grad()
        feats = enc(x)
        att, _ = mha(feats, feats, feats, need_weights=False)
        loss = head(att.mean(1)).pow(2).mean()
        loss.backward()
        opt.step()
        with torch.inference_mode():
            vals.append(head(mha(x, x, x, need_weights=False)[0].mean(1)).sum())
    return _params(head, vals=torch.stack(vals), feats=feats)


def fx_trace_of_attention_model() -> Result:
    """torch.fx traces a model holding nn.MultiheadAttention (a leaf module for fx), then trains."""
    import torch.fx

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
            self.out = nn.Linear(8, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            a, _ = self.attn(x, x, x)
            return self.out(a)

    torch.manual_seed(0)
    gm = torch.fx.symbolic_trace(Net())
    opt = torch.optim.SGD(gm.parameters(), lr=0.1)
    for _ in range(STEPS):
        x = torch.randn(2, 4, 8)
        opt.zero_grad()
        gm(x).pow(2).mean().backward()
        opt.step()
    gm.eval()
    with torch.no_grad():
        final = gm(torch.ones(2, 4, 8))
    return _params(gm, final=final)


def compiled_attention_model_eval() -> Result:
    """torch.compile (eager backend) of a model with nn.MultiheadAttention, trained, then
    evaluated under no_grad."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    cm = torch.compile(mha, backend="eager")
    opt = torch.optim.SGD(mha.parameters(), lr=0.1)
    for _ in range(STEPS):
        x = torch.randn(2, 4, 8)
        opt.zero_grad()
        cm(x, x, x)[0].pow(2).mean().backward()
        opt.step()
    mha.eval()
    with torch.no_grad():
        final = cm(torch.ones(2, 4, 8), torch.ones(2, 4, 8), torch.ones(2, 4, 8))[0]
    return _params(mha, final=final)


@_no_jit_history
def scripted_transformer_layer() -> Result:
    """torch.jit.script of nn.TransformerEncoderLayer (its forward compiled from source), trained."""
    torch.manual_seed(0)
    layer = torch.jit.script(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True))
    opt = torch.optim.Adam(layer.parameters(), lr=0.01)
    for _ in range(STEPS):
        x = torch.randn(2, 4, 8)
        opt.zero_grad()
        layer(x).pow(2).mean().backward()
        opt.step()
    layer.eval()
    with torch.no_grad():
        final = layer(torch.ones(2, 4, 8))
    return {**{k: v.detach().clone() for k, v in layer.state_dict().items()}, "final": final}


# ---------------------------------------------------------------- processes

class _Squares(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 16

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(i)
        x = torch.randn(4, generator=g)
        return x, x[:2] ** 2


def dataloader_two_workers() -> Result:
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    ctx = "fork" if sys.platform.startswith("linux") else None
    loader = torch.utils.data.DataLoader(_Squares(), batch_size=4, shuffle=False, num_workers=2,
                                         multiprocessing_context=ctx)
    for x, y in loader:
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    return _params(model)


def ddp_single_process_gloo() -> Result:
    import socket
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = dist.TCPStore("127.0.0.1", port, 1, True)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        torch.manual_seed(0)
        model = DDP(_mlp())
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(STEPS):
            x, y = _data()
            opt.zero_grad()
            if i == 1:
                with model.no_sync():  # accumulate locally once
                    F.mse_loss(model(x), y).backward()
                x, y = _data()
            F.mse_loss(model(x), y).backward()
            opt.step()
        return _params(model.module)
    finally:
        dist.destroy_process_group()


def _hogwild_worker(model: nn.Module, seed: int) -> None:
    torch.manual_seed(seed)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(3):
        x, y = _data()
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()


def _hogwild(method: str, workers: int) -> Result:
    import torch.multiprocessing as mp
    torch.manual_seed(0)
    model = _mlp()
    model.share_memory()
    ctx = mp.get_context(method)
    procs = [ctx.Process(target=_hogwild_worker, args=(model, 1 + r)) for r in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * workers
    # the parent trains too, after its workers (one writer at a time: deterministic)
    _hogwild_worker(model, 100)
    return _params(model)


def hogwild_fork() -> Result:
    # one worker at a time would be deterministic; two forked workers race on the shared
    # parameters, so run them one after the other
    out: Result = {}
    import torch.multiprocessing as mp
    torch.manual_seed(0)
    model = _mlp()
    model.share_memory()
    ctx = mp.get_context("fork")
    for r in range(2):
        p = ctx.Process(target=_hogwild_worker, args=(model, 1 + r))
        p.start()
        p.join(60)
        assert p.exitcode == 0
    _hogwild_worker(model, 100)
    out.update(_params(model))
    return out


def hogwild_spawn() -> Result:
    return _hogwild("spawn", 1)


# ---------------------------------------------------------------- more autograd APIs

def gradient_edge_inputs() -> Result:
    """torch.autograd.grad over GradientEdges (the pipelining API): the gradient at an
    intermediate, then the parameters' gradients from it, as a split backward does."""
    from torch.autograd.graph import get_gradient_edge
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(STEPS):
        x, y = _data()
        h = model[1](model[0](x))
        loss = F.mse_loss(model[2](h), y)
        opt.zero_grad()
        head = list(model[2].parameters())
        gh, *g2 = torch.autograd.grad(loss, [get_gradient_edge(h), *head], retain_graph=True)
        g1 = torch.autograd.grad(h, list(model[0].parameters()), grad_outputs=gh)
        for p, g in zip(list(model[0].parameters()) + head, list(g1) + g2):
            p.grad = g
        opt.step()
    return _params(model)


def grads_batched_and_materialized() -> Result:
    """autograd.grad with is_grads_batched=True (a Jacobian by vmap over grad_outputs) and
    allow_unused with materialize_grads, next to training."""
    torch.manual_seed(0)
    model = _mlp()
    extra = nn.Parameter(torch.zeros(2))  # unused by the loss: materialized as zeros
    opt = torch.optim.SGD(list(model.parameters()) + [extra], lr=0.1)
    jac_sums = []
    for _ in range(STEPS):
        x, y = _data(n=3)
        x.requires_grad_(True)
        out = model(x)
        eye = torch.eye(out.numel()).view(-1, *out.shape)
        (jac,) = torch.autograd.grad(out, x, eye, retain_graph=True, is_grads_batched=True)
        jac_sums.append(jac.sum())
        loss = F.mse_loss(out, y)
        grads = torch.autograd.grad(loss, list(model.parameters()) + [extra], allow_unused=True,
                                    materialize_grads=True)
        opt.zero_grad()
        for p, g in zip(list(model.parameters()) + [extra], grads):
            p.grad = g
        opt.step()
    return _params(model, extra=extra, jac=torch.stack(jac_sums))


def jacobian_forward_mode_strategy() -> Result:
    """autograd.functional.jacobian(strategy="forward-mode", vectorize=True) and torch.func.jacfwd
    as diagnostics between steps, jacrev in a penalty."""
    from torch.autograd.functional import jacobian
    from torch.func import jacfwd, jacrev
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    stats = []
    for _ in range(STEPS):
        x, y = _data(n=2)
        opt.zero_grad()
        j = jacrev(lambda inp: model(inp).sum(0))(x)
        loss = F.mse_loss(model(x), y) + 0.01 * j.pow(2).sum()
        loss.backward()
        opt.step()
        with torch.no_grad():
            stats.append(jacobian(model, x[0], strategy="forward-mode", vectorize=True).sum())
        stats.append(jacfwd(model)(x[0]).sum().detach())
    return _params(model, stats=torch.stack(stats))


class _MulJvp(torch.autograd.Function):
    """A custom Function with a jvp rule (save_for_forward) used under forward AD."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        ctx.save_for_forward(x, w)
        return x * w

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> Any:
        x, w = ctx.saved_tensors
        return g * w, (g * x).sum(0)

    @staticmethod
    def jvp(ctx: Any, tx: Any, tw: Any) -> torch.Tensor:
        x, w = ctx.saved_tensors
        out = torch.zeros_like(x)
        if tx is not None:
            out = out + tx * w
        if tw is not None:
            out = out + x * tw
        return out


def custom_function_with_jvp() -> Result:
    import torch.autograd.forward_ad as fwAD
    torch.manual_seed(0)
    w = nn.Parameter(torch.randn(4))
    opt = torch.optim.SGD([w], lr=0.1)
    tangents = []
    for _ in range(STEPS):
        x = torch.randn(8, 4)
        opt.zero_grad()
        _MulJvp.apply(x, w).pow(2).mean().backward()
        opt.step()
        with fwAD.dual_level(), torch.no_grad():
            out = _MulJvp.apply(fwAD.make_dual(x, torch.ones_like(x)), w)
            tangents.append(fwAD.unpack_dual(out).tangent.sum())
    return {"w": w.detach().clone(), "t": torch.stack(tangents)}


def gradcheck_of_a_custom_function() -> Result:
    """The user checks a custom Function with gradcheck/gradgradcheck before and while training."""
    from torch.autograd import gradcheck, gradgradcheck
    torch.manual_seed(0)
    inp = torch.randn(3, 4, dtype=torch.double, requires_grad=True)
    assert gradcheck(_Cube.apply, (inp,))
    assert gradcheck(lambda a: _MulJvp.apply(a, torch.ones(4, dtype=torch.double)), (inp,))
    assert gradgradcheck(lambda a: a.tanh() * 2, (inp,))
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        F.mse_loss(_Cube.apply(model(x)), y).backward()
        opt.step()
    return _params(model)


def node_hooks_on_grad_fn() -> Result:
    """Hooks on autograd nodes: a prehook on the loss's grad_fn, a hook on an op's node."""
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    seen = []
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        h = model[0](x)
        h.grad_fn.register_hook(lambda gi, go: seen.append(go[0].sum().detach()))
        loss = F.mse_loss(model[2](model[1](h)), y)
        loss.grad_fn.register_prehook(lambda go: (go[0] * 0.5,))
        loss.grad_fn.metadata["user"] = "mine"
        loss.backward()
        opt.step()
    return _params(model, seen=torch.stack(seen))


def selective_activation_checkpoint() -> Result:
    """Non-reentrant checkpoint with a selective-checkpoint policy (context_fn) and determinism
    check, and checkpoint_sequential (non-reentrant)."""
    from torch.utils.checkpoint import (CheckpointPolicy, checkpoint, checkpoint_sequential,
                                        create_selective_checkpoint_contexts)

    def policy(ctx: Any, op: Any, *args: Any, **kwargs: Any) -> Any:
        if op == torch.ops.aten.mm.default or op == torch.ops.aten.addmm.default:
            return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        if i % 2:
            out = checkpoint(model, x, use_reentrant=False,
                             context_fn=lambda: create_selective_checkpoint_contexts(policy))
        else:
            out = checkpoint_sequential(model, 2, x, use_reentrant=False)
        F.mse_loss(out, y).backward()
        opt.step()
    return _params(model)


def checkpoint_forward_runs_counted() -> Result:
    """Non-reentrant checkpoint and save_on_cpu whose forward counts its calls: the backward
    recomputes it once per step; nothing else may run it (or unpack what save_on_cpu stored)."""
    from torch.utils.checkpoint import checkpoint
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    calls = []

    def block(h: torch.Tensor) -> torch.Tensor:
        calls.append(1)
        return model[1](model[0](h))

    for _ in range(2 * STEPS):
        x, y = _data()
        opt.zero_grad()
        h = checkpoint(block, x, use_reentrant=False)
        with torch.autograd.graph.save_on_cpu():
            out = model[2](h)
        F.mse_loss(out, y).backward()
        opt.step()
    return _params(model, calls=torch.tensor(len(calls)))


def custom_function_inside_checkpoint() -> Result:
    """A custom Function (save_for_backward) inside a non-reentrant checkpoint region whose
    forward counts its calls: only the backward's recomputation may run it again."""
    from torch.utils.checkpoint import checkpoint
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    calls = []

    def block(h: torch.Tensor) -> torch.Tensor:
        calls.append(1)
        return _Cube.apply(torch.tanh(model[0](h)))

    for _ in range(2 * STEPS):
        x, y = _data()
        opt.zero_grad()
        F.mse_loss(model[2](checkpoint(block, x, use_reentrant=False)), y).backward()
        opt.step()
    return _params(model, calls=torch.tensor(len(calls)))


# ---------------------------------------------------------------- parameters handled by hand

def vector_to_parameters_evolution() -> Result:
    """parameters_to_vector / vector_to_parameters (writes each param.data) between gradient
    steps: an evolution-strategies perturbation and its restore."""
    from torch.nn.utils import parameters_to_vector, vector_to_parameters
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(STEPS):
        x, y = _data()
        base = parameters_to_vector(model.parameters()).detach().clone()
        with torch.no_grad():
            vector_to_parameters(base + 0.01 * torch.randn_like(base), model.parameters())
            perturbed = F.mse_loss(model(x), y)
            vector_to_parameters(base, model.parameters())
        opt.zero_grad()
        loss = F.mse_loss(model(x), y) + 0.0 * perturbed
        loss.backward()
        opt.step()
    return _params(model)


def checkpoint_save_and_resume() -> Result:
    """Save model and optimizer mid-training to a buffer, rebuild both, load, continue."""
    import io
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, 2)
    for i in range(2 * STEPS):
        if i == STEPS:
            buf = io.BytesIO()
            torch.save({"m": model.state_dict(), "o": opt.state_dict(), "s": sched.state_dict()}, buf)
            buf.seek(0)
            ck = torch.load(buf)
            model = _mlp()
            model.load_state_dict(ck["m"])
            opt = torch.optim.AdamW(model.parameters(), lr=0.01)
            opt.load_state_dict(ck["o"])
            sched = torch.optim.lr_scheduler.StepLR(opt, 2)
            sched.load_state_dict(ck["s"])
        x, y = _data()
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        sched.step()
    return _params(model)


def meta_device_init_to_empty() -> Result:
    """A model built on the meta device, materialized with to_empty and reset_parameters."""
    torch.manual_seed(0)
    with torch.device("meta"):
        model = _mlp()
    model.to_empty(device="cpu")
    for m in model.modules():
        if hasattr(m, "reset_parameters"):
            m.reset_parameters()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    return _params(model)


def lazy_modules() -> Result:
    """nn.LazyLinear: parameters materialize at the first forward, the optimizer is built after."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.LazyLinear(8), nn.Tanh(), nn.LazyLinear(2))
    model(torch.zeros(1, 4))  # dry run
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    return _params(model)


def device_context_and_default_dtype() -> Result:
    """The torch.device context (a function mode of its own) around building and training."""
    torch.manual_seed(0)
    with torch.device("cpu"):
        model = _mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(STEPS):
            x, y = torch.randn(8, 4), torch.randn(8, 2)
            opt.zero_grad()
            F.mse_loss(model(x), y).backward()
            opt.step()
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        m64 = _mlp()
        opt = torch.optim.SGD(m64.parameters(), lr=0.1)
        for _ in range(STEPS):
            x, y = torch.randn(8, 4), torch.randn(8, 2)
            opt.zero_grad()
            F.mse_loss(m64(x), y).backward()
            opt.step()
    finally:
        torch.set_default_dtype(old)
    return _params(model, m64)


class _Tagged(torch.Tensor):
    """A tensor subclass with __torch_function__ that keeps its type through ops."""

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        return super().__torch_function__(func, types, args, kwargs or {})


def tensor_subclass_inputs() -> Result:
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    kinds = []
    for _ in range(STEPS):
        x, y = _data()
        x = x.as_subclass(_Tagged)
        opt.zero_grad()
        out = model(x)
        kinds.append(torch.tensor(float(type(out) is _Tagged)))
        loss = F.mse_loss(out, y)
        loss.backward()
        opt.step()
    return _params(model, kinds=torch.stack(kinds))


# ---------------------------------------------------------------- tracing, profiling, threads

def fx_symbolic_trace_training() -> Result:
    """A model traced with torch.fx under the guard, then trained as a GraphModule."""
    import torch.fx
    torch.manual_seed(0)
    gm = torch.fx.symbolic_trace(_mlp())
    opt = torch.optim.SGD(gm.parameters(), lr=0.1)
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        F.mse_loss(gm(x), y).backward()
        opt.step()
    return {k: v.detach().clone() for k, v in gm.state_dict().items()}


@_no_jit_history
def jit_trace_training() -> Result:
    torch.manual_seed(0)
    model = _mlp()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(model, torch.randn(2, 4))
    opt = torch.optim.SGD(traced.parameters(), lr=0.1)
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        F.mse_loss(traced(x), y).backward()
        opt.step()
    return {k: v.detach().clone() for k, v in traced.state_dict().items()}


def profiler_around_training() -> Result:
    """torch.profiler.profile (with shapes, stacks and a schedule) and record_function."""
    from torch.profiler import ProfilerActivity, profile, record_function, schedule
    torch.manual_seed(0)
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True,
                 schedule=schedule(wait=1, warmup=1, active=2)) as prof:
        for _ in range(STEPS):
            x, y = _data()
            with record_function("train_step"):
                opt.zero_grad()
                F.mse_loss(model(x), y).backward()
                opt.step()
            prof.step()
    return _params(model)


def training_in_a_thread() -> Result:
    """The training loop runs in a worker thread while the guard was entered in the main one."""
    import threading
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["r"] = param_hooks_clip_per_parameter()
        except BaseException as e:  # pragma: no cover - reported below
            box["e"] = e

    t = threading.Thread(target=work)
    t.start()
    t.join(60)
    assert "e" not in box, box.get("e")
    return box["r"]


def data_parallel_on_cpu() -> Result:
    """nn.DataParallel without GPUs: a plain call through to the module."""
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = nn.DataParallel(_mlp())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    return _params(model.module)


# ---------------------------------------------------------------- sequences, quantization-aware

def packed_sequence_lstm() -> Result:
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
    torch.manual_seed(0)
    lstm = nn.LSTM(3, 5, batch_first=True, bidirectional=True)
    head = nn.Linear(10, 1)
    opt = torch.optim.Adam(list(lstm.parameters()) + list(head.parameters()), lr=0.01)
    for _ in range(STEPS):
        x = torch.randn(4, 6, 3)
        lengths = torch.tensor([6, 2, 4, 3])
        opt.zero_grad()
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, (h, c) = lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True)
        loss = head(out).pow(2).mean() + h.pow(2).mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(lstm.parameters(), 1.0)
        opt.step()
    return _params(lstm, head)


def embedding_bag_ctc_grid_sample() -> Result:
    torch.manual_seed(0)
    bag = nn.EmbeddingBag(10, 4, mode="sum")
    proj = nn.Linear(4, 5)
    theta = nn.Parameter(torch.eye(2, 3).unsqueeze(0))
    opt = torch.optim.SGD(list(bag.parameters()) + list(proj.parameters()) + [theta], lr=0.05)
    img = torch.randn(1, 1, 6, 6)
    for _ in range(STEPS):
        idx = torch.randint(0, 10, (8,))
        offsets = torch.tensor([0, 3, 5])
        w = torch.rand(8)
        opt.zero_grad()
        e = bag(idx, offsets, per_sample_weights=w)            # (3, 4)
        logp = proj(e).log_softmax(-1).unsqueeze(1).expand(3, 2, 5).contiguous()  # T=3, N=2, C=5
        ctc = F.ctc_loss(logp, torch.tensor([[1, 2], [3, 3]]), torch.tensor([3, 3]),
                         torch.tensor([2, 1]))
        grid = F.affine_grid(theta, (1, 1, 4, 4), align_corners=False)
        warped = F.grid_sample(img, grid, align_corners=False)
        (ctc + warped.pow(2).mean()).backward()
        opt.step()
    return _params(bag, proj, theta=theta)


def quantization_aware_training() -> Result:
    """Eager-mode QAT: fake-quantize observers update their buffers in the forward."""
    import torch.ao.quantization as tq
    torch.manual_seed(0)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.quant = tq.QuantStub()
            self.fc1 = nn.Linear(4, 8)
            self.relu = nn.ReLU()
            self.fc2 = nn.Linear(8, 2)
            self.dequant = tq.DeQuantStub()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.dequant(self.fc2(self.relu(self.fc1(self.quant(x)))))

    model = Net().train()
    model.qconfig = tq.get_default_qat_qconfig("fbgemm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tq.prepare_qat(model, inplace=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for i in range(STEPS):
        x, y = _data()
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        if i == STEPS - 2:
            model.apply(tq.disable_observer)
    return _params(model)


def vmap_randomness_and_nested_grad() -> Result:
    """torch.func: grad of grad (a second derivative), vmap with randomness="different" over a
    dropout model, as diagnostics next to training."""
    from torch.func import functional_call, grad, vmap
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    stats = []
    for _ in range(STEPS):
        x, y = _data(out=1)
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        d2 = grad(grad(lambda s: torch.sin(s) * s))(torch.tensor(0.3))
        params = {k: v.detach() for k, v in model.named_parameters()}
        outs = vmap(lambda xi: functional_call(model, params, (xi,)), randomness="different")(x)
        stats += [d2, outs.sum()]
    return _params(model, stats=torch.stack(stats))


def optimizer_instance_hooks_and_more_optimizers() -> Result:
    """Per-optimizer step pre/post hooks, Adamax/ASGD/Rprop (foreach), Adafactor when present."""
    torch.manual_seed(0)
    results: Result = {}
    makers = [lambda p: torch.optim.Adamax(p, lr=0.01, foreach=True),
              lambda p: torch.optim.ASGD(p, lr=0.01, foreach=True),
              lambda p: torch.optim.Rprop(p, lr=0.01, foreach=True)]
    if hasattr(torch.optim, "Adafactor"):
        makers.append(lambda p: torch.optim.Adafactor(p, lr=0.01))
    for j, make in enumerate(makers):
        model = _mlp()
        opt = make(model.parameters())
        calls = []
        opt.register_step_pre_hook(lambda o, a, k: calls.append(1))
        opt.register_step_post_hook(lambda o, a, k: calls.append(2))
        for _ in range(STEPS):
            x, y = _data()
            opt.zero_grad()
            F.mse_loss(model(x), y).backward()
            opt.step()
        assert len(calls) == 2 * STEPS
        results.update({f"{j}.{k}": v for k, v in _params(model).items()})
    return results


# ---------------------------------------------------------------- the table

def _has_fused_cpu(cls: type) -> bool:
    try:
        p = torch.zeros(1, requires_grad=True)
        p.grad = torch.zeros(1)
        cls([p], lr=0.1, fused=True).step()
        return True
    except (RuntimeError, ValueError, TypeError):
        return False


def _has_dynamo() -> bool:
    try:
        import torch._dynamo  # noqa: F401
        return sys.version_info < (3, 14) or True
    except Exception:
        return False


def _skip(cond: bool, reason: str) -> list[Any]:
    return [pytest.mark.skipif(cond, reason=reason)]


_LINUX = sys.platform.startswith("linux")
_DIST = torch.distributed.is_available() and torch.distributed.is_gloo_available()

# (program, expected codes under the guard, marks). An expected code is a finding that correct code
# gets by design; each says why next to it.
PROGRAMS: list[tuple[Callable[[], Result], tuple[str, ...], list[Any]]] = [
    (forward_ad_dual_numbers, (), []),
    (func_jvp_penalty, (), []),
    (func_jvp_as_a_metric, (), []),
    (save_on_cpu_forward, (), []),
    (user_saved_tensor_hooks, (), []),
    (allow_mutation_on_saved_tensors, (), []),
    (functional_jacobian_penalty, (), []),
    (functional_hessian_vjp_hvp, (), []),
    (hvp_power_iteration_in_training, (), []),
    (tensor_hooks_and_retain_grad, (), []),
    (param_hooks_clip_per_parameter, (), []),
    (module_full_backward_hooks, (), []),
    (multi_grad_hook, (), []),
    (post_accumulate_grad_optimizer_in_backward, (), []),
    (anomaly_detection_training, (), []),
    (custom_functions, (), []),
    (jit_scripted_module, (), []),
    (jit_scripted_function_in_loss, (), []),
    (compile_model_eager, (), _skip(not _has_dynamo(), "torch.compile unavailable")),
    # GG902 (info): a CompiledFunctionBackward node hides the compiled ops; said once, by design
    (compile_model_aot_eager, ("GG902",), _skip(not _has_dynamo(), "torch.compile unavailable")),
    (compile_training_step_eager, (), _skip(not _has_dynamo(), "torch.compile unavailable")),
    (compile_training_step_aot_eager, ("GG902",), _skip(not _has_dynamo(), "torch.compile unavailable")),
    (autocast_bf16_grad_scaler, (), []),
    (optim_foreach_zero_grad_keep, (), []),
    (optim_nadam_radam_foreach, (), []),
    (optim_fused_adagrad, (), _skip(not _has_fused_cpu(torch.optim.Adagrad), "no fused Adagrad on CPU")),
    (optim_fused_sgd_adamw, (), _skip(not (_has_fused_cpu(torch.optim.SGD) and _has_fused_cpu(torch.optim.AdamW)),
                                      "no fused SGD/AdamW on CPU")),
    (optim_lr_scheduler_chain, (), []),
    (parametrize_orthogonal_and_weight_norm, (), []),
    (user_parametrization_symmetric, (), []),
    (old_weight_norm_hook, (), []),
    (complex_parameters, (), []),
    (complex_fft_layer, (), []),
    (multihead_attention_and_sdpa, (), []),
    (transformer_with_key_padding_mask, (), []),
    (frozen_transformer_features, (), []),
    (fx_trace_of_attention_model, (), []),
    (compiled_attention_model_eval, (), _skip(not _has_dynamo(), "torch.compile unavailable")),
    (scripted_transformer_layer, (), []),
    (functional_call_stateless, (), []),
    (functional_call_fast_weights, (), []),
    (requires_grad_toggling_per_phase, (), []),
    # GG008 (info): the optimizer still holds the frozen backbone; told, by design, since
    # freezing after the optimizer is built is often a plan (unfrozen later) and often a slip
    (freeze_then_unfreeze_backbone, ("GG008",), []),
    (legal_inplace_updates, (), []),
    (inplace_relu_and_index_put, (), []),
    (dataloader_two_workers, (), _skip(not _LINUX, "fork start method")),
    (ddp_single_process_gloo, (), _skip(not (_DIST and _LINUX), "gloo unavailable")),
    (hogwild_fork, (), _skip(not _LINUX, "fork start method")),
    (hogwild_spawn, (), [pytest.mark.slow]),
    (gradient_edge_inputs, (), []),
    (grads_batched_and_materialized, (), []),
    (jacobian_forward_mode_strategy, (), []),
    (custom_function_with_jvp, (), []),
    (gradcheck_of_a_custom_function, (), []),
    (node_hooks_on_grad_fn, (), []),
    (selective_activation_checkpoint, (), []),
    (checkpoint_forward_runs_counted, (), []),
    (custom_function_inside_checkpoint, (), []),
    (vector_to_parameters_evolution, (), []),
    (checkpoint_save_and_resume, (), []),
    (meta_device_init_to_empty, (), []),
    (lazy_modules, (), []),
    (device_context_and_default_dtype, (), []),
    (tensor_subclass_inputs, (), []),
    (fx_symbolic_trace_training, (), []),
    (jit_trace_training, (), []),
    (profiler_around_training, (), []),
    (training_in_a_thread, (), []),
    (data_parallel_on_cpu, (), []),
    (packed_sequence_lstm, (), []),
    (embedding_bag_ctc_grid_sample, (), []),
    (quantization_aware_training, (), []),
    (vmap_randomness_and_nested_grad, (), []),
    (optimizer_instance_hooks_and_more_optimizers, (), []),
]
BY_NAME = {p.__name__: (p, codes) for p, codes, _ in PROGRAMS}


def _params_of(entries: Any) -> list[Any]:
    return [pytest.param(p, codes, id=p.__name__, marks=marks) for p, codes, marks in entries]


def assert_same(plain: Result, guarded: Result) -> None:
    assert plain.keys() == guarded.keys()
    for k in plain:
        a, b = plain[k], guarded[k]
        assert a.dtype == b.dtype and a.shape == b.shape, k
        assert torch.equal(a.reshape(-1).contiguous().view(torch.uint8),
                           b.reshape(-1).contiguous().view(torch.uint8)), f"{k} differs"


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.mark.parametrize("record", [2, None], ids=["default", "record-all"])
@pytest.mark.parametrize("program,codes", _params_of(PROGRAMS))
def test_guarded_program_is_quiet_and_bit_identical(program: Callable[[], Result], codes: tuple[str, ...],
                                                    record: int | None) -> None:
    plain = program()
    before = global_state()
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        with GraphGuard(mode="raise", record_iterations=record) as guard:
            guarded = program()
    assert global_state() == before
    assert sorted({f.code for f in guard.findings}) == sorted(codes)
    assert {f.severity for f in guard.findings} <= {"info"}  # an expected finding is information
    assert not [w for w in shown if issubclass(w.category, GraphGuardWarning)]
    assert_same(plain, guarded)


DRIVER = """
import sys, torch
sys.path.insert(0, {tests!r})
import test_feature_sweep as sweep
results = {{}}
for name in sys.argv[2:]:
    results[name] = sweep.BY_NAME[name][0]()
torch.save(results, sys.argv[1])
"""


@pytest.mark.slow
def test_graphguard_run_of_every_program(tmp_path: Path) -> None:
    """All programs (but the slow spawn) in one `graphguard run`: exit 0, only the expected codes,
    results bit-identical to the plain runs made here."""
    names = [p.__name__ for p, _, marks in PROGRAMS
             if not any(getattr(m, "name", "") == "slow" for m in marks)
             and not any(getattr(m, "name", "") == "skipif" and m.args[0] for m in marks)]
    script = tmp_path / "driver.py"
    script.write_text(DRIVER.format(tests=str(Path(__file__).parent)), encoding="utf-8")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parent.parent), env.get("PYTHONPATH", "")])
    p = subprocess.run([sys.executable, "-m", "graphguard", "run", "--no-diagrams", "--json", "r.json",
                        str(script), "guarded.pt", *names], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-4000:]
    # The reference is the same driver run plainly in a fresh interpreter with the same environment:
    # in this worker, earlier tests have left torch's process-wide caches in another state.
    plain = subprocess.run([sys.executable, str(script), "plain.pt", *names], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0, plain.stderr[-4000:]
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    # one guard over all: the later programs run in light mode, where an info may not be told
    expected = {c for n in names for c in BY_NAME[n][1]}
    assert {f["code"] for f in report["findings"]} <= expected
    assert {f["severity"] for f in report["findings"]} <= {"info"}
    guarded = torch.load(tmp_path / "guarded.pt")
    reference = torch.load(tmp_path / "plain.pt")
    for name in names:
        assert_same(reference[name], guarded[name])
