"""`graphguard fix`: candidate source patches (LibCST), each proven by a guarded re-run.

Layer `fix` (docs/architecture.md): it runs `graphguard run` in a subprocess and reads its JSON
report, so it imports nothing of graphguard but the model; the CLI imports it.
"""
from __future__ import annotations

from .command import FixUsageError, Options, fix

__all__ = ["FixUsageError", "Options", "fix"]
