"""The process-start hook: guard a Python process from its first line, when the environment asks.

`graphguard-startup.pth`, installed beside the package in site-packages, runs one line at every
interpreter start. With neither variable below set it costs one dictionary lookup. With one set,
it calls `activate()`, which imports nothing heavy: it waits for the program to import torch (a
process that never does has nothing to guard and pays nothing more), then starts a guard there
(`processes.guard_this_process`), which writes its report when the process ends.

- `GRAPHGUARD_FOLLOW` (JSON, set by `graphguard run` or by the first process below): this process
  is one of a guarded run's children (torchrun's and `accelerate launch`'s workers, `subprocess`
  children, srun tasks); its partial report goes to the run's directory, where the run merges it.
- `GRAPHGUARD=1`, for launchers the user cannot wrap (`GRAPHGUARD=1 torchrun train.py`): the first
  process that sees it becomes the run (its children get `GRAPHGUARD_FOLLOW`); it merges their
  reports with its own into `graphguard-report/graphguard.json` and prints the findings at exit.
  `GRAPHGUARD_MODE`, `GRAPHGUARD_SELECT`, `GRAPHGUARD_IGNORE` and `GRAPHGUARD_REPORT_DIR` set the
  run's options.
"""
from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["activate", "ENV_ON", "ENV_FOLLOW"]

ENV_ON = "GRAPHGUARD"
ENV_FOLLOW = "GRAPHGUARD_FOLLOW"
_ACTIVATED = False  # the .pth line may run twice (a venv's lib and lib64 are one directory)


def activate() -> None:
    """Arrange for this process to be guarded once it imports torch. Never raises."""
    global _ACTIVATED
    if _ACTIVATED:
        return
    _ACTIVATED = True
    try:
        if not _wanted():
            return
        if "torch" in sys.modules:  # imported by another startup hook already
            _start()
        else:
            sys.meta_path.insert(0, _AfterTorch())
    except Exception:  # a startup hook must never stop the user's interpreter
        pass


def _wanted() -> bool:
    argv = list(getattr(sys, "orig_argv", None) or sys.argv)
    command = " ".join(argv[1:4])
    # multiprocessing's spawn/forkserver children and helpers: processes.py's stowaway guards the
    # ones that train (it knows their target); the resource tracker and servers train nothing
    if "multiprocessing" in command or "--multiprocessing-fork" in argv:
        return False
    # graphguard's own command guards its program in-process, and pytest's plugin has its own guard
    first = os.path.basename(argv[1]) if len(argv) > 1 else ""
    if first in ("graphguard", "pytest", "py.test") or command.startswith(("-m graphguard", "-m pytest")):
        return False
    return True


class _AfterTorch:
    """A one-shot meta path finder: lets the normal finders load torch, then starts the guard
    right after `torch/__init__.py` has run (the user's `import torch` returns a guarded torch)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "torch":
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        spec = None
        for finder in list(sys.meta_path):  # the finders that would have found it without us
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original = loader.exec_module

        def exec_module(module: Any) -> None:
            original(module)
            _start()

        loader.exec_module = exec_module  # this spec's own loader instance
        return spec

    def find_module(self, name: str, path: Any = None) -> None:  # pre-3.4 protocol: not ours
        return None


def _start() -> None:
    try:
        from .processes import guard_this_process

        guard_this_process()
    except Exception as err:  # unguarded, but said once
        try:
            sys.stderr.write(f"graphguard: this process is not guarded ({type(err).__name__}: {err})\n")
        except Exception:
            pass
