"""Keeping torch.compile (Dynamo) out of graphguard's own frames."""
from __future__ import annotations

import functools
import sys
from typing import Any, Callable, TypeVar

import torch

__all__ = ["hidden_from_dynamo", "keep_dynamo_out", "skips_added"]

F = TypeVar("F", bound=Callable[..., Any])

_SKIPS_ADDED = False

# Dynamo's frame callback getter (the callback is None outside compiled code); a torch without
# it leaves this None, and every call is then hidden
_GET_CALLBACK = getattr(getattr(getattr(torch._C, "_dynamo", None), "eval_frame", None),
                        "get_eval_frame_callback", None)


def skips_added() -> bool:
    """Whether `keep_dynamo_out` has told Dynamo to skip graphguard's modules."""
    return _SKIPS_ADDED


def hidden_from_dynamo(fn: F) -> F:
    """Make torch.compile run `fn` eagerly instead of tracing it. A compiled training step calls
    backward and optimizer.step, so Dynamo would trace graphguard's bookkeeping: it breaks the
    graph at sys._getframe and can replay side effects, counting a backward or a step twice.
    Dynamo is never imported for this (seconds): while it is not loaded, nothing is compiled."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if "torch._dynamo" not in sys.modules:
            return fn(*args, **kwargs)
        if _SKIPS_ADDED and _GET_CALLBACK is not None and _GET_CALLBACK() is None:
            # Dynamo is loaded but no compiled region is running (its frame callback is unset):
            # nothing can be traced, so no need to pay for disable()'s context at every call.
            # (Only once graphguard's modules are skipped: Dynamo must never trace this check.)
            return fn(*args, **kwargs)
        hidden = call.__dict__.get("_graphguard_hidden")
        if hidden is None:
            import torch._dynamo

            hidden = call.__dict__["_graphguard_hidden"] = torch._dynamo.disable(fn, recursive=True)
        return hidden(*args, **kwargs)

    return call  # type: ignore[return-value]


def keep_dynamo_out() -> None:
    """Tell torch.compile never to compile graphguard's own frames. Eager code that a compiled
    function falls back to after a graph break runs under Dynamo's frame hook, which would
    otherwise compile the recorder's and the rules' functions too (graph breaks at sys._getframe,
    recompilations, warnings). The mode stays traceable: Dynamo inlines active modes, and the mode
    steps aside while compiling (capture/mode.py). Done once, when Dynamo is loaded: graphguard
    never imports it (seconds) on its own."""
    global _SKIPS_ADDED
    if _SKIPS_ADDED or "torch._dynamo" not in sys.modules:
        return
    _SKIPS_ADDED = True
    try:
        from torch._dynamo import trace_rules

        names, paths = [], []
        for name, mod in list(sys.modules.items()):
            path = getattr(mod, "__file__", None) or ""
            # packages would add their whole directory, mode.py included: modules only
            if (name.startswith("graphguard.") and name != "graphguard.capture.mode"
                    and path.endswith(".py") and not path.endswith("__init__.py")):
                names.append(name)
                paths.append(path)
        skip_dirs = getattr(trace_rules, "SKIP_DIRS", None)
        recompile = getattr(trace_rules, "_recompile_re", None)
        if isinstance(skip_dirs, list) and callable(recompile):
            # what trace_rules.add does per module, once for all: add() rebuilds the skip regex
            # at every call (~5 ms each, half a second for graphguard's modules at guard entry)
            skip_dirs.extend(p for p in paths if p not in skip_dirs)
            recompile()
        else:
            for name in names:
                trace_rules.add(name)
    except Exception:  # an older or newer Dynamo without trace_rules.add: compile still works
        pass
