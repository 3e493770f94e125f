"""A second backward through a freed graph: detach, sum or retain (GG003)."""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import loc, subject_name, related, Source, parse_expr, method_call, backward_calls, with_kwarg, reads_of, block_between


def reuse_graph(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG003: the second backward goes through a graph the first one freed. Detach the shared tensor
    where the first loss reads it (the usual GAN fix), or where the second one does; sum the two losses
    into one backward; or keep the graph with retain_graph=True on the first backward."""
    name = subject_name(f)
    second = loc(f.get("location"))[1]
    firsts = [ln for ln in (loc(r.get("location"))[1] for r in related(f, "consumed-by")) if ln]
    created = loc((f.get("subject") or {}).get("created_at"))[1]
    for first in firsts:
        # the shared tensor read between its creation and the first backward, or after the first
        # backward up to the second: one `.detach()` on one read
        if name and second:
            spans = [(created + 1 if created else first, first), (first + 1, second)]
            for lo, hi in spans:
                if lo > hi:
                    continue
                for stmt in block_between(src, lo, hi):
                    # every read of one statement at once (a statement over several lines too): a
                    # read left attached still reaches the freed graph
                    reads = list({id(n): n for ln in range(src.start(stmt), src.end(stmt) + 1)
                                  for n in reads_of(src, name, ln)}.values())
                    if reads:
                        yield ("detach-shared-input", src.start(reads[0]), _detach_all(src, reads),
                               f"read {name}.detach() here")
        calls = backward_calls(src, first)
        for call in calls:
            yield ("retain-graph", first, src.replace(call, with_kwarg(call, "retain_graph", "True")),
                   "retain_graph=True on the first backward")
        # `a.backward()` then `b.backward()` in one block: `(a + b).backward()`
        s1, s2 = src.statement(first), src.statement(second) if second else None
        if s1 is not None and s2 is not None and s1 is not s2 and src.parent.get(s1) is src.parent.get(s2):
            c1, c2 = backward_calls(src, first), backward_calls(src, second)
            plain = all(len(c) == 1 and isinstance(c[0].func, cst.Attribute) and not c[0].args
                        and c[0].func.attr.value == "backward" and len(s.body) == 1
                        and isinstance(s.body[0], cst.Expr) and s.body[0].value is c[0]
                        for c, s in ((c1, s1), (c2, s2)))
            if plain:
                a = src.code(c1[0].func.value)  # type: ignore[attr-defined]
                b = src.code(c2[0].func.value)  # type: ignore[attr-defined]
                block = src.parent[s1]
                body = list(block.body)  # type: ignore[attr-defined]
                if body.index(s2) == body.index(s1) + 1:  # adjacent: nothing runs between them
                    summed = s1.with_changes(body=[cst.Expr(parse_expr(f"({a} + {b}).backward()"))])
                    body = [summed if s is s1 else s for s in body if s is not s2]
                    yield ("sum-losses", first, src.replace(block, block.with_changes(body=body)),
                           f"one backward of {a} + {b}")


def _detach_all(src: Source, reads: list[cst.CSTNode]) -> str:
    """The module with `n.detach()` for every node of `reads`."""
    class Det(cst.CSTTransformer):
        def leave_Name(self, o: cst.Name, u: cst.Name) -> cst.BaseExpression:
            return method_call(u, "detach") if any(o is r for r in reads) else u

        def leave_Attribute(self, o: cst.Attribute, u: cst.Attribute) -> cst.BaseExpression:
            return method_call(u, "detach") if any(o is r for r in reads) else u

    return src.module.visit(Det()).code
