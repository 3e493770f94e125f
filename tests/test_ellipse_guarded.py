"""The reference fixture through the CLI, as a user runs it: `graphguard run --json`."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ELLIPSE = ROOT / "examples" / "ellipse"


def line_of(path: Path, needle: str) -> int:
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} not in {path}")


def run_cli(tmp_path: Path, script: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, "-m", "graphguard", "run", "--mode", "collect",
                           "--no-diagrams", "--report-dir", str(tmp_path / "rep"), "--json", str(out),
                           *extra, str(script)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    return proc, json.loads(out.read_text())


def by_code(report: dict, code: str) -> list[dict]:
    return [f for f in report["findings"] if f["code"] == code]


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    return run_cli(tmp_path_factory.mktemp("broken"), ELLIPSE / "broken.py")


def test_broken_gg001_names_ref_image_before_the_crash(broken):
    proc, rep = broken
    src = ELLIPSE / "broken.py"
    (f,) = by_code(rep, "GG001")
    assert f["subject"]["name"] == "ref_image"
    assert f["subject"]["created_at"]["line"] == line_of(src, "ref_image = apply_ellipse_mask")
    assert f["subject"]["created_in_iteration"] == 0
    assert f["location"]["line"] == line_of(src, "loss.backward()")
    assert f["iteration"] == 1 and f["before_crash"] is True
    assert f["related"][0]["role"] == "consumed-by"
    assert rep["run"]["status"] == "raised"  # plain PyTorch still raises in collect mode
    assert proc.returncode == 1


def test_broken_gg002_and_gg008(broken):
    _, rep = broken
    src = ELLIPSE / "broken.py"
    (g2,) = by_code(rep, "GG002")
    assert g2["subject"]["name"] == "ref_image"
    assert g2["location"]["line"] == line_of(src, "loss = criterion(")
    assert g2["iteration"] == 0
    (g8,) = by_code(rep, "GG008")
    assert g8["subject"]["name"] == "ellipsoid_axes"
    assert g8["location"]["line"] == line_of(src, "optimizer.step()")
    assert g8["iteration"] == 0
    cut_lines = {r["location"]["line"] for r in g8["related"] if r["role"] == "cut-by"}
    assert cut_lines == {line_of(src, "mask = torch.where(")}


def test_broken_gg103_gg104(broken):
    _, rep = broken
    src = ELLIPSE / "broken.py"
    g103 = {(f["subject"]["name"], f["location"]["line"]) for f in by_code(rep, "GG103")}
    assert g103 == {("sphere_position", line_of(src, "sphere_position = torch.tensor")),
                    (None, line_of(src, "ref_image = apply_ellipse_mask")),
                    ("ellipsoid_pos", line_of(src, "ellipsoid_pos = torch.tensor")),
                    ("current_image", line_of(src, "current_image = torch.zeros"))}
    (g104,) = by_code(rep, "GG104")
    assert g104["subject"]["name"] == "ellipsoid_pos"  # the copy; it copies sphere_position
    assert [r["name"] for r in g104["related"] if r["role"] == "source"] == ["sphere_position"]
    assert g104["location"]["line"] == line_of(src, "ellipsoid_pos = torch.tensor")


def test_answer_gg009_names_the_cut(tmp_path):
    proc, rep = run_cli(tmp_path, ELLIPSE / "answer.py")
    src = ELLIPSE / "answer.py"
    (f,) = by_code(rep, "GG009")
    # the tensor where the history was dropped, not the loss at the end of the chain
    assert f["subject"]["name"] == "mask"
    assert f["subject"]["created_at"]["line"] == line_of(src, "mask = torch.where(")
    assert f["location"]["line"] == line_of(src, "loss.backward()")
    assert f["before_crash"] is True
    cuts = [r for r in f["related"] if r["role"] == "cut-by"]
    assert {r["location"]["line"] for r in cuts} == {line_of(src, "mask = torch.where(")}
    unreachable = [r["name"] for r in f["related"] if r["role"] == "unreachable"]
    assert unreachable[0] == "ellipsoid_axes"
    assert {x["code"] for x in rep["findings"]} == {"GG009", "GG103"}
    assert proc.returncode == 1


def test_fixed_has_no_warning_or_error(tmp_path):
    proc, rep = run_cli(tmp_path, ELLIPSE / "fixed.py")
    assert [f for f in rep["findings"] if f["severity"] in ("warning", "error")] == []
    assert rep["run"]["status"] == "ok" and proc.returncode == 0


def test_raise_mode_stops_before_pytorch(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "graphguard", "run", "--no-diagrams",
                           "--report-dir", str(tmp_path), str(ELLIPSE / "broken.py")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    # the first error found is raised as GraphMisuseError, PyTorch's own error never happens
    assert "GraphMisuseError" not in proc.stderr or "Traceback" not in proc.stderr
    assert "backward through the graph a second time" not in proc.stderr
    assert "GG002" in proc.stderr
