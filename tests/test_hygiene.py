"""After a guard exits, normally or by any exception, torch's global state is exactly as before:
function-mode stack, saved-tensor hooks, optimizer global hooks, anomaly and grad modes, and every
function graphguard patches. Nested guards observe independently and unwind in either order; a
guard works as a decorator; a guard cannot be entered twice.
"""
from __future__ import annotations

import sys
import warnings
from typing import Any, Callable

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim.optimizer as optim_mod

import graphguard.install.optimizer as optimizer_install
from graphguard import GraphGuard, GraphGuardUsageError, GraphMisuseError, active_guards
from graphguard.capture.recorder import Recorder

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def state() -> dict[str, Any]:
    """Everything a guard touches (or could touch) that outlives it, compared by identity."""
    return {
        "mode_stack": tuple(torch._C._get_function_stack_at(i)
                            for i in range(torch._C._len_torch_function_stack())),
        "saved_hooks_top": torch._C._autograd._top_saved_tensors_default_hooks(True),
        "saved_hooks_enabled": torch._C._autograd._saved_tensors_hooks_is_enabled(),
        "opt_pre_hooks": tuple(optim_mod._global_optimizer_pre_hooks.items()),
        "opt_post_hooks": tuple(optim_mod._global_optimizer_post_hooks.items()),
        "anomaly": torch.is_anomaly_enabled(),
        "anomaly_nan": torch.is_anomaly_check_nan_enabled(),
        "grad_enabled": torch.is_grad_enabled(),
        "inference_mode": torch.is_inference_mode_enabled(),
        "autograd.backward": torch.autograd.backward,
        "autograd.grad": torch.autograd.grad,
        "Tensor.backward": torch.Tensor.__dict__["backward"],
        "Optimizer.add_param_group": torch.optim.Optimizer.__dict__["add_param_group"],
        "Optimizer.step": torch.optim.Optimizer.__dict__.get("step"),
        "saved_tensors_hooks.__enter__": torch.autograd.graph.saved_tensors_hooks.__dict__["__enter__"],
        # the fast-path modules' __call__ (NOTE [fast paths see no mode]): inherited, not their own
        **{f"{name}.__call__": getattr(torch.nn, name).__dict__.get("__call__")
           for name in ("MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder")},
        "showwarning": warnings.showwarning,
        "warning_filters": tuple(warnings.filters),
        "trace": sys.gettrace(),
        "profile": sys.getprofile(),
        "active_guards": active_guards(),
        "num_threads": torch.get_num_threads(),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
    }


def assert_state(expected: dict[str, Any]) -> None:
    now = state()
    diff = {k: (expected[k], now[k]) for k in expected if expected[k] != now[k]}
    assert diff == {}


def train(steps: int = 3) -> nn.Module:
    """Clean training: crosses the light-mode switch (record_iterations=2)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(inplace=True), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(steps):
        opt.zero_grad()
        F.mse_loss(model(torch.randn(5, 4)), torch.randn(5, 1)).backward()
        opt.step()
    return model


# A second backward through a freed graph: GG003 within one iteration, GG001 across iterations.
REUSED = {"GG001", "GG003"}


def reused(guard: GraphGuard) -> list[str]:
    return [f.code for f in guard.findings if f.code in REUSED]


def stale_graph_backward() -> None:
    """A backward through an already freed graph (GraphMisuseError in raise mode)."""
    w = torch.randn(3, requires_grad=True)
    shared = w.exp()
    shared.sum().backward()
    shared.sum().backward()


@pytest.fixture(autouse=True, scope="module")
def warm_up() -> None:
    """torch imports parts of itself lazily on the first optimizer step (adding warning filters):
    do that before any snapshot, so that only graphguard's effects are compared."""
    train(1)


def _raise(exc: BaseException) -> Callable[[], None]:
    def body() -> None:
        train(1)
        raise exc
    return body


EXITS = {
    "normal": (lambda: train(3), None),
    "value-error": (_raise(ValueError("user bug")), ValueError),
    "keyboard-interrupt": (_raise(KeyboardInterrupt()), KeyboardInterrupt),
    "system-exit": (_raise(SystemExit(3)), SystemExit),
    "graph-misuse": (stale_graph_backward, GraphMisuseError),
    "torch-error-in-backward": (lambda: torch.ones(2).sum().backward(), RuntimeError),
}


@pytest.mark.parametrize("record", [2, None], ids=["light-mode", "recording"])
@pytest.mark.parametrize("mode", ["raise", "warn", "collect"])
@pytest.mark.parametrize("how", list(EXITS))
def test_exit_restores_everything(how: str, mode: str, record: int | None) -> None:
    body, exc = EXITS[how]
    if how == "graph-misuse" and mode != "raise":
        exc = RuntimeError  # PyTorch's own error, after the finding was reported
    before = state()
    if exc is None:
        with GraphGuard(mode=mode, record_iterations=record):
            body()
    else:
        with pytest.raises(exc):
            with GraphGuard(mode=mode, record_iterations=record):
                body()
    assert_state(before)


def test_exit_inside_a_backward_hook_interrupt() -> None:
    """KeyboardInterrupt raised while the engine runs (a tensor hook): the guard unwinds cleanly,
    and a guard that caught it mid-backward is usable again afterwards."""
    before = state()
    w = nn.Parameter(torch.randn(3))

    def interrupt(grad: torch.Tensor) -> torch.Tensor:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        with GraphGuard():
            y = w * 2
            y.register_hook(interrupt)
            y.sum().backward()
    assert_state(before)

    with GraphGuard(mode="collect") as guard:
        y = w * 2
        h = y.register_hook(interrupt)
        with pytest.raises(KeyboardInterrupt):
            y.sum().backward()
        h.remove()
        stale_graph_backward_tolerant = w.exp()
        stale_graph_backward_tolerant.sum().backward()
        with pytest.raises(RuntimeError):
            stale_graph_backward_tolerant.sum().backward()
    assert reused(guard)  # still watching after the interrupt
    assert_state(before)


def test_everything_is_installed_while_active() -> None:
    """The state check above is meaningful: each item really changes while a guard is active."""
    before = state()
    with GraphGuard():
        during = state()
    changed = {k for k in before if before[k] != during[k]}
    assert {"mode_stack", "saved_hooks_top", "opt_pre_hooks", "opt_post_hooks", "autograd.backward",
            "autograd.grad", "Optimizer.add_param_group", "active_guards",
            "MultiheadAttention.__call__", "saved_tensors_hooks.__enter__"} <= changed


def test_pack_hook_no_longer_called_after_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    orig = Recorder.pack

    def counting(self: Recorder, t: torch.Tensor) -> Any:
        calls.append(1)
        return orig(self, t)

    monkeypatch.setattr(Recorder, "pack", counting)
    w = torch.randn(4, requires_grad=True)
    with GraphGuard():
        w.exp().sum().backward()
    inside = len(calls)
    assert inside > 0
    w.exp().sum().backward()
    (w * w).sin().sum().backward()
    assert len(calls) == inside


def test_user_hooks_and_modes_survive_the_guard() -> None:
    """The user's own saved-tensor hooks, function mode and optimizer hooks, set up before the
    guard, are still in place and still called after it."""
    packed = []

    class Counting(torch.overrides.TorchFunctionMode):
        calls = 0

        def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
            Counting.calls += 1
            return func(*args, **(kwargs or {}))

    stepped = []
    handle = optim_mod.register_optimizer_step_post_hook(lambda *a: stepped.append(1))
    try:
        with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t, lambda t: t):
            with Counting():
                before = state()
                with GraphGuard():
                    train(2)
                assert_state(before)
                n_pack, n_calls, n_steps = len(packed), Counting.calls, len(stepped)
                train(1)
                assert len(packed) > n_pack and Counting.calls > n_calls and len(stepped) > n_steps
    finally:
        handle.remove()


def test_anomaly_mode_set_by_user_is_kept() -> None:
    with torch.autograd.set_detect_anomaly(True, check_nan=False):
        before = state()
        with GraphGuard():
            train(1)
        assert_state(before)
    assert not torch.is_anomaly_enabled()


def test_guard_inside_disabled_saved_tensor_hooks() -> None:
    """Where PyTorch forbids saved-tensor hooks the guard still runs (GG901 says what is off)."""
    with torch.autograd.graph.disable_saved_tensors_hooks("no hooks in this region"):
        before = state()
        with GraphGuard(mode="collect") as guard:
            model = train(3)
        assert_state(before)
    internal = [f for f in guard.findings if f.code == "GG901"]
    assert any("saved-tensor hooks" in f.args["doing"] for f in internal)
    assert model is not None


# ---- nesting ---------------------------------------------------------------------------------

def test_nested_guards_observe_independently() -> None:
    before = state()
    with GraphGuard(mode="collect") as outer:
        with GraphGuard(mode="collect") as inner:
            with pytest.raises(RuntimeError):
                stale_graph_backward()
        after_inner = state()
        w = torch.randn(3, requires_grad=True)
        h = w.sin()
        h.sum().backward()
        with pytest.raises(RuntimeError):
            h.sum().backward()  # only the outer guard is left to see this one
    assert_state(before)
    assert len(reused(inner)) == 1 and len(reused(outer)) == 2
    assert [f.location.line for f in outer.findings][0] == inner.findings[0].location.line
    assert after_inner["active_guards"] == (outer,)


def test_inner_exit_leaves_outer_intact() -> None:
    with GraphGuard(mode="collect") as outer:
        mid = state()
        with GraphGuard(mode="collect", record_iterations=None):
            train(3)  # the outer guard goes light meanwhile
        # Light mode takes the outer guard's saved-tensor hooks off (NOTE [light mode without
        # saved-tensor hooks] in guard.py); everything else is as before the inner guard.
        top = torch._C._autograd._top_saved_tensors_default_hooks(True)
        assert not outer.rec.saved_hooks_on and top is None
        assert_state({k: v for k, v in mid.items() if k != "saved_hooks_top"})
        with pytest.raises(RuntimeError):
            stale_graph_backward()
    assert reused(outer)


@pytest.mark.parametrize("exit_order", ["inner-first", "outer-first"])
@pytest.mark.parametrize("light", [False, True], ids=["recording", "light"])
def test_nested_exit_in_either_order(exit_order: str, light: bool) -> None:
    before = state()
    outer = GraphGuard(mode="collect", record_iterations=1 if light else None)
    inner = GraphGuard(mode="collect", record_iterations=1 if light else None)
    outer.__enter__()
    if light:
        train(2)  # the outer mode leaves the stack before the inner one is pushed
    inner.__enter__()
    if light:
        train(2)
    first, second = (inner, outer) if exit_order == "inner-first" else (outer, inner)
    first.__exit__(None, None, None)
    # The remaining guard still watches: recording, with its own hooks on top; light, with none
    # (its backward check reads PyTorch's own version counters instead).
    assert active_guards() == (second,)
    top = torch._C._autograd._top_saved_tensors_default_hooks(True)
    if light:
        assert not second.rec.saved_hooks_on and top is None
    else:
        assert top is not None and top[0] == second.rec.pack
    with pytest.raises(RuntimeError):
        stale_graph_backward()
    assert reused(second)
    n_first = len(first.findings)
    second.__exit__(None, None, None)
    assert_state(before)
    assert len(first.findings) == n_first  # the exited guard saw nothing more


def test_exited_wrapper_left_under_a_foreign_patch_passes_through() -> None:
    """Someone patches torch.autograd.backward on top of ours; after our exit their patch stays
    (it is theirs to undo) and ours underneath no longer watches anything."""
    original = torch.autograd.backward
    with GraphGuard(mode="collect") as guard:
        ours = torch.autograd.backward

        def theirs(*args: Any, **kwargs: Any) -> Any:
            return ours(*args, **kwargs)

        torch.autograd.backward = theirs
    try:
        assert torch.autograd.backward is theirs
        w = torch.randn(2, requires_grad=True)
        calls = guard.backward_calls
        torch.autograd.backward(w.exp().sum())
        assert guard.backward_calls == calls and w.grad is not None
    finally:
        torch.autograd.backward = original


# ---- decorator and re-entry ------------------------------------------------------------------

def test_decorator_gives_each_call_a_fresh_guard() -> None:
    before = state()

    @GraphGuard(mode="collect")
    def buggy() -> None:
        assert len(active_guards()) == 1
        with pytest.raises(RuntimeError):
            stale_graph_backward()

    buggy()
    first = buggy.guard
    assert_state(before)
    buggy()
    assert buggy.guard is not first
    assert len(reused(first)) == 1 and reused(first) == reused(buggy.guard)
    assert_state(before)


def test_decorated_function_raising_restores_state() -> None:
    before = state()

    @GraphGuard()
    def interrupted() -> None:
        train(1)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        interrupted()
    assert_state(before)


def test_reentering_a_guard_is_a_usage_error() -> None:
    before = state()
    guard = GraphGuard()
    with guard:
        mid = state()
        with pytest.raises(GraphGuardUsageError, match="twice"):
            guard.__enter__()
        assert_state(mid)  # the failed re-entry changed nothing
        train(1)
    with pytest.raises(GraphGuardUsageError, match="twice"):
        with guard:
            pass
    assert_state(before)


def test_bad_arguments_are_usage_errors() -> None:
    before = state()
    with pytest.raises(GraphGuardUsageError):
        GraphGuard(mode="loud")
    with pytest.raises(GraphGuardUsageError):
        GraphGuard(select=["GG999"])
    with pytest.raises(GraphGuardUsageError):
        GraphGuard(ignore=["XX"])
    assert_state(before)


def test_failed_install_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception while installing (here: the optimizer post hook) undoes what was installed;
    the block runs unwatched and GG901 says so."""
    before = state()

    def broken(hook: Any) -> Any:
        raise RuntimeError("cannot register")

    monkeypatch.setattr(optimizer_install, "register_optimizer_step_post_hook", broken)
    with GraphGuard(mode="collect") as guard:
        assert_state(before)
        train(2)
    assert_state(before)
    assert [f.code for f in guard.findings] == ["GG901"]
    assert "cannot register" in guard.findings[0].details["traceback"]


def test_interrupt_during_install_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    before = state()

    def interrupted(hook: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(optimizer_install, "register_optimizer_step_post_hook", interrupted)
    with pytest.raises(KeyboardInterrupt):
        with GraphGuard():
            pass
    assert_state(before)


def test_recording_switched_back_on_from_inside_the_mode() -> None:
    """A finding of severity error switches full recording back on; when it is found inside the
    mode's own handler (a backward seen by the mode, after the light-mode switch happened in
    another backward), the mode must not end up on the stack twice."""
    before = state()
    with GraphGuard(mode="collect") as guard:
        for _ in range(3):  # no optimizer: each freeing backward ends an iteration -> light mode
            w = torch.randn(3, requires_grad=True)
            w.sin().sum().backward()
        h = w.exp()
        h.sum().backward()
        with pytest.raises(RuntimeError):
            h.sum().backward()
        assert guard.rec.recording
        assert list(state()["mode_stack"]).count(guard._mode) == 1
    assert reused(guard)
    assert_state(before)
