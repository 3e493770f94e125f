"""Growth pictures (issue 13 item 6): GG004, GG101 and GG102 findings carry the graph nodes kept
alive per iteration in `details["growth"]`, and the HTML report and the notebook display draw
them as a small inline SVG line plot; a saved JSON report keeps the series and re-renders it."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from graphguard import GraphGuard
from graphguard.model import Finding
from graphguard.notebook import finding_html_display
from graphguard.report.growth import growth_points, growth_svg
from graphguard.report.html import finding_html, render_html

SVG_NS = "{http://www.w3.org/2000/svg}"

LEAK = textwrap.dedent("""\
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    total_loss = 0
    for step in range(12):
        x, y = torch.randn(4, 8), torch.randn(4, 1)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total_loss += loss
    print(float(total_loss))
""")


def leaking_loop(steps: int = 12) -> None:
    """A running loss summed without .item(): every iteration's graph stays alive (GG101)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    total_loss = 0
    for _ in range(steps):
        x, y = torch.randn(4, 8), torch.randn(4, 1)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total_loss += loss


def retained_rnn(steps: int = 6) -> None:
    """A hidden state carried without detach, 'fixed' with retain_graph=True (GG004 + GG102).
    Plain PyTorch fails once a step has changed a weight the old graph saved."""
    torch.manual_seed(0)
    cell, head = nn.RNNCell(4, 8), nn.Linear(8, 1)
    opt = torch.optim.SGD([*cell.parameters(), *head.parameters()], lr=0.01)
    hidden = torch.zeros(2, 8)
    for _ in range(steps):
        x, y = torch.randn(2, 4), torch.randn(2, 1)
        hidden = cell(x, hidden)
        loss = F.mse_loss(head(hidden), y)
        opt.zero_grad()
        loss.backward(retain_graph=True)
        opt.step()


def _collect(fn) -> list[Finding]:
    guard = GraphGuard(mode="collect")
    try:
        with guard:
            fn()
    except RuntimeError:
        pass  # the retained RNN's backward fails in plain PyTorch too
    return guard.findings


def _one(findings: list[Finding], code: str) -> Finding:
    hits = [f for f in findings if f.code == code]
    assert len(hits) == 1, [(f.code, f.subject.name) for f in findings]
    return hits[0]


def _rising(growth: dict) -> None:
    its, nodes = growth["iterations"], growth["nodes"]
    assert growth["unit"] == "nodes" and len(its) == len(nodes) >= 2
    assert all(type(v) is int for v in its + nodes)  # plain data: nothing kept alive
    assert all(b > a for a, b in zip(its, its[1:]))
    assert all(b > a for a, b in zip(nodes, nodes[1:])), nodes


def _plots(html_text: str) -> list[ET.Element]:
    return [ET.fromstring(m) for m in re.findall(r'<svg[^>]*class="gg-growth".*?</svg>', html_text, re.S)]


def _circles(svg: ET.Element) -> list[ET.Element]:
    return [c for c in svg.iter(SVG_NS + "circle") if c.get("class") == "n"]


# ---- the rules record the series ----------------------------------------------------------------
def test_gg101_records_rising_nodes_and_the_card_plots_them():
    # 20 steps: the looks after the recorded iterations fall on judged iteration ends (16 is the
    # next one once light mode skims: NOTE [skimmed iterations])
    f = _one(_collect(lambda: leaking_loop(20)), "GG101")
    assert f.subject.name == "total_loss"
    g = f.details["growth"]
    _rising(g)
    assert len(g["iterations"]) >= 5  # points keep coming after the report, at the rule's looks
    assert "bytes" not in g  # not measured: absent, not zeros
    card = finding_html(f)
    (svg,) = _plots(card)
    assert len(_circles(svg)) == len(g["iterations"])
    assert "total_loss" in svg.find(SVG_NS + "title").text
    assert card == finding_html_display(f)  # the notebook display is the same card


def test_gg102_and_gg004_record_the_walked_graph_growing():
    fs = _collect(retained_rnn)
    for code in ("GG102", "GG004"):
        f = _one(fs, code)
        assert f.subject.name == "hidden"
        _rising(f.details["growth"])
        (svg,) = _plots(finding_html(f))
        assert len(_circles(svg)) == len(f.details["growth"]["iterations"])


def test_a_finding_without_growth_data_has_no_plot():
    def stale() -> None:
        w = torch.nn.Parameter(torch.randn(8))
        scale = torch.ones(8, requires_grad=True)
        reference = torch.sin(torch.linspace(0, 3, 8) * scale)
        opt = torch.optim.SGD([w], lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            F.mse_loss(w, reference).backward()
            opt.step()

    f = _one(_collect(stale), "GG001")
    assert "growth" not in f.details
    assert "gg-growth" not in finding_html(f)
    assert "gg-growth" not in finding_html(Finding.from_dict({**f.to_dict(), "details": {"growth": "junk"}}))


# ---- the run's report, and a saved report read back ------------------------------------------------
@pytest.fixture(scope="module")
def leak_run(tmp_path_factory) -> Path:
    cwd = tmp_path_factory.mktemp("leak")
    (cwd / "train.py").write_text(LEAK)
    proc = subprocess.run([sys.executable, "-m", "graphguard", "run", "--json", "report.json",
                           "train.py"], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert (cwd / "report.json").is_file(), proc.stderr[-3000:]
    return cwd


def test_html_report_of_a_gg101_run_contains_its_growth_plot(leak_run):
    data = json.loads((leak_run / "report.json").read_text())
    (f,) = [f for f in data["findings"] if f["code"] == "GG101"]
    g = f["details"]["growth"]
    _rising(g)
    page = (leak_run / "graphguard-report" / "index.html").read_text()
    section = re.search(r'<section class="f [^"]*" id="finding-\d+"><h2>.*?GG101.*?</section>', page, re.S)
    assert section is not None
    (svg,) = _plots(section.group(0))
    assert len(_circles(svg)) == len(g["iterations"])


def test_graphguard_report_reads_the_series_back(leak_run):
    run = lambda *a: subprocess.run([sys.executable, "-m", "graphguard", "report", *a, "report.json"],
                                    cwd=leak_run, capture_output=True, text=True, timeout=300)
    saved = json.loads((leak_run / "report.json").read_text())
    again = json.loads(run("--format", "json").stdout)
    growth = lambda d: [f.get("details", {}).get("growth") for f in d["findings"]]
    assert growth(again) == growth(saved) and any(growth(saved))
    page = run("--format", "html").stdout
    assert [ET.tostring(s) for s in _plots(page)] == \
        [ET.tostring(s) for s in _plots((leak_run / "graphguard-report" / "index.html").read_text())]
    assert len(_plots(render_html(saved))) == 1
    back = Finding.from_dict(next(f for f in saved["findings"] if f["code"] == "GG101"))
    assert back.details["growth"] == growth(saved)[0]


# ---- the SVG builder --------------------------------------------------------------------------------
def _coords(svg: ET.Element, cls: str) -> list[tuple[float, float]]:
    lines = [p for p in svg.iter(SVG_NS + "polyline") if p.get("class") == cls]
    return [tuple(map(float, xy.split(","))) for p in lines for xy in p.get("points").split()]


def test_svg_builder_is_valid_escaped_monotone_and_deterministic():
    g = {"unit": "nodes", "iterations": [5, 0, 1, 2, 3, 8], "nodes": [60, 6, 13, 20, 27, 90],
         "bytes": [5 << 20, 1024, 3000, None, 80_000, 9 << 20]}
    title = 'GG101 <losses> & "x": graph nodes kept alive per iteration'
    text = growth_svg(g, title)
    assert text == growth_svg(g, title)
    svg = ET.fromstring(text)  # well-formed XML: every user string escaped
    assert svg.find(SVG_NS + "title").text == title and "<losses>" not in text
    assert float(svg.get("width")) <= 400 and float(svg.get("height")) <= 160
    nodes = _coords(svg, "nodes")
    assert len(nodes) == len(_circles(svg)) == 6
    xs = [x for x, _ in nodes]
    assert xs == sorted(xs) and len(set(xs)) == 6
    ys = [y for _, y in nodes]
    assert ys == sorted(ys, reverse=True)  # SVG y grows downwards: the line climbs
    assert len(_coords(svg, "bytes")) == 5  # the point without bytes breaks the dashed line
    assert "MiB" in text and "iteration" in text
    plain = ET.fromstring(growth_svg({"iterations": [0, 1], "nodes": [3, 9]}, "t"))
    assert not _coords(plain, "bytes") and "MiB" not in ET.tostring(plain, encoding="unicode")


@pytest.mark.parametrize("bad", [None, "x", {}, {"iterations": [], "nodes": []},
                                 {"iterations": [1, 2], "nodes": [3]},
                                 {"iterations": [1, "2"], "nodes": [3, 4]},
                                 {"iterations": [1, 2], "nodes": [3, -4]},
                                 {"iterations": [True, 2], "nodes": [3, 4]}])
def test_svg_builder_refuses_what_is_not_a_series(bad):
    assert growth_points(bad) is None and growth_svg(bad, "t") is None


def test_svg_builder_draws_a_single_point_and_large_counts():
    one = ET.fromstring(growth_svg({"iterations": [4], "nodes": [7]}, "one"))
    assert len(_circles(one)) == 1
    big = growth_svg({"iterations": list(range(64)), "nodes": [i * 50_000 for i in range(64)]}, "big")
    assert len(_circles(ET.fromstring(big))) == 64
