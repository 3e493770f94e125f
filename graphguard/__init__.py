"""graphguard: find autograd graph misuse in PyTorch training code, in the user's own terms."""
from __future__ import annotations

from ._version import __version__
from .errors import GraphGuardUsageError, GraphGuardWarning, GraphMisuseError
from .guard import GraphGuard, active_guards
from .records import Finding, Related, SourceLoc, Subject

__all__ = ["GraphGuard", "GraphMisuseError", "GraphGuardWarning", "GraphGuardUsageError",
           "Finding", "Subject", "SourceLoc", "Related", "active_guards", "__version__"]
