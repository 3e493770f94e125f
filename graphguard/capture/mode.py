"""The TorchFunctionMode that feeds every torch call of the user's code to the recorder."""
from __future__ import annotations

import functools
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from .failsafe import failsafe
from .graph import iter_tensors
from .ops import BACKWARD_FUNCS
from .recorder import Recorder

__all__ = ["FAST_PATH_MODULES", "GuardMode", "fast_path_call", "saved_hooks_enter"]

_is_compiling = torch.compiler.is_compiling


class GuardMode(TorchFunctionMode):
    """Routes torch calls to a Recorder; returns at once for property reads and backward calls."""

    def __init__(self, recorder: Recorder) -> None:
        super().__init__()
        self.rec = recorder

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        if _is_compiling():
            # torch.compile is tracing this call (Dynamo inlines active modes): stay out of the
            # graph, or Dynamo would trace the recorder and break the graph at every op. Ops in
            # compiled code are not seen; rule GG902 says so when their graph reaches a backward.
            return func(*args, **(kwargs or {}))
        if kwargs is None:
            kwargs = {}
        rec = self.rec
        name = getattr(func, "__name__", "")
        if name == "__get__":
            # Property reads (`x.shape`, `x.grad`) are 30-60% of all calls: only `.grad` matters.
            if not rec.busy and rec.recording and func.__self__.__name__ == "grad":
                failsafe(rec.sink.internal_error, "recording a .grad read", rec.on_grad_read, args[0])
            return func(*args, **kwargs)
        if rec.busy:
            return func(*args, **kwargs)
        if func in BACKWARD_FUNCS:
            # The guard's own wrappers of torch.autograd.backward/grad catch calls that never
            # reach a mode (light mode); this catches `Tensor.backward` and early imports.
            return rec.sink.on_backward(func, args, kwargs)
        if not rec.recording:
            return func(*args, **kwargs)
        return rec.on_op(func, name, args, kwargs)


# NOTE [fast paths see no mode]
# nn.MultiheadAttention, nn.TransformerEncoderLayer and nn.TransformerEncoder take a fused "fast
# path" in evaluation (eval(), and no_grad or nothing requiring grad) only when
# `torch.overrides.has_torch_function(...)` is False, and any function mode on the stack makes it
# True: under the guard, a validation pass would run the slow path and compute different bits.
# While the guard's modes are the only ones on the stack, such a call runs with them taken off
# (restored on the way out, also when it raises), recorded as one op of the module whose inputs
# are its tensor arguments and parameters (so a no_grad pass still leaves its cut, an
# inference_mode pass its tensors' line). Another mode below or above ours would block the fast
# path in plain PyTorch too: then nothing changes. The class's `__call__` is wrapped, not its
# `forward`: torch.jit.script compiles `forward` from its source and would resolve the names in
# it against the wrapper's module; nothing compiles `__call__` (the module's hooks run inside,
# aside too). The wrapper lives here because Dynamo skips graphguard's other modules: it must
# inline this one (while compiling it calls the original, untouched).
FAST_PATH_MODULES = ("MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder")


def _guard_modes_only() -> int:
    """The number of function modes on the stack when all are graphguard's, else 0."""
    n = torch._C._len_torch_function_stack()
    for i in range(n):
        if not isinstance(torch._C._get_function_stack_at(i), GuardMode):
            return 0
    return n


def _aside(module: Any, args: tuple, kwargs: dict) -> tuple[int, list]:
    """How many modes to take off for this call (0: none), and its tensors and parameters."""
    n = _guard_modes_only()
    if not n:
        return 0, []
    tensors = [t for a in args for t in iter_tensors(a, 1)]
    if kwargs:
        tensors.extend(t for a in kwargs.values() for t in iter_tensors(a, 1))
    tensors.extend(module.parameters())
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return 0, []  # no fast path: the output has history
    return n, tensors


def fast_path_call(cls: type, rec: Recorder, foreign: Any) -> Any:
    """`cls.__call__` (a fast-path module class's) run with the guard's modes off the stack
    when the fast path may be taken (NOTE [fast paths see no mode]). An inherited `__call__`
    (nn.Module's) is looked up at each call, past `cls`: a tracer that patches nn.Module.__call__
    while the guard is on (torch.fx's symbolic_trace: these modules are its leaves) is called."""
    own = cls.__dict__.get("__call__")  # another guard's wrapper, or the user's own

    def orig(self: Any, *args: Any, **kwargs: Any) -> Any:
        if own is not None:
            return own(self, *args, **kwargs)
        return super(cls, self).__call__(*args, **kwargs)

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _is_compiling() or self.training or rec.busy or foreign():
            return orig(self, *args, **kwargs)
        try:
            n, tensors = _aside(self, args, kwargs)
        except Exception as exc:  # a graphguard bug: the call as it would run without this
            rec.sink.internal_error(exc, "checking a fast-path module call")
            n = 0
        if not n:
            return orig(self, *args, **kwargs)

        def call(*_: Any) -> Any:
            modes = [torch._C._pop_torch_function_stack() for _ in range(n)]
            try:
                return orig(self, *args, **kwargs)
            finally:
                for m in reversed(modes):
                    torch._C._push_on_torch_function_stack(m)

        if rec.recording:
            return rec.on_op(call, type(self).__name__, tuple(tensors), {})
        return call()

    functools.update_wrapper(__call__, own if own is not None else cls.__call__)
    return __call__


def saved_hooks_enter(orig: Any, rec: Recorder) -> Any:
    """`torch.autograd.graph.saved_tensors_hooks.__enter__` (and so every subclass's: a
    non-reentrant checkpoint's, save_on_cpu) that first notes that hooks of someone else may
    pack saved values (NOTE [saved values behind other hooks] in capture/saved.py). Here, not in
    guard.py, for the reason the fast-path wrapper is: Dynamo must be able to inline it."""

    def __enter__(self: Any) -> Any:
        if not _is_compiling():
            rec.foreign_hooks_entered = True
        return orig(self)

    functools.update_wrapper(__enter__, orig)
    return __enter__
