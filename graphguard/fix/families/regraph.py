"""Build the graph again for a backward that would go through a freed or stepped one (GG001, GG003,
GG005): recompute the loss's forward right before its backward, recompute what reads a parameter
after the optimizer step that changed it, reset an accumulator between two backwards, or open a
per-forward cache once per iteration instead of once around the loop."""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import loc, subject_name, related, Source, dotted, backward_calls, enclosing, Names


# calls that make fresh tensors or objects (data, leaves, modules, optimizers): a recomputation stops
# there, since running them again would make a new leaf or a new model instead of a new graph
FACTORIES = {"tensor", "as_tensor", "from_numpy", "randn", "rand", "randint", "randn_like", "rand_like",
              "randint_like", "randperm", "zeros", "ones", "zeros_like", "ones_like", "full", "full_like",
              "empty", "empty_like", "arange", "linspace", "logspace", "eye", "load", "Tensor",
              "FloatTensor", "LongTensor"}
_MAX_CHAIN = 8  # statements copied at most: a longer forward is better moved by hand


def _is_class(src: Source, func: cst.BaseExpression) -> bool:
    """`func` names a class (`nn.Linear`, `torch.optim.Adam`, `Model` defined or imported here), not
    a module instance held in a variable (`D = nn.Sequential(...)`, `self.encoder`)."""
    name = dotted(func) or ""
    last = name.rsplit(".", 1)[-1]
    if not last[:1].isupper() or name.startswith("self."):
        return False
    if "." in name:
        return True
    return not any(last in _targets(a) for a in src.nodes(cst.Assign))


def _is_source(src: Source, value: cst.BaseExpression) -> bool:
    """`value` makes data or an object rather than computing from tensors: a tensor factory, a
    constructor (`nn.Linear(...)`, `Model()`), a leaf (`requires_grad=True`), or no computation at
    all (a name, a constant, a tuple of names)."""
    if isinstance(value, cst.Call):
        last = (dotted(value.func) or "").rsplit(".", 1)[-1]
        return last in FACTORIES or _is_class(src, value.func) \
            or any(a.keyword is not None and a.keyword.value == "requires_grad" for a in value.args)
    if isinstance(value, (cst.Tuple, cst.List)):
        return all(isinstance(e.value, (cst.Name, cst.Integer, cst.Float, cst.SimpleString)) for e in value.elements)
    return isinstance(value, (cst.Name, cst.Integer, cst.Float, cst.SimpleString, cst.Attribute))


def _visible(src: Source, stmt: cst.CSTNode, anchor: cst.CSTNode) -> bool:
    """`stmt` sits in a block that `anchor` is in too (directly or nested), in the same function."""
    block = src.parent.get(stmt)
    return any(a is block for a in src.ancestors(anchor)) \
        and enclosing(src, stmt, cst.FunctionDef) is enclosing(src, anchor, cst.FunctionDef)


def _single_assign(stmt: cst.CSTNode) -> cst.Assign | None:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
        return stmt.body[0]
    return None


def _targets(assign: cst.Assign) -> set[str]:
    out: set[str] = set()
    for t in assign.targets:
        node = t.target
        parts = [e.value for e in node.elements] if isinstance(node, (cst.Tuple, cst.List)) else [node]
        for n in parts:
            d = dotted(n)
            if d:
                out.add(d)
    return out


def _reads(assign: cst.Assign) -> set[str]:
    """Names and dotted names (`self.fc`) the value reads."""
    out: set[str] = set()

    class Reads(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            out.add(node.value)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            d = dotted(node)
            if d:
                out.add(d)
                parts = d.split(".")
                out.update(".".join(parts[:i]) for i in range(1, len(parts)))
                return False
            return True

    assign.value.visit(Reads())
    seen = Names()
    assign.value.visit(seen)
    return out | seen.names


def forward_chain(src: Source, start: cst.SimpleStatementLine, anchor: cst.CSTNode) -> list[cst.SimpleStatementLine]:
    """`start` (an assignment) and the assignments before it that compute what it reads, back to the
    data, leaves and modules they use, in program order; only statements visible from `anchor`."""
    stmts = [s for s in src.nodes(cst.SimpleStatementLine) if _single_assign(s) is not None]
    chain: list[cst.SimpleStatementLine] = []
    todo = [start]
    while todo and len(chain) <= _MAX_CHAIN:
        stmt = todo.pop()
        if any(stmt is c for c in chain):
            continue
        assign = _single_assign(stmt)
        if assign is None or _is_source(src, assign.value) or not _visible(src, stmt, anchor):
            continue
        if any(backward_calls(src, ln) for ln in range(src.start(stmt), src.end(stmt) + 1)):
            continue
        chain.append(stmt)
        for name in _reads(assign):
            before = [s for s in stmts if src.start(s) < src.start(stmt) and name in _targets(_single_assign(s))]  # type: ignore[arg-type]
            if before:
                todo.append(before[-1])
    if len(chain) > _MAX_CHAIN:
        return []
    return sorted(chain, key=src.start)


def _fresh(stmt: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
    """A copy of `stmt` without its comments and blank lines above."""
    return stmt.with_changes(leading_lines=[])


def _rewrite(src: Source, anchor: cst.BaseStatement, copies: list[cst.SimpleStatementLine], after: bool,
             moved: list[cst.SimpleStatementLine] = ()) -> str:  # type: ignore[assignment]
    new = [_fresh(s) for s in copies]

    class Edit(cst.CSTTransformer):
        def leave_SimpleStatementLine(self, o: cst.SimpleStatementLine, u: cst.SimpleStatementLine) -> Any:
            if o is anchor:
                if after or not new:
                    return cst.FlattenSentinel([u, *new])
                # the blank lines and comments above the anchor stay above the block inserted
                head = new[0].with_changes(leading_lines=u.leading_lines)
                return cst.FlattenSentinel([head, *new[1:], u.with_changes(leading_lines=[])])
            if any(o is m for m in moved):
                return cst.RemoveFromParent()
            return u

    if not isinstance(anchor, cst.SimpleStatementLine):
        return src.module.code
    return src.module.visit(Edit()).code


def _read_between(src: Source, names: set[str], lo: int, hi: int, skip: list[cst.CSTNode]) -> bool:
    for s in src.nodes(cst.SimpleStatementLine):
        if lo < src.start(s) <= hi and not any(s is k for k in skip):
            seen = Names()
            s.visit(seen)
            if names & seen.names:
                return True
    return False


def recompute_forward(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG001/GG003: backward is called again on a loss whose graph an earlier backward freed (a loss
    built once before a loop, or a second backward after a step). Build the loss again right before
    that backward: its assignment and the ones it reads, back to the data, leaves and modules."""
    name = subject_name(f)
    line = loc(f.get("location"))[1]
    created = loc((f.get("subject") or {}).get("created_at"))[1]
    if not name or not line or not created:
        return
    anchor = src.statement(line)
    calls = backward_calls(src, line)
    # only when the freed graph is the loss itself: a shared input is detached (detach-shared-input)
    if anchor is None or not any(isinstance(c.func, cst.Attribute) and c.func.attr.value == "backward"
                                 and src.code(c.func.value).strip() == name for c in calls):
        return
    start = src.statement(created)
    if start is None or _single_assign(start) is None or name not in _targets(_single_assign(start)) \
            or src.start(start) >= src.start(anchor):  # type: ignore[arg-type]
        return
    chain = forward_chain(src, start, anchor)
    if chain and chain[-1] is start:
        yield ("recompute-forward", line, _rewrite(src, anchor, chain, after=False),
               f"build {name} again before this backward")


def _is_step(src: Source, stmt: cst.CSTNode) -> bool:
    return any(isinstance(c.func, cst.Attribute) and c.func.attr.value == "step"
               for c in src.nodes(cst.Call, src.start(stmt)) if src.statement(src.start(c)) is stmt)


def recompute_after_step(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG005: an optimizer step changed parameters that a later backward's graph saved (the critic's
    step before the actor's loss, D's step before G's loss). Compute what reads those parameters again
    after the step, so the second loss uses the stepped model (as a fresh forward would); moved there
    when nothing reads it in between, copied otherwise. The step stays where it is: moving it after
    the second backward would add that backward's gradients to its parameters."""
    changed = [r for r in related(f, "modified-at") if loc(r.get("location"))[1]]
    fixes = [r for r in related(f, "fix-at") if r.get("name") and loc(r.get("location"))[1]]
    for m in changed:
        step = src.statement(loc(m.get("location"))[1])  # type: ignore[arg-type]
        if step is None or not _is_step(src, step):
            continue
        param = m.get("name") or ""
        for r in fixes:
            start = src.statement(loc(r.get("location"))[1])  # type: ignore[arg-type]
            if start is None or src.start(start) >= src.start(step):
                continue
            chain = [s for s in forward_chain(src, start, step) if src.start(s) < src.start(step)]
            # only what reads the stepped module, and what reads those results
            kept: list[cst.SimpleStatementLine] = []
            made: set[str] = set()
            for s in chain:
                reads = _reads(_single_assign(s))  # type: ignore[arg-type]
                hit = any(d != "self" and (param == d or param.startswith(d + ".") or param.startswith(d + "["))
                          for d in reads)
                if hit or reads & made:
                    kept.append(s)
                    made |= _targets(_single_assign(s))  # type: ignore[arg-type]
            kept = kept or chain
            if not kept:
                continue
            blocks = [src.parent.get(s) for s in kept]
            movable = not _read_between(src, made or set(), src.start(kept[0]), src.start(step), kept) \
                and all(len(getattr(b, "body", ())) > sum(x is b for x in blocks) for b in blocks)
            what = ", ".join(sorted(made)) or "it"
            if movable:
                yield ("move-after-step", src.start(step), _rewrite(src, step, kept, after=True, moved=kept),
                       f"compute {what} after the step")
            yield ("recompute-after-step", src.start(step), _rewrite(src, step, kept, after=True),
                   f"compute {what} again after the step")


def reset_accumulator(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG001: a loss accumulated with `+=` keeps the first pass's terms (and their freed graph) into
    the second pass: start it again from its initial value after the first backward, before the
    statement that accumulates it again."""
    name = subject_name(f)
    line = loc(f.get("location"))[1]
    if not name or not line:
        return
    for r in related(f, "fix-at"):
        init = src.statement(loc(r.get("location"))[1] or 0)
        assign = _single_assign(init) if init is not None else None
        if assign is None or _targets(assign) != {name}:
            continue
        for c in related(f, "consumed-by"):
            first = src.statement(loc(c.get("location"))[1] or 0)
            if first is None or src.start(first) <= src.start(init) or src.start(first) >= line:
                continue
            block = src.parent.get(first)
            body = list(getattr(block, "body", ()))
            if first not in body:
                continue
            for s in body[body.index(first) + 1:]:
                if src.start(s) > line:
                    break
                adds = [a for a in src.nodes(cst.AugAssign) if src.start(s) <= src.start(a) <= src.end(s)
                        and dotted(a.target) == name]
                if adds:
                    fresh = init.with_changes(leading_lines=[])
                    if isinstance(s, cst.SimpleStatementLine):
                        new = _rewrite(src, s, [fresh], after=False)
                    else:
                        new = src.replace(s, cst.FlattenSentinel([fresh, s]))
                    yield ("reset-accumulator", src.start(s), new, f"{src.code(assign).strip()} again before it")
                    return


def cache_per_iteration(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG001: a `with` block around a whole training loop (a parametrization cache, ...) keeps one
    graph for every iteration: open it inside the loop, once per iteration, or not at all."""
    for r in related(f, "fix-at"):
        line = loc(r.get("location"))[1]
        withs = [w for w in src.nodes(cst.With, line) if src.start(w) == line] if line else []
        for w in withs:
            body = list(w.body.body) if isinstance(w.body, cst.IndentedBlock) else []
            if len(body) == 1 and isinstance(body[0], (cst.For, cst.While)) and isinstance(body[0].body, cst.IndentedBlock):
                loop = body[0]
                inner = w.with_changes(body=loop.body, leading_lines=[])
                swapped = loop.with_changes(body=cst.IndentedBlock(body=[inner]), leading_lines=w.leading_lines)
                yield ("cache-per-iteration", line, src.replace(w, swapped), "open it once per iteration")
