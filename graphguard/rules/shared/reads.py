"""Who reads a `.grad`: the user's own code, or torch internals (an optimizer, clip_grad_norm_)."""
from __future__ import annotations

import os
import sys

from ...capture.usercode import PACKAGE_DIR, is_user_file

__all__ = ["read_by_user", "read_fails_on_none"]

_GG_DIR = PACKAGE_DIR + os.sep


def read_by_user() -> bool:
    """Whether the `.grad` read being dispatched comes from the user's own code (not from
    clip_grad_norm_, an optimizer's zero_grad or other torch internals reading every parameter)."""
    f = sys._getframe(1)
    # graphguard's own frames (the dispatch) are stepped over; the first frame past them decides
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_GG_DIR):
        f = f.f_back
    return f is not None and is_user_file(f.f_code.co_filename)


# the instructions that use the value just loaded as an object: on None they raise
# (`p.grad.data`, `p.grad.norm()`); and those that do once one simple operand is loaded
# (`p.grad[0]`, `p.grad * lr`)
_USES_AS_OBJECT = frozenset({"LOAD_ATTR", "LOAD_METHOD", "BINARY_SUBSCR"})
_SIMPLE_LOADS = frozenset({"LOAD_CONST", "LOAD_FAST", "LOAD_NAME", "LOAD_DEREF"})
_WITH_OPERAND = frozenset({"BINARY_SUBSCR", "BINARY_OP"})
_NEXT_USE: dict[tuple[int, int], tuple[object, bool]] = {}  # (id(code), lasti) -> (code, fails)


def read_fails_on_none() -> bool:
    """Whether the user's instruction reading `.grad` (being dispatched) goes straight on to use
    the value as an object (`p.grad.data`, `p.grad.norm()`, `p.grad[0]`): read as None, the
    program raises on the next instruction. A comparison, an assignment or a call argument
    (`if p.grad is not None`, `g = p.grad`, `f(p.grad)`) is not. Read from the running frame's
    bytecode, not from the source text: the same for any spelling of the expression."""
    f = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_GG_DIR):
        f = f.f_back
    if f is None or not is_user_file(f.f_code.co_filename):
        return False
    code, lasti = f.f_code, f.f_lasti
    hit = _NEXT_USE.get((id(code), lasti))
    if hit is not None and hit[0] is code:
        return hit[1]
    import dis

    fails = False
    instructions = list(dis.get_instructions(code))
    for i, ins in enumerate(instructions[:-1]):
        if ins.offset == lasti:
            nxt = instructions[i + 1]
            then = instructions[i + 2] if i + 2 < len(instructions) else None
            fails = ins.argval == "grad" and (
                nxt.opname in _USES_AS_OBJECT
                or (nxt.opname in _SIMPLE_LOADS and then is not None and then.opname in _WITH_OPERAND))
            break
    if len(_NEXT_USE) > 4096:
        _NEXT_USE.clear()
    _NEXT_USE[(id(code), lasti)] = (code, fails)
    return fails
