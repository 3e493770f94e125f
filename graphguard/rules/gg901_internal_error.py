"""GG901 internal-error: graphguard itself failed; training went on unharmed."""
from __future__ import annotations

from typing import Any

from ..model import Finding, Message
from .base import Detection, Rule
from .context import Evidence, RuleContext

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
    messages = (
        Message("internal-error", "warning",
                "graphguard failed while {doing} ({error}); that check was skipped, training went on",
                "a hook, rule or report of graphguard raised; the engine made this finding instead"),
    )
    events = ()

    # The engine builds this finding itself (Engine.internal_error) from the message above, since
    # the failure may be in what a rule would use; as a rule it judges no event.
    def detect(self, event: Any, ev: Evidence) -> None:
        return None

    def describe(self, d: Detection, event: Any, ctx: RuleContext) -> Finding | None:
        return None
