"""`graphguard fix` on what the optimizer holds (GG008, GG011; families/optimizer.py): built over an
instance the loss does not use, over frozen parameters its step reads, over a module the forward
never calls, or without a module the backward trains. Each program is another spelling than the
benchmark case that motivated the family; the last ones check that a candidate that would take a
parameter out of training is not proposed, or rejected, where the finding does not allow it.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from fixkit import check_annotated, run_fix, write_program
from graphguard.fix.candidates import candidates_for
from graphguard.fix.verify import Result, judge

pytestmark = pytest.mark.slow  # every case runs its program several times in subprocesses

PROGRAMS = {
    # the model is re-created inside a function after the optimizer was built over the first one
    "rebuilt_in_function": """\
        # fix: GG008 optimizer-after-model 14
        import torch
        import torch.nn as nn


        def make():
            return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))


        def main():
            torch.manual_seed(0)
            net = make()
            steps = 5
            opt = torch.optim.Adam(net.parameters(), lr=1e-2)
            net = make()  # "reset" the weights, after the optimizer was built
            for _ in range(steps):
                x, y = torch.randn(16, 4), torch.randn(16, 1)
                loss = ((net(x) - y) ** 2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()


        main()
        """,
    # a user-written optimizer reads p.grad of a parameter frozen before it was built
    "frozen_read_by_step": """\
        # fix: GG008 trainable-only 24
        import torch
        import torch.nn as nn

        torch.manual_seed(0)


        class SignSGD(torch.optim.Optimizer):
            def __init__(self, params, lr=0.01):
                super().__init__(params, dict(lr=lr))

            @torch.no_grad()
            def step(self):
                for group in self.param_groups:
                    for p in group["params"]:
                        p.sub_(p.grad.sign(), alpha=group["lr"])


        emb = nn.Embedding(20, 6)
        head = nn.Linear(6, 2)
        emb.weight.requires_grad_(False)  # pretrained embeddings, kept fixed
        model = nn.ModuleDict({"emb": emb, "head": head})
        crit = nn.CrossEntropyLoss()
        opt = SignSGD(model.parameters(), lr=0.01)
        for _ in range(4):
            ids, y = torch.randint(0, 20, (8,)), torch.randint(0, 2, (8,))
            loss = crit(head(emb(ids)), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # an auxiliary head declared in __init__ but never called; optimizer over model.parameters()
    "unused_head_frozen": """\
        # fix: GG008 freeze-unused 20
        import torch
        import torch.nn as nn

        torch.manual_seed(0)


        class Tagger(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(5, 12)
                self.aux_head = nn.Linear(12, 3)
                self.head = nn.Linear(12, 4)

            def forward(self, x):
                return self.head(torch.relu(self.body(x)))


        tagger = Tagger()
        opt = torch.optim.SGD(params=tagger.parameters(), lr=0.05)
        for _ in range(5):
            x, y = torch.randn(10, 5), torch.randint(0, 4, (10,))
            loss = nn.functional.cross_entropy(tagger(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # the unused module has a parameter group of its own (with its own lr): the group goes
    "unused_group": """\
        # fix: GG008 drop-param-group 22
        import torch
        import torch.nn as nn

        torch.manual_seed(0)


        class Siamese(nn.Module):
            def __init__(self):
                super().__init__()
                self.encoder = nn.Linear(6, 8)
                self.projector = nn.Linear(8, 8)

            def forward(self, a, b):
                return (self.encoder(a) * self.encoder(b)).sum(1)


        net = Siamese()
        opt = torch.optim.SGD(
            [
                {"params": net.encoder.parameters()},
                {"params": net.projector.parameters(), "lr": 0.5},
            ],
            lr=0.05,
        )
        for _ in range(5):
            a, b, y = torch.randn(7, 6), torch.randn(7, 6), torch.randn(7)
            loss = ((net(a, b) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # a loss module with weights of its own (a learned class-centre table) left out of the groups
    "criterion_with_weights": """\
        # fix: GG011 add-param-group 20
        import torch
        import torch.nn as nn

        torch.manual_seed(0)


        class CosineLoss(nn.Module):
            def __init__(self, dim, classes):
                super().__init__()
                self.centres = nn.Parameter(torch.randn(classes, dim))

            def forward(self, feats, labels):
                logits = nn.functional.normalize(feats) @ nn.functional.normalize(self.centres).t()
                return nn.functional.cross_entropy(10 * logits, labels)


        backbone = nn.Sequential(nn.Linear(9, 6), nn.ReLU(), nn.Linear(6, 6))
        criterion = CosineLoss(6, 3)
        opt = torch.optim.SGD([{"params": backbone.parameters(), "weight_decay": 1e-4}], lr=0.1)
        for _ in range(5):
            x, y = torch.randn(12, 9), torch.randint(0, 3, (12,))
            loss = criterion(backbone(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
    # a trainer builds a loss module with a learned temperature after the optimizer was made
    "loss_built_by_trainer": """\
        # fix: GG011 add-param-group-late 18
        import torch
        import torch.nn as nn

        torch.manual_seed(0)


        class TemperedCE(nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = nn.Linear(1, 1, bias=False)

            def forward(self, logits, y):
                return nn.functional.cross_entropy(self.scale(logits.unsqueeze(-1)).squeeze(-1), y)


        class Runner:
            def __init__(self, net, optim):
                self.net = net
                self.optim = optim
                self.crit = TemperedCE()

            def fit(self, batches):
                for x, y in batches:
                    loss = self.crit(self.net(x), y)
                    self.optim.zero_grad()
                    loss.backward()
                    self.optim.step()


        net = nn.Linear(6, 3)
        runner = Runner(net, torch.optim.SGD(net.parameters(), lr=0.1))
        runner.fit([(torch.randn(8, 6), torch.randint(0, 3, (8,))) for _ in range(5)])
        """,
    # layers built and called inline in forward: the optimizer gets an empty parameter list
    "inline_layers": """\
        # fix: GG011 inline-layers-to-init 10
        import torch
        import torch.nn as nn

        torch.manual_seed(0)
        WIDTH = 12


        class Scorer(nn.Module):
            def __init__(self):
                super().__init__()
                self.act = nn.GELU()

            def forward(self, feats):
                h = self.act(nn.Linear(6, WIDTH)(feats))
                return nn.Linear(WIDTH, 1)(h).squeeze(-1)


        scorer = Scorer()
        opt = torch.optim.Adam(scorer.parameters(), lr=1e-3)
        for _ in range(4):
            x, y = torch.randn(9, 6), torch.randn(9)
            loss = nn.functional.mse_loss(scorer(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_patch_kept(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check_annotated(tmp_path, monkeypatch, PROGRAMS[name])


def test_move_not_proposed_when_the_optimizer_is_used_before_the_rebinding(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a scheduler is built over the optimizer between the two instances: moving the optimizer
    # would break it, so the family stays out (the finding is left unpatched)
    write_program(tmp_path, """\
        import torch
        import torch.nn as nn

        torch.manual_seed(0)
        model = nn.Linear(3, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        sched = torch.optim.lr_scheduler.StepLR(opt, 2)
        model = nn.Linear(3, 1)
        for _ in range(4):
            loss = model(torch.randn(5, 3)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        """)
    _, doc = run_fix(tmp_path, monkeypatch)
    assert [d["code"] for d in doc["findings"]] == ["GG008"]
    assert not [p for p in doc["patches"] if p["family"] == "optimizer-after-model"]
    assert [d["code"] for d in doc["unpatched"]] == ["GG008"]


def _finding(severity: str, summary: str, roles: list[tuple[str, str]]) -> dict:
    where = {"file": "train.py", "line": 6, "function": "<module>", "code": ""}
    return {"code": "GG008", "severity": severity,
            "subject": {"name": "model.head", "kind": "module", "summary": summary, "created_at": where},
            "location": where, "related": [{"role": r, "op": op, "name": None, "location": where} for r, op in roles]}


def _run(params: dict) -> Result:
    return Result(True, [], {"status": "ok"}, {"steps": 3, "params": params})


TRAINED = {"opt0.group0.param0": {"shape": [2, 4], "nonzero": True, "requires_grad": True}}
FROZEN_HEAD = {"opt0.group0.param1": {"shape": [3, 4], "nonzero": False, "requires_grad": False}}


def test_judge_taking_parameters_out_of_training() -> None:
    base = _run({**TRAINED, "opt0.group0.param1": {"shape": [3, 4], "nonzero": False, "requires_grad": True}})
    unused = _finding("warning", "f32[3, 4] requires_grad", [("fix-at", "optimizer")])
    # a module the forward never calls: frozen, or left out of the optimizer
    assert judge(unused, base, _run({**TRAINED, **FROZEN_HEAD})) is None
    assert judge(unused, base, _run(TRAINED)) is None
    # ... but not at the price of a parameter that trained before
    assert judge(unused, base, _run({"opt0.group0.param0": dict(TRAINED["opt0.group0.param0"], nonzero=False)}))
    # a cut path is fixed by restoring the gradient, never by freezing what it cut
    cut = _finding("warning", "f32[3, 4] requires_grad", [("cut-by", "detach"), ("fix-at", "detach")])
    assert judge(cut, base, _run({**TRAINED, **FROZEN_HEAD})) is not None
    # the optimizer over another instance (no parameter reached): the live model must train
    every = _finding("error", "f32[3, 4] requires_grad", [("fix-at", "optimizer")])
    assert judge(every, base, _run({**TRAINED, **FROZEN_HEAD})) is not None


def test_leave_out_not_proposed_for_a_cut() -> None:
    text = "import torch\nmodel = torch.nn.Linear(4, 3)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    f = _finding("warning", "f32[3, 4] requires_grad", [("cut-by", "detach"), ("fix-at", "optimizer")])
    f["subject"]["name"] = "model"
    f["related"][1]["location"] = dict(f["location"], line=3)
    assert not [c for c in candidates_for(f, lambda _: text) if c.family in ("freeze-unused", "drop-param-group")]
    f["related"] = f["related"][1:]
    assert [c.family for c in candidates_for(f, lambda _: text)] == ["freeze-unused"]


INLINE = """\
import torch.nn as nn
hidden = 3


class Net(nn.Module):
    def __init__(self, hidden):
        super().__init__()

    def forward(self, x):
        return nn.Linear(4, hidden)(x)


net = Net(ARG)
"""


@pytest.mark.parametrize("arg, proposed", [("hidden", True), ("hidden=hidden", True), ("8", False)])
def test_inline_layer_moved_only_when_init_reads_the_same_value(arg: str, proposed: bool) -> None:
    # in __init__, `hidden` is the parameter: the layer may move there only if the model is built
    # with the very variable forward reads
    text = INLINE.replace("ARG", arg)
    where = {"file": "train.py", "line": 10, "function": "forward", "code": ""}
    f = {"code": "GG011", "severity": "error",
         "subject": {"name": "nn.Linear(4, hidden)", "kind": "module", "summary": "Net.forward", "created_at": where},
         "location": dict(where, line=13),
         "related": [{"role": "fix-at", "op": "build in __init__", "name": "nn.Linear(4, hidden)", "location": where},
                     {"role": "model", "op": "Net", "name": "net", "location": dict(where, line=13)}]}
    families = [c.family for c in candidates_for(f, lambda _: text)]
    assert ("inline-layers-to-init" in families) is proposed
