"""Where an in-place activation or dropout was asked for, read from the user's source (GG005).

`nn.ReLU(inplace=True)` runs its in-place op inside torch's own `forward`, so the guard records
the write at the user's line that *calls* the module (`x = self.activ(x)`, or `self.main(x)` for a
Sequential). The fix goes elsewhere: the constructor that says `inplace=True`, or a later
`m.inplace = True` (often in a loop over `self.modules()`). This module finds that line and the
module's name as written. Report time only; wording only, never decides whether to report.
"""
from __future__ import annotations

import ast
import linecache
from dataclasses import dataclass
from typing import Iterable

from ..model import Frame, SourceLoc
from .source import class_attribute_lines, class_of_function, enclosing_scope, name_assignment_lines

__all__ = ["FlagSource", "inplace_flag_source", "module_classes"]

# in-place op (as recorded, trailing `_` stripped) -> the nn classes whose forward runs it
_CLASSES: dict[str, tuple[str, ...]] = {
    "relu": ("ReLU",), "relu6": ("ReLU6",), "leaky_relu": ("LeakyReLU",), "elu": ("ELU",),
    "celu": ("CELU",), "selu": ("SELU",), "silu": ("SiLU",), "mish": ("Mish",),
    "hardtanh": ("Hardtanh", "ReLU6"), "hardswish": ("Hardswish",), "hardsigmoid": ("Hardsigmoid",),
    "rrelu": ("RReLU",), "threshold": ("Threshold", "ReLU"),
    "dropout": ("Dropout",), "dropout1d": ("Dropout1d",), "dropout2d": ("Dropout2d",),
    "dropout3d": ("Dropout3d",), "alpha_dropout": ("AlphaDropout",),
    "feature_alpha_dropout": ("FeatureAlphaDropout", "Dropout2d", "Dropout3d"),
}


def module_classes(op: str) -> tuple[str, ...]:
    """The nn classes whose forward runs the in-place op `op` (`dropout_` -> ('Dropout',))."""
    return _CLASSES.get(op.strip("_"), ())


@dataclass(frozen=True)
class FlagSource:
    """The module that ran an in-place op, as the user wrote it, and where its flag was set.

    name: the module as written at the calling line (`self.activ`), or the constructor
        expression (`nn.Dropout`) when the calling line calls a container; when the flag is set
        after construction, the assignment target (`m.inplace`).
    made: the constructor line.
    fix: the line that sets the flag (the constructor, or the later `m.inplace = True`).
    """

    name: str
    made: SourceLoc | None
    fix: SourceLoc


def _loc(file: str, line: int, function: str = "") -> SourceLoc:
    return SourceLoc(file, line, function, linecache.getline(file, line).strip())


def _tree(file: str) -> ast.Module | None:
    text = "".join(linecache.getlines(file))
    if not text:
        return None
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def _callee(call: ast.Call) -> str:
    try:
        return ast.unparse(call.func)
    except Exception:
        return ""


def _last(callee: str) -> str:
    return callee.rsplit(".", 1)[-1]


def _flag(call: ast.Call) -> ast.expr | None:
    """The `inplace=` argument of a constructor call, when written."""
    for kw in call.keywords:
        if kw.arg == "inplace":
            return kw.value
    return None


def _is_true(expr: ast.expr | None) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is True


def _statement(file: str, line: int) -> ast.stmt | None:
    tree = _tree(file)
    best = None
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno) \
                and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If,
                                          ast.For, ast.While, ast.With, ast.Try, ast.AsyncFor, ast.AsyncWith)):
            if best is None or node.lineno >= best.lineno:
                best = node
    return best


def _flag_assignments(files: Iterable[str]) -> list[tuple[str, SourceLoc]]:
    """`<expr>.inplace = True` (or `setattr(<expr>, 'inplace', True)`) in `files`: (target, line)."""
    out: list[tuple[str, SourceLoc]] = []
    for file in files:
        tree = _tree(file)
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.Assign) and _is_true(node.value):
                for t in node.targets:
                    if isinstance(t, ast.Attribute) and t.attr == "inplace":
                        out.append((ast.unparse(t), _loc(file, node.lineno)))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                    and len(node.args) == 3 and isinstance(node.args[1], ast.Constant) \
                    and node.args[1].value == "inplace" and _is_true(node.args[2]):
                out.append((ast.unparse(node.args[0]) + ".inplace", _loc(file, node.lineno)))
    return out


def _flagged_constructors(files: Iterable[str], classes: tuple[str, ...]) -> list[tuple[str, SourceLoc]]:
    """Constructor calls of `classes` that say `inplace=True` (or pass a variable as `inplace=`;
    those come after the literal ones), in `files`: (callee, line)."""
    out: list[tuple[bool, str, SourceLoc]] = []
    for file in files:
        tree = _tree(file)
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.Call) and _last(_callee(node)) in classes:
                flag = _flag(node)
                if flag is None or isinstance(flag, ast.Constant) and not flag.value:
                    continue
                out.append((not _is_true(flag), _callee(node), _loc(file, node.lineno)))
    out.sort(key=lambda x: (x[0], x[2].file, x[2].line))
    return [(callee, loc) for _, callee, loc in out]


def _nested_in_call(stmt: ast.stmt, call: ast.Call) -> bool:
    """Whether `call` is an argument (at any depth) of another call of the statement: the module
    it builds goes into a container built there (`nn.Sequential(..., nn.Dropout(inplace=True))`)."""
    return any(other is not call and any(n is call for n in ast.walk(other))
               for other in ast.walk(stmt) if isinstance(other, ast.Call))


def _key(name: str) -> str:
    return name.replace("_", "").lower()


def _after_saver(stmt: ast.stmt, call: ast.Call, saver: str) -> bool:
    """Whether the module built by `call` comes right after one whose op is `saver` among the
    container's arguments (`nn.Tanh(), nn.ReLU(inplace=True)`): it overwrites that module's output,
    which that op saved."""
    for parent in ast.walk(stmt):
        if isinstance(parent, ast.Call):
            for k, arg in enumerate(parent.args):
                if arg is call:
                    prev = parent.args[k - 1] if k > 0 else None
                    return isinstance(prev, ast.Call) and _key(_last(_callee(prev))) == _key(saver)
    return False


def _inner_constructor(stmt: ast.stmt, file: str, classes: tuple[str, ...],
                       saver: str | None = None) -> tuple[SourceLoc, ast.Call] | None:
    """The constructor of one of `classes` nested in a container built by `stmt`, at its own line:
    one right after a module of the op that saved the changed tensor (`saver`) first, then the one
    that says `inplace=True` (then one passing a variable, then any), by line."""
    found = [n for n in ast.walk(stmt) if isinstance(n, ast.Call) and _last(_callee(n)) in classes
             and _nested_in_call(stmt, n)]
    if not found:
        return None

    def rank(c: ast.Call) -> tuple[int, int, int]:
        flag = _flag(c)
        return (0 if saver and _after_saver(stmt, c, saver) else 1,
                0 if _is_true(flag) else 1 if flag is not None else 2, c.lineno)

    best = min(found, key=rank)
    return _loc(file, best.lineno), best


def _called_module(fr: Frame, callee: str, classes: tuple[str, ...],
                   saver: str | None = None) -> tuple[SourceLoc, ast.Call, bool] | None:
    """Where the module called as `callee` at the frame's line was built, when its constructor is
    one of `classes`: `self.activ` -> `self.activ = nn.ReLU(inplace=True)` in the class. When that
    line builds a container around such a constructor (`self.main = nn.Sequential(nn.Linear(..),
    nn.LeakyReLU(..), nn.Dropout(inplace=True))`, at any depth), the module called is the container:
    the nested constructor, at its own line, is the module that ran the op (third item True)."""
    if callee.startswith("self.") and callee.count(".") == 1:
        cls = class_of_function(fr.file, enclosing_scope(fr.file, fr.line))
        lines = class_attribute_lines(fr.file, cls, callee[5:]) if cls else []
    elif callee.isidentifier():
        lines = name_assignment_lines(fr.file, fr.line, callee)
    else:
        lines = []
    for loc in lines:
        stmt = _statement(loc.file, loc.line)  # (a parse of its own: look for nodes in it)
        call = next((n for n in ast.walk(stmt) if isinstance(n, ast.Call) and _last(_callee(n)) in classes),
                    None) if stmt is not None else None
        if call is None:
            continue
        if _nested_in_call(stmt, call):
            inner = _inner_constructor(stmt, loc.file, classes, saver)
            if inner is not None:
                return inner[0], inner[1], True
            continue
        return loc, call, False
    return None


def inplace_flag_source(site: Iterable[Frame], op: str, max_frames: int = 3,
                        saved_by: str | None = None) -> FlagSource | None:
    """The module that ran the in-place `op` recorded at `site` (its user frames, innermost first),
    named as written, with the line that made it in-place. None when the calling line calls the
    functional form itself (`F.relu(x, inplace=True)`: that line is the fix) or nothing is found.
    `saved_by`: the op that saved the changed tensor (`tanh`), which tells apart the modules of a
    container (the one right after an `nn.Tanh()`)."""
    classes = module_classes(op)
    if not classes:
        return None
    frames = list(site)[:max_frames]
    files: list[str] = []
    for fr in frames:
        if fr.file not in files:
            files.append(fr.file)
    functional = op.strip("_")
    for k, fr in enumerate(frames):
        stmt = _statement(fr.file, fr.line)
        calls = [n for n in ast.walk(stmt) if isinstance(n, ast.Call)] if stmt is not None else []
        if k == 0 and any(_flag(c) is not None and _last(_callee(c)) == functional for c in calls):
            return None  # `F.dropout(h, p, inplace=True)` written on the line itself
        for call in calls:
            callee = _callee(call)
            found = _called_module(fr, callee, classes, saved_by)
            if found is None:
                continue
            made, ctor, nested = found
            # a module inside the container called here is named by its constructor, as written
            # (`nn.Dropout`), as for a container found below; the callee itself otherwise
            name = _callee(ctor) if nested else callee
            if _flag(ctor) is not None:
                return FlagSource(name, made, made)
            later = _flag_assignments(files + ([made.file] if made.file not in files else []))
            if later:
                target, where = later[0]
                return FlagSource(target, made, where)
            return FlagSource(name, made, made)
    # a container was called (`self.main(x)` over an nn.Sequential): the constructor that says so
    flagged = _flagged_constructors(files, classes)
    if flagged:
        callee, where = flagged[0]
        return FlagSource(callee, where, where)
    later = _flag_assignments(files)
    if later:
        target, where = later[0]
        return FlagSource(target, None, where)
    return None
