"""The optimizer hooks: the global step pre/post hooks, and the wrappers of `Optimizer`'s
`add_param_group`, `__init__` and `__setstate__` that tell the guard which parameters an
optimizer holds (GG008, GG011, GG016)."""
from __future__ import annotations

import functools
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch
from torch.optim.optimizer import (register_optimizer_step_post_hook,
                                   register_optimizer_step_pre_hook)

from ..capture.failsafe import failsafe
from ..capture.recorder import Recorder
from .undo import Undos

__all__ = ["OptimizerWatch", "optimizer_hooks"]

StepHook = Callable[[Any, Any, Any], Any]


@dataclass(frozen=True)
class OptimizerWatch:
    """What the optimizer hooks report to (the guard's methods)."""
    rec: Recorder
    foreign: Callable[[], bool]
    internal_error: Callable[[BaseException, str], None]
    record_param_group: Callable[[Any, list], None]  # (optimizer, its new group's parameters)
    empty_optimizer: Callable[[Any], None]  # an optimizer given no parameters
    record_unpickled: Callable[[Any], None]  # an optimizer made by unpickling
    step_pre_hook: StepHook
    step_post_hook: StepHook


@contextmanager
def optimizer_hooks(watch: OptimizerWatch, errors: list[BaseException], guard: Any) -> Iterator[None]:
    """The step hooks registered and `Optimizer`'s methods wrapped while entered."""
    opt = torch.optim.Optimizer
    with Undos(errors) as undo:
        undo.on_exit(register_optimizer_step_pre_hook(watch.step_pre_hook).remove)
        undo.on_exit(register_optimizer_step_post_hook(watch.step_post_hook).remove)
        undo.patch(opt, "add_param_group", _wrap_add_param_group(opt.add_param_group, watch), guard)
        undo.patch(opt, "__init__", _wrap_init(opt.__init__, watch), guard)
        undo.patch(opt, "__setstate__", _wrap_setstate(opt.__setstate__, watch), guard)
        yield


def listed_params(param_group: Any) -> dict:
    """The param group with its `params` as a list (what add_param_group will make of them)."""
    params = param_group.get("params") if isinstance(param_group, dict) else None
    params = [params] if isinstance(params, torch.Tensor) else list(params or [])
    return dict(param_group, params=params)


def listed_arg(params: Any) -> Any:
    """An optimizer's `params` argument as a list (what its constructor makes of it); a tensor
    or anything not iterable is handed on untouched (None), for PyTorch's own error."""
    if isinstance(params, torch.Tensor) or not hasattr(params, "__iter__"):
        return None
    return params if isinstance(params, list) else list(params)


def _wrap_add_param_group(orig: Callable[..., Any], watch: OptimizerWatch) -> Callable[..., Any]:
    @functools.wraps(orig)
    def add_param_group(opt: Any, param_group: dict) -> Any:
        if watch.foreign():
            return orig(opt, param_group)
        doing = "recording an optimizer's parameters"
        group = failsafe(watch.internal_error, doing, listed_params, param_group)
        if group is not None:
            param_group = group  # its params listed once: a generator is read only once
            failsafe(watch.internal_error, doing, watch.record_param_group, opt, group["params"])
        return orig(opt, param_group)

    return add_param_group


def _wrap_init(orig: Callable[..., Any], watch: OptimizerWatch) -> Callable[..., Any]:
    """Optimizer.__init__ (every optimizer's `super().__init__(params, defaults)`): an empty
    parameter list is reported (GG011) before PyTorch raises on it. Once per optimizer."""
    rec = watch.rec

    @functools.wraps(orig)
    def __init__(opt: Any, params: Any, *args: Any, **kwargs: Any) -> Any:
        if watch.foreign() or rec.busy:
            return orig(opt, params, *args, **kwargs)
        listed = failsafe(watch.internal_error, "recording an optimizer's parameters",
                          listed_arg, params)
        if listed is not None:
            params = listed  # a generator is read only once: by us, then handed on
            if not listed:
                failsafe(watch.internal_error, "checking an optimizer's parameters",
                         watch.empty_optimizer, opt)
        return orig(opt, params, *args, **kwargs)

    return __init__


def _wrap_setstate(orig: Callable[..., Any], watch: OptimizerWatch) -> Callable[..., Any]:
    """Optimizer.__setstate__: an optimizer made by unpickling (`copy.deepcopy`, `torch.load`
    of a whole object) gets its parameter groups without add_param_group. They are recorded
    as if added there, at the user's line that made the copy: an optimizer deep-copied apart
    from its model holds copies of the parameters, not the model's (GG008 points there)."""
    rec = watch.rec

    @functools.wraps(orig)
    def __setstate__(opt: Any, state: dict) -> Any:
        out = orig(opt, state)
        if not watch.foreign() and not rec.busy:
            failsafe(watch.internal_error, "recording an optimizer's parameters",
                     watch.record_unpickled, opt)
        return out

    return __setstate__
