"""Swap a loss call's prediction and target when the finding says they are swapped (GG002)."""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import loc, related, subject_name, Source, dotted, Names


def _reads(node: cst.CSTNode, name: str) -> bool:
    """`node` reads `name` (a dotted name: `x_`, `self.out`)."""
    if dotted(node) == name:
        return True
    seen = Names()
    node.visit(seen)
    return "." not in name and name in seen.names


def swap_loss_arguments(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG002 with a `swap` fix-at: the prediction was passed as the target and plain data as the
    input. Swap the call's first two arguments (positional, or `input=` / `target=`) at the loss
    call, the one whose second argument reads the subject."""
    name = subject_name(f)
    if not name or not any(r.get("op") == "swap" for r in related(f, "fix-at")):
        return
    lines = [loc(f.get("location"))[1]] + [loc(r.get("location"))[1] for r in related(f, "fix-at") if r.get("op") == "swap"]
    for line in [ln for ln in dict.fromkeys(lines) if ln]:
        for call in src.nodes(cst.Call, line):
            if src.start(call) != line and src.statement(src.start(call)) is not src.statement(line):
                continue
            pos = [i for i, a in enumerate(call.args) if a.keyword is None and not a.star]
            kw = {a.keyword.value: i for i, a in enumerate(call.args) if a.keyword is not None}
            if len(pos) >= 2 and pos[:2] == [0, 1]:
                i, j = 0, 1
            elif "input" in kw and "target" in kw:
                i, j = kw["input"], kw["target"]
            else:
                continue
            a, b = call.args[i], call.args[j]
            if not _reads(b.value, name) or _reads(a.value, name):
                continue
            args = list(call.args)
            args[i], args[j] = a.with_changes(value=b.value), b.with_changes(value=a.value)
            yield ("swap-loss-arguments", line, src.replace(call, call.with_changes(args=args)),
                   f"{src.code(b.value).strip()} as the prediction, {src.code(a.value).strip()} as the target")
            return
