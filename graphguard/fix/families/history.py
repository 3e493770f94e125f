"""Read the tensor itself instead of its .data / .item() / copy (GG008, GG009)."""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import loc, related, Source, dotted, upstream, COPIES
from .copies import literal_only


def keep_history(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG009/GG008: `.data`, `.detach()` or `.item()` where the loss's inputs are made reads the
    values without their history: read the tensor itself (and drop a re-wrap of the loss)."""
    lines = [ln for ln in [loc(r.get("location"))[1] for r in related(f, "cut-by", "fix-at")]
             + [loc((f.get("subject") or {}).get("created_at"))[1]] if ln]
    for line in upstream(src, lines):
        for a in src.nodes(cst.Attribute, line):
            if a.attr.value == "data" and src.statement(src.start(a)) is src.statement(line) \
                    and not isinstance(src.parent.get(a), cst.Attribute):
                yield ("keep-history", line, src.replace(a, a.value), "the tensor instead of its .data")
        for c in src.nodes(cst.Call, line):
            if isinstance(c.func, cst.Attribute) and c.func.attr.value in ("detach", "item") and not c.args \
                    and src.statement(src.start(c)) is src.statement(line):
                yield ("keep-history", line, src.replace(c, c.func.value), f"the tensor instead of its .{c.func.attr.value}()")
        # a copy into a new tensor (`torch.tensor(x)`, `Variable(x, requires_grad=True)`): x itself
        for c in src.nodes(cst.Call, line):
            if (dotted(c.func) or "").split(".")[-1] in COPIES and c.args and c.args[0].keyword is None \
                    and src.statement(src.start(c)) is src.statement(line) and not isinstance(c.args[0].value, cst.Name) \
                    and not literal_only(c.args[0].value) \
                    and not isinstance(c.args[0].value, (cst.List, cst.Tuple, cst.ListComp)):
                # (a literal copies no tensor; a list of tensors is not one: stack-copies stacks it)
                inner = c.args[0].value
                yield ("keep-history", line, src.replace(c, inner.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
                                                         if not isinstance(inner, (cst.Call, cst.Attribute, cst.Subscript)) else inner),
                       "the tensor itself instead of a copy")
