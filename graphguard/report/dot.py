"""Graphviz DOT source for a finding's graph: a pure function of a GraphSnapshot.

The picture is torchviz's: data flows top to bottom (leaves above, the loss below), backward
nodes are grey boxes, leaf tensors that require grad light blue, the tensor backward starts
from green. When make_dot drew the graph (capture/snapshot.py, NOTE [torchviz and our own
walk]), its statements are kept and the offenders re-declared with our style; otherwise the
pruned snapshot is written here, iteratively, in the same conventions.

Colour legend (fill, outline) of the offending nodes, one colour per role:

    freed      #EF9A9A red / #B71C1C     its saved buffers were freed by an earlier backward:
                                         running it again raises
    stale      #FFCC80 orange / #E65100  built before this iteration and already consumed by an
                                         earlier backward (GG001/GG003/GG004)
    cut        #CE93D8 purple / #6A1B9A  an op that cuts the gradient path (comparison, argmax,
                                         .detach(), .item(), a no_grad region)
    modified   #FFF59D yellow / #F57F17  a tensor saved for backward, then modified in place
    no-grad    #80DEEA cyan / #006064    the parameter (leaf) that gets no gradient
    target     #F8BBD0 pink / #AD1457    a loss target that still requires grad (its history)
    held       #BCAAA4 brown / #4E342E   history kept alive across iterations (a leak)
    root       bold outline              the tensor (or node) backward starts from

Entry points (the backward call, the loss call, `optimizer.step()`) are blue #90CAF9 rounded
boxes; an elided stretch of a long path is a dashed box saying how many nodes (and which ops) it
hides, filled with its region's colour.
Offenders are labelled with the user's variable name, the op, the source line and the iteration.
"""
from __future__ import annotations

import os
import re
from collections import Counter

from ..model.snapshot import ROLES, SHARED_FANOUT, GraphSnapshot, SnapNode
from ..model import SourceLoc

__all__ = ["render_dot", "ROLE_STYLE", "LAYOUT_ATTRS", "FANOUT_LIMIT"]

# role -> (fill, outline, meaning shown in the legend)
ROLE_STYLE: dict[str, tuple[str, str, str]] = {
    "freed": ("#EF9A9A", "#B71C1C", "buffers freed by an earlier backward"),
    "stale": ("#FFCC80", "#E65100", "built earlier, already used by a backward"),
    "cut": ("#CE93D8", "#6A1B9A", "cuts the gradient path"),
    "modified": ("#FFF59D", "#F57F17", "saved for backward, then modified in place"),
    "no-grad": ("#80DEEA", "#006064", "gets no gradient"),
    "target": ("#F8BBD0", "#AD1457", "loss target that requires grad"),
    "held": ("#BCAAA4", "#4E342E", "kept alive across iterations"),
}
_CALL_FILL = "#90CAF9"
_LEAF_FILL = "lightblue"  # torchviz's colours
_ROOT_FILL = "darkolivegreen1"
# Layout limits that keep `dot` fast on graphs with a weight shared by many nodes (an unrolled
# LSTM cell: >240 s without them, ~4 s with them; DESIGN.md). Written into the source, so that
# rendering the .dot by hand is as fast as graphguard's own rendering.
LAYOUT_ATTRS = {"nslimit": "1", "mclimit": "0.1", "remincross": "false"}
FANOUT_LIMIT = SHARED_FANOUT  # edges leaving a node used by more consumers do not constrain ranks
_NODE_ATTRS = ('align=left fontname=monospace fontsize=10 height=0.2 ranksep=0.1 shape=box '
               'style=filled')  # torchviz's node defaults
_TV_EDGE = re.compile(r"^\t(\S+) -> (\S+)(?: \[(.*)\])?$")


def _q(text: str) -> str:
    """A DOT quoted string; user text cannot close it or inject attributes."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _attrs(**kw: str | None) -> str:
    return " [" + " ".join(f"{k}={_q(v)}" for k, v in kw.items() if v is not None) + "]"


def _short(loc: SourceLoc, other: SourceLoc | None = None) -> str:
    base = os.path.basename(loc.file)
    if other is None:
        return f"{base}:{loc.line}"
    if other.file == loc.file:
        return f"{base}:{loc.line} \u2190 :{other.line}"  # made in a helper, called at line N
    return f"{base}:{loc.line} \u2190 {os.path.basename(other.file)}:{other.line}"


def _clip(text: str, n: int = 48) -> str:
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def primary_role(node: SnapNode) -> str | None:
    for r in ROLES:
        if r in node.roles and r in ROLE_STYLE:
            return r
    return None


def _label(node: SnapNode, full: bool) -> str:
    if node.kind == "gap":
        return f"\u22ef {node.detail}"
    lines: list[str] = []
    if node.kind == "call":
        code = node.where.code if node.where and node.where.code else ""
        lines.append(_clip(code or node.op))
        if code and node.op and node.op not in code:
            lines.append(node.op)
    else:
        if node.label:
            lines.append(_clip(node.label))
        lines.append(node.detail if node.kind == "tensor" and node.detail else node.op)
    if full and node.where is not None:
        place = _short(node.where, node.called_from)
        if node.iteration is not None:
            place += f" \u00b7 iteration {node.iteration}"
        lines.append(place)
    elif full and node.iteration is not None:
        lines.append(f"iteration {node.iteration}")
    return "\n".join(lines)


def _style(node: SnapNode) -> dict[str, str | None]:
    """Attributes of one node: its role colour, or torchviz's colour for its kind."""
    role = primary_role(node)
    full = role is not None or node.kind in ("call", "tensor") or bool(node.label)
    a: dict[str, str | None] = {"label": _label(node, full)}
    if node.kind == "gap":
        a.update(shape="box", style="dashed,rounded", fontcolor="#424242")
        if role is not None:  # a collapsed stretch of a coloured region keeps its colour
            a.update(style="dashed,rounded,filled", fillcolor=ROLE_STYLE[role][0],
                     color=ROLE_STYLE[role][1])
        return a
    if node.kind == "call":
        a.update(shape="box", style="rounded,filled", fillcolor=_CALL_FILL, color="#0D47A1",
                 penwidth="1.5")
        return a
    if role is not None:
        fill, line, _ = ROLE_STYLE[role]
        a.update(fillcolor=fill, color=line, penwidth="2", style="filled")
    elif node.kind == "tensor":
        a.update(fillcolor=_ROOT_FILL if node.op == "output" else _LEAF_FILL)
    if "root" in node.roles:
        a.update(penwidth="3", style="filled,bold")
    return a


def _edge_lines(edges: list[tuple[str, str]]) -> list[str]:
    fan = Counter(s for s, _ in edges)
    out = []
    for s, d in edges:
        attrs = ' [constraint=false]' if fan[s] > FANOUT_LIMIT else ""
        out.append(f"\t{_q(s)} -> {_q(d)}{attrs}")
    return out


def _own_edges(snap: GraphSnapshot) -> list[str]:
    """Edges of a pruned drawing. A leaf feeding many nodes (a weight shared by every step of
    an unrolled cell) is drawn once per consumer, dashed, so no edge spans the whole height:
    those long edges are what `dot` spends its time on (thousands of virtual nodes)."""
    fan = Counter(s for s, _ in snap.edges)
    out: list[str] = []
    used: Counter[str] = Counter()
    for s, d in snap.edges:
        node = snap.nodes.get(s)
        if fan[s] > FANOUT_LIMIT and node is not None and node.kind == "tensor":
            used[s] += 1
            if used[s] == 1:  # the original sits next to its first consumer
                out.append(f"\t{_q(s)} -> {_q(d)}")
                continue
            if used[s] > 1:
                copy = f"{s}~{used[s]}"
                attrs = _style(node)
                attrs.update(style=(attrs.get("style") or "filled") + ",dashed",
                             label=f"{attrs['label']}\n(shared by {fan[s]})")
                out.append(f"\t{_q(copy)}{_attrs(**attrs)}")
                out.append(f"\t{_q(copy)} -> {_q(d)}")
                continue
        out.append(f"\t{_q(s)} -> {_q(d)}" + (" [constraint=false]" if fan[s] > FANOUT_LIMIT else ""))
    return out


def _torchviz_lines(body: list[str]) -> list[str]:
    """make_dot's statements, with edges leaving high fan-out nodes unconstrained."""
    parsed = [(_TV_EDGE.match(line), line) for line in body]
    fan = Counter(m.group(1) for m, _ in parsed if m)
    out = []
    for m, line in parsed:
        if m and fan[m.group(1)] > FANOUT_LIMIT:
            extra = m.group(3)
            line = f"\t{m.group(1)} -> {m.group(2)} [{extra + ' ' if extra else ''}constraint=false]"
        out.append(line.rstrip("\n"))
    return out


def _title(snap: GraphSnapshot) -> str:
    note = ""
    if snap.elided > 0:
        shown = snap.total - snap.elided
        note = f"\nshowing {shown:,} of {snap.total:,} graph nodes around the offenders ({snap.elided:,} elided)"
    if snap.truncated:
        note += f"\nthe walk stopped after {snap.total:,} nodes: the graph is larger"
    return (snap.title or "autograd graph") + note


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _legend(snap: GraphSnapshot) -> list[str]:
    """One compact table node: a swatch and a meaning per role drawn, plus calls and root."""
    nodes = snap.nodes.values()
    rows = []
    for r in ROLES:
        if r in ROLE_STYLE and any(r in n.roles for n in nodes):
            fill, line, meaning = ROLE_STYLE[r]
            rows.append((fill, line, "1", f"{r}: {snap.legend.get(r, meaning)}"))
    if any(n.kind == "call" for n in nodes):
        rows.append((_CALL_FILL, "#0D47A1", "1", "a call in your code"))
    if any("root" in n.roles for n in nodes):
        rows.append(("white", "black", "3", "root: where backward starts"))
    if not rows:
        return []
    cells = "".join(f'<tr><td bgcolor="{fill}" color="{line}" border="{width}" width="22"></td>'
                    f'<td align="left">{_html(text)}</td></tr>' for fill, line, width, text in rows)
    table = ('<table border="0" cellborder="0" cellspacing="2" cellpadding="3">'
             f'<tr><td colspan="2" align="left"><b>legend</b></td></tr>{cells}</table>')
    return [f'\t"legend" [shape=plaintext style="" fontsize=10 label=<{table}>]']


def render_dot(snap: GraphSnapshot) -> str:
    """DOT source for a snapshot: torchviz's drawing (or ours for pruned graphs), the offenders
    filled by role and labelled, the entry calls, dashed links, a legend and the elision note."""
    lines = ["digraph graphguard {",
             "\tgraph" + _attrs(label=_title(snap), labelloc="t", fontname="monospace",
                                fontsize="12", size="16,40", **LAYOUT_ATTRS),
             f"\tnode [{_NODE_ATTRS}]",
             '\tedge [color="#616161"]']
    own = list(snap.nodes.values())
    if snap.torchviz is not None:
        lines.extend(_torchviz_lines(snap.torchviz))
        # restyle: re-declaring a node sets its attributes again; the later value wins
        ids: dict[str, str] = {}
        for n in own:
            if n.tv_id is not None and n.kind in ("node", "tensor"):
                ids[n.id] = n.tv_id
                if primary_role(n) or n.label or "root" in n.roles or n.kind == "tensor":
                    lines.append(f"\t{_q(n.tv_id)}{_attrs(**_style(n))}")
            else:
                lines.append(f"\t{_q(n.id)}{_attrs(**_style(n))}")
        extra = [(s, d) for s, d in snap.edges if s not in ids or d not in ids]
        lines.extend(_edge_lines([(ids.get(s, s), ids.get(d, d)) for s, d in extra]))
    else:
        ids = {}
        for n in own:
            lines.append(f"\t{_q(n.id)}{_attrs(**_style(n))}")
        lines.extend(_own_edges(snap))
    for s, d, label in snap.links:
        lines.append(f"\t{_q(ids.get(s, s))} -> {_q(ids.get(d, d))}"
                     + _attrs(style="dashed", label=label or None, fontsize="9", fontname="monospace",
                              color="#1565C0"))
    lines.extend(_legend(snap))
    lines.append("}")
    return "\n".join(lines) + "\n"
