"""Where the fix goes, for findings whose subject is not where the fix is written: a soft target
detached where it enters a hand-written product (GG002), a parameter read as `.data` in its
module's forward (GG008), an optimizer built over the wrong network (GG008, GG011), a model whose
gradients a hand-written optimizer never clears (GG010).

Assertions are on codes, names, roles and line numbers only.
"""
from __future__ import annotations

from pathlib import Path

from casekit import CASES, load_case, run_guarded


def _line(path: Path, text: str, nth: int = 0) -> int:
    lines = [i for i, s in enumerate(path.read_text().splitlines(), 1) if text in s]
    return lines[nth]


def _findings(name: str):
    path = CASES / name
    guard, err = run_guarded(load_case(path).buggy)
    assert err is None
    return path, guard.findings


def _fix_at(f) -> list[tuple[str | None, int]]:
    return [(r.op, r.location.line) for r in f.related if r.role == "fix-at" and r.location]


def test_hand_written_soft_target_is_detached_in_the_product():
    path, found = _findings("gg002_hand_written_soft_target.py")
    kd = next(f for f in found if f.subject.name == "t_logits")
    product = _line(path, "kd = -(F.softmax(t_logits, 1)")
    assert kd.code == "GG002" and kd.location.line == product
    assert kd.subject.created_at.line == _line(path, "t_logits = teacher(x)")
    assert ("detach", product) in _fix_at(kd)


def test_parameter_read_as_data_is_fixed_where_the_forward_reads_it():
    path, found = _findings("gg008_parameter_read_as_data.py")
    (f,) = found
    assert (f.code, f.subject.name) == ("GG008", "net.encoder.pos_embedding")
    assert f.subject.created_at.line == _line(path, "self.pos_embedding = nn.Parameter(")
    assert _fix_at(f)[0][1] == _line(path, "pos = self.pos_embedding.data")


def test_wrong_second_optimizer_is_fixed_where_it_is_built():
    path, found = _findings("gg008_second_optimizer_over_generator.py")
    built = [_line(path, "optD = torch.optim.Adam(netG.parameters()", k) for k in (0, 1)]
    gg008 = next(f for f in found if f.code == "GG008")
    assert gg008.subject.name == "netG"
    assert _fix_at(gg008)[0] == ("optimizer", built[0])  # first: the optimizer, not the detach
    gg011 = next(f for f in found if f.code == "GG011")
    assert gg011.subject.name == "netD"
    assert ("optimizer", built[1]) in _fix_at(gg011)  # optD, which steps with nothing, not optG


def test_model_updated_by_hand_is_named_and_zeroed_before_the_backward():
    path, found = _findings("gg010_model_updated_by_hand.py")
    (f,) = found
    assert (f.code, f.subject.name, f.subject.kind) == ("GG010", "net", "module")
    assert f.subject.created_at.line == _line(path, "net = nn.Sequential(", 0)
    assert _fix_at(f)[0][1] == _line(path, "F.cross_entropy(net(x), y).backward()", 0)
