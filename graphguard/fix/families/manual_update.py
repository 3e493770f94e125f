"""Run a manual parameter update under torch.no_grad() (GG006)."""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import loc, Source, wrap_no_grad


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
    if isinstance(loop, cst.For):
        yield ("no-grad-update", src.start(loop), wrap_no_grad(src, loop), "wrap the update loop in torch.no_grad()")
