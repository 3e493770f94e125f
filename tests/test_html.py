"""The HTML report: one self-contained page, user text escaped, SVG inlined through an allowlist,
re-rendered from a saved JSON report, written from Python, shown in Jupyter without raising, and
really showing the findings and diagrams in a headless browser."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from graphguard import GraphGuard
from graphguard.cli import main as cli_main
from graphguard.report.diagrams import find_renderer, write_diagrams
from graphguard.notebook import finding_html_display, finding_svg_display
from graphguard.report.html import clean_svg, render_html

ROOT = Path(__file__).resolve().parents[1]
BROKEN = ROOT / "examples" / "ellipse" / "broken.py"
RENDERER = find_renderer()
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]
EVIL = '<script>alert("x")</script>'


def stale_reference() -> None:
    w = torch.nn.Parameter(torch.randn(8))
    scale = torch.ones(8, requires_grad=True)
    reference = torch.sin(torch.linspace(0, 3, 8) * scale)
    opt = torch.optim.SGD([w], lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        loss = F.mse_loss(w, reference)
        loss.backward()
        opt.step()


def collected() -> GraphGuard:
    guard = GraphGuard(mode="collect")
    try:
        with guard:
            stale_reference()
    except RuntimeError:
        pass
    return guard


def evil_report(tmp_path: Path) -> dict:
    src = tmp_path / "train.py"
    src.write_text("x = 1\n" + f"y = '{EVIL}'\n" + "z = 3\n")
    loc = {"file": str(src), "line": 2, "function": "<module>", "code": f"y = '{EVIL}'"}
    return {"schema_version": 1, "tool": {"name": "graphguard", "version": EVIL},
            "torch_version": EVIL,
            "run": {"target": EVIL, "status": "raised", "iterations": 1, "backward_calls": 1,
                    "exception": {"type": EVIL, "message": EVIL}},
            "findings": [{"code": "GG001", "slug": "stale-graph", "severity": "error",
                          "message": f"`{EVIL}` was built", "iteration": 1, "before_crash": True,
                          "subject": {"name": EVIL, "kind": "tensor", "summary": EVIL,
                                      "created_at": loc, "created_in_iteration": 0},
                          "location": dict(loc, file=EVIL), "fix": EVIL,
                          "related": [{"role": EVIL, "name": EVIL, "op": EVIL, "location": loc}],
                          "diagram": {"dot": str(tmp_path / "nope.dot")}}]}


def test_everything_from_user_code_is_escaped(tmp_path):
    page = render_html(evil_report(tmp_path))
    assert "<script" not in page
    assert "&lt;script&gt;" in page
    assert "x = 1" in page and "z = 3" in page  # the source around the marked line


def test_svg_goes_through_an_allowlist():
    svg = ('<?xml version="1.0"?><!DOCTYPE svg><svg xmlns="http://www.w3.org/2000/svg" '
           'xmlns:xlink="http://www.w3.org/1999/xlink" onload="alert(1)" viewBox="0 0 10 10">'
           '<script>alert(2)</script><g id="a"><a xlink:href="javascript:alert(3)"><text x="1">'
           'ref_image &lt;b&gt;</text></a><foreignObject><div>hi</div></foreignObject>'
           '<polygon fill="#ffcc80" points="0,0 1,1"/></g></svg>')
    out = clean_svg(svg)
    assert out is not None and out.startswith("<svg")
    assert "alert" not in out and "foreignObject" not in out and "href" not in out
    assert "ref_image &lt;b&gt;" in out and 'fill="#ffcc80"' in out and 'viewBox="0 0 10 10"' in out
    assert clean_svg("not svg") is None and clean_svg("<svg><g></svg>") is None


def test_page_is_self_contained_and_has_every_finding(tmp_path):
    guard = collected()
    write_diagrams(guard.findings, str(tmp_path), renderer=RENDERER, quiet=True)
    page = render_html(guard.report(target="train.py"))
    assert page.startswith("<!DOCTYPE html>") and page.count("<section") == len(guard.findings)
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:|//|file:)""", page)
    assert "<link" not in page and "<script" not in page and "@import" not in page
    for f in guard.findings:
        assert f'id="finding-' in page and f.code in page
    if RENDERER is not None:
        assert page.count("<svg") == sum(1 for f in guard.findings if f.graph is not None)
    else:
        assert "DOT source" in page


def test_report_command_rerenders_a_saved_run(tmp_path):
    guard = collected()
    write_diagrams(guard.findings, str(tmp_path / "rep"), renderer=None, quiet=True)
    saved = tmp_path / "report.json"
    saved.write_text(json.dumps(guard.report(target="train.py")))
    out = tmp_path / "again.html"
    assert cli_main(["report", str(saved), "--format", "html", "-o", str(out)]) == 0
    page = out.read_text()
    assert "GG001" in page and "reference" in page and "digraph graphguard" in page


def test_write_report_from_python(tmp_path):
    guard = collected()
    path = guard.write_report(str(tmp_path / "rep"))
    assert path == str(tmp_path / "rep" / "index.html")
    page = Path(path).read_text()
    assert "GG001" in page and "GG002" in page
    assert all(f.diagram for f in guard.findings if f.graph is not None)


def test_jupyter_displays_never_raise():
    guard = collected()
    f = next(f for f in guard.findings if f.code == "GG001")
    html = finding_html_display(f)
    assert "GG001" in html and "reference" in html
    svg = finding_svg_display(f)
    assert svg is None or svg.startswith("<svg")
    if RENDERER is not None:
        assert svg is not None and "<svg" in html
    assert "GG002" in guard._repr_html_()
    f.graph = object()  # not a snapshot: the displays degrade, never raise
    assert "GG001" in finding_html_display(f) and finding_svg_display(f) is None
    guard.findings.append(object())  # type: ignore[arg-type]
    assert isinstance(guard._repr_html_(), str)


def test_an_ipython_shell_displays_findings_without_load_ext():
    # a real IPython shell in a child process (the shell is a process-wide singleton): importing
    # graphguard registers the HTML display of findings; model/ has no _repr_html_ of its own
    code = (
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance()\n"
        "import graphguard\n"
        "from graphguard.model import Finding, Subject\n"
        "f = Finding('GG001', 'stale-graph', 'error', {}, Subject('ref'), None, 0, True, '', template='m')\n"
        "assert not hasattr(Finding, '_repr_html_')\n"
        "data, _ = shell.display_formatter.format(f)\n"
        "print('HTML' if 'GG001' in data.get('text/html', '') else 'NONE')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, GRAPHGUARD_DOT="none"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["HTML"]


@pytest.fixture(scope="module")
def ellipse_report(tmp_path_factory) -> Path:
    """`graphguard run` on the ellipse program (collect mode: every finding, GG001 included)."""
    cwd = tmp_path_factory.mktemp("ellipse")
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    proc = subprocess.run([sys.executable, "-m", "graphguard", "run", "--mode", "collect",
                           str(BROKEN)], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env=env)
    index = cwd / "graphguard-report" / "index.html"
    assert index.is_file(), proc.stderr[-3000:]
    return index


def _chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=180)


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (apt-get install chromium; .ci/run does)")
def test_headless_browser_shows_findings_and_diagrams(ellipse_report, tmp_path):
    proc = _chromium(["--dump-dom", ellipse_report.as_uri()], tmp_path / "profile")
    dom = proc.stdout
    assert "<h1>graphguard report</h1>" in dom, proc.stderr[-2000:]
    for code in ("GG001", "GG002", "GG008"):
        assert f">{code}<" in dom
    sections = re.findall(r'<section class="f [^"]*" id="finding-\d+">.*?</section>', dom, re.S)
    gg001 = next(s for s in sections if "GG001 stale-graph" in s)
    if RENDERER is not None:
        assert "<svg" in gg001 and "ref_image" in gg001.split("<svg", 1)[1]
        assert "#ffcc80" in gg001.lower() or "#ef9a9a" in gg001.lower()  # stale/freed fill
        assert sum(1 for s in sections if "<svg" in s) >= 3
    else:
        assert "DOT source" in gg001 and "ref_image" in gg001
    shot = tmp_path / "shot.png"
    _chromium([f"--screenshot={shot}", "--window-size=1280,2400", ellipse_report.as_uri()],
              tmp_path / "profile2")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
