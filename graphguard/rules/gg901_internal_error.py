"""GG901 internal-error: graphguard itself failed; training went on unharmed."""
from __future__ import annotations

from typing import Any

from .base import Rule
from .context import RuleContext

__all__ = ["InternalError"]


class InternalError(Rule):
    """## What it does
    Reports a failure inside graphguard (a hook, a rule, a report) instead of letting it
    interrupt training. The internal traceback is kept in the JSON report (`details.traceback`).

    ## Why is this bad?
    It is graphguard's bug, not yours: some checks may have been skipped for that event.

    ## Example
    ```python
    with GraphGuard():
        train()        # a graphguard bug while recording an op: GG901, training continues
    ```

    ## Use instead
    ```python
    # nothing to change in your code; report the traceback to graphguard's maintainers
    ```

    ## Known problems
    Only failures raised as Python exceptions can be caught; a crash in C code cannot.
    """

    code = "GG901"
    slug = "internal-error"
    severity = "warning"
    summary = "graphguard failed internally; the check was skipped and training went on"
    template = "graphguard failed while {doing} ({error}); that check was skipped, training went on"
    events = ()

    def check(self, event: Any, ctx: RuleContext) -> None:
        return None
