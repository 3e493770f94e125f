"""Where GraphGuard's steady-state cost goes: one guard, parts switched off step by step.

Inside one guard in light mode, each timed step runs as the plain loop (the guard's backward
wrappers and step hooks taken out), with the whole guard on, with it off (dormant: its wrappers
still called), or with one part off (the pre-backward saved-value check, the rules, the marks,
the whole backward check); the variants alternate step by step
in a shuffled order, so that a machine whose load drifts (2 shared cores) hits all of them alike.
The difference of medians is each part's marginal cost per step. A tool for profiling, not a
budget check (overhead.py is).

    python benchmarks/parts.py ellipse,mlp --steps 200
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
import torch.optim.optimizer as optim_module  # noqa: E402

import graphguard.backward_check as backward_module  # noqa: E402
import graphguard.capture.scan as scan_module  # noqa: E402
from graphguard import GraphGuard  # noqa: E402
from workloads import WORKLOADS  # noqa: E402

__all__ = ["measure_parts"]

PARTS = ["plain", "off", "on", "no_saved_check", "no_rules", "no_marks", "no_backward_check"]


class _NoReaders(dict):
    """capture/saved.READERS with no reader for any node type: the scan's in-walk read of the
    fresh nodes' saved values (the `no_saved_check` part) reads nothing."""

    def __missing__(self, t: type) -> None:
        return None


class _NoSavedCheck:
    """capture/saved.SavedCheck that reads nothing (the `no_saved_check` part: its `read` covers
    the old nodes; the fresh ones are read by the scan itself, switched off by `_NoReaders`)."""

    def __init__(self, unpack: Any, adopt: Any) -> None:
        self.stopped, self.freed_at = True, -1

    def read(self, nodes: Any, skip: Any = ()) -> None:
        pass


def _switch(g: GraphGuard, part: str) -> Callable[[], None]:
    """Switch `part` off; return what switches it back on."""
    if g.rec.saved_hooks_on:  # light mode has none (NOTE in guard.py); a re-armed guard would
        raise RuntimeError("the guard is recording: parts are measured in light mode")
    if part == "off":
        g._dormant = True
    unplug = _unplugged(g) if part == "plain" else None
    check, readers = backward_module.SavedCheck, scan_module._READERS
    if part == "no_saved_check":
        backward_module.SavedCheck = _NoSavedCheck
        scan_module._READERS = _NoReaders()
    if part == "no_marks":
        g._mark_nodes = lambda call, mark: None  # type: ignore[method-assign]
    sink = g.rec.sink
    if part == "no_rules":
        g._dispatch = lambda event, raising=True, quiet=False, skim=False: None  # type: ignore[method-assign]
        g.rec.sink = sink._replace(dispatch=g._dispatch)  # the recorder was handed the real one
    if part == "no_backward_check":
        g._backward = lambda api, orig, args, kwargs: orig(*args, **kwargs)  # type: ignore[method-assign]

    def undo() -> None:
        if unplug is not None:
            unplug()
        backward_module.SavedCheck = check
        scan_module._READERS = readers
        g.__dict__.pop("_mark_nodes", None)
        g._dormant = False
        g.__dict__.pop("_dispatch", None)
        g.rec.sink = sink
        g.__dict__.pop("_backward", None)

    return undo


def _unplugged(g: GraphGuard) -> Callable[[], None]:
    """The plain loop inside the guard: its backward wrappers and step hooks taken out (the
    dormant guard, "off", still pays for being called); returns what plugs them back in."""
    wrapped = {name: getattr(torch.autograd, name) for name in ("backward", "grad")}
    for name, fn in wrapped.items():
        setattr(torch.autograd, name, fn.__graphguard_original__)
    hooks = (optim_module._global_optimizer_pre_hooks, optim_module._global_optimizer_post_hooks)
    saved = [dict(h) for h in hooks]
    for h in hooks:
        h.clear()

    def plug() -> None:
        for name, fn in wrapped.items():
            setattr(torch.autograd, name, fn)
        for h, before in zip(hooks, saved):
            h.update(before)

    return plug


def measure_parts(name: str, steps: int, warmup: int = 12) -> dict[str, Any]:
    step = WORKLOADS[name].build()
    for _ in range(3):
        step()
    times: dict[str, list[float]] = {p: [] for p in PARTS}
    rng = random.Random(0)
    clock = time.thread_time
    with GraphGuard() as g:
        for _ in range(warmup):
            step()
        for _ in range(steps):
            order = PARTS[:]
            rng.shuffle(order)
            for part in order:
                undo = _switch(g, part)
                t0 = clock()
                step()
                times[part].append(clock() - t0)
                undo()
        findings = [f.code for f in g.findings]
    med = {p: statistics.median(v) for p, v in times.items()}
    return {"workload": name, "plain_ms": med["plain"] * 1e3, "on_ratio": med["on"] / med["plain"],
            "off_ratio": med["off"] / med["plain"], "guard_us": (med["on"] - med["plain"]) * 1e6,
            "parts_us": {p: (med["on"] - med[p]) * 1e6 for p in PARTS[3:]}, "findings": findings}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workloads", nargs="?", default="ellipse,mlp")
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    for name in args.workloads.split(","):
        r = measure_parts(name, args.steps)
        parts = "  ".join(f"{p} {v:+.0f} us" for p, v in r["parts_us"].items())
        print(f"{name:12s} plain {r['plain_ms']:.3f} ms  guard {r['on_ratio']:.3f}x "
              f"({r['guard_us']:+.0f} us/step; dormant {r['off_ratio']:.3f}x)  of which: {parts}  "
              f"findings {r['findings']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
