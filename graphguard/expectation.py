"""`GraphGuard.expect`: a block that must produce findings of given rule codes (tests of misuse)."""
from __future__ import annotations

from dataclasses import dataclass, field

from .model import Finding

__all__ = ["Expectation", "describe_missing"]


@dataclass
class Expectation:
    """What one ``with guard.expect(...)`` block waits for, and what it caught."""

    codes: tuple[str, ...]  # upper-case code prefixes (`GG001`, `GG0`) or message ids (`GG008.NEVER-CALLED`)
    findings: list[Finding] = field(default_factory=list)  # caught in the block, in order

    def matches(self, f: Finding) -> bool:
        return any(f.message_id.upper() == c if "." in c else f.code.startswith(c) for c in self.codes)

    def owns_all(self, findings: list[Finding]) -> bool:
        """True when every one of ``findings`` was caught by this block (identity, not equality)."""
        return bool(findings) and all(any(f is g for g in self.findings) for f in findings)


def describe_missing(exp: Expectation, seen: list[Finding]) -> str:
    """The message of the AssertionError raised when the block produced none of its codes."""
    wanted = ", ".join(exp.codes)
    if not seen:
        return f"expected a graphguard finding {wanted} in this block; it produced no finding"
    other = ", ".join(sorted({f"{f.code} {f.subject.name or '-'}" for f in seen}))
    return f"expected a graphguard finding {wanted} in this block; it produced only: {other}"
