"""Scale: the pre-backward walk covers 100,000-node graphs, wide and deep, in light mode, finds a
stale part at their far end, and the process survives their destruction. No timing is asserted
(benchmarks/scale.py measures it). Each graph runs in a child process: a C-stack overflow while
destroying a deep graph would kill the test process itself."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

NODES = 100_000

SCRIPT = textwrap.dedent("""
    import json, sys
    import torch
    from graphguard import GraphGuard

    shape, stale = sys.argv[1], sys.argv[2] == "stale"
    nodes = int(sys.argv[3])

    def build(w):
        if shape == "chain":
            x = w
            for _ in range(nodes // 2):
                x = torch.tanh(x) * 1.0001
            return x.sum()
        outs = []
        for i in range(100):
            x = w * (1.0 + i / 100)
            for _ in range(nodes // 200 - 1):
                x = torch.tanh(x) * 1.0001
            outs.append(x.sum())
        return torch.stack(outs).sum()

    w = torch.randn(4, requires_grad=True)
    out = {}
    with GraphGuard(mode="collect") as g:
        g.set_recording(False)  # light mode, as after the first iterations
        base = build(w)
        out["raised"] = None
        for it in range(2 if stale else 1):
            # stale: the second iteration reaches the graph the first one's backward freed
            loss = base * 2.0
            try:
                loss.backward()
            except RuntimeError as err:
                out["raised"] = type(err).__name__
            g.step()
        out["findings"] = [(f.code, f.before_crash) for f in g.findings]
        out["grad"] = w.grad is not None
        del loss, base
    print(json.dumps(out))
""")


def run_child(shape: str, stale: bool) -> dict:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, shape, "stale" if stale else "clean",
                           str(NODES)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["wide", "chain"])
def test_clean_100k_node_graph_is_walked_and_quiet(shape):
    out = run_child(shape, stale=False)
    assert out == {"raised": None, "findings": [], "grad": True}


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["wide", "chain"])
def test_stale_100k_node_graph_is_found_before_the_crash(shape):
    out = run_child(shape, stale=True)
    # collect mode: the finding is recorded before PyTorch's own error, which then follows
    assert out["findings"] == [["GG001", True]]
    assert out["raised"] == "RuntimeError"
