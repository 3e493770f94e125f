"""A plain-data copy of the offending part of an autograd graph, taken while the graph is alive.

Findings outlive the graphs they are about (the graph is usually freed a moment later, or the
program crashes), so every diagram is drawn later (report/dot.py) from this copy, which holds
strings, numbers and SourceLocs only: no node, tensor or frame is kept alive for it.

NOTE [torchviz and our own walk]
Diagrams are "torchviz drawings, restyled". torchviz's `make_dot` needs the live tensor and walks
the graph recursively (RecursionError past ~1,000 deep) and entirely (no pruning). So:
- when the whole graph behind the roots is small (at most `limit` nodes, known from our own
  iterative walk), `make_dot` draws it while it is alive and we keep its DOT statements
  (`GraphSnapshot.torchviz`); the renderer then restyles the offenders by re-declaring their nodes
  (in DOT a later attribute wins), so the picture is torchviz's own, with our colours and labels;
- otherwise the snapshot keeps a pruned neighbourhood of the offenders, which the renderer draws
  itself in torchviz's conventions (grey backward nodes, light-blue leaves, green output): large
  graphs, graphs with a weight shared by many nodes (torchviz's single box with an edge to every
  use makes `dot` take seconds to minutes; we draw one copy per use), and make_dot failures (a
  freed custom Function). Graphs that do not exist as
  autograd graphs (GG008/GG009: the gradient path was cut) are built from records with `add`/`link`.
Walk indices (`n{i}`) are the node ids either way, so rules can address nodes the same way.
"""
from __future__ import annotations

import bisect
import functools
import heapq
import sys
import warnings
from collections import deque
from typing import Any, Callable, Sequence

from ...model.findings import Site
from ...model.snapshot import (MAX_SNAPSHOT_NODES, ROLES, SHARED_FANOUT, TORCHVIZ_MAX, GraphSnapshot,
                              SnapNode, call_node, site_locs)

__all__ = ["SnapNode", "GraphSnapshot", "snapshot_from_scan", "snapshot_from_walk",
           "snapshot_from_tensors", "snapshot_of_cuts", "call_node", "site_locs", "ROLES",
           "MAX_SNAPSHOT_NODES", "TORCHVIZ_MAX", "SHARED_FANOUT"]

_NEAR, _FAR = 12, 6  # ancestors kept next to an offender and next to the root on a long path
_FOCUS = 12  # offenders a pruned picture is centred on


# ---- choosing what to draw ----------------------------------------------------------------------
def _focus(roles: dict[int, list[str]], labels: dict[int, str], n: int) -> list[int]:
    """Offenders to centre the picture on: labelled ones, then by role (ROLES order), each role's
    nearest to the root first. Linear in the number of offenders (100,000 stale nodes happen)."""
    buckets: dict[str, list[int]] = {}
    for i, rs in roles.items():
        for r in rs:
            buckets.setdefault(r, []).append(i)
    order = [r for r in ROLES if r != "root"] + sorted(set(buckets) - set(ROLES))
    out = sorted(i for i in labels if 0 <= i < n)
    for r in order:
        if len(out) >= _FOCUS:
            break
        out.extend(i for i in heapq.nsmallest(_FOCUS, buckets.get(r, ())) if 0 <= i < n)
    return list(dict.fromkeys(out))[:_FOCUS]


def select_nodes(parent: Sequence[int], focus: list[int], limit: int
                 ) -> tuple[list[int], list[tuple[int, int, int]]]:
    """At most `limit` walk indices around `focus`: each offender's path to the root (long paths
    keep both ends and elide the middle), then a breadth-first neighbourhood of the offenders,
    then of the roots. Returns the kept indices and the gaps (lower, upper, nodes elided).

    NOTE [walk order]: `parent` comes from a breadth-first walk, so it is non-decreasing after the
    roots (-1): the children of node p are the contiguous run of entries equal to p, found by
    bisection without building a child list (which costs more than the rest on 100,000 nodes).
    """
    n = len(parent)
    if n <= limit:
        return list(range(n)), []
    if list(parent) != sorted(parent):  # not a walk's order: no bisection
        return _select_unordered(parent, focus, limit)
    kept: dict[int, None] = {}  # insertion-ordered set
    gaps: list[tuple[int, int, int]] = []

    def keep(i: int) -> None:
        if i not in kept and len(kept) < limit:
            kept[i] = None

    for i in range(n):  # the roots come first in a walk
        if parent[i] != -1 or len(kept) >= limit:
            break
        keep(i)
    for f in focus:
        path = [f]
        j = parent[f]
        while j >= 0 and j not in kept:  # iterative climb; stops where another path joined
            path.append(j)
            j = parent[j]
        if len(path) > _NEAR + _FAR:
            head, tail = path[:_NEAR], path[-_FAR:]
            gaps.append((head[-1], tail[0], len(path) - _NEAR - _FAR))
            path = head + tail
        for i in path:
            keep(i)

    def neighbours(i: int) -> list[int]:
        lo = bisect.bisect_left(parent, i)
        hi = bisect.bisect_right(parent, i, lo)
        return [*range(lo, hi), parent[i]]

    _grow(kept, list(focus), neighbours, max(len(kept), limit * 3 // 4))
    _grow(kept, [i for i in kept if parent[i] == -1], neighbours, limit)
    return list(kept), gaps


def _grow(kept: dict[int, None], starts: list[int], neighbours: Callable[[int], list[int]],
          budget: int) -> None:
    """Breadth-first from `starts`, adding unseen nodes to `kept` until it holds `budget`."""
    queue = deque(starts)
    seen = set(starts)
    while queue and len(kept) < budget:
        for j in neighbours(queue.popleft()):
            if j >= 0 and j not in seen:
                seen.add(j)
                queue.append(j)
                if j not in kept:
                    kept[j] = None
                    if len(kept) >= budget:
                        return


def _select_unordered(parent: Sequence[int], focus: list[int], limit: int
                      ) -> tuple[list[int], list[tuple[int, int, int]]]:
    """select_nodes for a parent array in any order (child lists built once)."""
    children: list[list[int]] = [[] for _ in parent]
    for i, p in enumerate(parent):
        if p >= 0:
            children[p].append(i)
    kept: dict[int, None] = {}
    for i in [*focus, *(i for i, p in enumerate(parent) if p == -1)][:limit]:
        kept[i] = None
    _grow(kept, list(kept), lambda i: [*children[i], parent[i]], limit)
    return list(kept), []


# ---- names of what is drawn ----------------------------------------------------------------------
def _user_names(nodes: list[Any], extra: Sequence[Any]) -> dict[int, str]:
    """One pass over the user's frames: id(node or tensor) -> the user's variable name.

    Ids are only compared while the caller holds `nodes` and `extra`, so none can be reused here.
    """
    import torch

    from ...capture.graph import leaf_of
    from ...lookup.names import find_names

    want: set[int] = {id(t) for t in extra}
    for nd in nodes:
        want.add(id(nd))
        v = leaf_of(nd)
        if v is not None:
            want.add(id(v))

    def match(v: Any) -> bool:
        if not isinstance(v, torch.Tensor):
            return False
        gf = v.grad_fn
        return id(v) in want or (gf is not None and id(gf) in want)

    try:
        hits = find_names(match)
    except Exception:  # names are a bonus on a diagram
        return {}
    out: dict[int, str] = {}
    for h in hits:  # innermost frame first: the name the user is looking at wins
        v = h.value
        out.setdefault(id(v) if id(v) in want else id(v.grad_fn), h.name)
    return out


# ---- torchviz ------------------------------------------------------------------------------------
def _torchviz_body(roots: Sequence[Any], names: dict[int, str], leaves: list[Any]) -> list[str] | None:
    """make_dot's DOT statements for the graph behind `roots`, or None when it cannot draw it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torchviz 0.0.3 imports distutils (deprecated)
            from torchviz import make_dot
    except Exception:  # not installed, or its distutils import fails on Python >= 3.12
        return None
    params = {names[id(v)]: v for v in leaves if names.get(id(v))}
    # make_dot recurses once per level: make sure the graph's depth (<= TORCHVIZ_MAX) fits
    old = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(max(old, _stack_depth() + 4 * TORCHVIZ_MAX + 100))
        with warnings.catch_warnings():
            # its LooseVersion check warns on every call; the user must not see our drawing
            warnings.simplefilter("ignore")
            dot = make_dot(tuple(roots) if len(roots) > 1 else roots[0], params=params or None)
        return list(dot.body)
    except Exception:  # e.g. a custom Function whose saved tensors were freed
        return None
    finally:
        sys.setrecursionlimit(old)


def _has_shared_leaf(nodes: list[Any]) -> bool:
    """A leaf feeding more than SHARED_FANOUT nodes (a weight of an unrolled cell). torchviz draws
    it once with an edge to every use, and those long edges make `dot` take seconds to minutes
    (DESIGN.md); our writer draws one copy per use instead (report/dot.py)."""
    uses: dict[int, int] = {}
    for nd in nodes:
        for nxt, _ in nd.next_functions:
            if nxt is not None and type(nxt).__name__ == "AccumulateGrad":
                k = uses[id(nxt)] = uses.get(id(nxt), 0) + 1
                if k > SHARED_FANOUT:
                    return True
    return False


def _stack_depth() -> int:
    f, d = sys._getframe(), 0
    while f is not None:
        f, d = f.f_back, d + 1
    return d


# ---- building from a live graph ------------------------------------------------------------------
def _never_fails(build: Callable[..., GraphSnapshot]) -> Callable[..., GraphSnapshot]:
    """A diagram is a bonus: when drawing fails, the finding keeps a snapshot that says so
    instead of the rule failing (which would turn the finding itself into GG901)."""

    @functools.wraps(build)
    def safe(*args: Any, **kwargs: Any) -> GraphSnapshot:
        try:
            return build(*args, **kwargs)
        except Exception as err:
            title = kwargs.get("title") or ""
            return GraphSnapshot(title=f"{title} (no diagram: {type(err).__name__}: {err})".strip())

    return safe


@_never_fails
def snapshot_from_walk(w: Any, stamps: Sequence[Any], roles: dict[int, list[str]],
                       labels: dict[int, str], *, title: str = "", limit: int = MAX_SNAPSHOT_NODES,
                       roots: Sequence[Any] = (), entry: SnapNode | None = None,
                       creation: Callable[[Any], tuple[Site, int] | None] | None = None,
                       legend: dict[str, str] | None = None,
                       root_roles: dict[int, list[str]] | None = None) -> GraphSnapshot:
    """Copy the part of a walked graph (capture.graph.Walk) around the nodes that have roles.

    Args:
        stamps: the graphguard Stamp of each walk node (None when unknown).
        roles: walk index -> roles (see ROLES); labels: walk index -> the user's name.
        roots: the tensors the walk started from (drawn as the output tensors).
        entry: the call that starts it (`call_node`), drawn below the roots.
        creation: where and when a leaf tensor was made (RuleContext.creation).
        root_roles: position in `roots` -> roles of that tensor's node (default: root).
    """
    import torch

    from ...capture.graph import leaf_of, summarize

    nodes = w.nodes
    n = len(nodes)
    roots = [t for t in roots if isinstance(t, torch.Tensor)]
    small = n <= min(limit, TORCHVIZ_MAX) and not w.truncated
    focus = _focus(roles, labels, n)
    keep, gaps = select_nodes(w.parent, focus, limit)
    kept_nodes = [nodes[i] for i in keep]
    names = _user_names(kept_nodes, roots)
    snap = GraphSnapshot(title=title, elided=n - len(keep), total=n, truncated=w.truncated,
                         legend=dict(legend or {}))
    leaves = [v for v in (leaf_of(nd) for nd in kept_nodes) if v is not None]
    if small and roots and not _has_shared_leaf(kept_nodes):
        snap.torchviz = _torchviz_body(roots, names, leaves)
    index = {id(nd): i for i, nd in zip(keep, kept_nodes)}  # ids valid: `nodes` holds them all
    for i in keep:
        nd = nodes[i]
        st = stamps[i] if i < len(stamps) else None
        where, outer = site_locs(st.site) if st else (None, None)
        sn = SnapNode(f"n{i}", type(nd).__name__, list(roles.get(i, ())),
                      labels.get(i) or names.get(id(nd)) or None, where,
                      st.iteration if st else None, called_from=outer, tv_id=str(id(nd)))
        leaf = leaf_of(nd)
        if leaf is not None:
            sn.kind, sn.detail, sn.tv_id = "tensor", summarize(leaf), str(id(leaf))
            sn.label = labels.get(i) or names.get(id(leaf)) or None
            made = creation(leaf) if creation else None
            if made:
                sn.where, sn.called_from = site_locs(made[0])
                sn.iteration = made[1]
        snap.add(sn)
    hidden: dict[str, int] = {}  # kept node -> inputs of it that were not kept
    for i, nd in zip(keep, kept_nodes):
        for nxt, _ in nd.next_functions:
            if nxt is None:
                continue
            j = index.get(id(nxt))
            if j is not None:
                snap.edges.append((f"n{j}", f"n{i}"))
            else:
                hidden[f"n{i}"] = hidden.get(f"n{i}", 0) + 1
    for k, (lo, hi, count) in enumerate(gaps):
        gid = f"gap{k}"
        snap.add(SnapNode(gid, "elided", kind="gap", detail=f"{count:,} nodes elided"))
        snap.edges.append((f"n{lo}", gid))
        snap.edges.append((gid, f"n{hi}"))
        hidden.pop(f"n{hi}", None)
    if snap.torchviz is None:
        _collapse_runs(snap)
        _mark_hidden_inputs(snap, hidden)
    _add_roots(snap, roots, names, index, entry, root_roles or {})
    return snap


_MAX_MARKERS = 40  # "inputs not drawn" markers; beyond this the title's count says it


def _mark_hidden_inputs(snap: GraphSnapshot, hidden: dict[str, int]) -> None:
    """A small dashed marker above nodes whose inputs were pruned, so the picture never looks
    like the whole graph when it is not."""
    live = [(nid, m) for nid, m in hidden.items() if nid in snap.nodes]
    if not live or len(live) > _MAX_MARKERS:
        return
    for nid, m in live:
        mid = f"more_{nid}"
        snap.add(SnapNode(mid, "elided", kind="gap",
                          detail=f"{m} more input{'s' if m > 1 else ''} not drawn"))
        snap.edges.append((mid, nid))


# Roles that colour whole regions (a freed node sits every other node of a stale chain), as
# opposed to the point roles (cut, modified, no-grad) that single out one node.
_AREA = frozenset({"stale", "held", "target", "freed"})
_RUN_MIN, _RUN_KEEP = 8, 2  # a chain this long keeps this many nodes at each end


def _collapse_runs(snap: GraphSnapshot) -> None:
    """Replace the middle of long unremarkable chains (one input, one consumer, no name, the
    same region) by one gap node saying how many nodes and which ops it hides: a 300-node strip
    of MulBackward0/AddBackward0 says less than its two ends and a count."""
    ins: dict[str, list[str]] = {}
    outs: dict[str, list[str]] = {}
    for a, b in snap.edges:
        outs.setdefault(a, []).append(b)
        ins.setdefault(b, []).append(a)

    def region(nid: str) -> frozenset[str]:
        return frozenset(snap.nodes[nid].roles) - {"freed"}

    def plain(nid: str) -> bool:
        nd = snap.nodes.get(nid)
        return (nd is not None and nd.kind == "node" and not nd.label and set(nd.roles) <= _AREA
                and len(ins.get(nid, ())) == 1 and len(outs.get(nid, ())) == 1)

    done: set[str] = set()
    drop: set[str] = set()
    for nid in list(snap.nodes):
        if nid in done or not plain(nid):
            continue
        prev = ins[nid][0]
        if plain(prev) and region(prev) == region(nid):
            continue  # not the start of its run
        run = [nid]
        while True:
            nxt = outs[run[-1]][0]
            if nxt in done or not plain(nxt) or region(nxt) != region(nid):
                break
            run.append(nxt)
        done.update(run)
        if len(run) < _RUN_MIN:
            continue
        middle = run[_RUN_KEEP:-_RUN_KEEP]
        ops = sorted({snap.nodes[m].op for m in middle})
        freed = sum(1 for m in middle if "freed" in snap.nodes[m].roles)
        gid = f"run{len(drop)}_{middle[0]}"
        what = ", ".join(ops[:3]) + (", ..." if len(ops) > 3 else "")
        snap.add(SnapNode(gid, "elided", sorted(region(nid)), kind="gap",
                          detail=f"{len(middle):,} nodes elided: {what}"
                          + (f" ({freed:,} freed)" if freed else "")))
        snap.edges.append((run[_RUN_KEEP - 1], gid))
        snap.edges.append((gid, run[-_RUN_KEEP]))
        drop.update(middle)
    if drop:
        for m in drop:
            del snap.nodes[m]
        snap.edges = [(a, b) for a, b in snap.edges if a not in drop and b not in drop]
        snap.elided += len(drop)


def _add_roots(snap: GraphSnapshot, roots: list[Any], names: dict[int, str], index: dict[int, int],
               entry: SnapNode | None, root_roles: dict[int, list[str]]) -> None:
    """The tensors backward starts from, below their grad_fn, and the entry call below them."""
    from ...capture.graph import summarize

    if entry is not None:
        snap.add(entry)
    for k, t in enumerate(roots):
        rid = f"root{k}"
        snap.add(SnapNode(rid, "output", list(root_roles.get(k, ["root"])), names.get(id(t)) or None,
                          kind="tensor", detail=summarize(t), tv_id=str(id(t))))
        gf = t.grad_fn
        j = index.get(id(gf)) if gf is not None else None
        if j is not None:
            snap.edges.append((f"n{j}", rid))
        if entry is not None:
            snap.link(rid, entry.id)


@_never_fails
def snapshot_from_scan(scan: Any, roles: dict[int, list[str]], labels: dict[int, str],
                       title: str = "", limit: int = MAX_SNAPSHOT_NODES, *,
                       roots: Sequence[Any] = (), entry: SnapNode | None = None,
                       creation: Callable[[Any], tuple[Site, int] | None] | None = None,
                       legend: dict[str, str] | None = None) -> GraphSnapshot:
    """Copy the scanned graph of a backward call around the nodes that have roles."""
    return snapshot_from_walk(scan.walk, scan.stamps, roles, labels, title=title, limit=limit,
                              roots=roots, entry=entry, creation=creation, legend=legend)


@_never_fails
def snapshot_from_tensors(tensors: Sequence[Any], stamp_key: str, *,
                          highlight: dict[int, list[str]] | None = None,
                          labels: dict[int, str] | None = None, title: str = "",
                          entry: SnapNode | None = None,
                          creation: Callable[[Any], tuple[Site, int] | None] | None = None,
                          limit: int = MAX_SNAPSHOT_NODES, max_walk: int = 200_000,
                          legend: dict[str, str] | None = None) -> GraphSnapshot:
    """Copy the graph behind some live tensors (a loss call's input and target, a leaking list).

    Args:
        highlight: position in `tensors` -> roles given to every node of that tensor's graph.
        labels: position in `tensors` -> the user's name for that tensor.
    """
    import torch

    from ...capture.graph import walk

    ts = [t for t in tensors if isinstance(t, torch.Tensor)]
    fns = [t.grad_fn for t in ts if t.grad_fn is not None]
    w = walk(fns, max_walk)
    stamps = [nd.metadata.get(stamp_key) for nd in w.nodes]
    roles: dict[int, list[str]] = {}
    names: dict[int, str] = {}
    if highlight or labels:
        index = {id(nd): i for i, nd in enumerate(w.nodes)}  # valid while `w` holds the nodes
        for pos, t in enumerate(tensors):
            if not isinstance(t, torch.Tensor) or t.grad_fn is None or id(t.grad_fn) not in index:
                continue
            if labels and labels.get(pos):
                names[index[id(t.grad_fn)]] = labels[pos]
            given = (highlight or {}).get(pos)
            if not given:
                continue
            for nd in walk([t.grad_fn], max_walk).nodes:
                j = index.get(id(nd))
                if j is not None:
                    rs = roles.setdefault(j, [])
                    rs.extend(r for r in given if r not in rs)
    # these tensors are not where a backward starts: no "root" role, only their highlights
    root_roles = {k: list((highlight or {}).get(pos, ()))
                  for k, pos in enumerate(p for p, t in enumerate(tensors) if isinstance(t, torch.Tensor))}
    return snapshot_from_walk(w, stamps, roles, names, title=title, limit=limit, roots=ts,
                              entry=entry, creation=creation, legend=legend, root_roles=root_roles)


# ---- building from records -----------------------------------------------------------------------
@_never_fails
def snapshot_of_cuts(leaves: Sequence[SnapNode], cuts: Sequence[tuple[SnapNode, Sequence[int]]],
                     *, sink: SnapNode | None = None, entry: SnapNode | None = None,
                     title: str = "", legend: dict[str, str] | None = None) -> GraphSnapshot:
    """The picture of a missing gradient path, which no autograd graph holds any more (GG008,
    GG009): requires-grad leaves -> the ops that cut their path (each with the positions in
    `leaves` behind its inputs) -> dashed "no gradient" -> the sink (the loss, when there is one)
    -> the entry call. Leaves behind no recorded cut link to the sink directly."""
    snap = GraphSnapshot(title=title, legend=dict(legend or {}))
    for leaf in leaves:
        snap.add(leaf)
    for cut, behind in cuts:
        snap.add(cut)
        for k in behind:
            if 0 <= k < len(leaves):
                snap.edges.append((leaves[k].id, cut.id))
    end = sink or entry
    if sink is not None:
        snap.add(sink)
    if entry is not None:
        snap.add(entry)
        if sink is not None:
            snap.link(sink.id, entry.id)
    if end is not None:
        for cut, _ in cuts:
            snap.link(cut.id, end.id, "no gradient")
        reached = {k for _, behind in cuts for k in behind}
        for k, leaf in enumerate(leaves):
            if k not in reached:
                snap.link(leaf.id, end.id, "no path")
    snap.total = len(snap.nodes)
    return snap
