"""The Rule base class: code, slug, severity, template, the events it judges."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Iterable

from ..model import Finding, Related, SourceLoc, Subject

if TYPE_CHECKING:
    from .context import RuleContext

__all__ = ["Rule", "DOC_HEADINGS"]

DOC_HEADINGS = ("What it does", "Why is this bad?", "Example", "Use instead", "Known problems")


class Rule:
    """A rule judges events and returns findings; it never prints and never raises on purpose."""

    code: ClassVar[str]
    slug: ClassVar[str]
    severity: ClassVar[str]  # error | warning | info
    template: ClassVar[str]  # one sentence; `{name}`-style fields come from Finding.args
    summary: ClassVar[str]  # one line for `graphguard rules`
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

    def check(self, event: Any, ctx: "RuleContext") -> Iterable[Finding] | None:
        raise NotImplementedError

    def finding(self, ctx: "RuleContext", subject: Subject, location: SourceLoc | None,
                fix: str, args: dict[str, Any] | None = None, related: list[Related] | None = None,
                before_crash: bool = True, graph: Any = None, severity: str | None = None) -> Finding:
        a = {"name": subject.name or "the tensor"}
        a.update(args or {})
        return Finding(self.code, self.slug, severity or self.severity, a, subject, location,
                       ctx.iteration, before_crash, fix, list(related or []), graph=graph,
                       template=self.template)


def display(name: str | None, default: str = "the tensor") -> str:
    """A subject's name for a sentence: `ref_image`, or a plain description when unnamed."""
    return f"`{name}`" if name else default
