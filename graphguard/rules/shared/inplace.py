"""Wording shared by GG005/GG006: what an in-place op is called, what a line writes to, and the
out-of-place way to write it. Reads source lines only, never tensors."""
from __future__ import annotations

import ast
import io
import linecache
import tokenize

from ...lookup.source import statement_at
from ...model import Frame

__all__ = ["describe_inplace", "written_name", "out_of_place", "is_inplace_flag_op", "flag_op_forms",
           "line_stmt", "line_code"]

_AUG = {"__iadd__": "+=", "__isub__": "-=", "__imul__": "*=", "__itruediv__": "/=",
        "__ifloordiv__": "//=", "__imod__": "%=", "__ipow__": "**=", "__iand__": "&=",
        "__ior__": "|=", "__ixor__": "^=", "__ilshift__": "<<=", "__irshift__": ">>=",
        "__imatmul__": "@="}
_AUG_SYMBOL = {ast.Add: "+=", ast.Sub: "-=", ast.Mult: "*=", ast.Div: "/=", ast.FloorDiv: "//=",
               ast.Mod: "%=", ast.Pow: "**=", ast.BitAnd: "&=", ast.BitOr: "|=", ast.BitXor: "^=",
               ast.LShift: "<<=", ast.RShift: ">>=", ast.MatMult: "@="}
# Functionals whose in-place form is asked for with `inplace=True` (nn.ReLU(inplace=True) etc.).
_FLAG_OPS = frozenset({"relu", "relu6", "leaky_relu", "elu", "celu", "selu", "silu", "mish",
                       "hardtanh", "hardswish", "hardsigmoid", "rrelu", "threshold", "_threshold",
                       "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
                       "feature_alpha_dropout"})


_MODULES = {"relu": "ReLU", "relu6": "ReLU6", "leaky_relu": "LeakyReLU", "elu": "ELU", "celu": "CELU",
            "selu": "SELU", "silu": "SiLU", "mish": "Mish", "hardtanh": "Hardtanh",
            "hardswish": "Hardswish", "hardsigmoid": "Hardsigmoid", "rrelu": "RReLU",
            "threshold": "Threshold", "dropout": "Dropout", "dropout1d": "Dropout1d",
            "dropout2d": "Dropout2d", "dropout3d": "Dropout3d", "alpha_dropout": "AlphaDropout",
            "feature_alpha_dropout": "FeatureAlphaDropout"}


def flag_op_forms(op: str) -> str:
    """The two ways to ask for an in-place activation: `nn.Dropout(..., inplace=True)` or
    `F.dropout(..., inplace=True)`."""
    fn = op.lstrip("_")
    mod = _MODULES.get(fn)
    forms = [f"nn.{mod}(..., inplace=True)"] if mod else []
    return " or ".join(forms + [f"F.{fn}(..., inplace=True)"])


def is_inplace_flag_op(op: str) -> bool:
    """True for activations/dropouts made in-place by an `inplace=True` flag."""
    return op.lstrip("_") in _FLAG_OPS or op in _FLAG_OPS


def describe_inplace(op: str, frame: Frame | None = None) -> str:
    """How the user wrote the in-place op: `+=`, slice assignment, `.add_()`, `relu(inplace=True)`.

    `x -= y` reaches the guard as `sub_`: the line itself says which operator was written.
    """
    stmt = line_stmt(frame) if frame is not None else None
    if isinstance(stmt, ast.AugAssign):
        sym = _AUG_SYMBOL.get(type(stmt.op))
        if sym:
            return f"`{sym}`"
    if op in _AUG:
        return f"`{_AUG[op]}`"
    if op == "__setitem__":
        return "slice assignment `[...] =`"
    if op.endswith("_") and not op.endswith("__"):
        return f"`.{op}()`"
    if is_inplace_flag_op(op):
        return f"`{op.lstrip('_')}(inplace=True)`"
    return f"`{op}(..., out=...)`"


def line_stmt(frame: Frame | None) -> ast.stmt | None:
    """The statement covering a user line, parsed (lookup/source.py's statement_at)."""
    if frame is None:
        return None
    return statement_at(frame.file, frame.line)


def line_code(frame: Frame | None) -> str:
    """A user line as written, without its trailing comment."""
    if frame is None:
        return ""
    text = linecache.getline(frame.file, frame.line).strip()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                return text[:tok.start[1]].rstrip()
    except (tokenize.TokenError, SyntaxError):  # a line of a longer statement
        pass
    return text


def _base_name(node: ast.expr) -> str | None:
    """`h[:, 0]` -> `h`, `model.emb.weight[3]` -> `model.emb.weight`, a call -> None."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return ast.unparse(node) if isinstance(node, (ast.Name, ast.Attribute)) else None


def written_name(frame: Frame | None) -> str | None:
    """The variable an in-place line writes to, as the user wrote it.

    `x += 1` -> x; `h[:, 0] = 0` -> h; `p.add_(g)` -> p; `h = self.act(h)` and
    `F.relu(h, inplace=True)` -> h (the first argument of an in-place call is what it changes).
    """
    stmt = line_stmt(frame)
    if isinstance(stmt, ast.AugAssign):
        return _base_name(stmt.target)
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Subscript):
        return _base_name(stmt.targets[0])
    call = stmt.value if isinstance(stmt, (ast.Assign, ast.Expr)) else None
    if not isinstance(call, ast.Call):
        return None
    fn = call.func
    if isinstance(fn, ast.Attribute) and fn.attr.endswith("_") and not fn.attr.endswith("__"):
        return _base_name(fn.value)
    if call.args:
        return _base_name(call.args[0])
    return None


def out_of_place(frame: Frame | None) -> str | None:
    """The out-of-place form of an augmented assignment line: `x += y` -> `x = x + y`."""
    stmt = line_stmt(frame)
    if not isinstance(stmt, ast.AugAssign) or isinstance(stmt.target, ast.Subscript):
        return None  # `x[i] += v` stays in place when rewritten
    new = ast.Assign(targets=[stmt.target], value=ast.BinOp(stmt.target, stmt.op, stmt.value),
                     lineno=0)
    return ast.unparse(new)
