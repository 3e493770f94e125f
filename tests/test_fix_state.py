"""`graphguard fix` on state carried from one iteration into the next (GG004, GG102): the cut at the
start of each iteration in the spelling the state needs (an (h, c) tuple, a state that starts as
None), neuron state held by a module (reset by its class's own method, or detached on every such
module), and the same cut with the backward's retain_graph=True dropped. Each program is a different
spelling from the benchmark case that motivated it; in one, dropping retain_graph=True must be
rejected (a second loss of the same iteration needs the graph).

Headers: `# fix: CODE family line [steps=N]` (tests/fixkit.py).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from fixkit import check_annotated

pytestmark = pytest.mark.slow  # every case runs its program several times in subprocesses

PROGRAMS = {
    # an nn.LSTM's (h, c) pair carried through a while loop: each element is detached
    "lstm_pair": """\
        # fix: GG004 detach-carried-state 11
        import torch

        torch.manual_seed(0)
        lstm = torch.nn.LSTM(3, 5)
        head = torch.nn.Linear(5, 1)
        opt = torch.optim.SGD([*lstm.parameters(), *head.parameters()], lr=0.01)
        state = (torch.zeros(1, 2, 5), torch.zeros(1, 2, 5))
        step = 0
        while step < 8:
            seq = torch.randn(4, 2, 3)
            out, state = lstm(seq, state)
            loss = head(out).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
        """,
    # a GRU's hidden state that starts as None (the module makes zeros) and is fed back, in a function
    "gru_none_first": """\
        # fix: GG004 detach-carried-state 12
        import torch

        torch.manual_seed(0)
        gru = torch.nn.GRU(2, 4, batch_first=True)
        opt = torch.optim.Adam(gru.parameters(), lr=1e-3)


        def train(chunks):
            hx = None
            for chunk in chunks:
                out, hx = gru(chunk, hx)
                loss = out.mean() ** 2
                opt.zero_grad()
                loss.backward()
                opt.step()


        train([torch.randn(3, 5, 2) for _ in range(6)])
        """,
    # a leaky integrator keeps its potential on the module over time steps; its class has a reset
    "integrator_with_clear": """\
        # fix: GG004 reset-module-state 26
        import torch
        from torch import nn

        torch.manual_seed(0)


        class Integrator(nn.Module):
            def __init__(self, decay):
                super().__init__()
                self.decay = decay
                self.potential = torch.zeros(())

            def clear(self):
                self.potential = torch.zeros(())

            def forward(self, current):
                self.potential = self.decay * self.potential + current
                return torch.sigmoid(self.potential - 1.0)


        model = nn.Sequential(nn.Linear(6, 3), Integrator(0.8))
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        batches = [(torch.randn(2, 6), torch.rand(2, 3)) for _ in range(5)]
        for inputs, wanted in batches:
            rates = sum(model(inputs) for _ in range(3)) / 3
            loss = (rates - wanted).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # an adaptive threshold kept on a submodule, no reset method: detached on every such module
    "adaptive_threshold": """\
        # fix: GG004 detach-carried-state 33
        import torch
        from torch import nn

        torch.manual_seed(0)


        class Adaptive(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.threshold = torch.ones(width)

            def forward(self, x):
                fired = torch.sigmoid(4 * (x - self.threshold))
                self.threshold = 0.9 * self.threshold + 0.1 * fired
                return fired


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.inp = nn.Linear(5, 4)
                self.gate = Adaptive(4)

            def forward(self, x):
                return self.gate(self.inp(x))


        net = Net()
        opt = torch.optim.Adam(net.parameters(), lr=1e-2)
        epoch = 0
        for epoch in range(6):
            y = net(torch.randn(3, 5))
            loss = y.sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # a level that is a plain number until the first forward, no reset method: detached once a tensor
    "number_until_first_forward": """\
        # fix: GG004 detach-module-state 21
        import torch
        from torch import nn

        torch.manual_seed(0)


        class Leak(nn.Module):
            def __init__(self):
                super().__init__()
                self.level = 0.0

            def forward(self, x):
                self.level = 0.5 * self.level + x
                return torch.tanh(self.level)


        body = nn.Sequential(nn.Linear(4, 4), Leak(), nn.Linear(4, 1))
        opt = torch.optim.SGD(body.parameters(), lr=0.01)
        for batch in range(6):
            pred = body(torch.randn(2, 4))
            loss = pred.pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # retain_graph=True on a carried GRUCell state: the cut, and the backward without it
    "retained_cell": """\
        # fix: GG004 detach-carried-state-no-retain 10
        import torch

        torch.manual_seed(0)
        cell = torch.nn.GRUCell(3, 4)
        readout = torch.nn.Linear(4, 2)
        opt = torch.optim.SGD([*cell.parameters(), *readout.parameters()], lr=0.05, momentum=0.9)
        h = torch.zeros(2, 4)
        for i in range(8):
            x = torch.randn(2, 3)
            h = cell(x, h)
            loss = readout(h).pow(2).sum()
            opt.zero_grad()
            loss.backward(retain_graph=True)
            opt.step()
        """,
    # a dict of results kept whole for the epoch's summary: its tensors are detached, the rest kept
    "results_dict": """\
        # fix: GG101 accumulate-detached-dict 18
        import torch

        torch.manual_seed(0)
        net = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(net.parameters(), lr=0.01)


        def step(x):
            return {"loss": net(x).pow(2).mean(), "size": x.shape[0]}


        history = []
        for i in range(6):
            out = step(torch.randn(3, 4))
            opt.zero_grad()
            out["loss"].backward()
            history.append(out)
            opt.step()
        print(sum(float(h["loss"]) * h["size"] for h in history))
        """,
    # a feature average on a helper object, written from itself every batch
    "running_average": """\
        # fix: GG101 detach-running-value 12
        import torch

        torch.manual_seed(0)


        class Tracker:
            def __init__(self):
                self.mean = torch.zeros(3)

            def update(self, feats):
                self.mean = 0.9 * self.mean + 0.1 * feats.mean(0)


        enc = torch.nn.Linear(5, 3)
        opt = torch.optim.SGD(enc.parameters(), lr=0.01)
        tracker = Tracker()
        for i in range(6):
            feats = enc(torch.randn(4, 5))
            loss = feats.pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            tracker.update(feats)
        """,
}


# the line the kept cut adds: each element of a tuple, a state that is still None left alone
SPELLED = {
    "lstm_pair": "+    state = tuple(t.detach() for t in state)",
    "gru_none_first": "+        hx = hx.detach() if hx is not None else None",
    "integrator_with_clear": "+            m.clear()",
    # named `self.threshold` as the module writes it, reached from the loop as net.gate.threshold
    "adaptive_threshold": "+    net.gate.threshold = net.gate.threshold.detach()",
    "number_until_first_forward": "+            m.level = m.level.detach() if torch.is_tensor(m.level) else m.level",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_carried_state_cut(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = check_annotated(tmp_path, monkeypatch, PROGRAMS[name])
    if name in SPELLED:
        diff = next(p for p in doc["patches"] if p["finding"]["code"] == "GG004")["diff"]
        assert SPELLED[name] in diff.splitlines(), diff


TWO_LOSSES = """\
    # fix: GG004 detach-carried-state 10
    import torch

    torch.manual_seed(0)
    cell = torch.nn.RNNCell(3, 4)
    head = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD([*cell.parameters(), *head.parameters()], lr=0.01)
    h = torch.zeros(1, 4)
    for step in range(8):
        h = cell(torch.randn(1, 3), h)
        out = head(h)
        opt.zero_grad()
        out.pow(2).mean().backward(retain_graph=True)
        out.abs().mean().backward()
        opt.step()
    """


def test_retain_graph_kept_when_a_second_loss_needs_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first backward's retain_graph=True is there for the second loss of the same iteration:
    the cut without it fails (the second backward finds the graph freed) and is rejected; the cut
    alone is kept."""
    doc = check_annotated(tmp_path, monkeypatch, TWO_LOSSES)
    rejected = [(r["finding"]["code"], r["family"], r["line"]) for r in doc["rejected"]]
    assert ("GG004", "detach-carried-state-no-retain", 10) in rejected, rejected
    kept = next(p for p in doc["patches"] if p["finding"]["code"] == "GG004")
    assert not any(ln.startswith("-") and "retain_graph" in ln for ln in kept["diff"].splitlines())

