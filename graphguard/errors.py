"""The exception and warning types a user can catch or filter."""
from __future__ import annotations

__all__ = ["GraphMisuseError", "GraphGuardWarning", "GraphGuardUsageError"]


class GraphMisuseError(RuntimeError):
    """Raised in ``raise`` mode when graphguard finds autograd misuse of severity error.

    It subclasses ``RuntimeError`` so that code which already catches PyTorch's own autograd
    errors (``except RuntimeError``) keeps working. ``findings`` holds what was found.
    """

    def __init__(self, message: str, findings: list | None = None) -> None:
        super().__init__(message)
        self.findings = list(findings or [])


class GraphGuardWarning(UserWarning):
    """Emitted in ``warn`` mode (and for warnings in ``raise`` mode).

    A ``UserWarning`` subclass, so ``-W error::graphguard.GraphGuardWarning`` turns it into an error.
    """


class GraphGuardUsageError(ValueError):
    """Bad input to graphguard itself: an unknown rule code, an invalid option or report file."""
