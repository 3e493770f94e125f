"""The Rule base class: a code, its declared messages, `detect` (from capture data) and `describe`
(names and words, from lookup/ and the source)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Iterable

from ..model import Finding, Message, Related, SourceLoc, Subject

if TYPE_CHECKING:
    from .context import Evidence, RuleContext

__all__ = ["Rule", "Detection", "DOC_HEADINGS", "display"]

DOC_HEADINGS = ("What it does", "Why is this bad?", "Example", "Use instead", "Known problems")


@dataclass
class Detection:
    """What `detect` found: which declared message applies, and the run-time evidence that
    `describe` words (the tensor, module or optimizer it is about, sites, cuts, counts).

    Holds live objects only while the event is judged: the engine drops it with the event.
    """

    message: str  # the name of one of the rule's `messages`
    subject: Any = None  # the tensor / parameter / module / optimizer the finding is about
    facts: dict[str, Any] = field(default_factory=dict)


class Rule:
    """A rule judges events and returns findings; it never prints and never raises on purpose.

    A rule is written as two methods (docs/architecture.md, "How to add a rule"):
    - `detect(event, ev)` decides, from capture data only (`Evidence`: graph nodes, saved tensors,
      grad-mode switches, versions, optimizer state, steps), and returns Detections, each naming
      the declared message it is;
    - `describe(detection, event, ctx)` names and words one detection (the full `RuleContext`:
      user names, source lines, fix lines) and returns its Finding, or None when a rule that
      supersedes this one already covers the subject.
    `check` runs the two; the engine only calls `check`.
    """

    code: ClassVar[str]
    slug: ClassVar[str]
    severity: ClassVar[str]  # the code's catalog severity (RULES.md); a finding's is its message's
    summary: ClassVar[str]  # one line for `graphguard rules`
    messages: ClassVar[tuple[Message, ...]] = ()  # every story this rule can tell
    events: ClassVar[tuple[type, ...]] = ()
    # codes of the rules this one silences for a subject it covers (NOTE [supersedes] in
    # rules/context.py); the engine resolves it, so no rule reads another's findings
    supersedes: ClassVar[tuple[str, ...]] = ()
    # event types whose *quiet* instances this rule has nothing to do with: it would report
    # nothing and keep no state from them (NOTE [quiet events] in engine.py); the engine then
    # does not call it for those. Declare only what the rule's check proves.
    quiet_skip: ClassVar[tuple[type, ...]] = ()
    # event types this rule may miss in a *skimmed* iteration (NOTE [skimmed iterations] in
    # engine.py): its judgement needs only the iterations it does see, so a misuse that starts
    # late is still reported, within one sampling period. Declare only step-level checks of
    # silent misuse here, never a check that must come before PyTorch's own error.
    skim_skip: ClassVar[tuple[type, ...]] = ()
    # names of this rule's messages that --ignore / --select leave out (never described); set
    # per instance by rules.instantiate
    muted: frozenset[str] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        code = cls.__dict__.get("code")
        if code and cls.__dict__.get("messages"):
            bound = tuple(m.bound(code) for m in cls.__dict__["messages"])
            names = [m.name for m in bound]
            if len(set(names)) != len(names):
                raise TypeError(f"{code}: two messages share a name")
            cls.messages = bound

    # ---- the two parts ------------------------------------------------------------------------
    def detect(self, event: Any, ev: "Evidence") -> Iterable[Detection] | None:
        """Decide from capture data only; one Detection per finding to make."""
        raise NotImplementedError

    def describe(self, detection: Detection, event: Any, ctx: "RuleContext") -> Finding | None:
        """Name and word one detection (None: a superseding rule already covers it)."""
        raise NotImplementedError

    def check(self, event: Any, ctx: "RuleContext") -> Iterable[Finding] | None:
        out = []
        for d in self.detect(event, ctx) or ():
            if d.message in self.muted:
                continue
            f = self.describe(d, event, ctx)
            if f is not None:
                out.append(f)
        return out

    # ---- messages -----------------------------------------------------------------------------
    @classmethod
    def message(cls, name: str) -> Message:
        """The declared message `name` (KeyError: a rule telling a story it does not declare,
        which the engine reports as GG901)."""
        for m in cls.messages:
            if m.name == name:
                return m
        raise KeyError(f"{cls.code} declares no message {name!r}")

    def finding(self, ctx: "RuleContext", subject: Subject, location: SourceLoc | None,
                fix: str, args: dict[str, Any] | None = None, related: list[Related] | None = None,
                before_crash: bool = True, graph: Any = None, message: str | None = None) -> Finding:
        """The Finding of one declared message (`message`: its name; may be left out by a rule
        that declares one message only): its severity and sentence are the message's. `args`
        fill the template (`name` defaults to the subject's name); a field the template needs and
        `args` lack is a bug of the rule (KeyError, reported as GG901)."""
        a = {"name": subject.name or "the tensor"}
        a.update(args or {})
        if message is None:
            if len(self.messages) != 1:
                raise KeyError(f"{self.code} tells one of several messages: name it")
            message = self.messages[0].name
        m = self.message(message)
        missing = m.fields - a.keys()
        if missing:
            raise KeyError(f"{m.id}: no value for {sorted(missing)}")
        return Finding(self.code, self.slug, m.severity, a, subject, location, ctx.iteration,
                       before_crash, fix, list(related or []), graph=graph,
                       template=m.template, message_id=m.id)


def display(name: str | None, default: str = "the tensor") -> str:
    """A subject's name for a sentence: `ref_image`, or a plain description when unnamed."""
    return f"`{name}`" if name else default
