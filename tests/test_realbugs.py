"""The realbugs benchmark (benchmarks/realbugs/): every case misbehaves under plain PyTorch as its
manifest entry states (a clean program runs without an exception), the manifest is well formed,
`verified` is true exactly for the passing cases, and the benchmark holds what its contract promises.

All cases run in one batched call of benchmarks/realbugs/verify.py (its worker subprocesses, not
one subprocess per case). The results are shared by the tests of this module, also across xdist
workers: they are cached in the temp directory under a hash of everything they depend on (the
verifier, the manifest files, the case files, the torch version), computed by the first worker that
needs them while the others wait on a file lock.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
import torch

REALBUGS = Path(__file__).resolve().parent.parent / "benchmarks" / "realbugs"
sys.path.insert(0, str(REALBUGS))

import verify  # noqa: E402

#: the contract's minimum counts (benchmarks/realbugs/README.md, the benchmark issue).
MIN_BUGGY = 120
MIN_CATEGORIES = 14
MIN_CLEAN = 40


def _fingerprint() -> str:
    """A hash of everything the verification results depend on."""
    h = hashlib.sha256(torch.__version__.encode())
    files = [Path(verify.__file__)] + [p for p, _ in verify.load_manifest_files()]
    files += sorted(p for p in verify.CASES.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for p in files:
        h.update(str(p.relative_to(REALBUGS)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:24]


def _run_all() -> list[verify.CaseResult]:
    """Verify every manifest case once per fingerprint (shared by all tests and xdist workers)."""
    cache = Path(tempfile.gettempdir()) / f"graphguard-realbugs-{_fingerprint()}.json"
    with open(cache.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if cache.is_file():
                return [verify.CaseResult(**d) for d in json.loads(cache.read_text())]
            results = verify.verify_cases(verify.load_manifest(), jobs=2, timeout=30.0)
            cache.write_text(json.dumps([asdict(r) for r in results], default=str))
            return results
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="module")
def entries() -> list[dict[str, Any]]:
    return verify.load_manifest()


@pytest.fixture(scope="module")
def results() -> list[verify.CaseResult]:
    return _run_all()


def test_every_case_misbehaves_as_stated(results: list[verify.CaseResult]) -> None:
    failures = [f"{r.file}: {r.reason}" for r in results if not r.ok]
    assert not failures, f"{len(failures)} of {len(results)} cases do not behave as stated:\n" + "\n".join(failures)


def test_manifest_is_well_formed(entries: list[dict[str, Any]]) -> None:
    problems = [str(p) for p in verify.check_manifest(entries)]
    assert not problems, f"{len(problems)} manifest problems:\n" + "\n".join(problems)


def test_verified_is_true_exactly_for_passing_cases(entries: list[dict[str, Any]],
                                                    results: list[verify.CaseResult]) -> None:
    problems = verify.check_manifest(entries)
    wrong = [f"{r.file}: verified is {e.get('verified')!r}, the case "
             f"{'passes' if verify.entry_passes(r, problems) else 'fails'}"
             for e, r in zip(entries, results) if e.get("verified") is not verify.entry_passes(r, problems)]
    assert not wrong, ("run `python benchmarks/realbugs/verify.py --update-manifest`:\n" + "\n".join(wrong))


def test_contract_counts(entries: list[dict[str, Any]]) -> None:
    buggy = [e for e in entries if e.get("clean") is False
             and isinstance(e.get("source_url"), str) and verify.URL.match(e["source_url"])]
    categories = {e.get("category") for e in buggy} & set(verify.CATEGORIES)
    clean = [e for e in entries if e.get("clean") is True]
    got = {"buggy cases from real sources": len(buggy), "categories": len(categories), "clean": len(clean)}
    want = {"buggy cases from real sources": MIN_BUGGY, "categories": MIN_CATEGORIES, "clean": MIN_CLEAN}
    short = {k: f"{got[k]} < {want[k]}" for k in want if got[k] < want[k]}
    assert not short, f"the benchmark holds less than its contract promises: {short}"
