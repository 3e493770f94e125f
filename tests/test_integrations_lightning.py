"""graphguard.integrations.lightning.GraphGuardCallback on a real (tiny) Lightning Trainer:
automatic and manual optimization, a misuse reported and named, a clean run silent, fail_on
stopping fit before PyTorch's own error, the report in default_root_dir, both package names."""
from __future__ import annotations

import json
import os
import warnings

import pytest
import torch
from torch import nn

L = pytest.importorskip("lightning.pytorch")

from graphguard import GraphGuardWarning, GraphMisuseError  # noqa: E402
from graphguard.integrations.lightning import GraphGuardCallback  # noqa: E402


@pytest.fixture(autouse=True)
def _dot_source_only(monkeypatch):
    """Diagrams as DOT only (fast, no renderer subprocess), for these tests alone: a module-level
    os.environ change would leak into every later test of the same worker."""
    monkeypatch.setenv("GRAPHGUARD_DOT", "none")


def make_module(base, bug=None, manual=False):
    class Tiny(base):
        def __init__(self):
            super().__init__()
            self.net = nn.Linear(4, 1)
            self.gate_logit = nn.Parameter(torch.tensor(1.0))
            self.automatic_optimization = not manual

        def forward(self, x):
            out = self.net(x)
            if bug == "gate":  # a hard comparison: gate_logit never gets a gradient (GG008)
                out = out * (self.gate_logit > 0).float()
            else:
                out = out * torch.sigmoid(self.gate_logit)
            return out

        def training_step(self, batch, batch_idx):
            x, y = batch
            out = self(x)
            if bug == "target":  # a reference with history, built once (GG002, then GG001)
                if not hasattr(self, "ref"):
                    self.ref = self.net(x)
                loss = nn.functional.mse_loss(out, self.ref)
            else:
                loss = nn.functional.mse_loss(out, y)
            if manual:
                opt = self.optimizers()
                opt.zero_grad()
                self.manual_backward(loss)
                opt.step()
                return None
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.05)

    return Tiny()


def loader():
    g = torch.Generator().manual_seed(0)
    ds = torch.utils.data.TensorDataset(torch.randn(24, 4, generator=g), torch.randn(24, 1, generator=g))
    return torch.utils.data.DataLoader(ds, batch_size=4)


def trainer(pl, tmp_path, cb, steps=3):
    return pl.Trainer(max_steps=steps, callbacks=[cb], default_root_dir=str(tmp_path),
                      enable_progress_bar=False, logger=False, enable_checkpointing=False,
                      enable_model_summary=False, accelerator="cpu", devices=1,
                      num_sanity_val_steps=0)


def named(findings):
    return {(f.code, f.subject.name) for f in findings}


def test_cut_parameter_reported_and_named_automatic_optimization(tmp_path):
    cb = GraphGuardCallback(mode="collect")
    model = make_module(L.LightningModule, bug="gate")
    trainer(L, tmp_path, cb).fit(model, loader())
    assert ("GG008", "model.gate_logit") in named(cb.findings)
    assert cb.guard is None  # left at on_train_end
    # the cut line is the user's, in training's forward (not a Lightning frame)
    cut = [r for r in cb.findings[0].related if r.role == "cut-by"][0]
    assert cut.location.file == __file__ and "gate_logit > 0" in cut.location.code
    report = tmp_path / "graphguard-report"
    assert (report / "index.html").is_file()
    data = json.loads((report / "report.json").read_text())
    assert data["run"]["iterations"] == 3  # one per optimizer step
    assert [f["code"] for f in data["findings"]] == ["GG008"]


def test_manual_optimization(tmp_path):
    cb = GraphGuardCallback(mode="collect")
    model = make_module(L.LightningModule, bug="gate", manual=True)
    trainer(L, tmp_path, cb).fit(model, loader())
    # the user's opt.step() in training_step is on the stack: named from there
    assert ("GG008", "self.gate_logit") in named(cb.findings)
    assert cb.findings[0].location.function == "training_step"
    data = json.loads((tmp_path / "graphguard-report" / "report.json").read_text())
    assert data["run"]["iterations"] == 3


def test_warn_mode_reports_through_rank_zero_warnings(tmp_path):
    cb = GraphGuardCallback()  # mode="warn"
    model = make_module(L.LightningModule, bug="gate")
    with pytest.warns(GraphGuardWarning, match=r"GG008 param-without-grad .*model\.gate_logit"):
        trainer(L, tmp_path, cb).fit(model, loader())
    assert [f.code for f in cb.findings] == ["GG008"]


def test_fail_on_stops_fit_with_the_finding_before_the_crash(tmp_path):
    cb = GraphGuardCallback(fail_on="error")
    model = make_module(L.LightningModule, bug="target")
    with pytest.raises(GraphMisuseError) as info:
        trainer(L, tmp_path, cb).fit(model, loader())
    assert ("GG002", "self.ref") in named(info.value.findings)
    assert ("GG002", "self.ref") in named(cb.findings)
    assert cb.guard is None  # left at on_exception
    data = json.loads((tmp_path / "graphguard-report" / "report.json").read_text())
    assert data["findings"][0]["code"] == "GG002"


def test_collect_mode_explains_pytorchs_crash(tmp_path):
    cb = GraphGuardCallback(mode="collect")
    model = make_module(L.LightningModule, bug="target")
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        trainer(L, tmp_path, cb).fit(model, loader())
    assert {("GG002", "self.ref"), ("GG001", "model.ref")} <= named(cb.findings)


def test_clean_training_is_silent(tmp_path):
    cb = GraphGuardCallback()
    model = make_module(L.LightningModule)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GraphGuardWarning)
        trainer(L, tmp_path, cb, steps=4).fit(model, loader())
    assert cb.findings == []
    data = json.loads((tmp_path / "graphguard-report" / "report.json").read_text())
    assert data["findings"] == [] and data["run"]["iterations"] == 4


def test_pytorch_lightning_package_name(tmp_path):
    pl = pytest.importorskip("pytorch_lightning")
    cb = GraphGuardCallback(mode="collect")
    assert isinstance(cb, pl.Callback) and isinstance(cb, GraphGuardCallback)
    model = make_module(pl.LightningModule, bug="gate")
    trainer(pl, tmp_path, cb).fit(model, loader())
    assert ("GG008", "model.gate_logit") in named(cb.findings)


def test_bad_options_fail_at_construction():
    from graphguard import GraphGuardUsageError

    with pytest.raises(GraphGuardUsageError):
        GraphGuardCallback(mode="loud")
    with pytest.raises(GraphGuardUsageError):
        GraphGuardCallback(fail_on="fatal")
