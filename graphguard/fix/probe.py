"""The verification run: `python -m graphguard.fix.probe GRADS.json run [OPTIONS] script ...`.

It records, after every optimizer step, which parameters hold a non-zero gradient (keyed by
optimizer, group and position, with their shape), then hands the rest of the command line to
`graphguard run` (run as a module, so this layer imports nothing above it). The record is written
when the process ends, whatever way the script stops.

`python -m graphguard.fix.probe --serve` is a fork server for those runs: it imports torch and the
guard once, then forks one child per request line (JSON: argv, cwd, stdout, stderr, timeout) and
answers {"rc": status or null on timeout}. Each child is a fresh copy of a process that has run
nothing, so a run sees what a new interpreter would, without paying the imports again.
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
                        rec["requires_grad"] = bool(p.requires_grad)  # frozen now (the last step's)
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


def _die_with_parent() -> None:
    """Linux: this run is killed when the server dies (a fix killed from outside leaves no run behind)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except Exception:  # not Linux, or no libc: the server's own timeout still applies
        pass


def _child(req: dict[str, Any]) -> None:
    """In a forked child: one probe run as `python -m graphguard.fix.probe ARGV...` would do; never returns."""
    import os

    code = 1
    try:
        os.setsid()
        _die_with_parent()
        out = os.open(req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        err = os.open(req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.chdir(req["cwd"])
        sys.path[0] = os.getcwd()  # as `python -m` sets it
        argv = req["argv"]
        _install(argv[0])
        sys.argv = ["graphguard", *argv[1:]]
        try:
            runpy.run_module("graphguard.cli", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001 - printed as the interpreter would
        import traceback

        traceback.print_exc()
    finally:
        try:
            import atexit as _atexit

            _atexit._run_exitfuncs()  # the probe's record and the program's own handlers
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def serve() -> int:
    import os
    import signal
    import time

    import importlib

    import torch  # noqa: F401 - imported once, inherited by every child

    # by name, as runpy runs the CLI below: this layer imports nothing above the model
    for name in ("graphguard.cli", "graphguard.guard"):
        importlib.import_module(name)

    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    proto.write("{}\n")
    for line in sys.stdin:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(req)
        deadline = time.monotonic() + float(req["timeout"])
        rc: int | None = None
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                rc = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                os.waitpid(pid, 0)
                break
            time.sleep(0.01)
        # the children of a run (DataLoader workers, ...) die with its process group
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proto.write(json.dumps({"rc": rc}) + "\n")
    return 0


def main() -> None:
    if sys.argv[1:] == ["--serve"]:
        sys.exit(serve())
    if len(sys.argv) < 3:
        sys.exit("usage: python -m graphguard.fix.probe GRADS.json run [OPTIONS] script ...")
    _install(sys.argv[1])
    sys.argv = ["graphguard", *sys.argv[2:]]
    runpy.run_module("graphguard.cli", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
