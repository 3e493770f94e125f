"""Reduce a non-scalar loss where the rule's fix-at says it is made (GG012): a loss module's or
function's `return`, or the assignment that builds it."""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import loc, related, Source, method_call


def reduce_at_fix(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG012: `return torch.clamp(margin + a - b, min=0)` in a hinge/rank loss hands backward one
    value per sample: make it the mean there, at the fix-at line (only `return <expr>` or a single
    assignment, the statement that makes the value handed to backward)."""
    for r in related(f, "fix-at"):
        line = loc(r.get("location"))[1]
        stmt = src.statement(line) if line else None
        if stmt is None or len(stmt.body) != 1:
            continue
        small = stmt.body[0]
        if isinstance(small, cst.Return) and small.value is not None:
            value = small.value
            where = "return (...).mean()"
        elif isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None \
                and not isinstance(small.value, (cst.Tuple, cst.List)):
            value = small.value
            where = "(...).mean() where it is made"
        else:
            continue
        yield ("mean-at-fix", src.start(stmt), src.replace(value, method_call(value, "mean")), where)
