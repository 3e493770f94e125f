"""Where a loss came from, read from the user's source (GG012): the callable a backward line
calls its loss from (`self.criterion_rank(a, b, y).backward()`), and the lines that return the
value from that callable's code (`return torch.clamp(ps1 - ps2 + m, min=0)` in its `forward`).
Report time only; wording only, never decides whether to report.
"""
from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
from typing import Any

import torch

from ..capture.sites import is_internal_file
from ..model import Frame, SourceLoc

__all__ = ["backward_receiver", "backward_receiver_callee", "return_lines"]

_BACKWARD_FUNCS = frozenset({"backward", "grad"})


def _statement(file: str, line: int) -> ast.AST | None:
    text = "".join(linecache.getlines(file))
    if not text:
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno) \
                and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For,
                                          ast.While, ast.With, ast.Try, ast.AsyncFor, ast.AsyncWith)):
            if best is None or node.lineno >= best.lineno:
                best = node
    return best


def backward_receiver(frame: Frame) -> str | None:
    """The tensor a backward line starts from, when it is written as a name: `l.backward()`,
    `self.loss_G.backward()`, `losses['total'].backward()`, `torch.autograd.backward(loss)` ->
    `l`, `self.loss_G`, `losses['total']`, `loss`. None for a call or an expression, and for
    `torch.autograd.grad` (its first argument may be a list)."""
    stmt = _statement(frame.file, frame.line)
    for node in ast.walk(stmt) if stmt is not None else ():
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "backward"):
            continue
        receiver = node.func.value
        if isinstance(receiver, ast.Attribute) and receiver.attr == "autograd" or \
                isinstance(receiver, ast.Name) and receiver.id == "autograd":
            receiver = node.args[0] if node.args else None
        if isinstance(receiver, (ast.Name, ast.Attribute, ast.Subscript)):
            return ast.unparse(receiver)
        return None
    return None


def backward_receiver_callee(frame: Frame) -> str | None:
    """The callable whose result a backward line starts from, as written: `self.crit(a, b)
    .backward()` and `torch.autograd.backward(self.crit(a, b))` -> `self.crit`. None when the
    loss is a variable or an arithmetic expression (`((x @ w - y) ** 2).backward()`)."""
    stmt = _statement(frame.file, frame.line)
    for node in ast.walk(stmt) if stmt is not None else ():
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in _BACKWARD_FUNCS):
            continue
        receiver = node.func.value
        if isinstance(receiver, ast.Attribute) and receiver.attr == "autograd" or \
                isinstance(receiver, ast.Name) and receiver.id == "autograd":
            receiver = node.args[0] if node.args else None  # torch.autograd.backward(loss_fn(...))
        while isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) \
                and receiver.func.attr in ("squeeze", "view", "reshape", "float", "double", "flatten"):
            receiver = receiver.func.value  # `crit(a, b).squeeze().backward()`
        if isinstance(receiver, ast.Call) and isinstance(receiver.func, (ast.Name, ast.Attribute)):
            return ast.unparse(receiver.func)
    return None


def return_lines(fn: Any) -> list[SourceLoc]:
    """The `return` lines of a user-written callable: a module's `forward`, a function, a
    method. Empty for torch's own callables or when the source cannot be read."""
    if isinstance(fn, torch.nn.Module):
        fn = type(fn).forward
    fn = getattr(fn, "__func__", fn)
    try:
        file = inspect.getsourcefile(fn)
        lines, start = inspect.getsourcelines(fn)
    except (TypeError, OSError):
        return []
    if not file or is_internal_file(file):
        return []
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (SyntaxError, ValueError):
        return []
    top = tree.body[0] if tree.body else None
    out = []
    todo = list(ast.iter_child_nodes(top)) if top is not None else []
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue  # a nested helper's returns are not this callable's
        if isinstance(node, ast.Return) and node.value is not None:
            line = start + node.lineno - 1
            out.append(SourceLoc(file, line, getattr(fn, "__name__", ""), linecache.getline(file, line).strip()))
        todo.extend(ast.iter_child_nodes(node))
    return sorted(out, key=lambda s: s.line)


def rebinding_of(function: str, files: list[str], caller: Frame | None = None) -> SourceLoc | None:
    """Where a function was installed under another name, when the calling line does not call it
    by its own: `model.backbone.forward = partial(backbone.get_intermediate_layers, n=1)` (or
    `= backbone.get_intermediate_layers`) for `get_intermediate_layers`. The SourceLoc's code is
    the assignment line; None when the caller calls it by name or nothing rebinds it."""
    if caller is not None:
        stmt = _statement(caller.file, caller.line)
        for node in ast.walk(stmt) if stmt is not None else ():
            if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)) \
                    and ast.unparse(node.func).rsplit(".", 1)[-1] == function:
                return None  # called by its own name: nothing was rebound on the way
    for file in files:
        text = "".join(linecache.getlines(file))
        try:
            tree = ast.parse(text) if text else None
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree) if tree is not None else ():
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Attribute)):
                continue
            value = node.value
            if isinstance(value, ast.Call) and _callee_name(value) == "partial" and value.args:
                value = value.args[0]
            if isinstance(value, (ast.Name, ast.Attribute)) and ast.unparse(value).rsplit(".", 1)[-1] == function:
                return SourceLoc(file, node.lineno, ast.unparse(node.targets[0]),
                                 linecache.getline(file, node.lineno).strip())
    return None


def _callee_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
