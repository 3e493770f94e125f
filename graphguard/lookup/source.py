"""Read the user's source around a reported line: which name a line calls, where a name is
assigned or grown. Used only to point at lines in reports, never to decide whether to report.
"""
from __future__ import annotations

import ast
import linecache
from functools import lru_cache
from typing import Iterator

from ..model import SourceLoc

__all__ = ["called_names", "assignment_lines", "attribute_assignment_lines", "growth_lines",
           "enclosing_scope", "target_lines", "name_assignment_lines", "class_attribute_lines",
           "class_of_function", "assigned_targets", "inplace_receivers", "parsed", "own_nodes",
           "targets_of",
           "expr_text", "statement_loc", "statement_at"]

_GROW_METHODS = frozenset({"append", "extend", "insert", "appendleft", "add", "update", "setdefault",
                           "__setitem__"})


@lru_cache(maxsize=64)
def _parse(file: str, size: int) -> ast.Module | None:
    # `size` is part of the key so that an edited file is parsed again
    text = "".join(linecache.getlines(file))
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def _tree(file: str) -> ast.Module | None:
    lines = linecache.getlines(file)
    return _parse(file, len(lines)) if lines else None


# Statements that hold other statements: their header line is not a statement of its own here
# (a `for x in loader:` line has no simple statement, as it had none parsed on its own).
_COMPOUND = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor,
             ast.While, ast.With, ast.AsyncWith, ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
             *((ast.Match,) if hasattr(ast, "Match") else ()))


@lru_cache(maxsize=64)
def _statement_index(file: str, size: int) -> dict[int, ast.stmt] | None:
    """line -> the first simple statement spanning it, for the whole file (one parse, one walk);
    None when the file does not parse as a whole."""
    tree = _parse(file, size)
    if tree is None:
        return None
    index: dict[int, tuple[tuple[int, int], ast.stmt]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not isinstance(node, _COMPOUND):
            start = (node.lineno, node.col_offset)
            for ln in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                old = index.get(ln)
                if old is None or start < old[0]:  # `a = f(x); b = g(a)`: the first of the line
                    index[ln] = (start, node)
    return {ln: node for ln, (_, node) in index.items()}


@lru_cache(maxsize=256)
def _line_alone(file: str, size: int, line: int) -> ast.stmt | None:
    # a file that does not parse as a whole (a notebook cell with `%magic` lines): the line alone;
    # `size` keys the cache, so that an edited file is read again
    text = linecache.getline(file, line).strip()
    if not text or text.endswith(":"):
        return None
    try:
        body = ast.parse(text).body
    except (SyntaxError, ValueError):
        return None
    return body[0] if body and not isinstance(body[0], _COMPOUND) else None


def statement_at(file: str, line: int) -> ast.stmt | None:
    """The whole simple statement covering `line` of `file` (a `loss = criterion(` call written
    over two lines, for either of them), from one cached parse of the file; None for a blank
    line, a compound statement's header (`for ...:`, `with ...:`, `def ...`), or a file linecache
    cannot read. Several statements on one line: the first. The node is shared: copy it before
    changing it."""
    lines = linecache.getlines(file)
    if not lines or not 1 <= line <= len(lines):
        return None
    size = len(lines)
    index = _statement_index(file, size)
    if index is None:
        return _line_alone(file, size, line)
    return index.get(line)


def enclosing_scope(file: str, line: int) -> ast.AST | None:
    """The innermost function (or the module) whose body holds `line`."""
    tree = _tree(file)
    if tree is None:
        return None
    best: ast.AST = tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            end = getattr(node, "end_lineno", None) or node.lineno
            if node.lineno <= line <= end and node.lineno >= getattr(best, "lineno", 0):
                best = node
    return best


def _statements_at(file: str, line: int) -> Iterator[ast.AST]:
    scope = enclosing_scope(file, line)
    if scope is None:
        return
    for node in ast.walk(scope):
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno) \
                and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                          ast.For, ast.While, ast.If, ast.With, ast.Try)):
            yield node


def called_names(file: str, line: int) -> list[str]:
    """Plain names called on a line: `head(h)` -> ['head']; `F.relu(x)` is an attribute, skipped."""
    out = []
    for stmt in _statements_at(file, line):
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id not in out:
                out.append(node.func.id)
    return out


def assignment_lines(file: str, line: int, target: str) -> list[int]:
    """Lines of the function around `line` that assign `target` (`head = nn.Linear(...)`)."""
    scope = enclosing_scope(file, line)
    out = []
    for node in ast.walk(scope) if scope is not None else ():
        if isinstance(node, ast.Assign) and any(_text(t) == target for t in node.targets):
            out.append(node.lineno)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and _text(node.target) == target:
            out.append(node.lineno)
    return sorted(out)


def attribute_assignment_lines(file: str, attr: str) -> list[int]:
    """Lines anywhere in the file that assign an attribute of that name (`self.blocks = [...]`)."""
    tree = _tree(file)
    out = []
    for node in ast.walk(tree) if tree is not None else ():
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Attribute) and t.attr == attr for t in targets):
            out.append(node.lineno)
    return sorted(out)


def growth_lines(file: str, holder: str) -> list[int]:
    """Lines anywhere in the file that grow `holder` (`x += ...`, `x = x + ...`, `x.append(...)`,
    `x[k] += ...`, `x[k] = ...`). `holder` is an expression such as `losses`, `self.hist`,
    `stats['loss']`; `self.hist` also matches `<anything>.hist` (the method of a logger)."""
    tree = _tree(file)
    if tree is None:
        return []
    attr = holder.rsplit(".", 1)[1] if "." in holder and "[" not in holder.rsplit(".", 1)[1] else None
    out: set[int] = set()

    def same(expr: ast.AST) -> bool:
        text = _text(expr)
        if text == holder:
            return True
        return attr is not None and isinstance(expr, ast.Attribute) and expr.attr == attr

    for node in ast.walk(tree):
        if isinstance(node, ast.AugAssign) and (same(node.target) or
                                                isinstance(node.target, ast.Subscript) and same(node.target.value)):
            out.add(node.lineno)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Subscript) and same(t.value):
                    out.add(node.lineno)
                elif same(t) and any(same(n) for n in ast.walk(node.value)):
                    out.add(node.lineno)  # `total = total + loss`
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in _GROW_METHODS and same(node.func.value):
            out.add(node.lineno)
    return sorted(out)


def _text(expr: ast.AST) -> str:
    try:
        return ast.unparse(expr)
    except Exception:
        return ""


# ---- creation lines (lookup/origins.py) ----------------------------------------------------------
def _targets_of(node: ast.AST) -> list[ast.AST]:
    """The expressions a statement binds: `a, self.h = ...` -> [a, self.h]; `for p in ...` -> [p]."""
    if isinstance(node, ast.Assign):
        raw = list(node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.For, ast.AsyncFor)):
        raw = [node.target]
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        raw = [node.optional_vars]
    elif isinstance(node, ast.NamedExpr):
        raw = [node.target]
    else:
        return []
    out: list[ast.AST] = []
    while raw:
        t = raw.pop(0)
        if isinstance(t, (ast.Tuple, ast.List)):
            raw[0:0] = list(t.elts)
        elif isinstance(t, ast.Starred):
            raw.insert(0, t.value)
        else:
            out.append(t)
    return out


def _loc(file: str, node: ast.AST, function: str) -> SourceLoc:
    line = node.lineno
    return SourceLoc(file, line, function, linecache.getline(file, line).strip())


def _scope_name(scope: ast.AST | None) -> str:
    return getattr(scope, "name", "<module>") if scope is not None else "<module>"


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function or module body, not those of functions or classes nested in it."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def _assigning(file: str, scope: ast.AST, target: str) -> list[SourceLoc]:
    out = []
    for node in _own_nodes(scope):
        if any(_text(t) == target for t in _targets_of(node)):
            out.append(_loc(file, node, _scope_name(scope)))
    return sorted(out, key=lambda s: s.line)


def _before(found: list[SourceLoc], line: int) -> list[SourceLoc]:
    """Assignments up to `line` (the last one last); all of them when none comes before."""
    early = [s for s in found if s.line <= line]
    return early or found


def target_lines(file: str, line: int, target: str) -> list[SourceLoc]:
    """Statements that assign `target` (`x`, `model.fc`, `a` in `a, b = ...`) in the function
    around `line`, else at module level; the last one at or before `line` comes last."""
    scope = enclosing_scope(file, line)
    if scope is None:
        return []
    found = _assigning(file, scope, target)
    if not found and not isinstance(scope, ast.Module):
        tree = _tree(file)
        found = _assigning(file, tree, target) if tree is not None else []
    return _before(found, line)


def name_assignment_lines(file: str, line: int, name: str) -> list[SourceLoc]:
    """`target_lines` for a plain name (a local or global variable)."""
    return target_lines(file, line, name)


_REGISTER = frozenset({"register_parameter", "register_buffer", "add_module", "register_module"})


def class_attribute_lines(file: str, cls: str, attr: str) -> list[SourceLoc]:
    """In class `cls` of `file`: `self.<attr> = ...` or `self.register_parameter('<attr>', ...)`
    (also `add_module`, `register_buffer`, `setattr(self, '<attr>', ...)`), `__init__` first."""
    tree = _tree(file)
    out: list[tuple[int, SourceLoc]] = []
    for klass in ast.walk(tree) if tree is not None else ():
        if not (isinstance(klass, ast.ClassDef) and klass.name == cls):
            continue
        for fn in klass.body:
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            me = fn.args.args[0].arg if fn.args.args else "self"
            rank = 0 if fn.name == "__init__" else 1
            for node in _own_nodes(fn):
                hit = any(isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name)
                          and t.value.id == me for t in _targets_of(node))
                if not hit and isinstance(node, ast.Call) and node.args \
                        and isinstance(node.args[0], ast.Constant) and node.args[0].value == attr:
                    f = node.func
                    hit = isinstance(f, ast.Attribute) and f.attr in _REGISTER
                if not hit and isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                        and node.func.id == "setattr" and len(node.args) >= 2 \
                        and isinstance(node.args[1], ast.Constant) and node.args[1].value == attr:
                    hit = True
                if hit:
                    out.append((rank, _loc(file, node, fn.name)))
    out.sort(key=lambda x: (x[0], x[1].line))
    return [s for _, s in out]


def class_of_function(file: str, scope: ast.AST | None) -> str | None:
    """The name of the class whose body defines the function `scope`, or None."""
    if scope is None or isinstance(scope, ast.Module):
        return None
    tree = _tree(file)
    for klass in ast.walk(tree) if tree is not None else ():
        if isinstance(klass, ast.ClassDef) and any(fn is scope for fn in klass.body):
            return klass.name
    return None


def assigned_targets(file: str, line: int) -> list[str]:
    """The expressions a statement on `line` assigns, as written: `lstm_out, self.hidden = ...`
    -> ['lstm_out', 'self.hidden']; `[]` when the line assigns nothing."""
    out: list[str] = []
    for stmt in _statements_at(file, line):
        if stmt.lineno != line and not isinstance(stmt, ast.Assign):
            continue
        for t in _targets_of(stmt):
            text = _text(t)
            if text and text not in out:
                out.append(text)
    return out



def inplace_receivers(file: str, line: int) -> list[str]:
    """The receivers of in-place method calls a statement on `line` makes as a whole:
    `w.requires_grad_(True)` -> ['w']; `[]` for any other statement. Such a line makes a tensor a
    leaf that requires grad without assigning a name (the name was assigned on an earlier line)."""
    out: list[str] = []
    for stmt in _statements_at(file, line):
        if stmt.lineno != line or not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call):
            continue
        func = stmt.value.func
        if isinstance(func, ast.Attribute) and func.attr.endswith("_") and not func.attr.startswith("_"):
            text = _text(func.value)
            if text and text not in out:
                out.append(text)
    return out

# ---- public names for the other lookup modules (lookup/made.py) ---------------------------------
def parsed(file: str) -> ast.Module | None:
    """The parsed source of `file` (cached; None when it cannot be read or parsed)."""
    return _tree(file)


def own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function or module body, not those of functions or classes nested in it."""
    return _own_nodes(scope)


def targets_of(node: ast.AST) -> list[ast.AST]:
    """The expressions a statement binds, tuples flattened."""
    return _targets_of(node)


def expr_text(expr: ast.AST) -> str:
    """An expression as source text ("" when it cannot be unparsed)."""
    return _text(expr)


def statement_loc(file: str, node: ast.AST, function: str) -> SourceLoc:
    """A SourceLoc for a statement's first line."""
    return _loc(file, node, function)
