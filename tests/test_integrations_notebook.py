"""The notebook magics on a real ipykernel kernel, executed with nbclient: `%%graphguard` and
`%graphguard on` report a graph built in one cell and consumed in the next."""
from __future__ import annotations

import os

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

from nbkit import SETUP  # noqa: E402 - after the skips: the kernel packages are optional



def run(cells, tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    env = dict(os.environ, GRAPHGUARD_DOT="none", PYTHONPATH=os.pathsep.join(
        p for p in (os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    os.environ.get("PYTHONPATH")) if p))
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                                     resources={"metadata": {"path": str(tmp_path)}})
    # "python3" is jupyter_client's native kernel: this interpreter (the venv, with ipykernel),
    # graphguard importable from this checkout as in the tests
    client.execute(env=env)
    return nb


def outputs(cell, kind):
    out = []
    for o in cell.outputs:
        if kind == "html" and o.output_type in ("display_data", "execute_result"):
            out.append(o.data.get("text/html", ""))
        elif kind == "text":
            if o.output_type == "stream":
                out.append(o.text)
            elif o.output_type in ("display_data", "execute_result"):
                out.append(o.data.get("text/plain", ""))
        elif kind == "error" and o.output_type == "error":
            out.append(f"{o.ename}: {o.evalue}")
    return "\n".join(out)


def test_cell_magic_reports_graph_built_in_an_earlier_cell_and_clean_cells_are_quiet(tmp_path):
    clean = SETUP.replace("torch.ones(3, requires_grad=True)", "torch.ones(3)")
    nb = run(["%load_ext graphguard",
              SETUP,
              "%%graphguard --mode collect --report-dir gg\nfor _ in range(2):\n    train_step()",
              "print('after', len(opt.param_groups))",
              # then clean cells, under a session guard and a cell magic inside it: quiet
              "%graphguard on", clean, "train_step()", "train_step()", "%%graphguard\ntrain_step()",
              "%graphguard off"], tmp_path)
    guarded = nb.cells[2]
    html = outputs(guarded, "html")
    assert "GG001" in html and "stale-graph" in html and "ref" in html and "<svg" not in html.split("GG001")[0]
    text = outputs(guarded, "text")
    assert "GG001 stale-graph [error] `ref`" in text
    # collect mode: PyTorch's own error still ends the cell, the findings are shown below it
    assert "backward through the graph a second time" in outputs(guarded, "error")
    assert (tmp_path / "gg" / "index.html").is_file()
    assert "after 1" in outputs(nb.cells[3], "text")  # the guard is gone; the kernel goes on
    for cell in nb.cells[5:9]:
        assert outputs(cell, "error") == "" and "GG0" not in outputs(cell, "text"), cell.source
    assert "0 finding(s) in the session" in outputs(nb.cells[9], "text")


def test_session_guard_knows_graphs_from_earlier_cells(tmp_path):
    nb = run(["%load_ext graphguard",
              "%graphguard on",
              SETUP,
              "train_step()",                   # the first backward frees ref's graph
              "train_step()",                   # a later cell runs through it again
              "%graphguard off",
              "x = torch.ones(2, requires_grad=True)\n(x * 2).sum().backward()\nprint('plain', x.grad.tolist())",
              ], tmp_path)
    assert "graphguard: on" in outputs(nb.cells[1], "text")
    assert outputs(nb.cells[3], "error") == "" and "GG0" not in outputs(nb.cells[3], "text")
    second = nb.cells[4]
    # raise mode (default): graphguard's error before PyTorch's, naming the variable
    assert outputs(second, "error").startswith("GraphMisuseError")
    assert "GG001 stale-graph [error] `ref`" in outputs(second, "text")
    assert "GG001" in outputs(second, "html")
    off = outputs(nb.cells[5], "text")
    assert "2 finding(s) in the session" in off and "GG001 stale-graph" in off
    assert "GG103 needless-requires-grad [info] `scale`" in off  # judged when the guard closes
    assert "plain [2.0, 2.0]" in outputs(nb.cells[6], "text")
