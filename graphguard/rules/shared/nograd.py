"""Where a region with autograd off begins (GG014, GG008): the `@torch.no_grad()` /
`@torch.inference_mode()` decorator of a function, the `with torch.no_grad():` block, or a
`torch.set_grad_enabled(False)` call that turned it off for the whole program.

Detection uses what the run recorded: each cut made with grad mode off carries the switch in
force (capture/gradmode.py: the block, decorator or call that turned autograd off, seen
entering at run time, however it is spelled). `switch_of_cuts` decides from those alone. The
user's source is read for wording only: `region_for` turns a switch into a Region, with the
call as written on its line; `region_of` and `global_switch` find one in the source when the run
saw none (grad mode turned off before the guard started).
"""
from __future__ import annotations

import ast
import linecache
import sys
from functools import lru_cache
from typing import Iterable, NamedTuple

from ...capture.gradmode import GradSwitch
from ...capture.sites import is_internal_file
from ...model import Frame, Site, SourceLoc

__all__ = ["Region", "region_of", "region_for", "global_switch", "switch_of_cuts"]

_OFF_CALLS = {"no_grad": "no_grad", "inference_mode": "inference_mode"}


class Region(NamedTuple):
    kind: str  # "decorator" | "with" | "global" | "call" (a plain call inside a function)
    api: str  # `torch.no_grad()`, `torch.inference_mode()`, `torch.set_grad_enabled(False)`
    line: SourceLoc  # the decorator, the `with` line, or the global call
    function: str | None  # the decorated function (decorator), else the enclosing one
    frame: Frame | None  # the user frame inside the region


@lru_cache(maxsize=64)
def _tree(file: str, size: int) -> ast.Module | None:
    try:
        return ast.parse("".join(linecache.getlines(file)))
    except (SyntaxError, ValueError):
        return None


def _parse(file: str) -> ast.Module | None:
    lines = linecache.getlines(file)
    return _tree(file, sum(len(x) for x in lines)) if lines else None


def _off_api(expr: ast.AST) -> str | None:
    """`torch.no_grad()` / `no_grad()` / `torch.inference_mode()` / `torch.set_grad_enabled(False)`
    (also `torch.inference_mode(True)`), as written; None for anything else."""
    if not isinstance(expr, ast.Call):
        return None
    f = expr.func
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
    if name in _OFF_CALLS:
        if name == "inference_mode" and expr.args and isinstance(expr.args[0], ast.Constant) \
                and expr.args[0].value is False:
            return None
        return ast.unparse(expr)
    if name == "set_grad_enabled" and expr.args and isinstance(expr.args[0], ast.Constant) \
            and expr.args[0].value is False:
        return ast.unparse(expr)
    return None


def _decorator_api(dec: ast.AST) -> str | None:
    api = _off_api(dec)
    if api is None and isinstance(dec, (ast.Attribute, ast.Name)):  # `@torch.no_grad` bare
        name = dec.attr if isinstance(dec, ast.Attribute) else dec.id
        if name in _OFF_CALLS:
            api = ast.unparse(dec)
    return api


def _bound_api(scope: ast.AST, name: str, before: int, prefer: str | None) -> str | None:
    """The no-grad call a context-manager variable was bound to before line `before` in `scope`
    (`context = torch.inference_mode() if self.inference_mode else torch.no_grad()`, then
    `with context:`): the last such assignment wins; of a conditional's branches, the one whose
    call is `prefer` (what the tensors showed), else the first that turns autograd off."""
    api = None
    for node in ast.walk(scope):
        if not (isinstance(node, ast.Assign) and node.lineno < before and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name):
            continue
        value = node.value
        branches = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
        apis = [a for a in map(_off_api, branches) if a is not None]
        if apis:
            api = next((a for a in apis if prefer and prefer in a), apis[0])
    return api


def _in_frame(frame: Frame, prefer: str | None = None) -> tuple[str, str, int, str | None] | None:
    """The innermost no-grad region around `frame`'s line: (kind, api, line, function)."""
    tree = _parse(frame.file)
    if tree is None:
        return None
    line = frame.line
    best: tuple[int, tuple[str, str, int, str | None]] | None = None

    def visit(node: ast.AST, func: str | None, scope: ast.AST) -> None:
        nonlocal best
        for child in ast.iter_child_nodes(node):
            start = getattr(child, "lineno", None)
            end = getattr(child, "end_lineno", None)
            if start is None or end is None:
                visit(child, func, scope)
                continue
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([start] + [d.lineno for d in child.decorator_list])
                if not (first <= line <= end):
                    continue
                for dec in child.decorator_list:
                    api = _decorator_api(dec)
                    if api is not None and start <= line:
                        if best is None or start >= best[0]:
                            best = (start, ("decorator", api, dec.lineno, child.name))
                visit(child, child.name, child)
                continue
            if not (start <= line <= end):
                continue
            if isinstance(child, (ast.With, ast.AsyncWith)) and line > start:
                for item in child.items:
                    expr = item.context_expr
                    api = _off_api(expr)
                    if api is None and isinstance(expr, ast.Name):
                        api = _bound_api(scope, expr.id, start, prefer)
                    if api is not None and (best is None or start >= best[0]):
                        best = (start, ("with", api, start, func))
            visit(child, func, scope)

    visit(tree, None, tree)
    return best[1] if best else None


def region_of(site: Site | None, prefer: str | None = None) -> Region | None:
    """The no-grad region the innermost-first user frames of `site` ran in (the first frame,
    from the inside out, whose line sits in one). `prefer` ("inference_mode") picks the branch of
    a context manager chosen at run time (`ctx = a if flag else b; with ctx:`)."""
    for fr in site or ():
        found = _in_frame(fr, prefer)
        if found is not None:
            kind, api, line, func = found
            return Region(kind, api, SourceLoc(fr.file, line, func or "<module>",
                                               linecache.getline(fr.file, line).strip()), func, fr)
    return None


def _user_module_files() -> Iterable[str]:
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        if f and f.endswith(".py") and not is_internal_file(f):
            yield f


def global_switch(first: Iterable[str] = ()) -> Region | None:
    """A module-level `torch.set_grad_enabled(False)` (or `torch.autograd.set_grad_enabled`)
    in the user's files: grad mode turned off for the whole program. Looked up only when
    autograd was off outside any `with` block or decorator."""
    seen: set[str] = set()
    for f in list(first) + list(_user_module_files()):
        if f in seen:
            continue
        seen.add(f)
        tree = _parse(f)
        if tree is None:
            continue
        for stmt in tree.body:
            if isinstance(stmt, ast.Expr) and _off_api(stmt.value) and "set_grad_enabled" in ast.unparse(stmt.value):
                return Region("global", ast.unparse(stmt.value),
                              SourceLoc(f, stmt.lineno, "<module>", linecache.getline(f, stmt.lineno).strip()),
                              None, None)
    return None


def switch_of_cuts(cuts: list) -> GradSwitch | None:
    """The user's own block or decorator (a run-time switch, capture/gradmode.py) in which every
    one of `cuts` (capture.state.Cut) ran with grad mode off, when they all ran in the same one;
    None otherwise. A parameter cut from the loss only by such a region (a projection head
    computed inside `with torch.no_grad():` whose output is the text side of a contrastive loss)
    is GG014's to report (GG008 leaves it). Decided from the recorded switches alone."""
    if not cuts:
        return None
    first = cuts[0].switch
    if first is None or not first.user or first.kind not in ("with", "decorator"):
        return None
    for c in cuts:
        s = c.switch
        if not c.no_grad or s is None or s.key != first.key or s.kind != first.kind:
            return None
    return first


def _calls(node: ast.AST) -> list[ast.Call]:
    return sorted((n for n in ast.walk(node) if isinstance(n, ast.Call)),
                  key=lambda n: (n.lineno, n.col_offset))


def _written_api(switch: GradSwitch, scope: ast.AST | None, stmt: ast.AST | None) -> tuple[str, int]:
    """The switch's call as the source writes it on its line, and that line (a decorator's own
    line when it is not the first of the function's decorators). Falls back to torch's name."""
    fallback = {"set_grad_enabled": "torch.set_grad_enabled(False)"}.get(
        switch.api, f"torch.{switch.api}()")
    if stmt is None:
        return fallback, switch.line
    if switch.kind == "decorator" and isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for dec in stmt.decorator_list:
            api = _decorator_api(dec)
            if api is not None and switch.api in api:
                return api, dec.lineno
        return fallback, switch.line
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        exprs = [item.context_expr for item in stmt.items]
    else:
        exprs = [stmt]
    for expr in exprs:
        for call in ([expr] if isinstance(expr, ast.Call) else []) + _calls(expr):
            api = _off_api(call)
            if api is not None and switch.api in api:
                return api, switch.line
        if isinstance(expr, ast.Name) and scope is not None:
            api = _bound_api(scope, expr.id, switch.line, switch.api)
            if api is not None:
                return api, switch.line
    if isinstance(stmt, (ast.With, ast.AsyncWith)) and len(exprs) == 1:
        return ast.unparse(exprs[0]), switch.line  # the user's own helper: `maybe_no_grad(ev)`
    return fallback, switch.line


def _statement(file: str, line: int, function: str, decorator: bool) -> tuple[ast.AST | None, ast.AST | None]:
    """(enclosing scope, statement) at `line`: for a decorator, the function defined there."""
    tree = _parse(file)
    if tree is None:
        return None, None
    found: tuple[ast.AST | None, ast.AST | None] = (None, None)

    def visit(node: ast.AST, scope: ast.AST) -> None:
        nonlocal found
        for child in ast.iter_child_nodes(node):
            start, end = getattr(child, "lineno", None), getattr(child, "end_lineno", None)
            if start is None or end is None:
                continue
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([start] + [d.lineno for d in child.decorator_list])
                if decorator and child.name == function and first <= line <= start:
                    found = (scope, child)
                    return
                if first <= line <= end:
                    visit(child, child)
                continue
            if isinstance(child, ast.stmt) and start <= line <= end:
                if start == line and found[1] is None:
                    found = (scope, child)  # the outermost statement that starts there
                visit(child, scope)

    visit(tree, tree)
    return found


def region_for(switch: GradSwitch | None, site: Site | None) -> Region | None:
    """The Region a recorded switch stands for, worded from the source; `site` (the cut's or
    tensor's user frames) gives the frame inside it. None for a switch that is not the user's
    (a framework's evaluation loop, torch's own) or that turns autograd on."""
    if switch is None or not switch.user or not switch.off:
        return None
    scope, stmt = _statement(switch.file, switch.line, switch.function, switch.kind == "decorator")
    api, line = _written_api(switch, scope, stmt)
    frame = next((fr for fr in site or () if fr.file == switch.file and fr.function == switch.function),
                 None)
    kind = switch.kind
    function: str | None = switch.function
    if kind == "call":
        kind = "global" if switch.function == "<module>" else "call"
    if function == "<module>":
        function = None
    loc = SourceLoc(switch.file, line, switch.function, linecache.getline(switch.file, line).strip())
    return Region(kind, api, loc, function, frame)

