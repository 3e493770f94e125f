"""graphguard.integrations.transformers.GraphGuardCallback on a real Hugging Face Trainer: a tiny
GPT-2 built from a config and a custom nn.Module returning a loss, each trained a few steps, once
with a misuse (reported, named) and once clean (silent). Nothing is downloaded."""
from __future__ import annotations

import json
import os
import warnings

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

transformers = pytest.importorskip("transformers")

from graphguard import GraphGuardWarning, GraphMisuseError  # noqa: E402
from graphguard.integrations.transformers import GraphGuardCallback  # noqa: E402


@pytest.fixture(autouse=True)
def _dot_source_only(monkeypatch):
    """Diagrams as DOT only (fast, no renderer subprocess), for these tests alone: a module-level
    os.environ change would leak into every later test of the same worker."""
    monkeypatch.setenv("GRAPHGUARD_DOT", "none")


def args(tmp_path, steps=3):
    return transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=steps, per_device_train_batch_size=2,
        learning_rate=1e-3, report_to=[], save_strategy="no", logging_strategy="no",
        disable_tqdm=True, use_cpu=True, dataloader_num_workers=0, seed=0)


class TokenData(torch.utils.data.Dataset):
    def __init__(self, n=8, length=8, vocab=32):
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, vocab, (n, length), generator=g)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def tiny_gpt2():
    config = transformers.GPT2Config(vocab_size=32, n_positions=8, n_embd=16, n_layer=1, n_head=2)
    return transformers.GPT2LMHeadModel(config)


class GatedTrainer(transformers.Trainer):
    """A loss scaled by a learnable temperature, through a hard comparison (GG008)."""

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        out = model(**inputs)
        scale = (model.temperature > 0).float()
        loss = out.loss * scale
        return (loss, out) if return_outputs else loss


class Regressor(nn.Module):
    """A custom module returning its loss, as the Trainer expects."""

    def __init__(self, bug=None):
        super().__init__()
        self.net = nn.Linear(4, 1)
        self.bug = bug

    def forward(self, x, labels):
        pred = self.net(x).squeeze(-1)
        if self.bug == "target":
            if not hasattr(self, "ref"):
                self.ref = self.net(x).squeeze(-1)  # a target with history, made once
            return {"loss": nn.functional.mse_loss(pred, self.ref)}
        return {"loss": nn.functional.mse_loss(pred, labels)}


class Points(torch.utils.data.Dataset):
    def __init__(self, n=8):
        g = torch.Generator().manual_seed(0)
        self.x, self.y = torch.randn(n, 4, generator=g), torch.randn(n, generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"x": self.x[i], "labels": self.y[i]}


def named(findings):
    return {(f.code, f.subject.name) for f in findings}


def test_config_model_with_cut_parameter_reported_and_named(tmp_path):
    model = tiny_gpt2()
    model.temperature = nn.Parameter(torch.tensor(1.0))
    cb = GraphGuardCallback()
    trainer = GatedTrainer(model=model, args=args(tmp_path), train_dataset=TokenData(), callbacks=[cb])
    with pytest.warns(GraphGuardWarning, match=r"GG008 param-without-grad .*model\.temperature"):
        trainer.train()
    assert named(cb.findings) == {("GG008", "model.temperature")}
    cut = [r for r in cb.findings[0].related if r.role == "cut-by"][0]
    assert cut.location.file == __file__ and "model.temperature > 0" in cut.location.code
    assert cb.guard is None
    data = json.loads((tmp_path / "out" / "graphguard-report" / "report.json").read_text())
    assert [f["code"] for f in data["findings"]] == ["GG008"]
    assert data["run"]["iterations"] == 3
    assert (tmp_path / "out" / "graphguard-report" / "index.html").is_file()


def test_config_model_clean_is_silent(tmp_path):
    cb = GraphGuardCallback()
    trainer = transformers.Trainer(model=tiny_gpt2(), args=args(tmp_path), train_dataset=TokenData(),
                                   callbacks=[cb])
    with warnings.catch_warnings():
        warnings.simplefilter("error", GraphGuardWarning)
        trainer.train()
    assert cb.findings == []
    data = json.loads((tmp_path / "out" / "graphguard-report" / "report.json").read_text())
    assert data["findings"] == [] and data["run"]["iterations"] == 3


def test_custom_module_misuse_stops_training_with_fail_on(tmp_path):
    model = Regressor(bug="target")
    cb = GraphGuardCallback(fail_on="error")
    trainer = transformers.Trainer(model=model, args=args(tmp_path), train_dataset=Points(), callbacks=[cb])
    with cb, pytest.raises(GraphMisuseError) as info:
        trainer.train()
    assert ("GG002", "self.ref") in named(info.value.findings)
    assert cb.guard is None  # closed by `with cb`
    data = json.loads((tmp_path / "out" / "graphguard-report" / "report.json").read_text())
    assert data["findings"][0]["code"] == "GG002"


def test_custom_module_collect_and_clean(tmp_path):
    cb = GraphGuardCallback(mode="collect")
    trainer = transformers.Trainer(model=Regressor(bug="target"), args=args(tmp_path),
                                   train_dataset=Points(), callbacks=[cb])
    with cb, pytest.raises(RuntimeError, match="backward through the graph a second time"):
        trainer.train()
    assert "GG002" in {f.code for f in cb.findings}
    assert "self.ref" in {f.subject.name for f in cb.findings}
    cb2 = GraphGuardCallback()
    trainer = transformers.Trainer(model=Regressor(), args=args(tmp_path / "clean"),
                                   train_dataset=Points(), callbacks=[cb2])
    with warnings.catch_warnings():
        warnings.simplefilter("error", GraphGuardWarning)
        trainer.train()
    assert cb2.findings == [] and cb2.guard is None
