"""The distributed family's messages (GG017, GG018, GG020, GG105, GG902; GG019 needs two ranks:
tests/test_ddp_ranks.py checks its id), each selected by id on a real program: the annotated
cases under tests/cases, whose `# expect:` lines give the subject's name and the line. Ids, names
and lines only, never the prose."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from casekit import CASES, expectations, load_case, run_guarded
from graphguard.rules import message_for_id

# each message, and the case that tells it
CASES_OF = {
    "GG017.unused-parameters": "gg017_ddp_aux_head_never_called.py",
    "GG018.second-backward": "gg018_ddp_two_backwards_one_forward.py",
    "GG020.local-gradients": "gg020_no_sync_around_the_whole_accumulation.py",
    "GG105.reduced-every-micro-step": "gg105_ddp_accumulation_all_reduces_every_micro_step.py",
    "GG902.compiled-region": "gg902_compiled_module.py",
}

needs_dist = pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed unavailable")


def _has_dynamo() -> bool:
    try:
        import torch._dynamo  # noqa: F401
    except Exception:
        return False
    return True


def _marks(mid: str) -> list:
    if mid.startswith("GG902"):
        return [pytest.mark.skipif(not _has_dynamo(), reason="torch.compile unavailable")]
    return [needs_dist]


PARAMS = [pytest.param(mid, case, marks=_marks(mid), id=mid) for mid, case in CASES_OF.items()]


def _told(guard, code: str) -> set[tuple[str | None, str | None, int | None]]:
    return {(f.message_id, f.subject.name, f.location and f.location.line)
            for f in guard.findings if f.code == code}


@pytest.mark.parametrize("mid, case", PARAMS)
def test_a_message_is_told_with_its_id_name_and_line(mid, case):
    path = CASES / case
    code = mid.split(".")[0]
    want = {(mid, e.name, e.line) for e in expectations(path) if e.code == code}
    assert want, f"{case} annotates no {code}"
    guard, _ = run_guarded(load_case(path).buggy)
    assert _told(guard, code) == want
    for f in guard.findings:
        if f.code == code:
            assert f.severity == message_for_id(mid).severity


@pytest.mark.parametrize("mid, case", PARAMS)
def test_selecting_the_message_by_id_keeps_it_and_ignoring_it_silences_it(mid, case):
    path = CASES / case
    code = mid.split(".")[0]
    guard, _ = run_guarded(load_case(path).buggy, select=[mid])
    assert {f.message_id for f in guard.findings} == {mid}
    guard, _ = run_guarded(load_case(path).buggy, ignore=[mid])
    assert _told(guard, code) == set()
