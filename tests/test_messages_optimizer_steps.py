"""The optimizer-step family's declared messages (GG010 missing-zero-grad, GG011
unregistered-parameter, GG013 zero-gradient): every message a rule declares is told by a real
small program (a case file of tests/cases, or one written here), selected by its id, with the
subject's name and the line; and `ignore=[id]` mutes one story of a rule, not the others.

Asserts on ids, names and lines only, never on the sentences.
"""
from __future__ import annotations

import runpy
import textwrap
from pathlib import Path

import pytest

from casekit import CASES, load_case, run_guarded
from graphguard import GraphGuard
from graphguard.rules import ALL_RULES

FAMILY = ("GG010", "GG011", "GG013")


def _told(guard: GraphGuard, code: str) -> list[tuple[str, str | None, int | None]]:
    """(message id, subject name, line) of the findings of `code`, in report order."""
    return [(f.message_id, f.subject.name, f.location.line if f.location else None)
            for f in guard.findings if f.code == code]


def _case(stem: str, **guard) -> GraphGuard:
    mod = load_case(CASES / f"{stem}.py")
    g, _ = run_guarded(mod.buggy, **guard)
    return g


def _program(tmp_path: Path, name: str, source: str, **guard) -> tuple[GraphGuard, Path]:
    """Run `source` as the user's script `name`.py under a collecting guard (a program that
    PyTorch makes raise is run to its error: the finding comes before it)."""
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    g = GraphGuard(mode="collect", **guard)
    try:
        with g:
            runpy.run_path(str(path), run_name="__main__")
    except ValueError:  # "optimizer got an empty parameter list"
        pass
    return g, path


def _line(path: Path, marker: str) -> int:
    """The line of `path` that carries `# <- marker`."""
    for i, text in enumerate(path.read_text().splitlines(), 1):
        if text.rstrip().endswith(f"# <- {marker}"):
            return i
    raise AssertionError(f"{path.name}: no line marked {marker!r}")


# ---- every message has a program that tells it ---------------------------------------------------
# (case file, code) -> the findings it must tell, in order
CASE_MESSAGES = {
    ("gg010_classifier_loop", "GG010"): [("GG010.stale-step", "opt", 54)],
    ("gg010_optimizer_held_by_model", "GG010"): [("GG010.stale-step", "agent.critic.opt", 35)],
    ("gg010_manual_sgd", "GG010"): [("GG010.stale-manual-update", "w", 44),
                                    ("GG010.stale-manual-update", "b", 45)],
    ("gg010_model_updated_by_hand", "GG010"): [("GG010.stale-manual-update", "net", 19)],
    ("gg010_cleared_before_step", "GG010"): [("GG010.cleared-before-step", "sgd", 23)],
    ("gg011_layer_in_forward", "GG011"): [("GG011.built-anew", "head", 16)],
    ("gg011_parameter_made_in_forward", "GG011"): [("GG011.built-anew", "model.block.gamma", 17)],
    ("gg011_tensor_attribute", "GG011"): [("GG011.plain-tensor-attribute", "model.temperature", 16)],
    ("gg011_tensor_list_in_block", "GG011"): [
        ("GG011.tensor-in-plain-container", "model.blocks[0].scales", 19)],
    ("gg011_tensor_list_partly_optimized", "GG011"): [("GG011.not-given", "weights[-1]", 24)],
    ("gg011_head_replaced", "GG011"): [("GG011.added-after-optimizer", "model.fc", 14)],
    ("gg011_module_left_out", "GG011"): [("GG011.left-out", "projector", 46),
                                         ("GG011.left-out-partly", "self.stem", 58)],
    ("gg011_empty_optimizer_lazy_layers", "GG011"): [
        ("GG011.empty-layers-in-forward", "self.fc", 29)],
    ("gg013_floor_quantizer", "GG013"): [("GG013.zero-every-step", "model.enc.weight", 32)],
    ("gg013_sign_weights", "GG013"): [("GG013.zero-every-step", "w", 18)],
    ("gg013_rounded_count_term", "GG013"): [("GG013.term-trains-nothing", "count_penalty", 25)],
}


@pytest.mark.parametrize("stem,code", sorted(CASE_MESSAGES), ids=lambda v: v)
def test_a_case_tells_its_messages(stem: str, code: str) -> None:
    assert _told(_case(stem), code) == CASE_MESSAGES[(stem, code)]


LAYER_IN_LIST = """\
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Linear(4, 4)]
            self.out = nn.Linear(4, 1)

        def forward(self, x):
            return self.out(self.layers[0](x))  # <- use


    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""

BUILT_ONCE_WHILE_RUNNING = """\
    import torch
    import torch.nn as nn

    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(3):
        x = torch.randn(4, 3)
        if i == 0:
            loss = (model(x) * nn.Linear(1, 1)(model(x))).sum()  # <- use
        else:
            loss = model(x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""

# a GAN whose D optimizer was built over G's parameters: it steps with no gradient while D has one
D_OPTIMIZER_OVER_G = """\
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.manual_seed(0)
    G = nn.Linear(2, 4)
    D = nn.Linear(4, 1)
    optG = torch.optim.SGD(G.parameters(), lr=0.1)
    optD = torch.optim.SGD(G.parameters(), lr=0.1)
    for _ in range(2):
        z, real = torch.randn(8, 2), torch.randn(8, 4)
        lossG = F.softplus(-D(G(z))).mean()  # <- use
        optG.zero_grad()
        lossG.backward()
        optG.step()
        optD.zero_grad()
        lossD = F.softplus(-D(real)).mean() + F.softplus(D(G(z).detach())).mean()
        lossD.backward()
        optD.step()
"""

# the stem left out of per-part groups, and a second optimizer over body1 only that steps idle
STEM_LEFT_OUT_IDLE_OPTIMIZER = """\
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Linear(4, 4)
            self.body1 = nn.Linear(4, 4)
            self.body2 = nn.Linear(4, 1)

        def forward(self, x):
            return self.body2(torch.relu(self.body1(torch.relu(self.stem(x)))))  # <- use


    model = Net()
    opt = torch.optim.SGD([{"params": model.body1.parameters()},
                           {"params": model.body2.parameters()}], lr=0.1)
    opt2 = torch.optim.SGD(model.body1.parameters(), lr=0.1)
    for _ in range(2):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        opt2.zero_grad()
        opt2.step()
"""

EMPTY_LAYERS_IN_LIST = """\
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Linear(4, 4), nn.Linear(4, 1)]

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x


    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)  # <- use
"""

EMPTY_NO_LAYERS = """\
    import torch
    import torch.nn as nn


    class Double(nn.Module):
        def forward(self, x):
            return x * 2


    model = Double()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)  # <- use
"""

# program -> (code, message id, subject name or ... for "not asserted")
PROGRAM_MESSAGES = {
    "layer_in_list": (LAYER_IN_LIST, "GG011", "GG011.layer-in-plain-container", "model.layers[0]"),
    # the name is left unasserted: the subject is an inline layer (`nn.Linear(1, 1)(...)`) that
    # no name holds
    "built_once": (BUILT_ONCE_WHILE_RUNNING, "GG011", "GG011.built-while-running", ...),
    "d_over_g": (D_OPTIMIZER_OVER_G, "GG011", "GG011.optimizer-over-other-params", "D"),
    "stem_idle": (STEM_LEFT_OUT_IDLE_OPTIMIZER, "GG011", "GG011.optimizer-over-other-params-partly",
                  "self.stem"),
    "empty_list": (EMPTY_LAYERS_IN_LIST, "GG011", "GG011.empty-plain-container", "model.layers"),
    "empty_none": (EMPTY_NO_LAYERS, "GG011", "GG011.empty-no-parameters", "model"),
}


@pytest.mark.parametrize("name", sorted(PROGRAM_MESSAGES))
def test_a_program_tells_its_message(tmp_path: Path, name: str) -> None:
    source, code, message_id, subject = PROGRAM_MESSAGES[name]
    g, path = _program(tmp_path, name, source)
    told = _told(g, code)
    assert [(m, line) for m, _, line in told] == [(message_id, _line(path, "use"))], told
    if subject is not ...:
        assert told[0][1] == subject


def test_a_group_added_late_passes_a_layer_over(tmp_path: Path) -> None:
    """Staged unfreezing that keeps BatchNorm frozen (tests/test_late_param_groups.py): the norm
    the late add_param_group passed over is `passed-over`, an info."""
    from test_late_param_groups import _no_bn, _train

    told = _told(_train(_no_bn), "GG011")
    assert [m for m, _, _ in told] == ["GG011.passed-over"]
    assert told[0][1] is not None and told[0][2] is not None


def test_every_declared_message_of_the_family_is_told_here() -> None:
    told = {m for stories in CASE_MESSAGES.values() for m, _, _ in stories}
    told |= {m for _, _, m, _ in PROGRAM_MESSAGES.values()}
    told.add("GG011.passed-over")
    declared = {m.id for r in ALL_RULES if r.code in FAMILY for m in r.messages}
    assert declared == told


# ---- ignore one message, keep the rule's others ---------------------------------------------------
def test_gg010_ignore_one_message() -> None:
    assert [m for m, _, _ in _told(_case("gg010_cleared_before_step", ignore=["GG010.stale-step"]),
                                   "GG010")] == ["GG010.cleared-before-step"]
    assert _told(_case("gg010_cleared_before_step", ignore=["GG010.cleared-before-step"]),
                 "GG010") == []


def test_gg011_ignore_one_message() -> None:
    told = _told(_case("gg011_module_left_out", ignore=["GG011.left-out"]), "GG011")
    assert told == [("GG011.left-out-partly", "self.stem", 58)]


def test_gg013_ignore_one_message() -> None:
    assert _told(_case("gg013_floor_quantizer", ignore=["GG013.term-trains-nothing"]), "GG013") == [
        ("GG013.zero-every-step", "model.enc.weight", 32)]
    assert _told(_case("gg013_rounded_count_term", ignore=["GG013.term-trains-nothing"]), "GG013") == []
