"""Find state that modules the user's frames hold keep with autograd history: a buffer or a plain
tensor attribute of a submodule (`model.bn.running_mean`, `model.encoder.cache`) that still has a
`grad_fn`. A running statistic updated outside `torch.no_grad()` is such a tensor: each iteration's
value is computed from the last one, so it keeps every iteration's graph, although the loss never
reads it (its backward never fails, memory only grows).

`find_holders` looks one level into the objects the frames name and skips a module's
`_buffers` and `_modules` (torch's bookkeeping); this walks the module tree instead. Looked up at
iteration ends only (GG101's looks), and the caller drops the result before the user's code runs
again.
"""
from __future__ import annotations

import sys
import types
from typing import Iterator

import torch

from ..capture.sites import user_frames
from ..model import Frame
from .holders import Holder
from .names import candidates

__all__ = ["module_state_holders", "MAX_MODULES"]

MAX_MODULES = 512  # submodules looked at per root module (a large model's state is not walked whole)


def _with_history(t: object) -> bool:
    if not isinstance(t, torch.Tensor) or isinstance(t, torch.nn.Parameter):
        return False
    try:
        return t.grad_fn is not None
    except RuntimeError:  # a no_grad view whose base changed in place refuses to say
        return False


def _state(module: torch.nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """(attribute, tensor) of a module's buffers and plain tensor attributes with history."""
    for attr, t in list(module._buffers.items()):
        if _with_history(t):
            yield attr, t
    for attr, t in list(vars(module).items()):
        if not attr.startswith("__") and _with_history(t):
            yield attr, t


def _walk(name: str, root: torch.nn.Module, frame: Frame, seen: set[int]) -> Iterator[Holder]:
    for k, (path, module) in enumerate(root.named_modules()):
        if k >= MAX_MODULES:
            return
        # as the program indexes it: `net[0].tracker`, not named_modules' `net.0.tracker`
        prefix = name + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in path.split(".") if p)
        for attr, t in _state(module):
            if id(t) in seen:
                continue
            seen.add(id(t))
            yield Holder(f"{prefix}.{attr}", "state", frame, [t])


def module_state_holders(frames: list[types.FrameType] | None = None,
                         skip: set[int] | None = None) -> list[Holder]:
    """Every buffer or plain tensor attribute with history of the modules named in the user's
    frames (innermost frame first), named from the frame that names the module
    (`model.bn.running_mean`), as holders of kind "state" (one tensor each). Tensors whose ids are in `skip` (already found by
    `find_holders`) are left out."""
    frames = frames if frames is not None else list(user_frames(sys._getframe(1)))
    seen: set[int] = set(skip or ())
    roots: set[int] = set()
    out: list[Holder] = []
    for f in frames:
        fr = Frame(f.f_code.co_filename, f.f_lineno, f.f_code.co_name)
        for name, value, _scope in candidates(f):
            if not isinstance(value, torch.nn.Module) or id(value) in roots:
                continue
            roots.add(id(value))
            out.extend(_walk(name, value, fr, seen))
    return out
