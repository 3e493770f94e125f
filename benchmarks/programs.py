"""Whole-program cost: the clean programs of the real-bug benchmark, plain vs guarded vs anomaly.

Each clean program of benchmarks/realbugs (manifest `clean: true`) runs start to finish under
three variants: plain, inside a default `GraphGuard(mode="collect")`, and inside
`torch.autograd.detect_anomaly(check_nan=False)`. Every run is a forked child of one process that
has already imported torch and graphguard, so import time is nobody's cost; the child times
`runpy.run_path` of the program in CPU time (`time.process_time`, one torch thread) and reports it.
Rounds interleave the variants in a shuffled order (load on the shared machine hits all alike);
a program's ratio is the median over rounds of its guarded (or anomaly) time over its plain time.
Reported: per program, and the median and worst over programs. No test asserts a time.

    python benchmarks/programs.py                 # every clean program, 3 rounds
    python benchmarks/programs.py --rounds 5 --cases clean/mnist_main.py,clean/vae_main.py
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CASES = HERE / "realbugs" / "cases"
MANIFEST = HERE / "realbugs" / "manifest.json"

__all__ = ["main", "run_programs", "render_programs"]

VARIANTS = ("plain", "graphguard", "anomaly_nonan")


def _child(case: Path, variant: str, out_fd: int) -> None:
    """In the forked child: run the program under `variant`, write its CPU seconds (or an error)
    to `out_fd`; never returns."""
    import contextlib
    import runpy

    import torch

    from graphguard import GraphGuard

    result: dict[str, Any] = {}
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        sys.argv = [str(case)]
        sys.path.insert(0, str(case.parent))
        os.chdir(ROOT)
        torch.set_num_threads(1)
        if variant == "graphguard":
            ctx: Any = GraphGuard(mode="collect")
        elif variant == "anomaly_nonan":
            ctx = torch.autograd.detect_anomaly(check_nan=False)
        else:
            ctx = contextlib.nullcontext()
        t0 = time.process_time()
        try:
            with ctx as g:
                runpy.run_path(str(case), run_name="__main__")
        except SystemExit:
            pass
        result["cpu"] = time.process_time() - t0
        if variant == "graphguard":
            result["findings"] = [f.code for f in g.findings if f.severity in ("error", "warning")]
    except BaseException as err:  # noqa: BLE001 - reported, the program is then left out
        result["error"] = f"{type(err).__name__}: {err}"[:300]
    finally:
        os.write(out_fd, json.dumps(result).encode())
        os._exit(0)


def _run_once(case: Path, variant: str, timeout: float) -> dict[str, Any]:
    import signal

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.setsid()
        _child(case, variant, w)
    os.close(w)
    deadline = time.monotonic() + timeout
    while True:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
            return {"error": "timeout"}
        time.sleep(0.005)
    data = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.close(r)
    try:
        return json.loads(data.decode() or "{}") or {"error": "no result"}
    except ValueError:
        return {"error": "bad result"}


def run_programs(files: list[str], rounds: int, timeout: float, log: Any = None) -> dict[str, Any]:
    """CPU seconds of each program under each variant, `rounds` times, interleaved."""
    import torch  # noqa: F401 - imported once here: every child inherits it

    import graphguard  # noqa: F401

    rng = random.Random(0)
    runs: dict[str, dict[str, list[float]]] = {f: {v: [] for v in VARIANTS} for f in files}
    notes: dict[str, str] = {}
    findings: dict[str, list[str]] = {}
    for rnd in range(rounds):
        for f in files:
            if f in notes:
                continue
            order = list(VARIANTS)
            rng.shuffle(order)
            for v in order:
                res = _run_once(CASES / f, v, timeout)
                if "error" in res:
                    notes[f] = f"{v}: {res['error']}"
                    break
                runs[f][v].append(res["cpu"])
                if v == "graphguard" and res.get("findings"):
                    findings[f] = res["findings"]
        if log:
            log(f"round {rnd + 1}/{rounds} done")
    per: dict[str, dict[str, Any]] = {}
    for f, by in runs.items():
        if f in notes or not by["plain"]:
            continue
        n = min(len(x) for x in by.values())
        ratios = {v: statistics.median(by[v][i] / by["plain"][i] for i in range(n))
                  for v in VARIANTS if v != "plain"}
        per[f] = {"plain_s": statistics.median(by["plain"]), **{f"{v}_ratio": r for v, r in ratios.items()},
                  "findings": findings.get(f, [])}
    summary = {}
    for v in VARIANTS[1:]:
        vals = [p[f"{v}_ratio"] for p in per.values()]
        if vals:
            worst = max(per, key=lambda f: per[f][f"{v}_ratio"])
            summary[v] = {"median": statistics.median(vals), "worst": per[worst][f"{v}_ratio"],
                          "worst_program": worst}
    return {"rounds": rounds, "programs": per, "left_out": notes, "summary": summary}


def render_programs(res: dict[str, Any], per_program: bool = True) -> str:
    """Markdown: the summary line per variant, then (optionally) every program."""
    s = res["summary"]
    n = len(res["programs"])
    lines = [f"| whole programs ({n} clean realbugs programs, {res['rounds']} rounds) | median | worst |",
             "|---|---|---|"]
    labels = {"graphguard": "GraphGuard()", "anomaly_nonan": "detect_anomaly(check_nan=False)"}
    for v, label in labels.items():
        if v in s:
            lines.append(f"| {label} | {s[v]['median']:.2f}x | {s[v]['worst']:.2f}x "
                         f"(`{s[v]['worst_program']}`) |")
    if per_program:
        lines += ["", "| program | plain s | GraphGuard() | detect_anomaly(check_nan=False) | findings |",
                  "|---|---|---|---|---|"]
        for f, p in sorted(res["programs"].items()):
            lines.append(f"| {f} | {p['plain_s']:.2f} | {p['graphguard_ratio']:.2f}x | "
                         f"{p['anomaly_nonan_ratio']:.2f}x | {', '.join(p['findings']) or '-'} |")
        for f, why in sorted(res["left_out"].items()):
            lines.append(f"| {f} | left out: {why} | | | |")
    return "\n".join(lines)


def clean_files() -> list[str]:
    return [e["file"] for e in json.loads(MANIFEST.read_text()) if e.get("clean")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cases", help="comma-separated manifest files (default: every clean program)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per run")
    ap.add_argument("--json", type=Path, default=HERE / "results" / "programs.json")
    ap.add_argument("--summary-only", action="store_true", help="no per-program table")
    args = ap.parse_args(argv)
    os.environ["OMP_NUM_THREADS"] = "1"
    files = args.cases.split(",") if args.cases else clean_files()
    res = run_programs(files, args.rounds, args.timeout,
                       log=lambda s: print(s, file=sys.stderr, flush=True))
    print(render_programs(res, per_program=not args.summary_only))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(res, indent=1))
    print(f"\nJSON: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
