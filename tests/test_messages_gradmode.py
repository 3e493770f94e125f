"""The grad-mode family's messages by id (issue 31): GG008 param-without-grad, GG009
loss-without-grad, GG014 no-grad-forward, GG015 checkpoint-no-grad-input. Each message is produced by a real small program
(a case file of tests/cases, or one written here), and asserted on its id, the subject's name and
the line; never on the sentence. One `ignore=[id]` check per rule with several messages."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from casekit import CASES, load_case, run_guarded

# a loss computed with grad mode off from nothing that requires grad: no cut is recorded, so
# GG009 can only say it was computed under no_grad (GG014 names the `with` block)
UNDER_NO_GRAD = textwrap.dedent("""\
    import torch

    w = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.SGD([w], lr=0.1)


    def buggy():
        with torch.no_grad():
            loss = (torch.ones(3) * 2).sum()
            try:
                loss.backward()
            except RuntimeError:
                pass
""")


def _ids(path: Path, code: str, fn: str = "buggy", **guard) -> set[tuple[str, str | None, int | None]]:
    """(message id, subject name, line) of the findings of `code` that `path`'s `fn()` makes."""
    g, _ = run_guarded(getattr(load_case(path), fn), **guard)
    return {(f.message_id, f.subject.name, f.location.line if f.location else None)
            for f in g.findings if f.code == code}


def _line(text: str, marker: str) -> int:
    """The line of `text` that carries the comment `marker`."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if f"# {marker}" in line)


def _case(stem: str) -> Path:
    return CASES / f"{stem}.py"


# ---- GG009 ------------------------------------------------------------------------------------
@pytest.mark.parametrize("stem,expected", [
    # a cut by an op (argmax), a loss made from nothing that requires grad, a loss reaching no
    # parameter through a cut (fresh inputs only): three stories of one program
    ("gg009_cut_point_names", {("GG009.cut", "picked", 36), ("GG009.nothing-requires-grad", "penalty", 43),
                               ("GG009.fresh-inputs-only", "value", 50)}),
    ("gg009_rewrapped_loss", {("GG009.rewrapped-after-cut", "loss", 22), ("GG009.rewrapped", "total", 28)}),
    ("gg009_term_cut_accumulator", {("GG009.term-cut-accumulator", "total", 39)}),
    ("gg009_added_dead_term", {("GG009.added-dead-term", "dice_loss", 43)}),
])
def test_gg009_messages(stem, expected):
    assert expected <= _ids(_case(stem), "GG009")


def test_gg009_under_no_grad(tmp_path):
    path = tmp_path / "under_no_grad.py"
    path.write_text(UNDER_NO_GRAD)
    assert ("GG009.under-no-grad", "loss", 11) in _ids(path, "GG009")


def test_gg009_severities_are_the_messages():
    from graphguard.rules import message_for_id

    assert message_for_id("GG009.cut").severity == "error"
    assert message_for_id("GG009.added-dead-term").severity == "warning"
    assert message_for_id("GG009.term-cut-accumulator").severity == "warning"


def test_gg009_ignore_one_message():
    found = _ids(_case("gg009_cut_point_names"), "GG009", ignore=["GG009.cut"])
    assert {i for i, _, _ in found} == {"GG009.nothing-requires-grad", "GG009.fresh-inputs-only"}


# ---- GG014 ------------------------------------------------------------------------------------
@pytest.mark.parametrize("stem,expected", [
    ("gg014_inference_cache_in_eval", ("GG014.inference-saved", "self.table", 17)),
    ("gg014_validation_backward_in_no_grad", ("GG014.loss-under-no-grad", "loss", 18)),
    ("gg014_inference_mode_forces_enable_grad", ("GG014.inference-loss", "energy", 17)),
    ("gg014_no_grad_helper_half_model", ("GG014.part-under-no-grad", "model.q_out", 48)),
])
def test_gg014_messages(stem, expected):
    assert expected in _ids(_case(stem), "GG014")


def test_gg014_ignore_one_message(tmp_path):
    path = tmp_path / "under_no_grad.py"
    path.write_text(UNDER_NO_GRAD)
    assert ("GG014.loss-under-no-grad", "loss", 11) in _ids(path, "GG014")
    assert _ids(path, "GG014", ignore=["GG014.loss-under-no-grad"]) == set()


# ---- GG015 ------------------------------------------------------------------------------------
def test_gg015_message():
    assert _ids(_case("gg015_first_segment_function"), "GG015") == {("GG015.no-grad-input", "batch", 25)}


# ---- GG008 ------------------------------------------------------------------------------------
# `.grad` read as None and used as an object (`p.grad.data`): reported at the read, one story per
# reason it is None (a recorded cut, no backward reached it, frozen but held by the optimizer)
READS = textwrap.dedent("""\
    import torch
    import torch.nn as nn

    torch.manual_seed(0)


    class MySGD(torch.optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": 0.1})

        @torch.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    p.add_(p.grad.data, alpha=-0.1)  # READ frozen


    def cut():
        w = nn.Parameter(torch.rand(3))
        h = nn.Parameter(torch.ones(1))
        opt = torch.optim.SGD([w, h], lr=0.1)
        for _ in range(2):
            mask = (w > 0.5).float()
            loss = (mask * h).sum()
            opt.zero_grad()
            loss.backward()
            w.grad.data.clamp_(-1, 1)  # READ cut: by the comparison
            opt.step()


    def unreached():
        used, extra = nn.Linear(3, 1), nn.Linear(3, 1)
        opt = torch.optim.SGD(list(used.parameters()) + list(extra.parameters()), lr=0.1)
        x = torch.randn(4, 3)
        for _ in range(2):
            loss = used(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            for p in extra.parameters():
                p.grad.data.clamp_(-1, 1)  # READ unreached: never reached
            opt.step()


    def frozen():
        emb, head = nn.Linear(3, 3), nn.Linear(3, 1)
        emb.requires_grad_(False)
        opt = MySGD(list(emb.parameters()) + list(head.parameters()))
        x = torch.randn(4, 3)
        for _ in range(2):
            loss = head(emb(x)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
""")

# a layer the forward computes with and whose output it drops (info), and one a DDP module
# built with find_unused_parameters=True never calls (info: the program said so)
UNUSED = textwrap.dedent("""\
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(4, 4)
            self.pool = nn.Linear(4, 4)

        def forward(self, x):
            h = self.enc(x)
            self.pool(h)
            return h


    class Spare(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(4, 4)
            self.spare = nn.Linear(4, 4)

        def forward(self, x):
            return self.enc(x)


    def output_unused():
        model = Net()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x = torch.randn(2, 4)
        for _ in range(3):
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()  # STEP output_unused


    def ddp_unused():
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
        try:
            model = DDP(Spare(), find_unused_parameters=True)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            x = torch.randn(2, 4)
            for _ in range(3):
                loss = model(x).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()  # STEP ddp_unused
        finally:
            dist.destroy_process_group()
""")


@pytest.mark.parametrize("stem,expected", [
    ("gg008_hard_threshold", ("GG008.cut-by-op", "threshold", 18)),
    ("gg008_second_optimizer_over_generator", ("GG008.wrong-optimizer", "netG", 29)),
    ("gg008_optimizer_other_instance", ("GG008.optimizer-unreached", "net", 22)),
    ("gg008_module_never_called", ("GG008.never-called", "model.extra", 32)),
    ("gg008_parameter_read_as_data", ("GG008.unused-in-module", "net.encoder.pos_embedding", 55)),
    ("gg008_frozen_after_optimizer", ("GG008.frozen-after-optimizer", "model.encode", 33)),
    ("gg008_frozen_toggle_left_on", ("GG008.idle-step", "disc", 29)),
])
def test_gg008_messages(stem, expected):
    assert expected in _ids(_case(stem), "GG008")


@pytest.mark.parametrize("fn,message,name", [
    ("cut", "GG008.read-none-cut", "w"),
    ("unreached", "GG008.read-none-unreached", "extra.weight"),
    ("frozen", "GG008.read-none-frozen", "emb.weight"),
])
def test_gg008_none_read_messages(tmp_path, fn, message, name):
    path = tmp_path / "reads.py"
    path.write_text(READS)
    assert (message, name, _line(READS, f"READ {fn}")) in _ids(path, "GG008", fn)


@pytest.mark.parametrize("fn,message,name", [
    ("output_unused", "GG008.output-unused", "model.pool"),
    ("ddp_unused", "GG008.ddp-unused", "model.module.spare"),
])
def test_gg008_told_not_alarmed(tmp_path, fn, message, name):
    path = tmp_path / "unused.py"
    path.write_text(UNUSED)
    assert (message, name, _line(UNUSED, f"STEP {fn}")) in _ids(path, "GG008", fn)
    from graphguard.rules import message_for_id

    assert message_for_id(message).severity == "info"


def test_gg008_ignore_one_message():
    path = _case("gg008_hard_threshold")
    assert ("GG008.cut-by-op", "threshold", 18) in _ids(path, "GG008", ignore=["GG008.never-called"])
    assert not any(i == "GG008.cut-by-op" for i, _, _ in _ids(path, "GG008", ignore=["GG008.cut-by-op"]))
