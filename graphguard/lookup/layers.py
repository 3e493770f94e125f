"""Where a model's layers are built, read from the user's source: inside `forward` (new layers at
every call, none registered), or held in plain Python lists and dicts (not registered either).

For wording only (GG011 on an optimizer given no parameters): a rule that already decided to
report asks where the fix goes. Never decides whether to report; never per op.
"""
from __future__ import annotations

import ast
import builtins
import inspect
from typing import Any, Iterator

import torch

from ..capture.sites import is_internal_file
from ..model import Frame, SourceLoc
from .source import parsed

__all__ = ["BuiltLayer", "layers_built_in_forward", "parameters_owner", "plain_layer_holders",
           "attribute_reads_in_forward"]

MAX_LAYERS = 16  # constructions reported per model


class BuiltLayer(tuple):
    """(name as written, where): `head` for `head = nn.Linear(16, 1)`, else the call's text
    (`torch.nn.Linear(D_in, H)`)."""

    __slots__ = ()

    def __new__(cls, name: str, loc: SourceLoc) -> "BuiltLayer":
        return super().__new__(cls, (name, loc))

    @property
    def name(self) -> str:
        return self[0]

    @property
    def loc(self) -> SourceLoc:
        return self[1]


def _dotted(expr: ast.AST) -> list[str] | None:
    """`torch.nn.Linear` -> ['torch', 'nn', 'Linear']; None for anything but a dotted name."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    parts.append(expr.id)
    return parts[::-1]


def _lookup(parts: list[str], namespace: dict[str, Any]) -> Any:
    """The object a dotted name denotes in a function's globals (attribute reads only)."""
    if parts[0] in namespace:
        obj = namespace[parts[0]]
    elif hasattr(builtins, parts[0]):
        obj = getattr(builtins, parts[0])
    else:
        return None
    for p in parts[1:]:
        obj = getattr(obj, p, None)
        if obj is None:
            return None
    return obj


def _is_module_class(obj: Any) -> bool:
    return isinstance(obj, type) and issubclass(obj, torch.nn.Module)


def _user_methods(module: torch.nn.Module, name: str) -> Iterator[Any]:
    """`name` as defined by the user's own classes in the module's MRO (torch's excluded)."""
    for cls in type(module).__mro__:
        fn = cls.__dict__.get(name)
        if fn is None or not inspect.isfunction(fn):
            continue
        try:
            file = inspect.getsourcefile(fn)
        except (TypeError, OSError):
            continue
        if file and not is_internal_file(file):
            yield fn


def _function_node(fn: Any) -> tuple[str, ast.AST] | None:
    try:
        file = inspect.getsourcefile(fn)
    except (TypeError, OSError):
        return None
    tree = parsed(file) if file else None
    if tree is None:
        return None
    first = fn.__code__.co_firstlineno
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == fn.__name__:
            lines = [node.lineno] + [d.lineno for d in node.decorator_list]
            if first in lines:
                return file, node
    return None


def layers_built_in_forward(module: torch.nn.Module) -> list[BuiltLayer]:
    """The module constructions (`nn.Linear(...)`, a user's own `nn.Module` subclass) written in
    the model's `forward`, in source order: each call builds new, untrained parameters."""
    out: list[BuiltLayer] = []
    for fn in _user_methods(module, "forward"):
        found = _function_node(fn)
        if found is None:
            continue
        file, node = found
        parent: dict[int, ast.AST] = {}
        for n in ast.walk(node):
            for c in ast.iter_child_nodes(n):
                parent[id(c)] = n
        for n in ast.walk(node):
            if not isinstance(n, ast.Call):
                continue
            parts = _dotted(n.func)
            if parts is None or not _is_module_class(_lookup(parts, fn.__globals__)):
                continue
            up = parent.get(id(n))
            if (isinstance(up, ast.Assign) and up.value is n and len(up.targets) == 1
                    and isinstance(up.targets[0], (ast.Name, ast.Attribute))):
                name = ast.unparse(up.targets[0])
            else:
                name = ast.unparse(n)
            out.append(BuiltLayer(name, SourceLoc.from_frame(Frame(file, n.lineno, fn.__name__))))
        if out:
            break  # the most derived forward that builds layers
    out.sort(key=lambda b: b.loc.line)
    return out[:MAX_LAYERS]


def attribute_reads_in_forward(module: torch.nn.Module, attr: str) -> list[SourceLoc]:
    """The lines of the module's own `forward` that read `self.<attr>` (a parameter the forward
    should compute with: where a `.data` or a copy of it is taken), in source order."""
    out: list[SourceLoc] = []
    for fn in _user_methods(module, "forward"):
        found = _function_node(fn)
        if found is None:
            continue
        file, node = found
        args = node.args.posonlyargs + node.args.args
        if not args:
            continue
        me = args[0].arg
        lines = sorted({n.lineno for n in ast.walk(node)
                        if isinstance(n, ast.Attribute) and n.attr == attr
                        and isinstance(n.value, ast.Name) and n.value.id == me
                        and isinstance(n.ctx, ast.Load)})
        out = [SourceLoc.from_frame(Frame(file, ln, fn.__name__)) for ln in lines]
        break  # the most derived forward
    return out[:MAX_LAYERS]


def plain_layer_holders(module: torch.nn.Module) -> list[tuple[str, list[str]]]:
    """Plain lists, tuples and dicts on the model that hold modules (not registered, so their
    parameters are not the model's): (attribute, [element names])."""
    out = []
    for attr, v in vars(module).items():
        if attr.startswith("_"):
            continue
        items = list(v.items()) if isinstance(v, dict) else (
            list(enumerate(v)) if isinstance(v, (list, tuple)) else [])
        names = [f"{attr}[{k!r}]" if isinstance(k, str) else f"{attr}[{k}]"
                 for k, m in items if isinstance(m, torch.nn.Module)]
        if names:
            out.append((attr, names))
    return out


def parameters_owner(frame: Frame) -> str | None:
    """The expression whose `.parameters()` (or `.named_parameters()`) the statement at the
    frame's line passes: `model` in `torch.optim.SGD(model.parameters(), lr=...)`."""
    tree = parsed(frame.file)
    if tree is None:
        return None
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= frame.line <= (node.end_lineno or node.lineno) \
                and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If,
                                          ast.For, ast.While, ast.With, ast.Try)):
            if best is None or node.lineno >= best.lineno:
                best = node
    if best is None:
        return None
    for n in ast.walk(best):
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and n.func.attr in ("parameters", "named_parameters")):
            return ast.unparse(n.func.value)
    return None
