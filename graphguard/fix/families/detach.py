"""Detach a tensor where it is made, used, carried or copied (GG001, GG002, GG004, GG104)."""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import loc, subject_name, related, Source, dotted, method_call, insert_before, wrap_no_grad, assign_of, enclosing


def detach_source(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG001/GG002 (and GG004): detach the tensor where it is made, or where it is used, or build
    it under torch.no_grad()."""
    name = subject_name(f)
    if not name:
        return
    created = (f.get("subject") or {}).get("created_at")
    lines = [loc(r.get("location"))[1] for r in related(f, "fix-at")] + [loc(created)[1]]
    if loc(created)[1] is None:
        # no creation place (a view written in place: `v = net(x).view(-1)` then `v[mask] = 0`):
        # the name's last assignment before the use, in the same function
        lines.append(_last_assign_before(src, name, loc(f.get("location"))[1]))
    for line in [ln for ln in lines if ln]:
        hit = assign_of(src, name, line)
        if hit:
            stmt, assign = hit
            new = assign.with_changes(value=method_call(assign.value, "detach"))
            yield ("detach-at-creation", line, src.replace(assign, new), f"{name} = (...).detach()")
            if not any(isinstance(a, cst.With) for a in src.ancestors(stmt)):
                yield ("no-grad-at-creation", line, wrap_no_grad(src, stmt),
                       f"build {name} under torch.no_grad()")
            break
    use = loc(f.get("location"))[1]
    stmt = src.statement(use) if use else None
    if stmt is not None:
        names = [n for n in src.nodes((cst.Name, cst.Attribute), use)
                 if dotted(n) == name and src.statement(src.start(n)) is stmt
                 and not isinstance(src.parent.get(n), cst.Attribute)]
        targets = {id(t.target) for s in stmt.body if isinstance(s, cst.Assign) for t in s.targets}
        names = [n for n in names if id(n) not in targets]
        if names:
            n = names[-1]
            yield ("detach-at-use", use, src.replace(n, method_call(n, "detach")), f"use {name}.detach() here")


def _last_assign_before(src: Source, name: str, line: int | None) -> int | None:
    """The line of the last `name = ...` before `line` in the function holding `line`."""
    stmt = src.statement(line) if line else None
    if stmt is None:
        return None
    fn = enclosing(src, stmt, cst.FunctionDef)
    before = [a for a in src.nodes(cst.Assign) if src.start(a) < src.start(stmt)
              and enclosing(src, a, cst.FunctionDef) is fn and any(dotted(t.target) == name for t in a.targets)]
    return src.start(before[-1]) if before else None


def detach_carried(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG004: detach the carried state at the start of the iteration."""
    name = subject_name(f)
    line = loc(f.get("location"))[1]
    if not name or not line:
        return
    stmt = src.statement(line)
    loops = [a for a in src.ancestors(stmt)] if stmt is not None else []
    loop = next((a for a in loops if isinstance(a, (cst.For, cst.While))), None)
    # `self.h` is only a name inside a method: a module-level loop cannot detach it
    in_method = loop is not None and enclosing(src, loop, cst.FunctionDef) is not None
    if loop is not None and isinstance(loop.body, cst.IndentedBlock) and loop.body.body \
            and (in_method or not name.startswith("self.")):
        first = loop.body.body[0]
        yield ("detach-carried-state", src.start(first), insert_before(src, first, f"{name} = {name}.detach()"),
               f"{name} = {name}.detach() at the start of each iteration")
    # or detach where the state is written back (inside forward, a method, ...)
    for a in src.nodes(cst.Assign):
        if any(dotted(t.target) == name for t in a.targets) and isinstance(a.value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
            if src.start(a) != (loc((f.get("subject") or {}).get("created_at"))[1] or -1) or loop is None:
                yield ("detach-on-write", src.start(a), src.replace(a, a.with_changes(value=method_call(a.value, "detach"))),
                       f"store {name} detached")


def detach_copy_sources(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG104: torch.tensor(...) copies of tensors that require grad: copy their detached values."""
    # the subject is the copy when it is assigned; the sources copied are the `source` entries
    sources = [r.get("name") for r in related(f, "source") if r.get("name")]
    names = sources or [subject_name(f)]
    name = names[0]
    line = loc(f.get("location"))[1]
    if not name or not line:
        return
    stmt = src.statement(line)
    targets = {id(t.target) for s in (stmt.body if stmt is not None else ()) if isinstance(s, cst.Assign)
               for t in s.targets}  # `name = torch.tensor([...])`: the copy's own name is not a source
    refs = [n for n in src.nodes((cst.Name, cst.Attribute), line) if dotted(n) in names
            and not isinstance(src.parent.get(n), cst.Attribute) and id(n) not in targets]
    if not refs:
        return

    class Det(cst.CSTTransformer):
        def leave_Name(self, o: cst.Name, u: cst.Name) -> Any:
            return method_call(u, "detach") if any(o is r for r in refs) else u

        def leave_Attribute(self, o: cst.Attribute, u: cst.Attribute) -> Any:
            return method_call(u, "detach") if any(o is r for r in refs) else u

    if stmt is not None:
        yield ("detach-copy-source", line, src.replace(stmt, stmt.visit(Det())), f"copy {name}.detach()")
