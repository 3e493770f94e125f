"""Which switch turned autograd off: grad-mode context managers and decorators seen at run time.

GG014 and GG008 decide between "the user's own `no_grad` region cut this part of the model" and
"an op cut it" from where grad mode was switched off. Reading that from the source only works for
the spellings a parser knows (`with torch.no_grad():`, `@torch.no_grad()`); run time sees every
one of them the same way: `with (torch.no_grad() if ev else nullcontext()):`, a project's own
`maybe_no_grad()`, `nograd = torch.no_grad()` entered later, an `ExitStack`, a decorator
stacked under others, `torch.set_grad_enabled(False)` as a call or a block. So the guard wraps
the `__enter__`/`__exit__` of torch's grad-mode classes (and `set_grad_enabled`'s `__init__`,
which switches at construction) and keeps, per thread, a stack of the switches in force, each
with the frame that made it. A cut recorded with grad mode off carries the innermost one.

Nothing here changes what the classes do: each wrapper calls the original and only notes where
it was called from. Frames are reduced to plain data (file, line, function) at once.
"""
from __future__ import annotations

import os
import sys
import threading
import types
from dataclasses import dataclass
from typing import Any, Callable

import torch

from .sites import is_internal_code

__all__ = ["GradSwitch", "GradSwitches", "WRAPPED", "switch_wrappers"]

_is_compiling = torch.compiler.is_compiling

# The plumbing between a `with` statement (or a decorated function) and the `__enter__` it
# triggers: torch's grad-mode and decorator modules, contextlib's and functools'. It is stepped
# over to find who switched; any other torch file that switches (an optimizer's step, a reentrant
# checkpoint's forward) is torch's own switch.
_TORCH_DIR = os.path.dirname(os.path.realpath(torch.__file__)) + os.sep
_STEP_OVER = {os.path.realpath(m.__file__) for m in (
    __import__("contextlib"), __import__("functools"), torch.autograd.grad_mode, torch.utils._contextlib)}
# the wrappers torch's decorator form runs the function in (torch/utils/_contextlib.py): the
# decorated function is their free variable `func`
_DECORATOR_FRAMES = ("decorate_context", "generator_context")
MAX_DEPTH = 64  # entries kept per thread: unmatched plain calls must not pile up
_FRAME_BUDGET = 40


@dataclass(frozen=True)
class GradSwitch:
    """One grad-mode switch in force: what turned autograd off (or back on) and where."""

    kind: str  # "with" (a block, an ExitStack), "decorator" (a decorated function), "call" (plain)
    api: str  # "no_grad", "inference_mode", "set_grad_enabled", "enable_grad"
    off: bool  # autograd off inside it (False: `enable_grad`, `set_grad_enabled(True)`)
    file: str
    line: int  # the `with` line, the call, or the decorated function's first decorator line
    function: str  # the function the `with`/call is in, or the decorated function
    user: bool  # made by the user's code (not torch, a framework, graphguard)

    @property
    def key(self) -> tuple[str, int]:
        """Identity of the region in the program (the same block entered at every iteration)."""
        return self.file, self.line


class _Entry:
    __slots__ = ("owner", "switch", "entered")

    def __init__(self, owner: int, switch: GradSwitch, entered: bool) -> None:
        self.owner = owner  # id() of the context-manager object (a plain call has none entered)
        self.switch = switch
        self.entered = entered


_STEP: dict[str, tuple[bool, bool]] = {}  # filename -> (torch's, stepped over)


def _classify(filename: str) -> tuple[bool, bool]:
    hit = _STEP.get(filename)
    if hit is None:
        real = os.path.realpath(filename)
        hit = _STEP[filename] = (real.startswith(_TORCH_DIR), real in _STEP_OVER)
    return hit


def _locate(frame: types.FrameType | None) -> tuple[str, str, int, str, bool] | None:
    """(kind, file, line, function, user) of the code that switched, from the frame that called
    the grad-mode method: torch's and contextlib's frames are stepped over; torch's decorator
    wrapper names the decorated function."""
    f, budget = frame, _FRAME_BUDGET
    while f is not None and budget:
        budget -= 1
        code = f.f_code
        name = code.co_filename
        torch_file, step_over = _classify(name)
        if code.co_name in _DECORATOR_FRAMES and torch_file:
            func = f.f_locals.get("func")
            fc = getattr(func, "__code__", None)
            if isinstance(fc, types.CodeType):
                return ("decorator", fc.co_filename, fc.co_firstlineno, fc.co_name,
                        not is_internal_code(fc))
            return None
        if not step_over:
            return "with", name, f.f_lineno, code.co_name, not is_internal_code(code)
        f = f.f_back
    return None


class GradSwitches:
    """The grad-mode switches in force, per thread (grad mode itself is per thread)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def _stack(self) -> list[_Entry]:
        st = getattr(self._local, "stack", None)
        if st is None:
            st = self._local.stack = []
        return st

    def current(self) -> GradSwitch | None:
        """The innermost switch in force when it turned autograd off, else None (grad mode was
        turned off by something not seen: before the guard started, or torch._C directly)."""
        st = getattr(self._local, "stack", None)
        if not st:
            return None
        top = st[-1].switch
        return top if top.off else None

    def push(self, owner: Any, api: str, off: bool, plain: bool, frame: types.FrameType | None) -> None:
        """A switch made by `owner` (a context-manager object); `plain`: made at construction
        (set_grad_enabled), so a plain call until its `__enter__` says otherwise."""
        where = _locate(frame)
        if where is None:
            return
        kind, file, line, function, user = where
        if plain and kind == "with":
            kind = "call"
        st = self._stack()
        entry = _Entry(id(owner), GradSwitch(kind, api, off, file, line, function, user), not plain)
        if plain and st and not st[-1].entered:
            # a plain call overrides the plain call before it (there is no exit to wait for)
            st[-1] = entry
        else:
            st.append(entry)
        if len(st) > MAX_DEPTH:
            del st[0]

    def entered(self, owner: Any, frame: types.FrameType | None) -> None:
        """`set_grad_enabled(...)` used as a block: its entry (pushed at construction) is a
        `with` (or a decorator, when torch's wrapper entered a clone of it)."""
        st = getattr(self._local, "stack", None)
        if not st:
            return
        for k in range(len(st) - 1, -1, -1):
            e = st[k]
            if e.owner == id(owner) and not e.entered:
                e.entered = True
                where = _locate(frame)
                if where is not None and where[0] == "decorator":
                    kind, file, line, function, user = where
                    e.switch = GradSwitch(kind, e.switch.api, e.switch.off, file, line, function, user)
                elif e.switch.kind == "call":
                    s = e.switch
                    e.switch = GradSwitch("with", s.api, s.off, s.file, s.line, s.function, s.user)
                return

    def pop(self, owner: Any) -> None:
        """`owner`'s block exited (or, as a decorator, `set_grad_enabled` restored the mode at
        definition): its entry and every plain call made inside it are over."""
        st = getattr(self._local, "stack", None)
        if not st:
            return
        for k in range(len(st) - 1, -1, -1):
            if st[k].owner == id(owner):
                del st[k:]
                return


def _wrap(orig: Callable, hook: Callable[[Any, types.FrameType | None, tuple], None], before: bool,
          foreign: Callable[[], bool], inside: threading.local | None = None) -> Callable:
    """`orig` (a grad-mode method) calling `hook(self, caller's frame, args)` before or after it.
    `inside`: count the span as "in no_grad's own method" (its set_grad_enabled call is its
    implementation, not a switch of its own)."""

    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if foreign() or _is_compiling():
            return orig(self, *args, **kwargs)
        if inside is not None:
            inside.depth = getattr(inside, "depth", 0) + 1
        try:
            if before:
                _safely(hook, self, sys._getframe(1), args)
                return orig(self, *args, **kwargs)
            out = orig(self, *args, **kwargs)
            _safely(hook, self, sys._getframe(1), args)
            return out
        finally:
            if inside is not None:
                inside.depth -= 1

    wrapper.__name__ = getattr(orig, "__name__", "wrapper")
    wrapper.__qualname__ = getattr(orig, "__qualname__", wrapper.__name__)
    wrapper.__doc__ = getattr(orig, "__doc__", None)
    wrapper.__wrapped__ = orig  # type: ignore[attr-defined]
    return wrapper


def _safely(hook: Callable, owner: Any, frame: types.FrameType | None, args: tuple) -> None:
    # noting a switch must never break the user's `with torch.no_grad():`
    try:
        hook(owner, frame, args)
    except Exception:
        pass


# (class, method) pairs the guard wraps, in torch.autograd.grad_mode
WRAPPED = (("no_grad", "__enter__"), ("no_grad", "__exit__"),
           ("enable_grad", "__enter__"), ("enable_grad", "__exit__"),
           ("inference_mode", "__enter__"), ("inference_mode", "__exit__"),
           ("set_grad_enabled", "__init__"), ("set_grad_enabled", "__enter__"),
           ("set_grad_enabled", "__exit__"), ("set_grad_enabled", "__call__"))


def switch_wrappers(switches: GradSwitches, foreign: Callable[[], bool]) -> list[tuple[type, str, Callable]]:
    """(class, method name, wrapper) for every method of WRAPPED, to be patched by the guard."""
    gm = torch.autograd.grad_mode
    inside = threading.local()

    def enter_block(api: str, off: bool | None) -> Callable:
        def hook(owner: Any, frame: Any, args: tuple) -> None:
            mode = off if off is not None else bool(getattr(owner, "mode", True))
            switches.push(owner, api, mode, False, frame)
        return hook

    def exit_block(owner: Any, frame: Any, args: tuple) -> None:
        switches.pop(owner)

    def sge_init(owner: Any, frame: Any, args: tuple) -> None:
        mode = bool(getattr(owner, "mode", True))
        # one that leaves the mode as it was (an optimizer's step restoring it, a call inside a
        # block that already turned autograd off) changes nothing: what is in force stays
        if not getattr(inside, "depth", 0) and mode != bool(getattr(owner, "prev", True)):
            switches.push(owner, "set_grad_enabled", not mode, True, frame)

    def sge_enter(owner: Any, frame: Any, args: tuple) -> None:
        if not getattr(inside, "depth", 0):
            switches.entered(owner, frame)

    def sge_exit(owner: Any, frame: Any, args: tuple) -> None:
        if not getattr(inside, "depth", 0):
            switches.pop(owner)

    out: list[tuple[type, str, Callable]] = []
    for cls, api, off in ((gm.no_grad, "no_grad", True), (gm.enable_grad, "enable_grad", False)):
        out.append((cls, "__enter__", _wrap(cls.__dict__["__enter__"], enter_block(api, off), True,
                                            foreign, inside)))
        out.append((cls, "__exit__", _wrap(cls.__dict__["__exit__"], exit_block, False, foreign, inside)))
    im = gm.inference_mode
    out.append((im, "__enter__", _wrap(im.__dict__["__enter__"], enter_block("inference_mode", None),
                                       True, foreign)))
    out.append((im, "__exit__", _wrap(im.__dict__["__exit__"], exit_block, False, foreign)))
    sge = gm.set_grad_enabled
    out.append((sge, "__init__", _wrap(sge.__dict__["__init__"], sge_init, False, foreign)))
    out.append((sge, "__enter__", _wrap(sge.__dict__["__enter__"], sge_enter, False, foreign)))
    out.append((sge, "__exit__", _wrap(sge.__dict__["__exit__"], sge_exit, False, foreign)))
    # as a decorator, set_grad_enabled(False) switched at definition and __call__ switches back
    out.append((sge, "__call__", _wrap(sge.__dict__["__call__"], sge_exit, False, foreign)))
    return out
