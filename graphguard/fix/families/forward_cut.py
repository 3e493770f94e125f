"""A module's forward that hands out its output without history (GG008): return the tensor itself,
not its `.data` / `.detach()` copy, so the parameters behind it get gradients."""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import loc, related, Source, dotted, enclosing


def _cuts(src: Source, fn: cst.FunctionDef) -> list[cst.CSTNode]:
    """`x.data` reads and `x.detach()` calls in `fn` (nested functions left out)."""
    out: list[cst.CSTNode] = []
    for node in src.nodes((cst.Attribute, cst.Call)):
        if enclosing(src, node, cst.FunctionDef) is not fn:
            continue
        if isinstance(node, cst.Attribute) and node.attr.value == "data" \
                and not isinstance(src.parent.get(node), (cst.Attribute, cst.Call)):
            out.append(node)
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value == "detach" and not node.args:
            out.append(node)
    return out


def forward_keeps_history(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG008: the parameters of a module get no gradient and the module's own forward reads its
    result's `.data` (or `.detach()`): the forward returns the tensor itself. A statement that only
    rebinds a name to its own copy (`out = out.data`) goes, with an `if` left empty by it."""
    lines = [loc((f.get("subject") or {}).get("created_at"))[1]]
    lines += [loc(r.get("location"))[1] for r in related(f, "no-gradient", "unreachable")]
    classes: list[cst.ClassDef] = []
    for line in [ln for ln in lines if ln]:
        stmt = src.statement(line)
        cls = enclosing(src, stmt, cst.ClassDef) if stmt is not None else None
        if cls is not None and not any(cls is c for c in classes):
            classes.append(cls)
    for cls in classes:
        fwd = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "forward"), None)
        cuts = _cuts(src, fwd) if fwd is not None else []
        if not cuts:
            continue
        drop: list[cst.CSTNode] = []
        for c in cuts:
            stmt = src.statement(src.start(c))
            base = c.value if isinstance(c, cst.Attribute) else c.func.value  # type: ignore[attr-defined]
            if stmt is not None and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign) \
                    and stmt.body[0].value is c and len(stmt.body[0].targets) == 1 \
                    and dotted(stmt.body[0].targets[0].target) == dotted(base):
                drop.append(stmt)

        class Edit(cst.CSTTransformer):
            def leave_Attribute(self, o: cst.Attribute, u: cst.Attribute) -> Any:
                return u.value if any(o is c for c in cuts) else u

            def leave_Call(self, o: cst.Call, u: cst.Call) -> Any:
                return u.func.value if any(o is c for c in cuts) else u  # type: ignore[attr-defined]

            def leave_SimpleStatementLine(self, o: cst.SimpleStatementLine, u: cst.SimpleStatementLine) -> Any:
                return cst.RemoveFromParent() if any(o is d for d in drop) else u

            def leave_If(self, o: cst.If, u: cst.If) -> Any:
                empty = isinstance(u.body, cst.IndentedBlock) and not u.body.body
                if empty and u.orelse is None:
                    return cst.RemoveFromParent()
                if empty:
                    return u.with_changes(body=u.body.with_changes(body=[cst.parse_statement("pass")]))
                return u

        new = src.module.visit(Edit()).code
        yield ("forward-keeps-history", src.start(cuts[0]), new, f"{cls.name.value}.forward returns the tensor itself")
