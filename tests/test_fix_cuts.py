"""`graphguard fix` on cut gradient paths (GG008, GG009): a list of tensors copied into a new one
(stack-copies), a NumPy / Python-list round trip (keep-tensor-roundtrip), a hard boolean selection
(gate-selection), a `.data` on another use of the value an argmax cut (keep-history downstream).
Each program is a different spelling from the benchmark case that motivated it;
one candidate must be rejected (a stack of plain floats) and one never proposed (a literal copy).

Headers: `# fix: CODE family line [steps=N]` (tests/fixkit.py).
"""
from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from fixkit import check_annotated, run_fix, write_program
from graphguard.fix.families.copies import stacked
from graphguard.fix.families.select import gate_selection
from graphguard.fix.tree import Source

pytestmark = pytest.mark.slow  # every case runs its program several times in subprocesses

PROGRAMS = {
    # per-step log-probabilities gathered in a list, then copied with a legacy constructor
    "float_tensor_of_list": """\
        # fix: GG008 stack-copies 15
        import torch

        torch.manual_seed(0)
        policy = torch.nn.Linear(3, 2)
        baseline = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD([*policy.parameters(), *baseline.parameters()], lr=0.1)
        for episode in range(4):
            xs = torch.randn(5, 3)
            picked = []
            for x in xs:
                picked.append(torch.log_softmax(policy(x), -1)[0])
            value = baseline(xs).mean()
            scale = 0.5
            logp = torch.FloatTensor(picked)
            loss = -(logp * scale).sum() + value.pow(2)
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # an encoder's output squashed with NumPy and brought back with torch.tensor
    "numpy_squash": """\
        # fix: GG008 keep-tensor-roundtrip 13
        import numpy as np
        import torch

        torch.manual_seed(0)
        enc = torch.nn.Linear(4, 3)
        head = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD([*enc.parameters(), *head.parameters()], lr=0.1)
        for step in range(4):
            x = torch.randn(6, 4)
            z = enc(x)
            z = z + 0.0
            arr = z.detach().numpy()
            arr = np.tanh(arr) * 2.0
            z = torch.tensor(arr.astype(np.float32))
            loss = head(z).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # two converting helpers around a NumPy normalisation, called from a module's forward
    "numpy_helpers": """\
        # fix: GG008 keep-tensor-roundtrip 25
        import numpy as np
        import torch
        import torch.nn as nn

        torch.manual_seed(0)


        def as_array(t):
            return t.cpu().detach().numpy()


        def as_tensor(a):
            return torch.tensor(a)


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(5, 4)
                self.out = nn.Linear(4, 1)

            def forward(self, x):
                h = self.body(x)
                h = as_array(h)
                h = np.clip(h, -1.0, 1.0)
                h = as_tensor(h)
                return self.out(h)


        net = Net()
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for step in range(4):
            loss = net(torch.randn(8, 5)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # scores above a trainable cutoff, selected with a boolean mask
    "mask_cutoff": """\
        # fix: GG008 gate-selection 10
        import torch

        torch.manual_seed(0)
        lin = torch.nn.Linear(2, 1)
        cutoff = torch.nn.Parameter(torch.tensor(0.0))
        opt = torch.optim.Adam([*lin.parameters(), cutoff], lr=0.01)
        for step in range(4):
            scores = lin(torch.randn(16, 2)).squeeze(-1)
            sel = scores[scores >= cutoff]
            loss = (sel - 1.0).pow(2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # a greedy decoder: the argmax feeds the next step, the scores reach the loss through .data
    "decoder_scores_data": """\
        # fix: GG008 keep-history 18
        import torch

        torch.manual_seed(0)
        emb = torch.nn.Embedding(5, 4)
        proj = torch.nn.Linear(4, 5)
        enc = torch.nn.Linear(3, 4)
        opt = torch.optim.Adam([*emb.parameters(), *proj.parameters(), *enc.parameters()], lr=0.01)


        def decode(h, steps=3):
            scores = []
            for _ in range(steps):
                s = proj(h)
                scores.append(s)
                tok = torch.argmax(s, dim=-1)
                h = h + emb(tok)
            return torch.cat(scores, 0).data


        for step in range(4):
            h0 = enc(torch.randn(2, 3))
            out = decode(h0)
            loss = out.logsumexp(-1).mean() + h0.pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_cut_family_gets_a_verified_patch(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check_annotated(tmp_path, monkeypatch, PROGRAMS[name])


def test_stack_of_plain_floats_rejected_then_roundtrip_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The values come back as Python floats (`.tolist()`) and the copy is re-wrapped so backward
    runs: stacking the list at the copy cannot run, so that candidate is rejected; keeping the
    tensor through the loop (and dropping the re-wrap) is kept."""
    write_program(tmp_path, """\
        import torch

        torch.manual_seed(0)
        net = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for step in range(3):
            out = net(torch.randn(4, 3))
            vals = []
            for v in out.squeeze(1).detach().tolist():
                vals.append(v)
            pred = torch.Tensor(vals)
            pred.requires_grad = True
            loss = (pred - 1.0).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """)
    rc, doc = run_fix(tmp_path, monkeypatch)
    rejected = [(r["family"], r["line"]) for r in doc["rejected"]]
    kept = [(p["finding"]["code"], p["family"], p["line"]) for p in doc["patches"]]
    assert ("stack-copies", 11) in rejected, rejected
    assert ("GG009", "keep-tensor-roundtrip", 9) in kept, kept
    assert rc == 0 and doc["after"]["findings"]["error"] == 0


def test_literal_copy_and_plain_index_not_proposed() -> None:
    """A copy of numbers has no history to keep; an integer index is not a hard selection."""
    for text in ("torch.tensor([1.0, 2.0])", "torch.tensor(0.5)", "torch.FloatTensor([[a, b]])"):
        assert stacked(cst.parse_expression(text)) is None, text
    src = Source("import torch\nx = torch.randn(3, requires_grad=True)\ny = x[1] + x[x.argmax()]\n")
    f = {"code": "GG008", "related": [{"role": "cut-by", "location": {"file": "t.py", "line": 3}}]}
    assert list(gate_selection(src, f, "t.py")) == []
