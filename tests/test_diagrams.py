"""Diagrams: the DOT source of each finding's graph (offenders present, styled by role, labelled
with the user's names, lines and iterations; pruning bounds; speed on 100,000 nodes), and the
writing/rendering step (DOT always, SVG when a renderer exists, never failing the run)."""
from __future__ import annotations

import os
import re
import runpy
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from graphguard import GraphGuard
from graphguard.capture.graph import walk
from graphguard.rules.shared.snapshot import (MAX_SNAPSHOT_NODES, GraphSnapshot, SnapNode, select_nodes,
                                         snapshot_from_walk)
from graphguard.report.diagrams import find_renderer, write_diagrams
from graphguard.report.dot import ROLE_STYLE, render_dot

ROOT = Path(__file__).resolve().parents[1]
ELLIPSE = ROOT / "examples" / "ellipse"
RENDERER = find_renderer()
needs_renderer = pytest.mark.skipif(RENDERER is None, reason="no Graphviz renderer (dot or graphviz-pure)")

_STMT = re.compile(r'^\t(?:"((?:[^"\\]|\\.)*)"|(\w+)) \[(.*)\]$')
_ATTR = re.compile(r'(\w+)=(?:"((?:[^"\\]|\\.)*)"|([^\s"\]]+))')


def dot_nodes(source: str) -> dict[str, dict[str, str]]:
    """Node statements of a DOT source, attributes merged in order (a later one wins, as in DOT)."""
    out: dict[str, dict[str, str]] = {}
    for line in source.splitlines():
        m = _STMT.match(line)
        if not m or " -> " in line:
            continue
        attrs = {k: (b or q).replace("\\n", "\n").replace('\\"', '"')
                 for k, q, b in _ATTR.findall(m.group(3))}
        out.setdefault(m.group(1) or m.group(2), {}).update(attrs)
    return out


def dot_edges(source: str) -> list[tuple[str, str]]:
    return [(a.strip('"'), b.strip('"'))
            for a, b in re.findall(r'^\t("?[\w.]+"?) -> ("?[\w.]+"?)', source, re.M)]


def filled_with(nodes: dict[str, dict[str, str]], role: str) -> list[dict[str, str]]:
    return [a for a in nodes.values() if a.get("fillcolor", "").upper() == ROLE_STYLE[role][0]]


def run_collect(fn) -> GraphGuard:
    guard = GraphGuard(mode="collect")
    try:
        with guard:
            fn()
    except RuntimeError:
        pass  # collect mode lets PyTorch raise its own error, after graphguard recorded it
    return guard


def finding(guard: GraphGuard, code: str):
    hits = [f for f in guard.findings if f.code == code]
    assert hits, f"no {code} in {[f.code for f in guard.findings]}"
    return hits[0]


def stale_reference():
    w = torch.nn.Parameter(torch.randn(8))
    scale = torch.ones(8, requires_grad=True)
    reference = torch.sin(torch.linspace(0, 3, 8) * scale)  # line of `reference`
    opt = torch.optim.SGD([w], lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        loss = F.mse_loss(w, reference)
        loss.backward()
        opt.step()


REF_LINE = stale_reference.__code__.co_firstlineno + 3


# ---- DOT structure -------------------------------------------------------------------------------
def test_gg001_diagram_highlights_and_labels_the_stale_part():
    f = finding(run_collect(stale_reference), "GG001")
    snap = f.graph
    assert snap is not None and snap.torchviz is not None  # small graph: drawn by make_dot
    src = render_dot(snap)
    nodes = dot_nodes(src)
    stale = filled_with(nodes, "stale") + filled_with(nodes, "freed")
    assert stale, "no node filled with the stale/freed colours"
    named = [a for a in stale if a["label"].splitlines()[0] == "reference"]
    assert len(named) == 1
    label = named[0]["label"]
    assert f"{Path(__file__).name}:{REF_LINE}" in label and "iteration 0" in label
    # torchviz's own drawing is there: its AccumulateGrad boxes and light-blue leaves
    assert any(a.get("label") == "AccumulateGrad" for a in nodes.values())
    # the entry points: this backward and the earlier one that consumed the graph
    calls = [a for a in nodes.values() if a.get("shape") == "box" and "rounded" in a.get("style", "")]
    texts = [a["label"] for a in calls]
    assert any("this backward" in t and "iteration 1" in t for t in texts)
    assert any("earlier backward" in t and "iteration 0" in t for t in texts)
    assert "legend" in nodes and "stale:" in src
    # the freed part is what crashes: at least one node is marked freed
    assert filled_with(nodes, "freed")


def test_gg002_diagram_colours_the_targets_history():
    f = finding(run_collect(stale_reference), "GG002")
    nodes = dot_nodes(render_dot(f.graph))
    target = filled_with(nodes, "target")
    assert len(target) >= 3  # the target tensor, its Sin/Mul nodes and the leaf behind them
    assert any(a["label"].startswith("reference") for a in target)
    assert any("mse_loss()" in a.get("label", "") for a in nodes.values())


def test_gg008_and_gg009_diagrams_draw_the_cut():
    guard = GraphGuard(mode="collect")
    try:
        with guard:
            runpy.run_path(str(ELLIPSE / "broken.py"), run_name="__main__")
    except RuntimeError:
        pass
    nodes = dot_nodes(render_dot(finding(guard, "GG008").graph))
    param = filled_with(nodes, "no-grad")
    assert [a["label"].splitlines()[0] for a in param] == ["ellipsoid_axes"]
    cuts = filled_with(nodes, "cut")
    assert cuts and all("broken.py:11" in a["label"] for a in cuts)
    assert any("optimizer.step()" in a.get("label", "") for a in nodes.values())

    guard = GraphGuard(mode="collect")
    try:
        with guard:
            runpy.run_path(str(ELLIPSE / "answer.py"), run_name="__main__")
    except RuntimeError:
        pass
    src = render_dot(finding(guard, "GG009").graph)
    nodes = dot_nodes(src)
    assert [a["label"].splitlines()[0] for a in filled_with(nodes, "no-grad")][:1] == ["ellipsoid_axes"]
    assert filled_with(nodes, "cut")
    loss = [a for a in nodes.values() if a.get("label", "").startswith("loss\n")]
    assert loss and "grad_fn" not in loss[0]["label"]
    assert "no gradient" in src


def test_user_text_cannot_break_the_dot_source():
    snap = GraphSnapshot(title='evil" ] ; x -> y [')
    snap.add(SnapNode("n0", "AddBackward0", ["stale"], 'a"b\\n]; z [label="x"'))
    src = render_dot(snap)
    nodes = dot_nodes(src)
    assert nodes["n0"]["label"].startswith('a"b')
    assert dot_edges(src) == []


@needs_renderer
def test_dot_source_is_valid_graphviz(tmp_path):
    f = finding(run_collect(stale_reference), "GG001")
    snap = f.graph
    snap.nodes["n1"].label = 'tricky "name" <b>&'  # quotes and markup in a user's label
    proc = subprocess.run([RENDERER, "-Tsvg"], input=render_dot(snap).encode(), capture_output=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"tricky" in proc.stdout


# ---- pruning ---------------------------------------------------------------------------------------
def test_select_nodes_bounds_and_elides_long_paths():
    n = 50_000
    parent = [-1] + list(range(n - 1))  # a chain, in walk order
    keep, gaps = select_nodes(parent, [n - 10], 300)
    assert len(keep) <= 300 and 0 in keep and n - 10 in keep
    assert len(gaps) == 1 and gaps[0][2] > n - 400
    # a parent array in any order takes the slower path, same bound
    shuffled = [-1, 0, 0, 2, 1, 1]
    keep, _ = select_nodes(shuffled, [5], 3)
    assert len(keep) == 3 and 5 in keep


def _chain(steps: int, w: torch.Tensor) -> torch.Tensor:
    x = w
    for _ in range(steps):
        x = x * 1.0001 + 0.001
    return x


def test_100k_node_graph_gives_a_pruned_diagram_quickly():
    from graphguard.guard import _raise_stack_limit

    _raise_stack_limit()  # destroying a 100,000-deep wrapped chain needs a deep C stack
    w = torch.randn(3, requires_grad=True)
    ref = _chain(50_000, w)
    loss = ((ref - w) ** 2).sum()
    t0 = time.perf_counter()
    wk = walk([loss.grad_fn], 1_000_000)
    n = len(wk.nodes)
    assert n > 100_000
    top = next(i for i, nd in enumerate(wk.nodes) if nd is ref.grad_fn)
    roles = {i: ["stale"] for i in range(top, n) if type(wk.nodes[i]).__name__ != "AccumulateGrad"}
    for i in list(roles)[1:60:2]:
        roles[i] = ["stale", "freed"]
    t1 = time.perf_counter()
    snap = snapshot_from_walk(wk, [None] * n, roles, {top: "ref"}, title="GG001: ref", roots=[loss])
    src = render_dot(snap)
    t2 = time.perf_counter()
    del wk
    assert t2 - t1 < 3.0, f"snapshot + DOT took {t2 - t1:.1f} s (walk {t1 - t0:.1f} s)"
    graph_nodes = [x for x in snap.nodes.values() if x.id.startswith("n")]
    assert len(graph_nodes) <= MAX_SNAPSHOT_NODES and snap.torchviz is None
    assert snap.total == n and snap.elided >= n - MAX_SNAPSHOT_NODES
    assert f"of {n:,} graph nodes" in src
    nodes = dot_nodes(src)
    assert any(a.get("label", "").startswith("ref\n") for a in nodes.values())
    assert any("nodes elided" in a.get("label", "") for a in nodes.values())
    assert len(nodes) < 60  # long unremarkable stretches are collapsed into one gap node
    if RENDERER is not None:
        from graphguard.report.diagrams import render_svg

        t3 = time.perf_counter()
        assert "<svg" in render_svg(src, RENDERER, timeout=60)
        assert time.perf_counter() - t3 < 20


@pytest.mark.slow
def test_100k_node_graph_through_the_guard():
    w = torch.randn(3, requires_grad=True)
    ref = _chain(50_000, w)  # built before the guard: no creation lines, still detected

    def loop():
        opt = torch.optim.SGD([w], lr=0.0)
        for _ in range(2):
            loss = ((ref - w) ** 2).sum()
            loss.backward()
            opt.step()
            opt.zero_grad()

    guard = run_collect(loop)
    f = finding(guard, "GG001")
    assert f.graph.total > 100_000
    assert sum(1 for x in f.graph.nodes.values() if x.id.startswith("n")) <= MAX_SNAPSHOT_NODES
    # the picture is drawn from the bounded snapshot, not the 100,000-node graph
    dot = render_dot(f.graph)
    assert dot.count("->") <= 4 * MAX_SNAPSHOT_NODES


# ---- writing and rendering -------------------------------------------------------------------------
def _fake_renderer(tmp_path: Path, body: str) -> str:
    path = tmp_path / "fake-dot"
    path.write_text(f"#!{sys.executable}\nimport sys, time\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_write_diagrams_without_renderer_writes_dot_and_says_how(tmp_path, capsys):
    f = finding(run_collect(stale_reference), "GG001")
    notes = write_diagrams([f], str(tmp_path / "rep"), renderer=None)
    assert f.diagram is not None and "svg" not in f.diagram
    assert f.diagram["dot"].endswith(os.path.join("graphs", "GG001-1.dot"))
    assert Path(f.diagram["dot"]).is_file() or (tmp_path / "rep" / "graphs" / "GG001-1.dot").is_file()
    err = capsys.readouterr().err
    assert len(notes) == 1 and "dot -Tsvg" in err and "graphviz-pure" in err


def test_renderer_failure_or_timeout_never_fails(tmp_path, capsys):
    f = finding(run_collect(stale_reference), "GG001")
    broken = _fake_renderer(tmp_path, "sys.stderr.write('boom\\n'); sys.exit(3)")
    notes = write_diagrams([f], str(tmp_path / "a"), renderer=broken)
    assert "svg" not in f.diagram and any("boom" in n for n in notes)
    slow = _fake_renderer(tmp_path, "time.sleep(30)")
    t = time.perf_counter()
    notes = write_diagrams([f], str(tmp_path / "b"), renderer=slow, timeout=1.0)
    assert time.perf_counter() - t < 15
    assert "svg" not in f.diagram and any("longer than" in n for n in notes)
    missing = write_diagrams([f], str(tmp_path / "c"), renderer=str(tmp_path / "nope"))
    assert "svg" not in f.diagram and missing


def test_renderer_discovery_honours_the_environment(tmp_path):
    assert find_renderer({"GRAPHGUARD_DOT": "none", "PATH": os.environ.get("PATH", "")}) is None
    fake = _fake_renderer(tmp_path, "pass")
    assert find_renderer({"GRAPHGUARD_DOT": fake}) == fake
    found = find_renderer({"PATH": str(tmp_path)})  # no dot there: graphviz-pure, or nothing
    assert found is None or os.path.basename(found) == "graphviz-pure"


@needs_renderer
def test_write_diagrams_renders_svg_and_clears_old_files(tmp_path):
    f = finding(run_collect(stale_reference), "GG001")
    graphs = tmp_path / "rep" / "graphs"
    graphs.mkdir(parents=True)
    (graphs / "GG009-7.svg").write_text("old run")
    (graphs / "notes.txt").write_text("the user's")
    write_diagrams([f], str(tmp_path / "rep"))
    assert Path(f.diagram["svg"]).read_text().lstrip().startswith(("<?xml", "<svg", "<!--"))
    assert not (graphs / "GG009-7.svg").exists() and (graphs / "notes.txt").exists()


@needs_renderer
def test_cli_ellipse_report_has_rendered_gg001_svg(tmp_path):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    proc = subprocess.run([sys.executable, "-m", "graphguard", "run", "--mode", "collect",
                           "--json", "r.json", str(ELLIPSE / "broken.py")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert "graphguard: report" in proc.stderr, proc.stderr[-2000:]
    graphs = tmp_path / "graphguard-report" / "graphs"
    svg = (graphs / "GG001-1.svg").read_text()
    assert "ref_image" in svg and "#ffcc80" in svg.lower()
    for code in ("GG001", "GG002", "GG008"):
        assert (graphs / f"{code}-1.dot").is_file()


def test_cli_without_renderer_still_works_and_says_how(tmp_path):
    env = dict(os.environ, GRAPHGUARD_DOT="none", PYTHONWARNINGS="ignore")
    proc = subprocess.run([sys.executable, "-m", "graphguard", "run",
                           str(ELLIPSE / "broken.py")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 1  # GG002 raised, as it should
    assert "dot -Tsvg" in proc.stderr and "graphguard: report" in proc.stderr
    graphs = tmp_path / "graphguard-report" / "graphs"
    assert (graphs / "GG002-1.dot").is_file() and not list(graphs.glob("*.svg"))
    page = (tmp_path / "graphguard-report" / "index.html").read_text()
    assert "DOT source" in page and "GG002" in page


# ---- every finding about a graph comes with a diagram ---------------------------------------------
GRAPH_CODES = ("GG001", "GG002", "GG003", "GG004", "GG005", "GG008", "GG009", "GG101", "GG102")
CASES = sorted(p for p in (ROOT / "tests" / "cases").glob("gg*.py")
               if p.name[:5].upper() in GRAPH_CODES)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_graph_findings_come_with_a_diagram(path):
    from casekit import load_case, run_guarded

    guard, _ = run_guarded(load_case(path).buggy)
    for f in guard.findings:
        if f.code not in GRAPH_CODES:
            continue
        if f.graph is None and f.code == "GG101":
            # GG101 landed after the diagrams; snapshot_from_tensors(..., highlight={k: ["held"]})
            # is what it should attach. Reported as xfail until it does, then enforced.
            pytest.xfail("GG101 does not attach a graph snapshot yet")
        assert f.graph is not None, f"{f.code} ({f.subject.name}) has no diagram"
        nodes = dot_nodes(render_dot(f.graph))
        styled = [a for a in nodes.values() if a.get("fillcolor", "").upper() in
                  {fill for fill, _, _ in ROLE_STYLE.values()}]
        assert styled, f"{f.code}: no offending node is highlighted"
        assert len(nodes) <= MAX_SNAPSHOT_NODES + 60


def _unrolled_cell(steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """An LSTM-like cell unrolled: one weight feeding every step (the graph that makes plain
    `dot` take minutes without the layout limits)."""
    w = torch.randn(16, 16, requires_grad=True)
    u = torch.randn(16, 16, requires_grad=True)
    h = torch.zeros(1, 16)
    c = torch.zeros(1, 16)
    for _ in range(steps):
        x = torch.randn(1, 16)
        gates = torch.sigmoid(h @ w + x @ u)
        c = gates * c + (1 - gates) * torch.tanh(x @ w)
        h = torch.tanh(c) * gates
    return w, h.sum()


def test_shared_weight_is_drawn_once_per_use():
    w, loss = _unrolled_cell(12)
    wk = walk([loss.grad_fn], 100_000)
    n = len(wk.nodes)
    snap = snapshot_from_walk(wk, [None] * n, {3: ["stale"]}, {}, roots=[loss])
    assert snap.torchviz is None  # one torchviz box with 24 long edges would make dot slow
    src = render_dot(snap)
    copies = [a for a in dot_nodes(src).values() if "shared by 24" in a.get("label", "")]
    assert len(copies) == 23 and all("dashed" in a["style"] for a in copies)
    assert "nslimit" in src and "mclimit" in src and "remincross" in src


@needs_renderer
def test_large_shared_weight_graph_renders_in_seconds():
    from graphguard.report.diagrams import render_svg

    w, loss = _unrolled_cell(60)  # about 600 nodes: pruned, drawn by our writer
    wk = walk([loss.grad_fn], 100_000)
    n = len(wk.nodes)
    assert n > 500
    snap = snapshot_from_walk(wk, [None] * n, {i: ["stale"] for i in range(5, n, 7)}, {5: "h"},
                              roots=[loss])
    src = render_dot(snap)
    assert snap.torchviz is None and "shared by" in src
    t = time.perf_counter()
    assert "<svg" in render_svg(src, RENDERER, timeout=120)
    assert time.perf_counter() - t < 10  # ~0.4 s here; >10 s (loaded machine) before the copies
