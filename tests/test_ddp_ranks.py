"""Issue 30 end to end: torchrun's workers followed (`graphguard run -m torch.distributed.run`
and `GRAPHGUARD=1 torchrun`), DDP's unused parameter named before DDP's own error (GG017), and
ranks that stop making the same collective calls reported instead of hanging (GG019). Two gloo
ranks on CPU; plain PyTorch's behaviour is asserted too (its error, or its hang)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

SCRIPTS = Path(__file__).parent / "scripts"
AUX = SCRIPTS / "ddp_aux_head.py"
RANKS = SCRIPTS / "ddp_ranks.py"

pytestmark = [
    pytest.mark.slow,  # every test launches two ranks: 10-40 s each on a small machine
    pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed unavailable"),
    pytest.mark.skipif(sys.platform != "linux", reason="gloo over loopback, process groups"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(*args: str, cwd: Path, env: dict[str, str] | None = None, wrap: list[str] | None = None,
           limit: float = 240) -> tuple[int | None, str, float]:
    """`[wrap] python -m torch.distributed.run --nproc_per_node=2 ARGS`: (status, output,
    seconds); status None when it was still running after `limit` seconds (then killed)."""
    launcher = ["-m", "torch.distributed.run", "--nnodes=1", "--nproc_per_node=2", "--max_restarts=0",
                "--master_addr=127.0.0.1", f"--master_port={_free_port()}", *args]
    cmd = [sys.executable, *(wrap or []), *launcher]
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHGUARD")}
    full_env.update(OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", PYTHONUNBUFFERED="1", **(env or {}))
    start = time.monotonic()
    p = subprocess.Popen(cmd, cwd=cwd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=limit)
        rc: int | None = p.returncode
    except subprocess.TimeoutExpired:
        # torchrun starts each worker in a session of its own: kill them by parentage
        for pid in [*_descendants(p.pid), p.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        out, _ = p.communicate()
        rc = None
    return rc, out, time.monotonic() - start


def _descendants(root: int) -> list[int]:
    """Every process below `root`, read from /proc (children before their parents)."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    parent[int(entry)] = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    out: list[int] = []
    todo = [root]
    while todo:
        kids = [pid for pid, pp in parent.items() if pp == todo[-1]]
        todo.pop()
        out = kids + out
        todo += kids
    return out


def line_of(script: Path, marker: str) -> int:
    hits = [i for i, text in enumerate(script.read_text().splitlines(), 1) if marker in text]
    assert len(hits) == 1, hits
    return hits[0]


def by_rank(report: dict, code: str) -> dict[int, dict]:
    found = {f["rank"]: f for f in report["findings"] if f["code"] == code}
    return {int(k): v for k, v in found.items() if k is not None}


def test_unused_aux_head_fails_under_plain_torchrun_with_indices_only(tmp_path):
    rc, out, _ = launch(str(AUX), "unused", cwd=tmp_path)
    assert rc not in (0, None)
    assert "Expected to have finished reduction in the prior iteration" in out
    assert "Parameter indices which did not receive grad" in out
    assert "aux_head.weight" not in out  # DDP names parameter indices, never the layer


@pytest.mark.parametrize("how", ["graphguard-run", "env"])
def test_unused_aux_head_is_named_on_every_rank_before_ddp_raises(tmp_path, how):
    if how == "graphguard-run":
        rc, out, _ = launch(str(AUX), "unused", cwd=tmp_path, wrap=["-m", "graphguard", "run", "--json", "r.json"])
        report = json.loads((tmp_path / "r.json").read_text())
    else:
        rc, out, _ = launch(str(AUX), "unused", cwd=tmp_path, env={"GRAPHGUARD": "1"})
        report = json.loads((tmp_path / "graphguard-report" / "graphguard.json").read_text())
    assert rc not in (0, None), out[-3000:]
    assert "Parameter indices which did not receive grad" not in out  # the guard stopped each rank first
    found = by_rank(report, "GG017")
    assert set(found) == {0, 1}, out[-3000:]
    for f in found.values():
        assert f["severity"] == "error" and f["before_crash"] is True
        assert f["subject"]["name"] == "model.module.aux_head"
        assert f["subject"]["created_at"]["line"] == line_of(AUX, "self.aux_head = nn.Linear")
        roles = {r["role"]: r["location"]["line"] for r in f["related"] if r.get("location")}
        assert roles["forward-at"] == line_of(AUX, "out = model(torch.randn(4, 8, generator=gen), use_aux=args")
    assert {p["rank"] for p in report["processes"] if p["rank"] is not None} >= {0, 1}


@pytest.mark.parametrize("variant", ["find_unused", "no_sync"])
def test_clean_twins_are_silent_and_train_bit_identically(tmp_path, variant):
    plain, guarded = tmp_path / "plain", tmp_path / "guarded"
    plain.mkdir()
    guarded.mkdir()
    rc, out, _ = launch(str(AUX), variant, "--out", str(plain), cwd=tmp_path)
    assert rc == 0, out[-3000:]
    rc, out, _ = launch(str(AUX), variant, "--out", str(guarded), cwd=tmp_path, env={"GRAPHGUARD": "1"})
    assert rc == 0, out[-3000:]
    report = json.loads((tmp_path / "graphguard-report" / "graphguard.json").read_text())
    assert [f["code"] for f in report["findings"]] == []
    ranks = {p["rank"] for p in report["processes"]}
    assert {"0", "1"} <= {str(r) for r in ranks}, report["processes"]  # both workers were guarded
    a, b = torch.load(plain / "params.pt"), torch.load(guarded / "params.pt")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_a_rank_that_skips_a_backward_hangs_plain_torchrun(tmp_path):
    # a hang: killed at the limit (45 s: the ranks start slowly on a loaded machine)
    rc, out, secs = launch(str(RANKS), "skip", cwd=tmp_path, limit=45)
    assert rc is None, f"expected a hang, got status {rc}:\n{out[-2000:]}"
    assert "rank 1 done" in out and "rank 0 done" not in out


def test_a_rank_that_skips_a_backward_is_reported_on_both_ranks_within_the_timeout(tmp_path):
    rc, out, secs = launch(str(RANKS), "skip", cwd=tmp_path, limit=120,
                           env={"GRAPHGUARD": "1", "GRAPHGUARD_HANG_TIMEOUT": "5"})
    assert rc not in (0, None), out[-3000:]
    report = json.loads((tmp_path / "graphguard-report" / "graphguard.json").read_text())
    found = by_rank(report, "GG019")
    assert set(found) == {0, 1}, out[-3000:]
    assert {f["message_id"] for f in found.values()} == {"GG019.deadlock"}
    backward, barrier = line_of(RANKS, "loss.backward()"), line_of(RANKS, "dist.barrier()")
    assert found[0]["location"]["line"] == backward  # rank 0 waits in its 4th backward
    assert found[1]["location"]["line"] == barrier  # rank 1, one backward short, at the barrier
    for me, other, its_line in ((0, 1, barrier), (1, 0, backward)):
        waits = [r for r in found[me]["related"] if r["role"] == "waits-at"]
        assert [(r["name"], r["location"]["line"]) for r in waits] == [(f"rank {other}", its_line)]
        steps = {r["name"]: r["location"]["line"] for r in found[me]["related"] if r["role"] == "last-step"}
        assert steps == {"rank 0": line_of(RANKS, "opt.step()"), "rank 1": line_of(RANKS, "opt.step()")}
    statuses = {str(p["rank"]): p["status"] for p in report["processes"] if p["rank"] is not None}
    assert statuses.get("0") == "hung" and statuses.get("1") == "hung", report["processes"]
    assert secs < 60, secs


@pytest.mark.parametrize("variant", ["together", "slow"])
def test_ranks_that_agree_or_only_take_long_are_never_reported(tmp_path, variant):
    # slow: rank 0 sleeps 8 s before the barrier rank 1 waits at, with a 3 s timeout: rank 0 is
    # still computing, which is no deadlock
    rc, out, _ = launch(str(RANKS), variant, cwd=tmp_path, limit=120,
                        env={"GRAPHGUARD": "1", "GRAPHGUARD_HANG_TIMEOUT": "3"})
    assert rc == 0, out[-3000:]
    assert "rank 0 done" in out and "rank 1 done" in out
    report = json.loads((tmp_path / "graphguard-report" / "graphguard.json").read_text())
    assert [f["code"] for f in report["findings"]] == []


LIGHTNING = SCRIPTS / "lightning_ddp.py"


@pytest.mark.parametrize("variant", ["unused", "clean"])
def test_lightning_ddp_strategy_gives_one_report_for_both_ranks(tmp_path, variant):
    pytest.importorskip("lightning")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHGUARD")}
    env.update(OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(_free_port()))
    done = subprocess.run([sys.executable, str(LIGHTNING), variant, str(tmp_path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    report = json.loads((tmp_path / "graphguard-report" / "report.json").read_text())
    if variant == "clean":
        assert done.returncode == 0, done.stderr[-3000:]
        assert report["findings"] == []
        return
    assert done.returncode != 0
    found = by_rank(report, "GG017")
    assert set(found) == {0, 1}, done.stderr[-3000:]
    for f in found.values():  # Lightning holds the DDP module: named as the LightningModule writes it
        assert f["subject"]["name"] == "self.aux_head"
        assert f["subject"]["created_at"]["line"] == line_of(LIGHTNING, "self.aux_head = nn.Linear")


HF = SCRIPTS / "hf_ddp.py"


@pytest.mark.parametrize("variant", ["unused", "default"])
def test_hf_trainer_under_torchrun_gives_one_report_for_both_ranks(tmp_path, variant):
    pytest.importorskip("transformers")
    out = tmp_path / "out"
    rc, text, _ = launch(str(HF), variant, str(out), cwd=tmp_path, limit=300)
    report = json.loads((out / "graphguard-report" / "report.json").read_text())
    assert {p["rank"] for p in report["processes"]} == {0, 1}, report.get("processes")
    if variant == "default":  # the Trainer builds DDP with find_unused_parameters=True: correct
        assert rc == 0, text[-3000:]
        # nothing alarms; the head that never trains is told, as information, on each rank, by
        # name and line (the Trainer holds the model: found through it)
        assert all(f["severity"] == "info" for f in report["findings"]), report["findings"]
        told = by_rank(report, "GG008")
        assert set(told) == {0, 1}
        for f in told.values():
            assert f["subject"]["name"].endswith("aux_head")
            assert f["subject"]["created_at"]["line"] == line_of(HF, "self.aux_head = nn.Linear")
        return
    assert rc not in (0, None)
    assert "Parameter indices which did not receive grad" not in text  # stopped before DDP's error
    found = by_rank(report, "GG017")
    assert set(found) == {0, 1}, text[-3000:]
    for f in found.values():
        assert f["subject"]["name"].endswith("aux_head")
        assert f["subject"]["created_at"]["line"] == line_of(HF, "self.aux_head = nn.Linear")
