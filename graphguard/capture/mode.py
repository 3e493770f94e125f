"""The TorchFunctionMode that feeds every torch call of the user's code to the recorder."""
from __future__ import annotations

from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from .failsafe import failsafe
from .ops import BACKWARD_FUNCS
from .recorder import Recorder

__all__ = ["GuardMode"]

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
