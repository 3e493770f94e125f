"""When to judge an optimizer step's gradients (shared by GG008 and GG013)."""
from __future__ import annotations

from typing import Any

from ...events import StepCall, StepDone

__all__ = ["ClosureDeferral"]


class ClosureDeferral:
    """`step(closure)` (LBFGS, SGD with a closure) computes the gradients inside the step, so its
    StepCall comes before any gradient exists: such a step is judged at its StepDone instead, and
    every other step at its StepCall."""

    def __init__(self) -> None:
        self._optimizer: Any = None  # the optimizer whose step(closure) is under way

    def defer(self, event: Any) -> bool:
        """True when `event` is not the moment to judge the step's gradients."""
        if isinstance(event, StepCall) and event.closure:
            self._optimizer = event.optimizer
            return True
        if isinstance(event, StepDone):
            if event.optimizer is None or event.optimizer is not self._optimizer:
                return True
            self._optimizer = None
        return False
