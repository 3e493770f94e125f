"""The verification run: `python -m graphguard.fix.probe GRADS.json run [OPTIONS] script ...`.

It records, after every optimizer step, which parameters hold a non-zero gradient (keyed by
optimizer, group and position, with their shape), then hands the rest of the command line to
`graphguard run` (run as a module, so this layer imports nothing above it). The record is written
when the process ends, whatever way the script stops.
"""
from __future__ import annotations

import atexit
import json
import runpy
import sys
from typing import Any


def _install(path: str) -> None:
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook

    optimizers: list[Any] = []  # in the order first stepped (kept alive: ids stay unique)
    params: dict[str, dict[str, Any]] = {}
    steps = [0]

    def post(opt: Any, args: Any, kwargs: Any) -> None:
        try:
            if not any(o is opt for o in optimizers):
                optimizers.append(opt)
            i = next(n for n, o in enumerate(optimizers) if o is opt)
            steps[0] += 1
            with torch.no_grad():
                for g, group in enumerate(opt.param_groups):
                    for k, p in enumerate(group["params"]):
                        key = f"opt{i}.group{g}.param{k}"
                        rec = params.setdefault(key, {"shape": list(p.shape), "nonzero": False,
                                                      "steps_with_grad": 0})
                        if p.grad is not None:
                            rec["steps_with_grad"] += 1
                            if bool((p.grad != 0).any()):
                                rec["nonzero"] = True
        except Exception:  # the probe must never change the program's behaviour
            pass

    register_optimizer_step_post_hook(post)

    def dump() -> None:
        try:
            with open(path, "w", encoding="utf-8") as fh:
                json.dump({"steps": steps[0], "params": params}, fh)
        except OSError:
            pass

    atexit.register(dump)


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit("usage: python -m graphguard.fix.probe GRADS.json run [OPTIONS] script ...")
    _install(sys.argv[1])
    sys.argv = ["graphguard", *sys.argv[2:]]
    runpy.run_module("graphguard.cli", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
