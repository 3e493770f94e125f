"""Read the user's source around a reported line: which name a line calls, where a name is
assigned or grown. Used only to point at lines in reports, never to decide whether to report.
"""
from __future__ import annotations

import ast
import linecache
from functools import lru_cache
from typing import Iterator

__all__ = ["called_names", "assignment_lines", "attribute_assignment_lines", "growth_lines",
           "enclosing_scope"]

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
