"""GG001's fix goes where the stale tensor is made; what the fix is depends on what it reads: a
tensor built from weights the optimizer trains is built again each iteration (detaching it would
stop their gradient), a reference built from constants is detached."""
from pathlib import Path

from casekit import load_case, run_guarded

CASES = Path(__file__).parent / "cases"


def _fix_at(case: str) -> list[tuple[str | None, str | None]]:
    guard, _ = run_guarded(load_case(CASES / case).buggy)
    [f] = [f for f in guard.findings if f.code == "GG001"]
    return [(r.name, r.op) for r in f.related if r.role == "fix-at"]


def test_cached_tensor_of_a_trained_parameter_is_rebuilt():
    assert _fix_at("gg001_lru_cached_weights.py") == [("weights", "rebuild each iteration")]


def test_reference_of_constants_is_detached():
    assert _fix_at("gg001_stale_target.py") == [("reference", "detach")]
