"""Keep a tensor that backward needs out of an in-place write (GG005): write into a clone of it, or
turn off an `inplace` flag set on modules after they were built."""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import loc, related, Source, dotted, enclosing, insert_before


def _inplace_name(method: str) -> bool:
    """PyTorch's spelling of an in-place method: `add_`, `masked_fill_` (not `__setitem__`)."""
    return method.endswith("_") and not method.startswith("_")


def _writes(src: Source, stmt: cst.CSTNode, name: str) -> bool:
    """`stmt` writes `name`'s storage in place: `name[i] = v`, `name += v`, `name.add_(v)`."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, cst.Assign) and any(isinstance(t.target, cst.Subscript) and dotted(t.target.value) == name
                                                  for t in small.targets):
            return True
        if isinstance(small, cst.AugAssign) and (dotted(small.target) == name or (
                isinstance(small.target, cst.Subscript) and dotted(small.target.value) == name)):
            return True
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
                and isinstance(small.value.func, cst.Attribute) and _inplace_name(small.value.func.attr.value) \
                and dotted(small.value.func.value) == name:
            return True
    return False


def _index_write(stmt: cst.SimpleStatementLine, name: str) -> bool:
    """`name[i] = v` or `name[i] op= v`: a write into part of the tensor, with no out-of-place twin
    as short as the clone."""
    for small in stmt.body:
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else \
            [small.target] if isinstance(small, cst.AugAssign) else []
        if any(isinstance(t, cst.Subscript) and dotted(t.value) == name for t in targets):
            return True
    return False


def clone_before_write(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG005: an index assignment on a tensor an op saved for backward (a sigmoid's or relu's
    output). Write into a copy: `x = x.clone()` right before the first such write after the
    tensor was made (later writes then go to the copy too), or clone where it is made."""
    saves = [r for r in related(f, "saved-at") if r.get("name") and loc(r.get("location"))[1]]
    for m in related(f, "modified-at"):
        name = m.get("name")
        line = loc(m.get("location"))[1]
        if not name or not line or "." in name or "[" in name:
            continue  # a parameter or module attribute: not a local value to copy
        last = src.statement(line)
        if last is None or not _writes(src, last, name) or not _index_write(last, name):
            continue  # `x.mul_(2)`, `x += 1`: written out of place instead (out_of_place)
        saved = next((loc(r.get("location"))[1] for r in saves if r.get("name") == name), None)
        fn = enclosing(src, last, cst.FunctionDef)
        lo = saved or 0
        first = next((s for s in src.nodes(cst.SimpleStatementLine)
                      if lo < src.start(s) <= line and enclosing(src, s, cst.FunctionDef) is fn and _writes(src, s, name)),
                     last)
        yield ("clone-before-write", src.start(first), insert_before(src, first, f"{name} = {name}.clone()"),
               f"write into a clone of {name}")
        made = src.statement(saved) if saved else None
        if made is not None:
            for small in made.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1 and dotted(small.targets[0].target) == name:
                    value = small.value
                    call = cst.Call(func=cst.Attribute(value=value if isinstance(value, (cst.Call, cst.Name, cst.Attribute, cst.Subscript))
                                                       else value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]),
                                                       attr=cst.Name("clone")))
                    yield ("clone-at-creation", saved, src.replace(small, small.with_changes(value=call)),  # type: ignore[arg-type]
                           f"{name} = (...).clone()")
        return


def inplace_flag_off(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG005: `m.inplace = True` set on built modules (a loop over model.modules()): set it False.
    The fix-at line first, then the other such assignments nearest to the finding."""
    fixes = [loc(r.get("location"))[1] for r in related(f, "fix-at")]
    anchor = next((ln for ln in fixes if ln), None) or loc(f.get("location"))[1] or 0
    found = []
    for a in src.nodes(cst.Assign):
        if any(isinstance(t.target, cst.Attribute) and t.target.attr.value == "inplace" for t in a.targets) \
                and isinstance(a.value, cst.Name) and a.value.value == "True":
            found.append((src.start(a) not in fixes, abs(src.start(a) - anchor), a))
    for _, _, a in sorted(found, key=lambda t: (t[0], t[1]))[:2]:
        yield ("inplace-flag-off", src.start(a), src.replace(a.value, cst.Name("False")), "inplace = False")
