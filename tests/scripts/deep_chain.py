"""Deep autograd chains under GraphGuard, run in a subprocess by tests/test_extremes.py (a stack
overflow is a segfault: it must fail one test, not kill pytest).

    python deep_chain.py clean N      # one training step through an N-op chain: no finding
    python deep_chain.py stale N      # `ref`, an N-op chain, reused after its backward: GG001
                                      # (built in light mode: plain speed, nodes touched by the
                                      # pre-backward walk only)
    python deep_chain.py plain N      # plain torch, touching every node: the premise (crashes
                                      # with an 8 MB stack when N is large, NOTE [touching nodes])
    python deep_chain.py thread N     # the guard in a thread started with a large stack_size

Prints one JSON line: {"findings": [[code, name, line], ...], ...}.
"""
from __future__ import annotations

import json
import sys
import threading

import torch

from graphguard import GraphGuard, GraphMisuseError


def chain(x: torch.Tensor, n: int) -> torch.Tensor:
    for _ in range(n):
        x = x * 1.00001
    return x


def warm_up(w: torch.Tensor, opt: torch.optim.Optimizer) -> None:
    """One small iteration: with record_iterations=1 the guard is in light mode afterwards."""
    opt.zero_grad()
    (w * 2).sum().backward()
    opt.step()


def clean(n: int, light: bool = False) -> dict:
    w = torch.ones(4, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.0)  # lr 0: the gradient is checked, the weight kept
    with GraphGuard(record_iterations=1 if light else None) as guard:
        if light:
            warm_up(w, opt)
        out = chain(w, n)
        loss = out.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        del out, loss  # the deep graph dies here, inside the guard
    with torch.no_grad():  # backward multiplies by the same factors, in the same float32 steps
        expected = chain(torch.ones(4), n)
    return {"findings": [[f.code, f.subject.name, f.location and f.location.line] for f in guard.findings],
            "grad_ok": bool(torch.equal(w.grad, expected)), "recording": guard.rec.recording}


def stale(n: int) -> dict:
    w = torch.ones(4, requires_grad=True)
    opt = torch.optim.SGD([w], lr=1e-3)
    raised = None
    with GraphGuard(mode="collect", record_iterations=1) as guard:
        warm_up(w, opt)
        ref = chain(w, n)  # the bug: a deep graph built once, used in every iteration
        try:
            for step in range(2):
                loss = (w - ref).pow(2).sum()
                opt.zero_grad()
                loss.backward()  # the stale backward
                opt.step()
        except RuntimeError as err:  # collect mode: PyTorch's own error follows the finding
            raised = type(err).__name__
        del ref
    return {"findings": [[f.code, f.subject.name, f.location and f.location.line] for f in guard.findings],
            "raised": raised, "recording": guard.rec.recording}


def plain(n: int) -> dict:
    x = torch.ones(4, requires_grad=True)
    for _ in range(n):
        x = x * 1.00001
        x.grad_fn  # touch the node, as the guard does when it stamps it
    del x
    return {"findings": []}


def in_thread(n: int) -> dict:
    out: dict = {}
    threading.stack_size(512 * 1024 * 1024)  # the documented workaround for guarded threads
    t = threading.Thread(target=lambda: out.update(clean(n, light=True)))
    t.start()
    t.join()
    return out


if __name__ == "__main__":
    what, n = sys.argv[1], int(sys.argv[2])
    result = {"clean": clean, "stale": stale, "plain": plain, "thread": in_thread}[what](n)
    print(json.dumps(result), flush=True)
