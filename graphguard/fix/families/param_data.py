"""Copy into a parameter instead of replacing its .data (GG016)."""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import loc, Source, parse_expr, parse_stmt


def copy_into_param(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG016: `p.data = value` swaps the tensor the optimizer holds: copy the value into it instead."""
    line = loc(f.get("location"))[1]
    stmt = src.statement(line) if line else None
    if stmt is None or len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Assign):
        return
    a = stmt.body[0]
    t = a.targets[0].target
    if len(a.targets) != 1 or not isinstance(t, cst.Attribute) or t.attr.value != "data":
        return
    p, v = src.code(t.value), src.code(a.value)
    yield ("copy-into-param", line, src.replace(stmt, parse_stmt(f"{p}.data.copy_({v})").with_changes(leading_lines=stmt.leading_lines)),
           f"{p}.data.copy_(...): the same tensor, new values")
    block = cst.IndentedBlock(body=[parse_stmt(f"{p}.copy_({v})")])
    yield ("copy-into-param", line, src.replace(stmt, cst.With(items=[cst.WithItem(parse_expr("torch.no_grad()"))], body=block,
                                                               leading_lines=stmt.leading_lines)),
           f"with torch.no_grad(): {p}.copy_(...)")
