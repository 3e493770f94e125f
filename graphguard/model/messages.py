"""Messages: every story a rule can tell, declared as data (pylint's `msgs`, ruff's one violation
per story). A rule's detection picks a message; the message fixes the severity and the sentence.

A message id is the rule's code, a dot and the message's name: `GG008.never-called`. `--select`
and `--ignore` take ids as well as code prefixes, reports carry the id, `graphguard explain`
lists a code's messages.
"""
from __future__ import annotations

import string
from dataclasses import dataclass, field
from typing import Iterable

from .findings import SEVERITIES

__all__ = ["Message", "template_fields", "is_message_id", "split_message_id"]

_FORMATTER = string.Formatter()


def template_fields(template: str) -> frozenset[str]:
    """The `{field}` names a template formats (`{name}`, `{fix}`), without format specs."""
    out = set()
    for _, fname, _, _ in _FORMATTER.parse(template):
        if fname:
            out.add(fname.split(".", 1)[0].split("[", 1)[0])
    return frozenset(out)


def is_message_id(text: str) -> bool:
    """Whether `text` names one message (`GG008.never-called`) rather than a code prefix."""
    return "." in text


def split_message_id(text: str) -> tuple[str, str]:
    """`GG008.never-called` -> (`GG008`, `never-called`); codes upper-case, names lower-case."""
    code, _, name = text.partition(".")
    return code.upper(), name.lower()


@dataclass(frozen=True)
class Message:
    """One story of a rule: its name, severity, one-sentence template and a one-line summary.

    Args:
        name: short kebab-case name, unique within the rule (`never-called`).
        severity: error | warning | info; a finding's severity is its message's, never chosen
            while wording it.
        template: the finding's sentence; `{field}`s come from the finding's args (`{name}` is
            always given: the subject's display name).
        summary: one line for `graphguard explain` (what situation this message reports).
        code: the rule's code, set when the rule class is defined (Rule.__init_subclass__).
    """

    name: str
    severity: str
    template: str
    summary: str
    code: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"message {self.name!r}: unknown severity {self.severity!r}")
        if not self.name or self.name != self.name.lower() or " " in self.name or "." in self.name:
            raise ValueError(f"message name {self.name!r}: lower-case, no spaces or dots")

    @property
    def id(self) -> str:
        """`GG008.never-called`."""
        return f"{self.code}.{self.name}"

    @property
    def fields(self) -> frozenset[str]:
        return template_fields(self.template)

    def bound(self, code: str) -> "Message":
        """This message as the rule `code` declares it."""
        return Message(self.name, self.severity, self.template, self.summary, code)


def names_of(messages: Iterable[Message]) -> list[str]:
    return [m.name for m in messages]
