"""The reentrant checkpoint hook (GG015): `CheckpointFunction.apply`, seen from outside.

The mode never sees an autograd Function's `apply` (only the ops its forward runs, under no_grad),
so the guard wraps `torch.utils.checkpoint.CheckpointFunction.apply` while it is entered: every
spelling of the reentrant checkpoint (`checkpoint(..., use_reentrant=True)`, the old default,
`checkpoint_sequential`, wrappers of them) goes through it. The wrapper notes the requires-grad
tensors that the checkpointed ops read (the recorder's `ckpt_used`) and reports the call to the
recorder when it returns; it never changes the call's arguments or result.
"""
from __future__ import annotations

from typing import Any, Callable

import torch

from .failsafe import failsafe
from .recorder import Recorder

__all__ = ["install_checkpoint_hook"]


def install_checkpoint_hook(rec: Recorder, foreign: Callable[[], bool]) -> Callable[[], None]:
    """Wrap CheckpointFunction.apply for `rec`; returns the undo (a no-op when torch has none)."""
    try:
        from torch.utils.checkpoint import CheckpointFunction
    except ImportError:  # pragma: no cover - every supported torch has it
        return lambda: None
    had = "apply" in CheckpointFunction.__dict__
    old = CheckpointFunction.__dict__.get("apply")
    base = CheckpointFunction.apply.__func__  # Function.apply (or an earlier wrapper's function)

    def apply(cls: Any, *args: Any, **kwargs: Any) -> Any:
        if foreign() or rec.busy or not rec.recording or torch.compiler.is_compiling():
            return base(cls, *args, **kwargs)
        used: list = []
        prev, rec.ckpt_used = rec.ckpt_used, used
        grad_on = torch.is_grad_enabled()
        try:
            out = base(cls, *args, **kwargs)
        finally:
            rec.ckpt_used = prev
        failsafe(rec.sink.internal_error, "checking a checkpoint call", rec.on_checkpoint,
                 args, out, used, grad_on)
        return out

    ours = classmethod(apply)
    CheckpointFunction.apply = ours

    def undo() -> None:
        if CheckpointFunction.__dict__.get("apply") is ours:
            if had:
                CheckpointFunction.apply = old
            else:
                del CheckpointFunction.apply

    return undo
