"""Run a manual parameter update under torch.no_grad() (GG006)."""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import loc, Source, dotted, parse_expr, wrap_no_grad


def no_grad_update(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG006: run the manual update under torch.no_grad()."""
    line = loc(f.get("location"))[1]
    stmt = src.statement(line) if line else None
    if stmt is None:
        return
    # the whole enclosing `for p in params:` loop when the update is its body, else the statement
    parent = src.parent.get(stmt)
    loop = src.parent.get(parent) if isinstance(parent, cst.IndentedBlock) else None
    yield ("no-grad-update", line, wrap_no_grad(src, stmt), "wrap the update in torch.no_grad()")
    yield from no_grad_writes(src, f, file)
    if isinstance(loop, cst.For):
        yield ("no-grad-update", src.start(loop), wrap_no_grad(src, loop), "wrap the update loop in torch.no_grad()")


def _written_base(stmt: cst.CSTNode) -> str | None:
    """The tensor a simple statement writes into in place, as written: `E` for `E[:, 0::2] = v`,
    `w` for `w -= lr * g` and `w.add_(g)`."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        t = small.targets[0].target
        return dotted(t.value) if isinstance(t, cst.Subscript) else None
    if isinstance(small, cst.AugAssign):
        t = small.target
        return dotted(t.value) if isinstance(t, cst.Subscript) else dotted(t)
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
            and isinstance(small.value.func, cst.Attribute) and small.value.func.attr.value.endswith("_"):
        return dotted(small.value.func.value)
    return None


def no_grad_writes(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG006: the update and the in-place writes into the same tensor right after it, under one
    torch.no_grad() (`E[:, 0::2] = sin; E[:, 1::2] = cos`: PyTorch refuses the first, and would
    refuse the second once the first is wrapped alone)."""
    line = loc(f.get("location"))[1]
    stmt = src.statement(line) if line else None
    block = src.parent.get(stmt) if stmt is not None else None
    base = _written_base(stmt) if stmt is not None else None
    if base is None or not isinstance(block, cst.IndentedBlock):
        return
    body = list(block.body)
    i = next((k for k, b in enumerate(body) if b is stmt), None)
    if i is None:
        return
    j = i + 1
    while j < len(body) and _written_base(body[j]) == base:
        j += 1
    if j == i + 1:
        return  # a single write: no_grad_update's candidate
    inner = [b.with_changes(leading_lines=[]) if k == 0 else b for k, b in enumerate(body[i:j])]
    with_ = cst.With(items=[cst.WithItem(parse_expr("torch.no_grad()"))],
                     body=cst.IndentedBlock(body=inner), leading_lines=stmt.leading_lines)
    new = src.replace(block, block.with_changes(body=body[:i] + [with_] + body[j:]))
    yield ("no-grad-update", line, new, f"wrap the writes into {base} in torch.no_grad()")
