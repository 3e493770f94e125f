"""Scale checks: the pre-backward check on 100,000-node graphs, memory over 1,000 iterations, and
the guard's own memory per tracked graph node.

Timing of the check uses no graphguard internals: a shim around the real
`torch.autograd.backward`, installed before the guard wraps it, notes when PyTorch's backward
starts and ends, so the guard's work before and after it is the rest of `loss.backward()`.

    python benchmarks/scale.py [--quick]
"""
from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
import tracemalloc
import warnings
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import torch  # noqa: E402

import graphguard  # noqa: E402
from graphguard import GraphGuard  # noqa: E402
from workloads import WORKLOADS  # noqa: E402

__all__ = ["run_scale", "render_scale", "chain_graph", "wide_graph"]

GG_DIR = str(Path(graphguard.__file__).resolve().parent)


# ---- graphs -------------------------------------------------------------------------------------
def chain_graph(nodes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """One deep chain of about `nodes` autograd nodes (tanh saves its output: the pack hook runs)."""
    w = torch.randn(4, requires_grad=True)
    x = w
    for _ in range(nodes // 2):
        x = torch.tanh(x) * 1.0001
    return w, x.sum()


def wide_graph(nodes: int, width: int = 100) -> tuple[torch.Tensor, torch.Tensor]:
    """`width` chains of equal depth from one leaf, summed: about `nodes` nodes, depth nodes/width."""
    w = torch.randn(4, requires_grad=True)
    outs = []
    for i in range(width):
        x = w * (1.0 + i / width)
        for _ in range(max(1, nodes // width // 2 - 1)):
            x = torch.tanh(x) * 1.0001
        outs.append(x.sum())
    return w, torch.stack(outs).sum()


def count_nodes(root: torch.Tensor) -> int:
    seen, stack = set(), [root.grad_fn]
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        stack.extend(f for f, _ in n.next_functions)
    return len(seen)


# ---- timing the guard's part of one backward ------------------------------------------------------
class _BackwardClock:
    """Wraps the real torch.autograd.backward (before a guard wraps it) and notes its start/end."""

    def __init__(self) -> None:
        self.orig = torch.autograd.backward
        self.start = self.end = 0.0

    def __enter__(self) -> "_BackwardClock":
        orig = self.orig

        def timed(*args: Any, **kwargs: Any) -> Any:
            self.start = time.perf_counter()
            try:
                return orig(*args, **kwargs)
            finally:
                self.end = time.perf_counter()

        torch.autograd.backward = timed
        return self

    def __exit__(self, *exc: Any) -> None:
        torch.autograd.backward = self.orig


def time_check(build: Callable[[int], tuple[torch.Tensor, torch.Tensor]], nodes: int,
               stale: bool = False) -> dict[str, Any]:
    """The guard's time before and after PyTorch's backward on one graph of about `nodes` nodes, in
    light mode (steady state). With `stale`, the graph reaches a part an earlier backward freed,
    so the check finds GG001 and builds the full report (names, snapshot) before PyTorch raises."""
    with _BackwardClock() as clock, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with GraphGuard(mode="collect") as g:
            g.set_recording(False)  # the steady state: what every iteration after the first costs
            w, base = build(nodes)
            n = count_nodes(base)
            for it in range(2 if stale else 1):
                # stale: the second iteration's backward (same line) reaches the graph the first
                # one freed, 100,000 nodes deep: GG001 before PyTorch's own error
                loss = base * 2.0
                t0 = time.perf_counter()
                clock.start = clock.end = 0.0
                try:
                    loss.backward()
                except RuntimeError:
                    pass  # stale: PyTorch's own "backward through the graph a second time"
                t1 = time.perf_counter()
                g.step()
            codes = sorted({f.code for f in g.findings})
            del w, loss, base
    pre = (clock.start or t1) - t0
    post = t1 - clock.end if clock.end else 0.0
    return {"nodes": n, "stale": stale, "pre_backward_s": round(pre, 4),
            "post_backward_s": round(post, 4),
            "torch_backward_s": round(clock.end - clock.start, 4) if clock.end else None,
            "findings": codes}


# ---- memory --------------------------------------------------------------------------------------
def _rss_mib() -> float:
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        import resource

        return pages * resource.getpagesize() / 2**20
    except (OSError, ValueError, ImportError):
        return float("nan")


def _gg_bytes(snap: tracemalloc.Snapshot) -> int:
    """Python memory still allocated by graphguard's own lines."""
    return sum(s.size for s in snap.statistics("filename") if s.traceback[0].filename.startswith(GG_DIR))


def memory_over_iterations(workload: str, iterations: int, config: str) -> dict[str, Any]:
    """RSS and graphguard-allocated Python memory every 10% of `iterations` training steps."""
    step = WORKLOADS[workload].build()
    for _ in range(3):
        step()
    ctx = {"plain": None, "default": GraphGuard(), "full": GraphGuard(record_iterations=None)}[config]
    every = max(1, iterations // 10)
    samples = []
    gc.collect()
    tracemalloc.start(1)
    try:
        if ctx is not None:
            ctx.__enter__()
        try:
            for i in range(1, iterations + 1):
                step()
                if i % every == 0:
                    gc.collect()
                    samples.append({"iteration": i, "rss_mib": round(_rss_mib(), 1),
                                    "guard_kib": round(_gg_bytes(tracemalloc.take_snapshot()) / 1024, 1),
                                    "python_kib": round(tracemalloc.get_traced_memory()[0] / 1024, 1)})
        finally:
            if ctx is not None:
                ctx.__exit__(None, None, None)
    finally:
        tracemalloc.stop()
    first, last = samples[0], samples[-1]
    return {"workload": workload, "config": config, "iterations": iterations, "samples": samples,
            "rss_growth_mib": round(last["rss_mib"] - first["rss_mib"], 1),
            "guard_growth_kib": round(last["guard_kib"] - first["guard_kib"], 1),
            "findings": sorted({f.code for f in ctx.findings}) if ctx is not None else []}


def memory_per_node(nodes: int) -> dict[str, Any]:
    """Python memory the guard adds per graph node: stamps (full recording) and backward marks."""
    out: dict[str, Any] = {"nodes": 0}
    for config in ("plain", "full", "light"):
        gc.collect()
        tracemalloc.start(1)
        try:
            base = tracemalloc.get_traced_memory()[0]
            guard = None if config == "plain" else GraphGuard(mode="collect")
            if guard is not None:
                guard.__enter__()
                if config == "light":
                    guard.set_recording(False)
            try:
                w, loss = wide_graph(nodes)
                built = tracemalloc.get_traced_memory()[0] - base
                loss.backward(retain_graph=True)  # marks every node (kept: the graph is alive)
                marked = tracemalloc.get_traced_memory()[0] - base
                out["nodes"] = count_nodes(loss)
                del w, loss
            finally:
                if guard is not None:
                    guard.__exit__(None, None, None)
        finally:
            tracemalloc.stop()
        out[config] = {"after_forward_bytes": built, "after_backward_bytes": marked}
    n = max(1, out["nodes"])
    for config in ("full", "light"):
        out[config]["per_node_forward_bytes"] = round((out[config]["after_forward_bytes"]
                                                       - out["plain"]["after_forward_bytes"]) / n, 1)
        out[config]["per_node_total_bytes"] = round((out[config]["after_backward_bytes"]
                                                     - out["plain"]["after_backward_bytes"]) / n, 1)
    return out


# ---- the whole set --------------------------------------------------------------------------------
def _warm_up() -> None:
    """One guarded backward and step first: lazy imports (torch's optimizer machinery, Dynamo)
    happen once per process and are not the check's cost."""
    with GraphGuard(mode="collect"):
        w = torch.randn(3, requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.1)
        (w * 2).sum().backward()
        opt.step()


def run_scale(quick: bool = False, log: Callable[[str], None] = print) -> dict[str, Any]:
    torch.set_num_threads(1)
    _warm_up()
    res: dict[str, Any] = {"check": []}
    for build in (wide_graph, chain_graph):
        for stale in (False, True):
            r = time_check(build, 100_000, stale)
            r["graph"] = build.__name__.replace("_graph", "")
            log(f"  check {r['graph']} {r['nodes']} nodes stale={stale}: pre {r['pre_backward_s']} s, "
                f"post {r['post_backward_s']} s, findings {r['findings']}")
            res["check"].append(r)
    its = 300 if quick else 1000
    res["memory"] = []
    for workload in ("ellipse", "mlp"):
        for config in ("plain", "default", "full"):
            m = memory_over_iterations(workload, its, config)
            log(f"  memory {workload} {config}: RSS +{m['rss_growth_mib']} MiB, guard "
                f"+{m['guard_growth_kib']} KiB over iterations {m['samples'][0]['iteration']}-{its}")
            res["memory"].append(m)
    res["per_node"] = memory_per_node(20_000 if quick else 100_000)
    log(f"  per node: {res['per_node']}")
    return res


def render_scale(res: dict[str, Any]) -> str:
    lines = ["| graph | nodes | stale | guard before backward | guard after backward | PyTorch backward | findings |",
             "|---|---|---|---|---|---|---|"]
    for r in res["check"]:
        tb = f"{r['torch_backward_s']:.3f} s" if r["torch_backward_s"] is not None else "-"
        lines.append(f"| {r['graph']} | {r['nodes']:,} | {'yes' if r['stale'] else 'no'} | "
                     f"{r['pre_backward_s']:.3f} s | {r['post_backward_s']:.3f} s | {tb} | "
                     f"{', '.join(r['findings']) or '-'} |")
    lines += ["", "| workload | configuration | iterations | RSS growth (10%→100%) | graphguard heap growth | findings |",
              "|---|---|---|---|---|---|"]
    for m in res["memory"]:
        lines.append(f"| {m['workload']} | {m['config']} | {m['iterations']} | {m['rss_growth_mib']:+.1f} MiB | "
                     f"{m['guard_growth_kib']:+.1f} KiB | {', '.join(m['findings']) or '-'} |")
    p = res["per_node"]
    lines += ["", f"Guard memory per tracked node ({p['nodes']:,}-node graph, Python heap): full recording "
              f"{p['full']['per_node_forward_bytes']:.0f} B after forward, {p['full']['per_node_total_bytes']:.0f} B "
              f"with the backward marks; light mode {p['light']['per_node_forward_bytes']:.0f} B / "
              f"{p['light']['per_node_total_bytes']:.0f} B."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", type=Path, default=HERE / "results" / "scale.json")
    args = ap.parse_args(argv)
    res = run_scale(args.quick, log=lambda s: print(s, file=sys.stderr, flush=True))
    print(render_scale(res))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
