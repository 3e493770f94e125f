"""The module hooks: `nn.Parameter.__new__`, the reentrant checkpoint (GG015),
DistributedDataParallel's forward (GG017, GG018), and the modules with a fused fast path."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

import torch

from ..capture.checkpoint import install_checkpoint_hook
from ..capture.ddp import install_ddp_hook
from ..capture.failsafe import failsafe
from ..capture.mode import FAST_PATH_MODULES, fast_path_call
from ..capture.ranks import RankTracker
from ..capture.recorder import Recorder
from .undo import Undos

__all__ = ["module_hooks"]


@contextmanager
def module_hooks(rec: Recorder, foreign: Callable[[], bool],
                 internal_error: Callable[[BaseException, str], None], ranks: RankTracker,
                 errors: list[BaseException], guard: Any) -> Iterator[None]:
    """Every module-level hook of `rec` installed while entered."""
    with Undos(errors) as undo:
        new = _wrap_parameter_new(torch.nn.Parameter.__new__, rec, foreign, internal_error)
        undo.patch(torch.nn.Parameter, "__new__", new, guard)
        undo.on_exit(install_checkpoint_hook(rec, foreign))  # GG015
        undo.on_exit(install_ddp_hook(rec, foreign, ranks))  # GG017, GG018
        for name in FAST_PATH_MODULES:  # NOTE [fast paths see no mode] (capture/mode.py)
            cls = getattr(torch.nn, name)
            undo.patch(cls, "__call__", fast_path_call(cls, rec, foreign), guard)
        yield


def _wrap_parameter_new(orig: Callable[..., Any], rec: Recorder, foreign: Callable[[], bool],
                        internal_error: Callable[[BaseException, str], None]) -> Callable[..., Any]:
    """`nn.Parameter(h)` of a tensor with history makes a new leaf in C++, out of the mode's
    sight: while recording, the dropped history is recorded as a cut (GG008's reason)."""

    def __new__(cls: Any, data: Any = None, requires_grad: bool = True) -> Any:
        p = orig(cls, data, requires_grad)
        if (rec.recording and isinstance(data, torch.Tensor) and data.grad_fn is not None
                and torch.is_grad_enabled() and not rec.busy and not foreign()
                and not torch.compiler.is_compiling()):
            failsafe(internal_error, "recording an op", rec.on_new_leaf, "nn.Parameter", data)
        return p

    return __new__
