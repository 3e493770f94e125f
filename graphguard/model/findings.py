"""Places, subjects, findings and the run record: plain data every layer reads (no torch, no registry)."""
from __future__ import annotations

import linecache
import os
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterable, NamedTuple

__all__ = ["Frame", "Site", "SourceLoc", "Subject", "Role", "Related", "Finding", "RunRecord",
           "SEVERITIES", "severity_rank", "count_severities", "relpath"]

# The one severity order, lowest first: ranks, fail-on thresholds and "worst first" sorting all
# derive from it.
SEVERITIES = ("info", "warning", "error")
_RANK = {s: i for i, s in enumerate(SEVERITIES)}


def severity_rank(severity: str | None, unknown: int = 0) -> int:
    """0 for info, 1 for warning, 2 for error (`unknown` for anything else)."""
    return _RANK.get(severity, unknown)  # type: ignore[arg-type]


def count_severities(severities: Iterable[str | None]) -> dict[str, int]:
    """How many of each severity (every severity present as a key, in SEVERITIES order)."""
    counts = dict.fromkeys(SEVERITIES, 0)
    for s in severities:
        if s in counts:
            counts[s] += 1  # type: ignore[index]
    return counts


class Frame(NamedTuple):
    """One user frame, captured as plain data so that no frame object (and its locals) is kept."""

    file: str  # absolute path, as in code.co_filename
    line: int  # line number being executed
    function: str  # code.co_name


# A call stack of user frames, innermost first (at most a handful: see capture/sites.py).
Site = tuple[Frame, ...]


def relpath(path: str) -> str:
    """Path relative to the current directory when below it, else absolute (REPORT.md)."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if rel.startswith("..") else rel


@dataclass(frozen=True)
class SourceLoc:
    """A place in the user's code: file, line, function and the source text of that line."""

    file: str  # path as given by the interpreter (absolute); shown relative by to_dict
    line: int
    function: str = ""
    code: str = ""  # the stripped source line, "" when unavailable

    @classmethod
    def from_frame(cls, frame: Frame) -> "SourceLoc":
        text = linecache.getline(frame.file, frame.line).strip()
        return cls(frame.file, frame.line, frame.function, text)

    def to_dict(self) -> dict[str, Any]:
        return {"file": relpath(self.file), "line": self.line, "function": self.function,
                "code": self.code}

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "SourceLoc | None":
        if not d:
            return None
        return cls(d.get("file", ""), int(d.get("line") or 0), d.get("function", ""), d.get("code", ""))

    def short(self) -> str:
        return f"{relpath(self.file)}:{self.line}"


@dataclass(frozen=True)
class Subject:
    """The tensor, parameter, module or optimizer a finding is about."""

    name: str | None  # the user's own name for it (`ref_image`, `model.fc.weight`), never invented
    kind: str = "tensor"  # tensor | parameter | module | optimizer | call
    summary: str = ""  # one-line tensor summary: `f32[128, 128] grad_fn=AddBackward0`
    created_at: SourceLoc | None = None
    created_in_iteration: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "summary": self.summary,
                "created_at": self.created_at.to_dict() if self.created_at else None,
                "created_in_iteration": self.created_in_iteration}


class Role(str, Enum):
    """What a related place is to a finding (REPORT.md `related[].role`). A str, so that reports
    and comparisons read the plain value (`"fix-at"`)."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    FIX_AT = "fix-at"  # the line where the fix goes
    SAVED_AT = "saved-at"  # where autograd saved the tensor a backward needs
    MODIFIED_AT = "modified-at"  # where it was changed in place
    CUT_BY = "cut-by"  # the op that cut the history
    CONSUMED_BY = "consumed-by"  # the backward that freed a graph
    HELD_BY = "held-by"  # what keeps a tensor or graph alive
    RETAINED_BY = "retained-by"  # the backward that kept a graph with retain_graph=True
    REACHED_BY = "reached-by"  # a backward that did reach the subject
    NEEDED_BY = "needed-by"  # who needs the value (a backward, an optimizer)
    MADE_AT = "made-at"  # where a value or callable was made
    CREATED_AT = "created-at"  # where a tensor or module was created
    ASSIGNED_AT = "assigned-at"  # where a name was bound
    REBOUND_AT = "rebound-at"  # where a name was bound to something else
    ADDED_AT = "added-at"  # where a term was added into a loss
    FORWARD_AT = "forward-at"  # the forward call
    BACKWARD_AT = "backward-at"  # the backward call
    STEPPED_AT = "stepped-at"  # the optimizer step
    LAST_BACKWARD = "last-backward"  # a rank's latest backward
    LAST_STEP = "last-step"  # a rank's latest optimizer step
    WAITS_AT = "waits-at"  # where a rank waits in a collective
    DIVERGES_AT = "diverges-at"  # where ranks took different paths
    RAISED_AT = "raised-at"  # where PyTorch raised
    CLEARED_AT = "cleared-at"  # where gradients were cleared
    ACCUMULATED_BY = "accumulated-by"  # what accumulated into a value
    NO_GRADIENT = "no-gradient"  # another parameter that got no gradient
    UNREACHABLE = "unreachable"  # another parameter no backward reached
    CHECKPOINTED = "checkpointed"  # the checkpointed call
    HISTORY_DROPPED = "history-dropped"  # where history was dropped
    MADE_NON_LEAF = "made-non-leaf"  # the op that made a parameter a non-leaf
    FROM_LEAF = "from-leaf"  # the leaf a non-leaf copy was made from
    LEAF = "leaf"  # the leaf a finding is about
    MODEL = "model"  # the model that holds the subject
    SOURCE = "source"  # the tensor a copy was made from
    FROM = "from"  # where a value came from
    CAUSE = "cause"  # what caused the finding
    GRAPH_NODE = "graph-node"  # a node of the graph


@dataclass(frozen=True)
class Related:
    """Another place that matters to a finding: its Role (saved-at, modified-at, cut-by, ...),
    the name and op it concerns, and where."""

    role: Role
    name: str | None = None
    op: str | None = None
    location: SourceLoc | None = None
    iteration: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.role, Role):
            # a report read back may carry a role of a later version: kept as text
            try:
                object.__setattr__(self, "role", Role(self.role))
            except ValueError:
                pass

    def to_dict(self) -> dict[str, Any]:
        role = self.role.value if isinstance(self.role, Role) else self.role
        out: dict[str, Any] = {"role": role, "name": self.name, "op": self.op,
                               "location": self.location.to_dict() if self.location else None}
        if self.iteration is not None:
            out["iteration"] = self.iteration
        return out


@dataclass
class Finding:
    """One detected misuse. Holds data and its own template (pyflakes' messages own theirs), so any
    reporter renders it without the rule registry."""

    code: str
    slug: str
    severity: str
    args: dict[str, Any]  # values for the rule's message template
    subject: Subject
    location: SourceLoc | None
    iteration: int
    before_crash: bool
    fix: str
    related: list[Related] = field(default_factory=list)
    diagram: dict[str, str] | None = None  # paths of the DOT/SVG files once written
    graph: Any = None  # model.snapshot.GraphSnapshot of the offending part, for diagrams
    details: dict[str, Any] = field(default_factory=dict)  # extra data (internal tracebacks...)
    template: str = ""  # the message's one-sentence template; `{field}`s come from args
    message_id: str = ""  # the declared message this finding tells (`GG008.never-called`)

    @property
    def message(self) -> str:
        try:
            return self.template.format(**self.args)
        except (KeyError, IndexError, ValueError):
            return self.template

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Finding":
        """A finding read back from a JSON report: its saved message is its (literal) template."""
        s = d.get("subject") or {}
        message = d.get("message", "") or ""
        return cls(d["code"], d.get("slug", ""), d.get("severity", "error"), {},
                   Subject(s.get("name"), s.get("kind", "tensor"), s.get("summary", ""),
                           SourceLoc.from_dict(s.get("created_at")), s.get("created_in_iteration")),
                   SourceLoc.from_dict(d.get("location")), d.get("iteration", 0),
                   d.get("before_crash", True), d.get("fix", ""),
                   [Related(r.get("role", ""), r.get("name"), r.get("op"),
                            SourceLoc.from_dict(r.get("location"))) for r in d.get("related", [])],
                   d.get("diagram"), details=dict(d["details"]) if isinstance(d.get("details"), dict) else {},
                   template=message.replace("{", "{{").replace("}", "}}"),
                   message_id=str(d.get("message_id") or ""))

    def key(self) -> tuple:
        """What makes two findings the same report (used to report a repeated misuse once)."""
        loc = (self.location.file, self.location.line) if self.location else None
        return (self.code, self.subject.name, loc)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code, "message_id": self.message_id, "slug": self.slug,
            "severity": self.severity, "message": self.message, "subject": self.subject.to_dict(),
            "location": self.location.to_dict() if self.location else None,
            "iteration": self.iteration, "before_crash": self.before_crash,
            "related": [r.to_dict() for r in self.related], "fix": self.fix,
            "diagram": self.diagram,
        }
        if self.details:
            out["details"] = self.details
        return out


@dataclass(frozen=True)
class RunRecord:
    """What a run did, besides its findings: the reports' `run` block reads this, never a guard."""

    iterations: int  # iterations ended (optimizer steps, guard.step(), freeing backwards)
    backward_calls: int
