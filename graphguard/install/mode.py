"""The guard's function mode on torch's function-mode stack (capture/mode.py's GuardMode)."""
from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Iterator

import torch

from ..capture.mode import GuardMode

__all__ = ["function_mode", "mode_index", "inside_own_mode", "remove_mode", "step_aside",
           "step_back_in"]


@contextmanager
def function_mode(mode: GuardMode) -> Iterator[None]:
    """`mode` on the function-mode stack while entered; taken off wherever it then is."""
    torch._C._push_on_torch_function_stack(mode)
    yield
    remove_mode(mode)


def mode_index(mode: GuardMode) -> int:
    """Where `mode` is on the function-mode stack (-1: not there)."""
    n = torch._C._len_torch_function_stack()
    for i in range(n - 1, -1, -1):
        if torch._C._get_function_stack_at(i) is mode:
            return i
    return -1


def inside_own_mode(mode: GuardMode) -> bool:
    """True while `mode`'s __torch_function__ runs (a backward or loss call seen by the mode).
    torch pops a mode for the duration of its handler and pushes it back afterwards, so it is
    missing from the stack now: pushing it here would leave it on the stack twice. Only called
    when recording switches back on (rare), so walking the frames is cheap enough."""
    code = type(mode).__torch_function__.__code__
    f: Any = sys._getframe(1)
    while f is not None:
        if f.f_code is code and f.f_locals.get("self") is mode:
            return True
        f = f.f_back
    return False


def remove_mode(mode: GuardMode) -> None:
    """Take `mode` off the function-mode stack, wherever it is, keeping the others."""
    i = mode_index(mode)
    if i < 0:
        return
    above = []
    while torch._C._len_torch_function_stack() > i + 1:
        above.append(torch._C._pop_torch_function_stack())
    torch._C._pop_torch_function_stack()
    for m in reversed(above):
        torch._C._push_on_torch_function_stack(m)


def step_back_in(mode: GuardMode) -> None:
    """Recording again: `mode` back on the stack, unless it is there or its handler runs."""
    if mode_index(mode) < 0 and not inside_own_mode(mode):
        torch._C._push_on_torch_function_stack(mode)


def step_aside(mode: GuardMode) -> None:
    """Light mode: `mode` leaves the stack when it is on top (below another mode it stays)."""
    n = torch._C._len_torch_function_stack()
    if n and torch._C._get_function_stack_at(n - 1) is mode:
        torch._C._pop_torch_function_stack()
