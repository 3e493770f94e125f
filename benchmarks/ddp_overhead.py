"""Per-rank overhead of graphguard under torchrun: DistributedDataParallel on gloo, two ranks.

A variant is one whole `torchrun --nproc_per_node 2` job of this file's worker (an MLP step, batch
64, 3x512 hidden, SGD, as benchmarks/workloads.py's `mlp`, wrapped in DDP), so the variants cannot
share a process as in benchmarks/overhead.py; instead the jobs are interleaved round by round in a
shuffled order: plain, guarded as a user would (`GRAPHGUARD=1`, every rank followed, the
collective-call accounts of GG019 shared through the store) and under `detect_anomaly`. Each
rank times its steady-state steps after warm-up, in CPU time of its main thread (what the guard
adds on that rank) and in wall time (what the job waits, all-reduce included). Reported: the
median over ranks and rounds, and each variant's ratio to plain.

    python benchmarks/ddp_overhead.py            # 3 rounds
    python benchmarks/ddp_overhead.py --rounds 5 --steps 300
"""
from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
VARIANTS = ("plain", "graphguard", "detect_anomaly")


def worker(steps: int, warmup: int, out: str, anomaly: bool) -> None:
    import contextlib

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                        nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    model = DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
    cpu, wall = [], []
    ctx = torch.autograd.detect_anomaly() if anomaly else contextlib.nullcontext()
    with ctx:
        for i in range(warmup + steps):
            c0, w0 = time.thread_time(), time.perf_counter()
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if i >= warmup:
                cpu.append(time.thread_time() - c0)
                wall.append(time.perf_counter() - w0)
    with open(f"{out}.rank{rank}.json", "w") as fh:
        json.dump({"cpu": statistics.median(cpu), "wall": statistics.median(wall)}, fh)
    dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_job(variant: str, steps: int, warmup: int, folder: str) -> list[dict[str, float]]:
    out = os.path.join(folder, f"{variant}-{time.monotonic_ns()}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHGUARD")}
    env.update(OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
    if variant == "graphguard":
        env.update(GRAPHGUARD="1", GRAPHGUARD_REPORT_DIR=os.path.join(folder, "report"))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1", "--nproc_per_node=2",
           "--max_restarts=0", "--master_addr=127.0.0.1", f"--master_port={_free_port()}", str(HERE),
           "--worker", "--steps", str(steps), "--warmup", str(warmup), "--out", out]
    if variant == "detect_anomaly":
        cmd.append("--anomaly")
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"{variant}: torchrun failed:\n{done.stderr[-3000:]}")
    return [json.loads(Path(f"{out}.rank{r}.json").read_text()) for r in (0, 1)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--anomaly", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=200, help="timed steps per job")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--json", type=Path, help="write the figures there")
    args = ap.parse_args()
    if args.worker:
        worker(args.steps, args.warmup, args.out, args.anomaly)
        return 0
    results: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as folder:
        for r in range(args.rounds):
            order = list(VARIANTS)
            rng.shuffle(order)
            for v in order:
                results[v] += run_job(v, args.steps, args.warmup, folder)
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    med = {v: {k: statistics.median(d[k] for d in results[v]) for k in ("cpu", "wall")} for v in VARIANTS}
    print("| variant | CPU ms/step (per rank) | ratio | wall ms/step | ratio |")
    print("|---|---|---|---|---|")
    for v in VARIANTS:
        m = med[v]
        print(f"| {v} | {m['cpu'] * 1e3:.2f} | {m['cpu'] / med['plain']['cpu']:.2f}x | "
              f"{m['wall'] * 1e3:.2f} | {m['wall'] / med['plain']['wall']:.2f}x |")
    if args.json:
        args.json.write_text(json.dumps({"median": med, "runs": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
