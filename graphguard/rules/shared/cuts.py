"""Shared wording helpers for rules that explain a missing gradient by the ops that cut it."""
from __future__ import annotations

from typing import Any

from ...capture.state import Cut
from ..context import RuleContext, assigned_name
from ...model import Related, Role

__all__ = ["describe_op", "cut_related", "fix_for_cut", "leaf_label", "cut_snapshot"]

_OPS = {"gt": "comparison `>`", "lt": "comparison `<`", "ge": "comparison `>=`",
        "le": "comparison `<=`", "eq": "comparison `==`", "ne": "comparison `!=`",
        "__gt__": "comparison `>`", "__lt__": "comparison `<`", "__ge__": "comparison `>=`",
        "__le__": "comparison `<=`", "__eq__": "comparison `==`", "__ne__": "comparison `!=`",
        "argmax": "argmax", "argmin": "argmin", "round": "round", "floor": "floor", "ceil": "ceil",
        "sign": "sign", "detach": ".detach()", "item": ".item()", "tolist": ".tolist()",
        "numpy": ".numpy()", "tensor": "torch.tensor(...) copy", "as_tensor": "torch.as_tensor copy",
        "new_tensor": ".new_tensor(...) copy", "long": "integer cast", "int": "integer cast",
        "bool": "bool cast", "to": "dtype cast", "type": "dtype cast", "where": "torch.where",
        "topk": "topk indices", "sort": "sort indices", "max": "max indices", "min": "min indices",
        "kthvalue": "kthvalue indices", "mode": "mode indices", "median": "median indices",
        "nanmedian": "median indices", "cummax": "cummax indices", "cummin": "cummin indices",
        "bucketize": "bucketize",
        "searchsorted": "searchsorted", "multinomial": "sampling", "bernoulli": "sampling",
        "nn.Parameter": "nn.Parameter(...) re-wrap"}


def _leaves_torch(frame: Any) -> bool:
    """The cut's line sends the detached value out of torch (`.detach().numpy()`, `.cpu().numpy()`,
    `.tolist()`): read from the source, wording only."""
    import linecache
    code = linecache.getline(frame.file, frame.line)
    return ".detach()" in code and any(k in code for k in (".numpy()", ".tolist()"))


def describe_op(cut: Cut) -> str:
    base = _OPS.get(cut.op, cut.op)
    return f"{base} under torch.no_grad()" if cut.no_grad else base


def leaf_label(ctx: RuleContext, leaf: Any) -> str | None:
    """A leaf's user name: a live variable, else the name its creating line assigned."""
    hit = ctx.name_of(leaf)
    if hit:
        return hit.name
    rec = ctx.leaf_record(leaf)
    if rec is not None and rec.site:
        return assigned_name(rec.site[0], rec.func)
    return None


def cut_related(ctx: RuleContext, cuts: list[Cut], limit: int = 4) -> list[Related]:
    out = []
    for c in cuts[:limit]:
        name = assigned_name(c.site[0]) if c.site else None
        out.append(Related(Role.CUT_BY, name, describe_op(c), ctx.loc(c.site), c.iteration))
    return out


def fix_for_cut(cut: Cut | None, name: str) -> str:
    if cut is None:
        return f"make sure {name} is used in the loss through differentiable operations"
    op = cut.op.strip("_")
    if cut.no_grad:
        return "compute that value outside torch.no_grad() so the gradient can flow"
    if op in ("gt", "lt", "ge", "le", "eq", "ne", "where", "sign"):
        return ("replace the hard comparison with a smooth one, e.g. torch.sigmoid(k * (x - t)) "
                "for x > t, so the loss depends differentiably on " + name)
    if op in ("argmax", "argmin", "topk", "sort", "max", "min", "kthvalue", "mode", "median",
              "nanmedian", "cummax", "cummin"):
        return "use soft weights (torch.softmax) instead of indices, or a straight-through estimator"
    if op in ("round", "floor", "ceil"):
        return "use a straight-through estimator: x + (x.round() - x).detach()"
    if op == "detach":
        if cut.site and _leaves_torch(cut.site[0]):
            # `pred.detach().numpy()`: the detach is there for the trip through numpy, which is
            # what drops the graph; removing it alone would make .numpy() fail
            return ("compute that value with torch ops instead of the .detach() + numpy round trip "
                    "on the path from " + name + " to the loss")
        return "remove the .detach() on the path from " + name + " to the loss"
    if op == "nn.Parameter":  # a computed weight wrapped as a new leaf: it starts a new graph
        return ("use the computed tensor itself (a plain attribute or a functional call such as "
                "torch.func.functional_call) instead of wrapping it in nn.Parameter, which starts "
                "a new leaf and drops its history")
    if op in ("item", "tolist", "numpy", "tensor", "as_tensor", "new_tensor"):
        return "keep the value a tensor (torch.stack / torch.cat instead of torch.tensor(...) or .item())"
    return f"make the op at line {cut.site[0].line if cut.site else '?'} differentiable"


def cut_snapshot(ctx: RuleContext, cuts: list[Cut], leaves: list[Any], title: str, *,
                 sink: Any = None, entry_site: Any = None, entry_op: str = "backward",
                 limit: int = 8) -> Any:
    """The diagram of a missing gradient: `leaves` (no gradient) -> the cuts behind them ->
    the sink tensor (the loss, if any) -> the call in the user's code. None when it cannot be
    drawn: the finding matters more than its picture."""
    try:
        return _cut_snapshot(ctx, cuts, leaves, title, sink, entry_site, entry_op, limit)
    except Exception:
        return None


def _cut_snapshot(ctx: RuleContext, cuts: list[Cut], leaves: list[Any], title: str, sink: Any,
                  entry_site: Any, entry_op: str, limit: int) -> Any:
    from ...capture.graph import summarize
    from .snapshot import SnapNode, call_node, site_locs, snapshot_of_cuts

    def node(nid: str, t: Any, roles: list[str], label: str | None) -> SnapNode:
        made = ctx.creation(t)
        where, outer = site_locs(made[0] if made else None)
        return SnapNode(nid, "output" if nid == "sink" else "tensor", roles, label, where,
                        made[1] if made else None, kind="tensor", detail=summarize(t),
                        called_from=outer)

    shown = leaves[:limit]
    leaf_nodes = [node(f"leaf{k}", v, ["no-grad"], leaf_label(ctx, v)) for k, v in enumerate(shown)]
    cut_nodes = []
    for k, c in enumerate(cuts[:limit]):
        behind = [j for j, v in enumerate(shown)
                  if id(v) in c.leaf_ids and any(r() is v for r in c.leaves)]
        where, outer = site_locs(c.site)
        cut_nodes.append((SnapNode(f"cut{k}", describe_op(c), ["cut"],
                                   assigned_name(c.site[0]) if c.site else None, where,
                                   c.iteration, called_from=outer), behind))
    sink_node = None
    if sink is not None:
        hit = ctx.name_of(sink)
        sink_node = node("sink", sink, ["root"], hit.name if hit else None)
    entry = call_node("entry", entry_op, ctx.loc(entry_site), ctx.iteration) if entry_site else None
    return snapshot_of_cuts(leaf_nodes, cut_nodes, sink=sink_node, entry=entry, title=title)
