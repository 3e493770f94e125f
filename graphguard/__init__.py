"""graphguard: find autograd graph misuse in PyTorch training code, in the user's own terms."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__
from .errors import GraphGuardUsageError, GraphGuardWarning, GraphMisuseError
from .model import Finding, Related, SourceLoc, Subject

if TYPE_CHECKING:
    from .guard import GraphGuard, active_guards

__all__ = ["GraphGuard", "GraphMisuseError", "GraphGuardWarning", "GraphGuardUsageError",
           "Finding", "Subject", "SourceLoc", "Related", "active_guards", "__version__"]


def __getattr__(name: str) -> Any:
    # NOTE [lazy torch]: graphguard.guard imports torch (seconds). The pytest plugin is imported by
    # every pytest run (pytest11 entry point) and must stay cheap, so the guard loads on first use.
    if name in ("GraphGuard", "active_guards"):
        from . import guard

        return getattr(guard, name)
    raise AttributeError(f"module 'graphguard' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext graphguard``: the ``%%graphguard`` and ``%graphguard on|off`` magics."""
    from .notebook import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .notebook import unload_ipython_extension as unload

    unload(ipython)


def _notebook_displays() -> None:
    # In a Jupyter kernel, findings display as HTML cards without `%load_ext` (NOTE [display
    # hooks]); notebook.py is cheap to import and imports IPython only if it is already loaded.
    import sys

    if "IPython" in sys.modules:
        from .notebook import register_running_shell

        register_running_shell()


_notebook_displays()
