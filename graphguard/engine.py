"""The engine: runs the rules on each event, de-duplicates, re-arms recording, catches expectations."""
from __future__ import annotations

import sys
import traceback
import warnings
from typing import Callable, Iterable

from .capture.failsafe import failsafe
from .capture.recorder import Recorder
from .capture.sites import user_site, user_stacklevel
from .errors import GraphGuardWarning, GraphMisuseError
from .events import Clock, Event
from .expectation import Expectation
from .model import Finding, SourceLoc, Subject
from .rules import Rule
from .rules.context import RuleContext
from .rules.gg901_internal_error import InternalError

__all__ = ["Engine", "REARM_ITERATIONS"]

# Iterations of full recording, at most, after an error found in light mode (see rearm_for_details).
REARM_ITERATIONS = 200
# Iterations of full recording a rule gets when it asks for details (RuleContext.want_details).
DETAIL_ITERATIONS = 4

# NOTE [quiet events]
# In light mode the same clean iteration repeats for a whole run, and the cost of judging it is
# set less by the instructions the rules run than by how much code and data they touch right
# after a torch kernel has flushed the caches (a rule that returns at once costs 1-3 us there,
# 0.3 us warm). So the guard tells the engine when an event is *quiet*: a BackwardCall in light
# mode whose graph has no node an earlier backward traversed, no saved tensor found changed, only
# scalar roots with history, a plain `backward()` (no retain/create/inputs), and whose node types
# and leaves (by identity) are those of a graph every rule already judged without a finding
# (guard.py, `_quiet_backward`). Rules list in `quiet_skip` the event types whose quiet
# instances they cannot report on and keep no state from; the others (GG010's gradient
# following, GG101's iteration ends) are called as always. Anything unusual makes the event
# non-quiet, so every rule sees it: a misuse that first appears late is judged in full.

# NOTE [skimmed iterations]
# Quiet backwards left four entries per step (before and after the backward, before and after
# the optimizer step), and on a small step each costs 5-60 us just by running cold. Most of what
# the rules do at the step level looks for *silent* misuse (a parameter with no gradient, a
# missing zero_grad(), an all-zero gradient, an unregistered parameter): nothing crashes, so
# judging it on a sample of the iterations loses no "before PyTorch raises", only a few
# iterations of delay. So in light mode the guard *skims* most iterations (guard.py,
# `_skimming`): a window of consecutive iterations (two per optimizer that steps, so that
# GG010 sees a step, the next backward and the next step) is judged in full out of every
# SAMPLE_PERIOD windows, and in between, rules listed in `skim_skip` are not called for those
# event types. The pre-backward walk, the saved-value read and the walk-based rules (stale
# graphs, in-place changes, double backward: the errors PyTorch raises) still run before every
# backward, and any non-quiet backward makes its iteration and the window after it full.


class Engine:
    """Judges events for one guard and keeps its results. Acts by mode: `raise` raises
    GraphMisuseError for errors and warns for warnings, `warn` warns, `collect` records.

    Args:
        mode: raise | warn | collect.
        rules: the selected rule instances (each guard has its own: rules may keep state).
        clock: the run's iteration.
        set_recording: switches full recording on (re-arming after a light-mode error).

    `attach` then gives it the recorder (its `busy` flag keeps graphguard's own torch calls
    unrecorded while rules run; `recording` tells light mode) and the rules' context: the
    recorder is built with the engine's `dispatch` and `internal_error` as its sink.
    """

    def __init__(self, mode: str, rules: Iterable[Rule], clock: Clock,
                 set_recording: Callable[[bool], None]) -> None:
        self.mode = mode
        self.rules = list(rules)
        self.by_event: dict[type, list[Rule]] = {}
        for r in self.rules:
            for ev in r.events:
                self.by_event.setdefault(ev, []).append(r)
        # the rules still called for a quiet event (NOTE [quiet events])
        self.quiet_by_event: dict[type, list[Rule]] = {
            ev: [r for r in rules if ev not in r.quiet_skip] for ev, rules in self.by_event.items()}
        # ... and for an event of a skimmed iteration (NOTE [skimmed iterations]): a BackwardCall
        # is only skimmed when it is quiet too, step-level events are never quiet
        self.skim_by_event: dict[type, list[Rule]] = {
            ev: [r for r in rules if ev not in r.skim_skip] for ev, rules in self.quiet_by_event.items()}
        self.ctx: RuleContext | None = None
        self.rec: Recorder | None = None
        self.clock = clock
        self.set_recording = set_recording
        self.dormant = False  # the guard exited, or this is a forked child: judge nothing
        self.findings: list[Finding] = []
        self.seen: set[tuple] = set()
        # Light mode records no creation lines. An error found then switches full recording back
        # on until the same place is reported again with its line (or REARM_ITERATIONS pass):
        # places (file, line) still waiting for that, and the iteration at which to give up.
        self.awaiting_details: set[tuple] = set()
        self.rearmed_until = 0
        self.details_until = 0  # a rule asked for details: record up to this iteration
        # findings caught by an expect() block (a test that wants the misuse); innermost block last
        self.expected: list[Finding] = []
        self.expectations: list[Expectation] = []

    def attach(self, rec: Recorder, ctx: RuleContext) -> None:
        self.rec = rec
        self.ctx = ctx

    def still_rearmed(self) -> bool:
        """Whether recording stays on for a light-mode error whose creation line is still missing,
        or because a rule asked for details."""
        if self.clock.iteration < self.details_until:
            return True
        if self.awaiting_details and self.clock.iteration < self.rearmed_until:
            return True
        self.awaiting_details.clear()
        return False

    def skim_listens(self, event_type: type) -> bool:
        """Whether some rule judges events of this type in a skimmed iteration (if none, the
        guard need not even build the event)."""
        return bool(self.skim_by_event.get(event_type))

    def dispatch(self, event: Event, raising: bool = True, quiet: bool = False,
                 skim: bool = False) -> None:
        """Judge `event` with the rules registered for its type; report what they find.
        `quiet`: the guard found the event quiet (NOTE [quiet events]): only the rules that do
        not skip quiet events of its type are called. `skim`: it belongs to a skimmed iteration
        (NOTE [skimmed iterations]): the rules that skip it there are not called either."""
        if self.dormant:
            return
        table = self.skim_by_event if skim else self.quiet_by_event if quiet else self.by_event
        rules = table.get(type(event))
        if not rules:
            return
        new: list[Finding] = []
        busy, self.rec.busy = self.rec.busy, True
        try:
            for rule in rules:
                try:
                    found = rule.check(event, self.ctx)
                    if found:
                        # a muted message (--ignore GG008.never-called) is dropped here too,
                        # for a rule whose check makes findings without `detect`
                        new.extend(f for f in found if not rule.muted
                                   or f.message_id.partition(".")[2] not in rule.muted)
                except Exception as err:
                    self.internal_error(err, f"rule {rule.code}")
        finally:
            self.rec.busy = busy
            self.ctx.forget_shared()
        if new:
            failsafe(self.internal_error, "reporting a finding", self.emit, new, raising)

    def emit(self, new: list[Finding], raising: bool = True) -> None:
        errors = []
        for f in new:
            k = f.key()
            if k in self.seen:
                if not self.replace_less_detailed(f):
                    continue
            else:
                self.seen.add(k)
                self.findings.append(f)
            expected = self.catch_expected(f)
            if f.severity == "error" and raising and (self.mode == "raise" or expected):
                errors.append(f)
            elif self.mode != "collect" and not expected and f.severity in ("error", "warning"):
                self.warn(f)
            if f.severity == "error":
                self.rearm_for_details(f)
        if errors:
            raise GraphMisuseError(self.render(errors), errors)

    def request_details(self) -> None:
        """A rule saw something in light mode that it reports only with details: record in full
        for the next DETAIL_ITERATIONS iterations (RuleContext.want_details)."""
        if self.rec is None or self.rec.recording:
            return
        self.details_until = self.clock.iteration + DETAIL_ITERATIONS
        self.set_recording(True)

    def rearm_for_details(self, f: Finding) -> None:
        """Details (creation lines, cuts) need full recording: an error found in light mode
        switches it back on, and keeps it on until the same place is reported with the line that
        made its subject (the next occurrence of a periodic misuse), for REARM_ITERATIONS at most."""
        where = (f.location.file, f.location.line) if f.location else None
        if f.subject.created_at is not None:
            self.awaiting_details.discard(where)
        elif not self.rec.recording:
            self.awaiting_details.add(where)
            self.rearmed_until = self.clock.iteration + REARM_ITERATIONS
        if not self.rec.recording:
            self.set_recording(True)

    def replace_less_detailed(self, f: Finding) -> bool:
        """A repeat of a finding first reported without its subject's creation line (light mode),
        now with it: it replaces the first one, so the report names the line, and is reported again."""
        if f.subject.created_at is None:
            return False
        k = f.key()
        for i, old in enumerate(self.findings):
            if old.subject.created_at is None and old.key() == k:
                self.findings[i] = f
                return True
        return False

    def render(self, fs: list[Finding]) -> str:
        """The findings' text; if wording them fails, their codes and places, so that an error
        finding is still raised before PyTorch's crash."""
        from .report.text import render_findings

        try:
            return render_findings(fs)
        except Exception as err:
            self.internal_error(err, "wording a finding")
            return "\n".join(f"{f.code} {f.slug} [{f.severity}] at "
                             f"{f.location.file if f.location else '?'}:"
                             f"{f.location.line if f.location else '?'}" for f in fs)

    def catch_expected(self, f: Finding) -> bool:
        """Hand ``f`` to the innermost expect() block waiting for its code, if any."""
        for exp in reversed(self.expectations):
            if exp.matches(f):
                exp.findings.append(f)
                self.expected.append(f)
                return True
        return False

    def warn(self, f: Finding) -> None:
        warnings.warn(GraphGuardWarning(self.render([f])), stacklevel=user_stacklevel(sys._getframe(1)))

    def internal_error(self, err: BaseException, doing: str) -> None:
        """A failure inside graphguard: record GG901 and let the user's program go on. Never
        raises: the failure being reported may be in what this uses (frames, source lines)."""
        try:
            tb = "".join(traceback.format_exception(type(err), err, err.__traceback__))
            error = f"{type(err).__name__}: {err}"
        except Exception:  # an exception whose str() fails
            tb, error = "", type(err).__name__
        try:
            site = user_site(1)
            loc = SourceLoc.from_frame(site[0]) if site else None
        except Exception:
            loc = None
        m = InternalError.message("internal-error")
        f = Finding(m.code, InternalError.slug, m.severity, {"doing": doing, "error": error},
                    Subject(None, kind="graphguard"), loc,
                    self.clock.iteration, True, "please report this with the traceback in the JSON report",
                    details={"traceback": tb}, template=m.template, message_id=m.id)
        if f.key() + (doing,) in self.seen:
            return
        self.seen.add(f.key() + (doing,))
        self.findings.append(f)
        if self.mode != "collect":
            try:
                self.warn(f)
            except Exception:
                pass

