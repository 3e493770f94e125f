"""`graphguard fix` families extended for misuses the benchmark had no verified patch for: a
hand-written update's gradients cleared after it (GG010 without an optimizer; manual_zero.py), a
target with no creation place detached at its last assignment (GG002; detach.py), the indices
of a `max` along a dim read as the softmax's expected index (GG008; soft_argmax.py), and a layer
that replaced part of the model in the training loop given to the optimizer there (GG011;
late_module.py), and an in-place write on a leaf the same call built written out of place (GG006;
local_inplace.py), and rows picked by top-k indices gated by their scores, straight through
(GG008; topk_gate.py); and a patch whose only fault is a new error it brings out (a target that
now requires grad) gets that error patched on top (command.py); a GG104 copy made with
requires_grad=True is stacked with its history (wanted_history.py). Each program
is another spelling than the benchmark case that motivated it, each has a clean twin that must get
no patch, and the candidate makers are checked on findings they must not answer. Assertions are
on codes, family names and line numbers.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from fixkit import check_annotated, run_fix, write_program
from graphguard.fix.candidates import candidates_for
from graphguard.fix.families.manual_zero import zero_after_manual_update
from graphguard.fix.tree import Source

PROGRAMS = {
    # module-level least squares, updated under no_grad by `-=` and by an in-place method
    "manual_update_without_clear": """\
        # fix: GG010 zero-grad-after-update 13
        import torch

        torch.manual_seed(0)
        x = torch.randn(32, 3)
        y = x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3
        weight = torch.zeros(3, 1, requires_grad=True)
        bias = torch.zeros(1, requires_grad=True)
        for epoch in range(5):
            err = (x @ weight + bias - y).pow(2).mean()
            err.backward()
            with torch.no_grad():
                weight -= 0.1 * weight.grad
                bias.sub_(0.1 * bias.grad)
        """,
    # a target network's output written in place (no creation place), read through a sum
    "target_view_written_in_place": """\
        # fix: GG002 detach-at-creation 13
        import torch
        import torch.nn.functional as F

        torch.manual_seed(0)
        online = torch.nn.Linear(4, 1)
        target_net = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(online.parameters(), lr=0.05)


        def update(s, r, s2, done):
            q = online(s).squeeze(1)
            nxt = target_net(s2).squeeze(1)
            nxt[done] = 0.0
            goal = r + 0.9 * nxt
            loss = F.smooth_l1_loss(q, goal)
            opt.zero_grad()
            loss.backward()
            opt.step()


        for _ in range(4):
            update(torch.randn(8, 4), torch.randn(8), torch.randn(8, 4), torch.rand(8) > 0.7)
        """,
    # the indices of a max by keyword dim, as a method, fed to a second model
    "max_indices_into_second_model": """\
        # fix: GG008 soft-argmax 10
        import torch

        torch.manual_seed(0)
        selector = torch.nn.Linear(5, 3)
        scorer = torch.nn.Linear(1, 1)
        opt = torch.optim.Adam(list(selector.parameters()) + list(scorer.parameters()), lr=0.01)
        for step in range(4):
            x, t = torch.randn(10, 5), torch.randn(10, 1)
            choice = selector(x).max(dim=1).indices
            pred = scorer(choice.float().unsqueeze(1))
            loss = (pred - t).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # a head replaced inside the training loop (a scheduler steps too; only the optimizer gets it)
    "head_replaced_during_training": """\
        # fix: GG011 add-param-group-after-change 23
        import torch
        import torch.nn as nn

        torch.manual_seed(0)


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(6, 8)
                self.head = nn.Linear(8, 2)

            def forward(self, x):
                return self.head(torch.relu(self.body(x)))


        net = Net()
        opt = torch.optim.Adam(net.parameters(), lr=1e-2)
        sched = torch.optim.lr_scheduler.StepLR(opt, 2)
        for it in range(6):
            if it == 1:
                net.head = nn.Linear(8, 3)
            x, y = torch.randn(5, 6), torch.randint(0, 3, (5,))
            loss = nn.functional.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        """,
    # a frozen embedding's output made to require grad in forward, then scaled in place
    "inplace_on_a_leaf_built_in_forward": """\
        # fix: GG006 out-of-place-local 18
        import torch
        import torch.nn as nn

        torch.manual_seed(0)


        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(20, 8)
                self.emb.weight.requires_grad_(False)
                self.proj = nn.Linear(8, 4)

            def forward(self, ids, mask):
                e = self.emb(ids)
                e.requires_grad_(True)
                e.mul_(mask.unsqueeze(-1))
                return self.proj(e).pow(2).mean()


        enc = Encoder()
        opt = torch.optim.SGD([p for p in enc.parameters() if p.requires_grad], lr=0.1)
        for _ in range(4):
            ids = torch.randint(0, 20, (3, 5))
            loss = enc(ids, (ids > 2).float())
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # the rows of the top-k scores (method spelling, unpacked) pooled into a trained head
    "topk_rows_pooled": """\
        # fix: GG008 topk-gate 13
        import torch
        import torch.nn as nn

        torch.manual_seed(0)
        scorer = nn.Linear(6, 1)
        head = nn.Linear(6, 2)
        opt = torch.optim.Adam(list(scorer.parameters()) + list(head.parameters()), lr=1e-2)


        def pool(feats, k=4):
            s = scorer(feats).squeeze(-1)
            _, keep = s.topk(k)
            kept = feats[keep]
            return kept.mean(0)


        for _ in range(4):
            feats, y = torch.randn(10, 6), torch.randint(0, 2, (1,))
            loss = nn.functional.cross_entropy(head(pool(feats)).unsqueeze(0), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # the encoder's output detached in its forward; once it keeps its history, the same code is
    # also the target of the cycle loss (GG002), detached there on top (the chain of a silent run)
    "detached_encoder_output_then_target": """\
        # fix: GG008 keep-tensor 16
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        torch.manual_seed(0)


        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(6, 4)

            def forward(self, x):
                z = torch.tanh(self.fc(x))
                return z.detach()


        enc, dec = Encoder(), nn.Linear(4, 6)
        opt = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=1e-2)
        for _ in range(4):
            x = torch.randn(8, 6)
            z = enc(x)
            recon = dec(z)
            loss = F.mse_loss(recon, x) + F.mse_loss(enc(recon), z)
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # two losses copied from lists of per-head terms with requires_grad=True; GG009 names the
    # first, the second's GG104 gets the same stack
    "copies_asked_to_require_grad": """\
        # fix: GG104 stack-copies 11
        import torch
        import torch.nn.functional as F

        torch.manual_seed(0)
        heads = torch.nn.ModuleList([torch.nn.Linear(4, 1) for _ in range(3)])
        opt = torch.optim.SGD(heads.parameters(), lr=0.1)
        for _ in range(4):
            x, y = torch.randn(6, 4), torch.randn(6, 1)
            fit = torch.tensor([F.mse_loss(h(x), y) for h in heads], requires_grad=True).mean()
            spread = torch.tensor([h(x).std() for h in heads], requires_grad=True).mean()
            total = fit + 0.1 * spread
            opt.zero_grad()
            total.backward()
            opt.step()
        """,
}

# the same programs written correctly: no finding, so no patch
CLEAN = {
    "manual_update_cleared": """\
        import torch

        torch.manual_seed(0)
        x = torch.randn(32, 3)
        y = x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3
        weight = torch.zeros(3, 1, requires_grad=True)
        for epoch in range(5):
            err = (x @ weight - y).pow(2).mean()
            err.backward()
            with torch.no_grad():
                weight -= 0.1 * weight.grad
                weight.grad.zero_()
        """,
    "target_built_without_grad": """\
        import torch
        import torch.nn.functional as F

        torch.manual_seed(0)
        online = torch.nn.Linear(4, 1)
        target_net = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(online.parameters(), lr=0.05)
        for _ in range(4):
            s, r, s2, done = torch.randn(8, 4), torch.randn(8), torch.randn(8, 4), torch.rand(8) > 0.7
            q = online(s).squeeze(1)
            with torch.no_grad():
                nxt = target_net(s2).squeeze(1)
                nxt[done] = 0.0
            loss = F.smooth_l1_loss(q, r + 0.9 * nxt)
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    "max_values_into_second_model": """\
        import torch

        torch.manual_seed(0)
        selector = torch.nn.Linear(5, 3)
        scorer = torch.nn.Linear(1, 1)
        opt = torch.optim.Adam(list(selector.parameters()) + list(scorer.parameters()), lr=0.01)
        for step in range(4):
            x, t = torch.randn(10, 5), torch.randn(10, 1)
            best = selector(x).max(dim=1).values
            loss = (scorer(best.unsqueeze(1)) - t).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    "head_replaced_and_given_to_the_optimizer": """\
        import torch
        import torch.nn as nn

        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2))
        opt = torch.optim.Adam(net.parameters(), lr=1e-2)
        for it in range(6):
            if it == 1:
                net[2] = nn.Linear(8, 3)
                opt.add_param_group({'params': net[2].parameters()})
            x, y = torch.randn(5, 6), torch.randint(0, 3, (5,))
            loss = nn.functional.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    "leaf_scaled_out_of_place": """\
        import torch
        import torch.nn as nn

        torch.manual_seed(0)
        emb = nn.Embedding(20, 8)
        emb.weight.requires_grad_(False)
        proj = nn.Linear(8, 4)
        opt = torch.optim.SGD(proj.parameters(), lr=0.1)
        for _ in range(4):
            ids = torch.randint(0, 20, (3, 5))
            e = emb(ids)
            e.requires_grad_(True)
            e = e * (ids > 2).float().unsqueeze(-1)
            loss = proj(e).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    "topk_rows_weighted_by_scores": """\
        import torch
        import torch.nn as nn

        torch.manual_seed(0)
        scorer = nn.Linear(6, 1)
        head = nn.Linear(6, 2)
        opt = torch.optim.Adam(list(scorer.parameters()) + list(head.parameters()), lr=1e-2)
        for _ in range(4):
            feats, y = torch.randn(10, 6), torch.randint(0, 2, (1,))
            s = scorer(feats).squeeze(-1)
            keep = torch.topk(s, 4).indices
            pooled = (feats[keep] * torch.tanh(s[keep]).unsqueeze(-1)).mean(0)
            loss = nn.functional.cross_entropy(head(pooled).unsqueeze(0), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_family_gets_a_verified_patch(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check_annotated(tmp_path, monkeypatch, PROGRAMS[name])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CLEAN))
def test_clean_twin_gets_no_patch(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_program(tmp_path, CLEAN[name])
    rc, doc = run_fix(tmp_path, monkeypatch)
    assert rc == 0, doc
    assert doc["findings"] == [] and doc["patches"] == [], doc


def _finding(code: str, name: str, line: int, kind: str = "tensor", created: int | None = None) -> dict:
    where = {"file": "train.py", "line": line}
    return {"code": code, "subject": {"name": name, "kind": kind,
                                      "created_at": {"file": "train.py", "line": created} if created else None},
            "location": where, "related": []}


def test_manual_clear_only_after_an_update_that_reads_the_gradient() -> None:
    """A decay that does not read `.grad`, or a line that steps an optimizer, gets no clear; an
    update of `p.data` in a helper's loop clears `p` (every tensor the helper updates)."""
    text = (
        "import torch\n"
        "w = torch.zeros(2, requires_grad=True)\n"
        "opt = torch.optim.SGD([w], lr=0.1)\n"
        "def decay(params):\n"
        "    for p in params:\n"
        "        p.data -= 0.01 * p.data\n"
        "def sgd(params, lr):\n"
        "    for p in params:\n"
        "        p.data.add_(p.grad, alpha=-lr)\n"
        "opt.step()\n"
    )
    src = Source(text)
    assert list(zero_after_manual_update(src, _finding("GG010", "w", 6), "train.py")) == []
    assert list(zero_after_manual_update(src, _finding("GG010", "w", 10), "train.py")) == []
    [(family, line, new, _)] = list(zero_after_manual_update(src, _finding("GG010", "w", 9), "train.py"))
    assert (family, line) == ("zero-grad-after-update", 9)
    assert new.splitlines()[9].strip() == "p.grad.zero_()"
    # a tensor has no zero_grad(): the optimizer families propose nothing for it
    cands = candidates_for(_finding("GG010", "w", 9), lambda f: text if f == "train.py" else None)
    assert [c.family for c in cands] == ["zero-grad-after-update"]


def test_no_creation_place_detaches_the_last_assignment_before_the_use() -> None:
    text = (
        "import torch\n"
        "def f(net, x, y, pred):\n"
        "    t = net(y)\n"
        "    t = net(x).view(-1)\n"
        "    t[0] = 0.0\n"
        "    goal = 1 + t\n"
        "    return torch.nn.functional.mse_loss(pred, goal)\n"
    )
    cands = candidates_for(_finding("GG002", "t", 7), lambda f: text if f == "train.py" else None)
    made = [(c.family, c.line) for c in cands]
    assert ("detach-at-creation", 4) in made and ("detach-at-creation", 3) not in made, made


def test_soft_argmax_leaves_a_max_with_keepdim_and_its_values_alone() -> None:
    text = (
        "import torch\n"
        "a = torch.max(h, 1, keepdim=True)[1]\n"
        "b = h.max(1)[0]\n"
        "c = torch.max(h, dim=1)[1]\n"
    )
    read = lambda f: text if f == "train.py" else None  # noqa: E731
    for line, expect in ((2, False), (3, False), (4, True)):
        f = _finding("GG008", "net.weight", 9, kind="parameter")
        f["related"] = [{"role": "cut-by", "location": {"file": "train.py", "line": line}}]
        got = [c for c in candidates_for(f, read) if c.family == "soft-argmax"]
        assert bool(got) == expect, (line, [c.text for c in got])


def test_group_after_change_needs_a_change_in_the_loop() -> None:
    """A layer the optimizer never got, with nothing in the loop changing the model (built after
    the optimizer, before the loop): not this family's edit (the optimizer families' instead)."""
    text = (
        "import torch\n"
        "model = torch.nn.Sequential(torch.nn.Linear(2, 2))\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "model.fc = torch.nn.Linear(2, 1)\n"
        "for _ in range(3):\n"
        "    model.train()\n"
        "    loss = model.fc(model(torch.randn(4, 2))).sum()\n"
        "    loss.backward()\n"
        "    opt.step()\n"
    )
    f = _finding("GG011", "model.fc.weight", 8, kind="parameter")
    f["related"] = [{"role": "reached-by", "location": {"file": "train.py", "line": 8}}]
    cands = candidates_for(f, lambda p: text if p == "train.py" else None)
    assert "add-param-group-after-change" not in [c.family for c in cands]


def test_out_of_place_only_for_a_leaf_the_writing_call_builds() -> None:
    """A tensor made at the top level and updated in a function, or an update from the leaf's own
    gradient, is an update (no_grad's business): no out-of-place rewrite."""
    text = (
        "import torch\n"
        "w = torch.zeros(3, requires_grad=True)\n"
        "def bump(noise):\n"
        "    w.add_(noise)\n"
        "def fit(x):\n"
        "    v = torch.zeros(3, requires_grad=True)\n"
        "    v -= 0.1 * v.grad\n"
        "    u = torch.zeros(3, requires_grad=True)\n"
        "    u += x\n"
    )
    read = lambda p: text if p == "train.py" else None  # noqa: E731
    fams = lambda f: [(c.family, c.line) for c in candidates_for(f, read)]  # noqa: E731
    assert ("out-of-place-local", 4) not in fams(_finding("GG006", "w", 4, created=2))
    assert ("out-of-place-local", 7) not in fams(_finding("GG006", "v", 7, created=6))
    assert ("out-of-place-local", 9) in fams(_finding("GG006", "u", 9, created=8))


def test_topk_gate_only_for_rows_picked_on_the_first_axis() -> None:
    """A top-k along a dim, or indices used on another axis only, get no gate; a row selection does."""
    text = (
        "import torch\n"
        "def f(x, s, e):\n"
        "    a = torch.topk(s, 3, dim=1).indices\n"
        "    y = x[a]\n"
        "    b = torch.topk(s, 3)[1]\n"
        "    z = e[:, b]\n"
        "    c = s.topk(3).indices\n"
        "    return x[c], y, z\n"
    )
    read = lambda p: text if p == "train.py" else None  # noqa: E731
    for line, expect in ((3, False), (5, False), (7, True)):
        f = _finding("GG008", "scorer", 9, kind="module")
        f["related"] = [{"role": "cut-by", "location": {"file": "train.py", "line": line}}]
        assert ("topk-gate" in [c.family for c in candidates_for(f, read)]) == expect, line


def test_gg104_stack_only_for_a_copy_asked_to_require_grad() -> None:
    """A plain copy keeps detach-copy-source (what the program computes now), which detaches the
    copied tensors, never the copy's own name; a copy made with requires_grad=True gets the stack
    first."""
    text = (
        "import torch\n"
        "a = torch.tensor([p, q])\n"
        "b = torch.tensor([p, q], requires_grad=True)\n"
    )
    read = lambda f: text if f == "train.py" else None  # noqa: E731
    plain = candidates_for(_finding("GG104", "a", 2, created=2), read)
    assert [c.family for c in plain] == []  # no source named, and `a` itself is not one
    f = _finding("GG104", "b", 3, created=3)
    f["related"] = [{"role": "source", "name": "p"}, {"role": "fix-at", "location": {"file": "train.py", "line": 3}}]
    made = candidates_for(f, read)
    assert [c.family for c in made][:1] == ["stack-copies"]
    detached = [c.text.splitlines()[2] for c in made if c.family == "detach-copy-source"]
    assert detached == ["b = torch.tensor([p.detach(), q], requires_grad=True)"], detached
