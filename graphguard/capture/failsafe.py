"""The one "pass through, else GG901" helper: graphguard's own failure never breaks the user's call."""
from __future__ import annotations

from typing import Any, Callable

from ..errors import GraphMisuseError

__all__ = ["PASSTHROUGH", "failsafe"]

# Raised on purpose (a finding in raise mode, an expect() block): these leave graphguard unchanged.
PASSTHROUGH: tuple[type[BaseException], ...] = (GraphMisuseError,)


def failsafe(internal_error: Callable[[BaseException, str], None], doing: str,
             fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)`; when it raises anything but PASSTHROUGH, report it as GG901 (`doing` says
    what graphguard was doing) and return None, so the user's program goes on."""
    try:
        return fn(*args)
    except PASSTHROUGH:
        raise
    except Exception as exc:
        internal_error(exc, doing)
        return None
