"""Declared messages of GG002, GG005, GG006, GG007, GG016 and GG104 (issue 31): each message is
selected by a small real program, asserted by message id, subject name and line (never prose);
for a rule with several messages, ignoring one message id leaves the others."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from graphguard import GraphGuard
from graphguard.rules import message_for_id

# message id -> (program, subject name, line of the finding)
PROGRAMS: dict[str, tuple[str, str, int]] = {
    "GG006.leaf": ("""\
        import torch
        w = torch.randn(3, requires_grad=True)
        try:
            w += 1
        except RuntimeError:
            pass
        """, "w", 4),
    "GG006.view-of-leaf": ("""\
        import torch
        emb = torch.nn.Embedding(4, 2)
        try:
            emb.weight[0].zero_()
        except RuntimeError:
            pass
        """, "emb.weight", 4),
    "GG007.given-to-optimizer": ("""\
        import torch
        W = torch.randn(4, 2, requires_grad=True) * 0.01
        try:
            opt = torch.optim.SGD([W], lr=0.1)
        except ValueError:
            pass
        """, "W", 4),
    "GG007.grad-read": ("""\
        import torch
        w = torch.randn(3, requires_grad=True).double()
        (w * 2).sum().backward()
        g = w.grad
        """, "w", 4),
    "GG016.history-dropped": ("""\
        import torch
        net = torch.nn.Linear(2, 2)
        hyper = torch.nn.Linear(2, 4)
        w = hyper(torch.ones(2)).view(2, 2)
        net.weight.data = w
        """, "net.weight", 5),
    "GG016.replaces-update": ("""\
        import torch
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(2):
            opt.zero_grad()
            model(torch.ones(1, 2)).sum().backward()
            opt.step()
            model.weight.data = model.weight.data / model.weight.data.norm()
        """, "model.weight", 8),
    "GG104.copy-drops-history": ("""\
        import torch
        a = torch.randn(2, requires_grad=True)
        c = torch.tensor([a[0], a[1]])
        """, "c", 3),
}


def _told(findings: list, code: str) -> list:
    """The findings told by the rule `code` itself (not GG903's account of PyTorch's error, which
    files itself under the family's code after the crash when the rule's message is muted)."""
    return [f for f in findings if (f.message_id or "").startswith(code + ".")]


def _run(tmp_path: Path, mid: str, **guard) -> list:
    """Run the program of message `mid` from a real file (its lines are read for the wording)."""
    path = tmp_path / (mid.replace(".", "_").replace("-", "_") + ".py")
    path.write_text(textwrap.dedent(PROGRAMS[mid][0]))
    with GraphGuard(mode="collect", **guard) as g:
        exec(compile(path.read_text(), str(path), "exec"), {"__name__": "prog"})
    return g.findings


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("mid", sorted(PROGRAMS))
def test_each_message_is_told(tmp_path: Path, mid: str) -> None:
    _, name, line = PROGRAMS[mid]
    code = mid.split(".")[0]
    found = _told(_run(tmp_path, mid), code)
    assert [(f.message_id, f.subject.name, f.location.line) for f in found] == [(mid, name, line)]
    assert found[0].severity == message_for_id(mid).severity


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("code", sorted({m.split(".")[0] for m in PROGRAMS
                                         if sum(k.startswith(m.split(".")[0] + ".") for k in PROGRAMS) > 1}))
def test_ignoring_one_message_keeps_the_others(tmp_path: Path, code: str) -> None:
    mids = sorted(m for m in PROGRAMS if m.startswith(code + "."))
    muted, kept = mids[0], mids[1:]
    assert not _told(_run(tmp_path, muted, ignore=[muted]), code)
    for mid in kept:
        got = {f.message_id for f in _told(_run(tmp_path, mid, ignore=[muted]), code)}
        assert got == {mid}
