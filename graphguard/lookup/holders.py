"""Find what the user's frames hold that carries autograd history: tensors with a grad_fn, and
containers (lists, deques, dicts, a logger's attributes) of them. Looked up at iteration ends
only, and the caller drops the result before the user's code runs again.
"""
from __future__ import annotations

import collections
import itertools
import sys
import types
from dataclasses import dataclass, field
from typing import Any, Iterator

import torch

from ..model import Frame
from ..capture.sites import user_frames
from ..capture.usercode import is_user_object
from .names import SKIP_TYPES, candidates

__all__ = ["Holder", "find_holders", "MAX_ITEMS"]

MAX_ITEMS = 256  # elements of one container looked at (the newest ones)
_SEQ = (list, tuple, collections.deque)


@dataclass
class Holder:
    """A named place that holds tensors with history. Holds them: drop it soon."""

    name: str  # `total_loss`, `stats['loss']`, `self.history`, `logger.losses`
    kind: str  # tensor | container
    frame: Frame  # the frame whose variable the name starts from
    tensors: list[torch.Tensor] = field(default_factory=list)  # with grad_fn
    length: int = 0  # elements in the container (all of them, not only those looked at)


def _history(t: Any) -> bool:
    if not isinstance(t, torch.Tensor):
        return False
    try:
        return t.grad_fn is not None
    except RuntimeError:  # a no_grad view whose base changed in place refuses to say
        return False


def _elements(value: Any) -> Iterator[Any]:
    """The newest elements of a sequence, and tensors one level down (`(loss, acc)` tuples)."""
    # the newest elements, without copying a long container
    seq = value[-MAX_ITEMS:] if isinstance(value, (list, tuple)) else \
        list(itertools.islice(reversed(value), MAX_ITEMS))
    for x in seq:
        if isinstance(x, (tuple, list)) and len(x) <= 8:
            yield from x
        elif isinstance(x, dict) and len(x) <= 8:
            yield from x.values()
        else:
            yield x


def _user_class(value: Any) -> bool:
    """Whether `value` is an instance of a class defined in the user's own files (not torch's,
    a library's or graphguard's), and not a module (its tensors are parameters and buffers)."""
    return not isinstance(value, torch.nn.Module) and is_user_object(value)


def _visit(name: str, value: Any, frame: Frame, depth: int, seen: set[int]) -> Iterator[Holder]:
    if isinstance(value, SKIP_TYPES) or id(value) in seen:
        return
    if isinstance(value, torch.Tensor):
        if _history(value):
            seen.add(id(value))
            yield Holder(name, "tensor", frame, [value])
        return
    if isinstance(value, _SEQ) and not isinstance(value, torch.Size):
        seen.add(id(value))
        ts = [x for x in _elements(value) if _history(x)]
        if ts:
            yield Holder(name, "container", frame, ts, len(value))
        return
    if isinstance(value, dict):
        seen.add(id(value))
        for k, v in list(itertools.islice(value.items(), MAX_ITEMS)):
            if isinstance(k, (str, int)) and isinstance(v, (torch.Tensor, *_SEQ)) and depth < 3:
                yield from _visit(f"{name}[{k!r}]", v, frame, depth + 1, seen)
        return
    if (depth == 0 or depth == 1 and _user_class(value)) and hasattr(value, "__dict__") \
            and type(value).__module__ != "builtins" \
            and not isinstance(value, (types.FrameType, torch.optim.Optimizer)):
        # one level into the user's own objects (a logger, a trainer, a module's plain attributes),
        # two when the outer one holds an object of a class the user wrote (`metrics.losses_track`
        # keeping the running sums): library objects one level down stay unvisited
        seen.add(id(value))
        try:
            items = list(itertools.islice(vars(value).items(), MAX_ITEMS))
        except TypeError:
            return
        private = "_" if isinstance(value, torch.nn.Module) else "__"  # torch's own bookkeeping
        for attr, v in items:
            if attr.startswith(private):
                continue
            if isinstance(v, (torch.Tensor, dict, *_SEQ)) or depth == 0 and _user_class(v):
                yield from _visit(f"{name}.{attr}", v, frame, depth + 1, seen)


def find_holders(frames: list[types.FrameType] | None = None) -> list[Holder]:
    """Every named holder of tensors with history in the user's frames, innermost frame first."""
    frames = frames if frames is not None else list(user_frames(sys._getframe(1)))
    out: list[Holder] = []
    seen: set[int] = set()
    globals_seen: set[int] = set()
    for f in frames:
        fr = Frame(f.f_code.co_filename, f.f_lineno, f.f_code.co_name)
        for name, value, scope in candidates(f):
            if scope == "global" and id(f.f_globals) in globals_seen:
                continue  # an outer frame of the same module: its globals were looked at
            out.extend(_visit(name, value, fr, 0, seen))
        globals_seen.add(id(f.f_globals))
    return out
