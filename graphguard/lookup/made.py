"""Where a value that has no history was made, read from the user's source (GG009's wording).

A loss with no `grad_fn` (or a fresh leaf re-wrapped with `requires_grad=True`) carries no record
of the ops that made it. When a rule has already decided to report it, this finds the statement
the user wrote that made it: the assignment of its name before the line where it is used, and,
when that assignment calls one of the user's own functions (`loss = self.compute_objectives(...)`,
`loss = criterion(out)`), the value that function returns, as written there (`mean_losses`, or
the function itself when it returns a bare expression such as `torch.zeros(1)`).

It also finds the `with torch.no_grad():` block around a line, and the value computed in such a
block that the code after it reads (the accumulator that carries the no-grad value out).

For wording only, at report time: never decides whether to report.
"""
from __future__ import annotations

import ast
import inspect
import types
from dataclasses import dataclass, field
from typing import Any

import torch

from ..capture.sites import is_internal_file
from ..model import Frame, SourceLoc
from .names import resolve
from .source import enclosing_scope, expr_text as _text, own_nodes as _own_nodes, parsed as _tree
from .source import statement_loc as _loc, targets_of as _targets_of

__all__ = ["Made", "made_by", "grad_off_block", "escaping_target"]

# calls that build a tensor from plain data, with no history (the usual "fresh tensor" of a loss)
_FACTORIES = frozenset({"tensor", "Tensor", "FloatTensor", "DoubleTensor", "LongTensor", "as_tensor",
                        "asarray", "from_numpy", "zeros", "ones", "full", "empty", "zeros_like",
                        "ones_like", "full_like", "empty_like", "Variable", "scalar_tensor"})
_GRAD_OFF = frozenset({"no_grad", "inference_mode", "set_grad_enabled"})
MAX_DEPTH = 3  # user functions followed into


@dataclass
class Made:
    """The statement that made a value, as the user wrote it."""

    name: str  # the value's name there (`mean_losses`), or the function that returned it
    loc: SourceLoc  # that statement (or the `return` line, for a returned expression)
    rewraps: list[SourceLoc] = field(default_factory=list)  # `name.requires_grad = True` lines


def _callee_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")


def _has_factory(expr: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and _callee_name(n) in _FACTORIES for n in ast.walk(expr))


def _assignments(file: str, scope: ast.AST, target: str, line: int) -> list[tuple[ast.stmt, int]]:
    """(statement, index of `target` among its targets) for statements of `scope` that assign
    `target` at or before `line`, in line order."""
    out = []
    for node in _own_nodes(scope):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.lineno > line:
            continue
        texts = [_text(t) for t in _targets_of(node)]
        if target in texts:
            out.append((node, texts.index(target)))
    return sorted(out, key=lambda x: x[0].lineno)


def _code_of(obj: Any) -> types.CodeType | None:
    """The code object of a user function, method or module's forward (None for torch's own)."""
    if isinstance(obj, types.MethodType):
        obj = obj.__func__
    elif isinstance(obj, torch.nn.Module):
        obj = getattr(type(obj), "forward", None)
    code = getattr(obj, "__code__", None)
    if not isinstance(code, types.CodeType) or is_internal_file(code.co_filename):
        return None
    return code


def _function_node(code: types.CodeType) -> ast.AST | None:
    tree = _tree(code.co_filename)
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == code.co_name:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if first == code.co_firstlineno or node.lineno == code.co_firstlineno:
                return node
    return None


def _returned(file: str, fn: ast.AST, index: int | None, depth: int) -> Made | None:
    """What function `fn` returns (element `index` of a returned tuple), as written in it."""
    rets = [n for n in _own_nodes(fn) if isinstance(n, ast.Return) and n.value is not None]
    if not rets:
        return None
    ret = max(rets, key=lambda n: n.lineno)  # the last return: the main path, as a rule
    value = ret.value
    if index is not None and isinstance(value, ast.Tuple) and index < len(value.elts):
        value = value.elts[index]
    name = getattr(fn, "name", "<module>")
    if isinstance(value, (ast.Name, ast.Attribute, ast.Subscript)):
        found = _in_scope(file, fn, _text(value), ret.lineno, name, None, depth)
        if found is not None:
            return found
    return Made(name, _loc(file, ret, name))


def _in_scope(file: str, scope: ast.AST, target: str, line: int, function: str,
              frame: Frame | None, depth: int) -> Made | None:
    found = _assignments(file, scope, target, line)
    if not found:
        return None
    stmt, index = found[-1]
    value = stmt.value
    # `x = x.to(device)`, `x = x.float()`: a copy of the same value; it was made further up
    while (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
           and _text(value.func.value) == target and len(found) > 1):
        found = found[:-1]
        stmt, index = found[-1]
        value = stmt.value
    made = Made(target, _loc(file, stmt, function))
    made.rewraps = [_loc(file, n, function) for n in _own_nodes(scope)
                    if isinstance(n, ast.Assign) and n.lineno <= line
                    and any(_text(t) == f"{target}.requires_grad" for t in n.targets)]
    if depth >= MAX_DEPTH or value is None:
        return made
    if isinstance(value, ast.Call) and not _has_factory(value):
        deeper = _follow_call(file, value, index if len(_targets_of(stmt)) > 1 else None, frame, depth)
        if deeper is not None:
            deeper.rewraps = made.rewraps + deeper.rewraps
            return deeper
    elif not isinstance(value, ast.Call):
        # `loss = a + b + c`: the operand that some statement made fresh (`a = torch.tensor(0.)`)
        names = sorted((n for n in ast.walk(value) if isinstance(n, ast.Name)),
                       key=lambda n: (n.lineno, n.col_offset))  # as written, left to right
        for n in names:
            if n.id != target:
                for s, _ in reversed(_assignments(file, scope, n.id, stmt.lineno)):
                    if s.value is not None and _has_factory(s.value):
                        return Made(n.id, _loc(file, s, function), made.rewraps)
    return made


def _follow_call(file: str, call: ast.Call, index: int | None, frame: Frame | None,
                 depth: int) -> Made | None:
    """Into the user function `call` calls (resolved in the live `frame`), to what it returns."""
    if frame is None:
        return None
    from .names import live_user_frames
    frames = [f for f in live_user_frames() if f.f_code.co_filename == frame.file
              and f.f_code.co_name == frame.function]
    value = _callee(call.func, frames) if frames else None
    del frames
    code = _code_of(value) if value is not None else None
    if code is None:
        return None
    fn = _function_node(code)
    if fn is None:
        return None
    return _returned(code.co_filename, fn, index, depth + 1)


def _callee(func: ast.expr, frames: list[types.FrameType]) -> Any:
    """The object a call's callee expression names, read without running user code: a held
    function or module (`criterion`, `self.loss_fn`), else a method of the receiver's class
    (`self.compute_objectives`, `model.loss`)."""
    hit = resolve(_text(func), frames)
    if hit is not None:
        return hit.value
    if isinstance(func, ast.Attribute):
        recv = resolve(_text(func.value), frames)
        if recv is not None:
            try:
                return inspect.getattr_static(type(recv.value), func.attr)
            except AttributeError:
                return None
    return None


def made_by(name: str, frame: Frame) -> Made | None:
    """The statement that made the value `name` holds in `frame` (a live user frame, at its
    current line), following calls of the user's own functions to what they return."""
    try:
        scope = enclosing_scope(frame.file, frame.line)
        if scope is None:
            return None
        return _in_scope(frame.file, scope, name, frame.line, frame.function, frame, 0)
    except Exception:  # wording only
        return None


def _is_grad_off(item: ast.withitem) -> bool:
    expr = item.context_expr
    call = expr.func if isinstance(expr, ast.Call) else expr
    last = call.attr if isinstance(call, ast.Attribute) else getattr(call, "id", "")
    if last == "set_grad_enabled":
        return isinstance(expr, ast.Call) and bool(expr.args) and \
            isinstance(expr.args[0], ast.Constant) and expr.args[0].value is False
    return last in _GRAD_OFF


def grad_off_block(file: str, line: int) -> ast.With | None:
    """The innermost `with torch.no_grad():` (or inference_mode, set_grad_enabled(False)) whose
    body holds `line`."""
    scope = enclosing_scope(file, line)
    best = None
    for node in _own_nodes(scope) if scope is not None else ():
        if isinstance(node, ast.With) and node.lineno < line <= (node.end_lineno or node.lineno) \
                and any(_is_grad_off(i) for i in node.items):
            if best is None or node.lineno > best.lineno:
                best = node
    return best


def escaping_target(file: str, block: ast.With) -> tuple[str, SourceLoc] | None:
    """The variable assigned (or grown: `acc[k] += v`) inside `block` that the code after the
    block reads before assigning it again: the value that carries the block's result out."""
    scope = enclosing_scope(file, block.lineno)
    if scope is None:
        return None
    inside: dict[str, int] = {}  # base name -> last line in the block that assigns or grows it
    for node in ast.walk(block):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for leaf in ast.walk(t):
                    base = leaf
                    while isinstance(base, (ast.Subscript, ast.Attribute)):
                        base = base.value
                    if isinstance(base, ast.Name):
                        inside[base.id] = max(inside.get(base.id, 0), node.lineno)
    end = block.end_lineno or block.lineno
    events: list[tuple[int, int, str, bool]] = []  # (line, order, name, is_whole_store)
    for node in _own_nodes(scope):
        if not isinstance(node, ast.stmt) or node.lineno <= end:
            continue
        if isinstance(node, ast.Assign):
            for n in ast.walk(node.value):
                if isinstance(n, ast.Name):
                    events.append((node.lineno, 0, n.id, False))
            for t in node.targets:
                if isinstance(t, ast.Name):
                    events.append((node.lineno, 1, t.id, True))
        elif isinstance(node, (ast.Expr, ast.AugAssign, ast.Return)):
            for n in ast.walk(node):
                if isinstance(n, ast.Name):
                    events.append((node.lineno, 0, n.id, False))
    events.sort()
    best: tuple[int, str] | None = None
    for name, line in inside.items():
        for _, _, n, store in events:
            if n == name:
                if not store and (best is None or line > best[0]):
                    best = (line, name)
                break
    if best is None:
        return None
    fn = getattr(scope, "name", "<module>")
    import linecache
    return best[1], SourceLoc(file, best[0], fn, linecache.getline(file, best[0]).strip())
