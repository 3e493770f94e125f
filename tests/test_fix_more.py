"""`graphguard fix` on the nearly-complete families (issue 14): a gradient clear between backward
and step moved after the step (gradient accumulation kept), a loss call's swapped arguments, a
rank/hinge loss reduced where it is made, a shared tensor read twice in one statement of the second
loss, and a patch that lets the program run into the next error it never reached (patched on top). Each program is another spelling than the benchmark case that motivated it; one candidate of
a new family must be rejected. Assertions are on codes, family names and line numbers.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from fixkit import check_annotated, run_fix, write_program

pytestmark = pytest.mark.slow  # every case runs its program several times in subprocesses

PROGRAMS = {
    # the step runs every second micro-batch; the clear sits in the step's block before the step
    "zero_grad_in_accumulation_block": """\
        # fix: GG010 zero-grad-after-step 13
        import torch

        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
        opt = torch.optim.SGD(net.parameters(), lr=0.05)
        accum = 2
        for i in range(8):
            x = torch.randn(5, 4)
            loss = net(x).pow(2).mean() / accum
            loss.backward()
            if (i + 1) % accum == 0:
                net.zero_grad()
                opt.step()
        """,
    # functional loss, the reconstruction passed second, inside a function
    "swapped_functional_loss": """\
        # fix: GG002 swap-loss-arguments 11
        import torch
        import torch.nn.functional as F

        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(6, 3), torch.nn.ReLU(), torch.nn.Linear(3, 6))
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)

        def step(batch):
            recon = torch.sigmoid(model(batch))
            err = F.binary_cross_entropy(batch, recon)
            opt.zero_grad()
            err.backward()
            opt.step()

        for _ in range(4):
            step(torch.rand(8, 6))
        """,
    # a hinge function returning one value per pair, backward through torch.autograd.backward
    "hinge_function_return": """\
        # fix: GG012 mean-at-fix 9
        import torch

        torch.manual_seed(0)
        scorer = torch.nn.Linear(5, 1)
        opt = torch.optim.SGD(scorer.parameters(), lr=0.1)

        def hinge(pos, neg, margin=1.0):
            return (margin - pos + neg).clamp(min=0)

        for _ in range(4):
            a, b = torch.randn(7, 5), torch.randn(7, 5)
            opt.zero_grad()
            torch.autograd.backward(hinge(scorer(a), scorer(b)))
            opt.step()
        """,
    # the critic's score of the real batch, reused twice by one multi-line statement of the G loss
    "shared_read_twice_in_one_statement": """\
        # fix: GG003 detach-shared-input 23
        import torch
        import torch.nn.functional as F

        torch.manual_seed(0)
        gen = torch.nn.Linear(3, 4)
        critic = torch.nn.Linear(4, 1)
        opt_g = torch.optim.Adam(gen.parameters(), lr=1e-3)
        opt_c = torch.optim.Adam(critic.parameters(), lr=1e-3)
        for _ in range(3):
            real = torch.randn(6, 4)
            fake = gen(torch.randn(6, 3))
            s_real = critic(real)
            s_fake = critic(fake.detach())
            c_real = F.softplus(s_fake - s_real.mean()).mean()
            c_fake = F.softplus(s_real.mean() - s_fake).mean()
            loss_c = c_real + c_fake
            opt_c.zero_grad()
            loss_c.backward()
            opt_c.step()
            s_gen = critic(fake)
            loss_g = (
                F.softplus(s_real - s_gen.mean()).mean()
                + F.softplus(s_gen - s_real.mean()).mean()
            )
            opt_g.zero_grad()
            loss_g.backward()
            opt_g.step()
        """,
    # the canvas is scaled after requires_grad=True (the optimizer cannot be built); once it is a
    # leaf, the program reaches its second iteration and the style features computed once with
    # history are stale: the chain patches both
    "non_leaf_canvas_then_stale_features": """\
        # fix: GG007 requires-grad-last 8
        import torch

        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())
        style = torch.rand(1, 3, 8, 8)
        target_feats = net(style)
        canvas = (torch.rand(1, 3, 8, 8, requires_grad=True) * 0.5)
        opt = torch.optim.Adam([canvas], lr=0.05)
        for _ in range(4):
            opt.zero_grad()
            loss = (net(canvas) - target_feats).pow(2).mean()
            loss.backward()
            opt.step()
        """,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_family_gets_a_verified_patch(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check_annotated(tmp_path, monkeypatch, PROGRAMS[name])


def test_per_sample_losses_used_later_are_not_reduced_where_made(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The per-sample losses are also indexed after the backward (hardest sample): the mean at the
    fix-at return is rejected by the run, the mean at the backward is kept."""
    write_program(tmp_path, """\
        import torch

        torch.manual_seed(0)
        scorer = torch.nn.Linear(5, 1)
        opt = torch.optim.SGD(scorer.parameters(), lr=0.1)

        def rank(p, n):
            return (1 - p + n).relu()

        for _ in range(4):
            a, b = torch.randn(7, 5), torch.randn(7, 5)
            per_pair = rank(scorer(a), scorer(b))
            opt.zero_grad()
            per_pair.backward(retain_graph=False)
            opt.step()
            hardest = per_pair[per_pair.argmax()].item()
        """)
    rc, doc = run_fix(tmp_path, monkeypatch)
    assert rc == 0, doc
    kept = [(p["finding"]["code"], p["family"], p["line"]) for p in doc["patches"]]
    assert kept == [("GG012", "mean-at-backward", 14)], kept
    rejected = [(r["finding"]["code"], r["family"], r["line"]) for r in doc["rejected"]]
    assert ("GG012", "mean-at-fix", 8) in rejected, rejected
