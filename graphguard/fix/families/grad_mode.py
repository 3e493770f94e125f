"""Compute with gradients on where they were switched off (GG009, GG008, GG014)."""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import loc, subject_name, related, Source, dotted, grad_off, drop_rewraps, parse_expr


def enable_grad(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG009 (and GG008): the loss was computed with gradients off. Run that code with gradients on:
    unwrap the `with torch.no_grad():` block, drop `torch.set_grad_enabled(False)` or a `@torch.no_grad()`
    decorator, nearest to the cut first; the `requires_grad = True` re-wrap that let backward run on a
    loss without history goes too (it would now fail on a non-leaf)."""
    for r in related(f, "fix-at"):
        # GG014 on a callable a no-grad function calls (an optimizer's `loss = closure()`): turn
        # gradients back on around that call, the decorator stays for the function's own updates
        line = loc(r.get("location"))[1] if r.get("op") == "torch.enable_grad()" else None
        stmt = src.statement(line) if line else None
        if stmt is not None:
            block = cst.IndentedBlock(body=[stmt.with_changes(leading_lines=[])])
            with_ = cst.With(items=[cst.WithItem(parse_expr("torch.enable_grad()"))], body=block,
                             leading_lines=getattr(stmt, "leading_lines", ()))
            yield ("enable-grad", line, src.replace(stmt, with_), f"call {r.get('name')} with gradients on")
    anchors = [ln for ln in [loc(r.get("location"))[1] for r in related(f, "cut-by", "fix-at")]
               + [loc(f.get("location"))[1]] if ln]
    if not anchors:
        return
    found: list[tuple[int, cst.CSTNode, str]] = []
    for w in src.nodes(cst.With):
        if len(w.items) == 1 and grad_off(w.items[0].item):
            found.append((src.start(w), w, "unwrap"))
    for s in src.nodes(cst.SimpleStatementLine):
        if len(s.body) == 1 and isinstance(s.body[0], cst.Expr) and grad_off(s.body[0].value) \
                and (dotted(s.body[0].value.func) or "").endswith("set_grad_enabled"):  # type: ignore[attr-defined]
            found.append((src.start(s), s, "drop"))
    for fn in src.nodes(cst.FunctionDef):
        for d in fn.decorators:
            if grad_off(d.decorator):
                found.append((src.start(fn), d, "drop"))

    def dist(line: int) -> int:
        return min(abs(line - a) for a in anchors)

    name = subject_name(f)
    for line, node, how in sorted(found, key=lambda t: dist(t[0]))[:3]:
        if how == "unwrap":
            body = list(node.body.body)  # type: ignore[attr-defined]
            body[0] = body[0].with_changes(leading_lines=node.leading_lines)  # type: ignore[attr-defined]
            new = src.replace(node, cst.FlattenSentinel(body))
        else:
            new = src.replace(node, cst.RemoveFromParent())
        yield ("enable-grad", line, new, "compute it with gradients on")
        if name:
            dropped = drop_rewraps(new, name)
            if dropped != new:
                yield ("enable-grad", line, dropped, f"compute it with gradients on; no {name} re-wrap")
