"""Accumulate numbers or detached tensors instead of graphs (GG101)."""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import loc, subject_name, related, Source, dotted, method_call


def accumulate_detached(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG101: accumulate a number (.item()) or a detached tensor instead of the graph."""
    name = subject_name(f)
    lines = {loc(f.get("location"))[1], loc((f.get("subject") or {}).get("created_at"))[1]}
    lines |= {loc(r.get("location"))[1] for r in related(f, "fix-at", "held-by")}
    base = (name or "").split("[")[0]
    seen: set[int] = set()
    for line in sorted(ln for ln in lines if ln):
        stmt = src.statement(line)
        if stmt is None or id(stmt) in seen:
            continue
        seen.add(id(stmt))
        for small in stmt.body:
            value = None
            if isinstance(small, cst.AugAssign):
                value = small.value
            elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
                    and isinstance(small.value.func, cst.Attribute) \
                    and small.value.func.attr.value in ("append", "extend", "add") and small.value.args:
                value = small.value.args[0].value
            elif isinstance(small, cst.Assign) and isinstance(small.targets[0].target, cst.Subscript):
                value = small.value
            elif isinstance(small, cst.Assign) and isinstance(small.value, cst.BinaryOperation) \
                    and base and dotted(small.value.left) == dotted(small.targets[0].target):
                value = small.value.right
            if value is None:
                continue
            for method in ("item", "detach"):
                yield (f"accumulate-{method}", line, src.replace(value, method_call(value, method)),
                       f"keep (...).{method}() instead of the graph")
