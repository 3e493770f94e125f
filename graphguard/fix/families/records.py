"""Keep values, not graphs, in what outlives an iteration (GG101), where accumulate.py's `.item()` /
`.detach()` on the kept expression cannot apply: a dict of results appended whole (its tensors are
detached, everything else kept as is), and a running value written from itself
(`trace = trace - trace / tau + spikes`), detached where it is written back.
"""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import Source, dotted, enclosing, loc, method_call, parse_expr, related, subject_name

__all__ = ["detach_records"]


def detach_records(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG101: the holder keeps dicts of results, or a running value built from itself."""
    name = subject_name(f) or ""
    lines = {loc(f.get("location"))[1], loc((f.get("subject") or {}).get("created_at"))[1]}
    lines |= {loc(r.get("location"))[1] for r in related(f, "fix-at", "held-by")}
    torch_name = _torch(src)
    for line in sorted(ln for ln in lines if ln):
        stmt = src.statement(line)
        if stmt is None:
            continue
        for small in stmt.body:
            # `outputs.append(output)` where `output["loss"]` is read: a dict of results
            if torch_name and isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
                    and isinstance(small.value.func, cst.Attribute) \
                    and small.value.func.attr.value in ("append", "add") and small.value.args \
                    and isinstance(small.value.args[0].value, cst.Name):
                value = small.value.args[0].value
                if _keyed(src, value.value, enclosing(src, stmt, cst.FunctionDef)):
                    kept = parse_expr(f"{{k: v.detach() if {torch_name}.is_tensor(v) else v "
                                      f"for k, v in {value.value}.items()}}")
                    yield ("accumulate-detached-dict", line, src.replace(value, kept),
                           f"keep {value.value} with its tensors detached")
            # `self.trace = self.trace - self.trace / tau + x`: the value carries the graph on
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target = dotted(small.targets[0].target) or ""
                tail = target.split(".")[-1]
                if target and name and name.split(".")[-1] == tail and _reads(small.value, target):
                    new = small.with_changes(value=method_call(small.value, "detach"))
                    yield ("detach-running-value", line, src.replace(small, new),
                           f"{target} = (...).detach(): keep its value, not its history")


def _torch(src: Source) -> str | None:
    """The name `torch` is imported as in this file (None: not imported)."""
    for imp in src.nodes(cst.Import):
        for alias in imp.names:
            if dotted(alias.name) == "torch":
                return alias.asname.name.value if alias.asname else "torch"  # type: ignore[union-attr]
    return None


def _keyed(src: Source, name: str, fn: Any) -> bool:
    """`name["key"]` is read in function `fn` (or the module when None): `name` is a dict."""
    for s in src.nodes(cst.Subscript):
        if dotted(s.value) == name and enclosing(src, s, cst.FunctionDef) is fn and len(s.slice) == 1 \
                and isinstance(s.slice[0].slice, cst.Index) and isinstance(s.slice[0].slice.value, cst.SimpleString):
            return True
    return False


def _reads(value: cst.BaseExpression, target: str) -> bool:
    """`value` reads `target` (a dotted name) other than as a call's function."""
    found = []

    class Visit(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            if dotted(node) == target:
                found.append(node)
                return False
            return True

        def visit_Name(self, node: cst.Name) -> None:
            if node.value == target:
                found.append(node)

        def visit_Call(self, node: cst.Call) -> bool:
            for a in node.args:
                a.visit(self)
            return False

    value.visit(Visit())
    return bool(found)

