"""Where the offender was made, for two families whose case files only pin the finding's line:
state a method stores on an object (GG004 names the attribute at the method's assignment), and an
in-place module nested in containers (GG005 names its constructor at its own line).

Assertions are on codes, names and line numbers only.
"""
from __future__ import annotations

from casekit import CASES, load_case, run_guarded


def _line(path, text: str) -> int:
    return next(i for i, s in enumerate(path.read_text().splitlines(), 1) if text in s)


def test_chunked_state_named_where_the_method_stores_it():
    path = CASES / "gg004_chunked_state_saved_by_method.py"
    guard, err = run_guarded(load_case(path).buggy)
    assert err is not None  # the second chunk's backward fails under plain PyTorch too
    got = [(f.code, f.subject.name, f.subject.created_at.line, f.location.line) for f in guard.findings]
    assert got == [("GG004", "self.layers", _line(path, "self.layers = layers"),
                    _line(path, "loss.backward()"))]
    held = [(r.name, r.location.line) for r in guard.findings[0].related if r.role == "held-by"]
    assert held == [("state.layers", _line(path, "loss.backward()"))]


def test_nested_inplace_module_named_at_its_constructor():
    path = CASES / "gg005_nested_sequential_inplace_relu.py"
    guard, _ = run_guarded(load_case(path).buggy)
    got = [(f.code, f.subject.name, f.subject.created_at.line) for f in guard.findings]
    made = _line(path, "nn.ReLU(inplace=inplace)")
    assert got == [("GG005", "nn.ReLU", made)]
    fixes = [r.location.line for r in guard.findings[0].related if r.role == "fix-at"]
    assert fixes == [made]
