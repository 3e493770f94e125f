"""GraphGuard: the context manager that installs the capture hooks and turns events into findings."""
from __future__ import annotations

import functools
import itertools
import os
import sys
import threading
import weakref
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator, TypeVar

from .backward_check import BackwardChecks
from .capture.ranks import DEFAULT_HANG_TIMEOUT, RankTracker
from .capture.marks import SequenceMarks
from .capture.mode import GuardMode
from .capture.quiet import QuietShapes
from .capture.steps import StepTrail
from .capture.recorder import Recorder
from .capture.scan import sequence_now
from .capture.sites import user_site
from .rules.context import RuleContext
from .errors import GraphGuardUsageError, GraphMisuseError
from .expectation import Expectation, describe_missing
from .capture.failsafe import PASSTHROUGH, failsafe
from .events import (BackwardDone, Clock, EmptyOptimizer, Event, GuardExit, ParamGroupAdded, Sink, StepCall,
                     StepDone)
from .install import (OptimizerWatch, SavedHooks, Undos, backward_wrappers, function_mode,
                      grad_mode_switches, hidden_from_dynamo, keep_dynamo_out, kept_watch, module_hooks,
                      optimizer_hooks, rank_hooks, saved_tensor_hooks, step_aside, step_back_in,
                      warnings_at_user_line)
from .model import Finding, RunRecord, Site, count_severities
from .engine import REARM_ITERATIONS, Engine  # noqa: F401 - REARM_ITERATIONS: documented here too
from .rules import ALL_RULES, Rule, check_codes, instantiate, superseded_by

__all__ = ["GraphGuard", "StepLimitReached", "active_guards"]

F = TypeVar("F", bound=Callable[..., Any])
_COUNTER = itertools.count()
# NOTE [skimmed iterations] (engine.py): in light mode, one window of iterations in this many is
# judged in full by the step-level rules; a window is two iterations per optimizer that steps.
SAMPLE_PERIOD = 8
# The only global mutable state: the stack of active guards (innermost last).
_ACTIVE: list["GraphGuard"] = []
_STACK_TARGET = 512 * 1024 * 1024

# NOTE [light mode without saved-tensor hooks]
# Installing saved-tensor hooks switches PyTorch's own version check off, so while they are on
# the guard's unpack hook must redo it, and the forward pays a C++ -> Python call per saved tensor
# (on an unrolled LSTMCell loop, 628 of them: ~13% of the step). Only the recorded iterations need
# the hooks (they name the op and line that saved each tensor). In light mode they are taken off:
# PyTorch checks versions itself again (never a silent wrong gradient), and before each backward
# the guard reads every saved value of the walked graph, which runs that same check in C++
# (~0.5 us per saved tensor, at backward time only); a changed one is adopted
# (capture/saved.SavedCheck) and GG005 reports it before PyTorch's error.


def active_guards() -> tuple["GraphGuard", ...]:
    """The guards currently entered, outermost first."""
    return tuple(_ACTIVE)


def _after_fork_in_child() -> None:
    """A forked child (a DataLoader worker) inherits the guards with the forking thread's mode and
    hooks, but they watch the parent: make them dormant there, so the child's ops are neither
    recorded nor judged (a finding raised in a worker would kill it; its report is never seen)."""
    for g in _ACTIVE:
        g._dormant = True
        g.rec.recording = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _raise_stack_limit() -> None:
    """Let the main thread's C stack grow, so that deep graphs can be destroyed (NOTE [touching
    nodes] in capture/graph.py). Linux grows the main stack on demand up to the soft limit."""
    if threading.current_thread() is not threading.main_thread() or not sys.platform.startswith("linux"):
        return
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
        if soft == resource.RLIM_INFINITY or soft >= _STACK_TARGET:
            return
        new = _STACK_TARGET if hard == resource.RLIM_INFINITY else min(hard, _STACK_TARGET)
        if new > soft:
            resource.setrlimit(resource.RLIMIT_STACK, (new, hard))
    except (ImportError, ValueError, OSError):
        pass


PRESTEP_ITERATIONS = 256  # backward-ended iterations recorded in full before an optimizer's first step


class StepLimitReached(SystemExit):
    """Raised out of ``optimizer.step()`` once ``max_steps`` steps are done: the program stops as
    if it had called ``sys.exit(0)`` (``graphguard run --max-steps N``, ``graphguard fix``)."""


class GraphGuard(BackwardChecks):
    """Watch autograd use inside a ``with`` block (or a decorated function) and report misuse.

    Args:
        mode: ``"raise"`` (default): a finding of severity error raises
            :class:`~graphguard.GraphMisuseError` before PyTorch's own error; warnings are emitted
            as :class:`~graphguard.GraphGuardWarning`. ``"warn"``: errors and warnings are emitted as
            warnings and PyTorch goes on. ``"collect"``: record silently in ``findings``.
        select: rule code prefixes to run (``["GG0"]``); default all.
        ignore: rule code prefixes to skip (``["GG103"]``).
        record_iterations: iterations recorded in full (creation lines, cuts) before the guard
            switches to its light mode, where only backward and step are checked. ``None``: always.
        max_walk: most graph nodes examined before one backward.
        max_steps: stop the program after this many optimizer steps (``StepLimitReached``, a
            ``SystemExit(0)`` raised out of the step); ``None`` (default): never.
        hang_timeout: under torch.distributed with two or more ranks, seconds one collective call
            may wait before the ranks' calls are compared (GG019). When they show a certain
            deadlock the finding is reported, the ``at_hang`` callbacks run and the process ends
            with status 1 instead of hanging. ``None`` or ``0``: never compare.

    Example::

        >>> with GraphGuard(mode="collect") as guard:
        ...     for x, y in loader:
        ...         ...
        >>> [f.code for f in guard.findings]
        ['GG001']

    .. warning:: On Linux the guard raises the main thread's soft stack limit (to 512 MiB at most),
       because destroying very deep autograd graphs whose nodes were inspected needs a deep C stack.
       Other threads keep their stack size: guarding a graph deeper than about 45,000 nodes in a
       thread other than the main one needs ``threading.stack_size(...)`` set before the thread
       starts.

    .. note:: The guard watches the thread that entered it, as PyTorch keeps function modes and
       saved-tensor hooks per thread: other threads' ops, backward calls and optimizer steps are
       not seen, and forked children (DataLoader workers) get a dormant copy.
    """

    passthrough_errors: tuple[type[BaseException], ...] = PASSTHROUGH
    # benchmarks/overhead.py's A/B of the light mode before issue 15: hooks kept on, no read
    _light_keeps_saved_hooks = False

    def __init__(self, mode: str = "raise", select: Iterable[str] | None = None,
                 ignore: Iterable[str] | None = None, record_iterations: int | None = 2,
                 max_walk: int = 1_000_000, max_steps: int | None = None,
                 hang_timeout: float | None = DEFAULT_HANG_TIMEOUT) -> None:
        if mode not in ("raise", "warn", "collect"):
            raise GraphGuardUsageError(f"unknown mode {mode!r}: use raise, warn or collect")
        self.mode = mode
        self.select = tuple(select) if select else ()
        self.ignore = tuple(ignore) if ignore else ()
        check_codes(self.select + self.ignore)
        self.record_iterations = record_iterations
        self.max_walk = max_walk
        self.max_steps = max_steps  # stop the program cleanly after this many optimizer steps
        if hang_timeout is not None and (not isinstance(hang_timeout, (int, float)) or hang_timeout < 0):
            raise GraphGuardUsageError(f"hang_timeout must be a number of seconds >= 0, not {hang_timeout!r}")
        self.hang_timeout = hang_timeout
        self._at_hang: list[Callable[[], None]] = []
        n = next(_COUNTER)
        self._stamp_key = f"graphguard.{n}.made"
        self._mark_key = f"graphguard.{n}.traversed"
        self._init_state()
        self._init_capture()

    def _init_state(self) -> None:
        """The run's state, before the guard is entered."""
        self._entered = False
        self._born_before = 0  # autograd sequence number at entry (set by __enter__)
        # The thread that entered the guard. Function modes and saved-tensor hooks are per thread,
        # but the backward wrappers and optimizer hooks are global: calls from other threads pass.
        self._owner = 0
        self._pending_boundary = False
        self._in_backward = False
        self._step_site: tuple[Any, Site] | None = None  # (optimizer, site) of the step under way
        # NOTE [skimmed iterations]: the iteration before which every iteration is judged in full
        # (a non-quiet backward pushes it on), the optimizers seen stepping (a window holds two
        # iterations per optimizer), and whether the step under way was skimmed at its start
        self._full_until = 0
        # NOTE [marks by sequence number] (capture/marks.py): the marks of light-mode backwards
        # that freed their graph, by range, and the number from which on nodes carry nothing
        # (None: every node is read, as while recording)
        self._seq_marks = SequenceMarks()
        self._fresh_from: int | None = None
        self._stepping: weakref.WeakSet = weakref.WeakSet()
        self._window_size = 2  # _window(): two iterations per optimizer in _stepping
        self._skimmed_step = False
        self._quiet = QuietShapes()  # graph shapes every rule judged clean (NOTE [quiet events])
        self._trail = StepTrail()  # every optimizer step, skimmed ones too (capture/steps.py)
        # every installer is entered here, its removal queued as soon as it is installed; a
        # failing removal is kept in _undo_errors (GG901) and the others still run
        self._undo_errors: list[BaseException] = []
        self._undo = Undos(self._undo_errors)
        self.clock = Clock()  # iteration and backward_calls, read by capture per op
        self.steps = 0

    def _init_capture(self) -> None:
        """The engine with the selected rules, the recorder it is fed by, the rules' context."""
        rules = instantiate(self.select, self.ignore)
        self.engine = Engine(self.mode, rules, self.clock, self.set_recording)
        # capture is handed what it reports to; it never sees the guard (docs/architecture.md)
        self.rec = Recorder(Sink(self.engine.dispatch, self.engine.internal_error, self._on_backward_from_mode),
                            self._stamp_key, self.clock)
        self._mode = GuardMode(self.rec)
        self._saved = SavedHooks(self.rec, self._internal_error, lambda: self._light_keeps_saved_hooks)
        self.ctx = RuleContext(self.rec, self.clock, self._stamp_key, self._mark_key,
                               lambda: self.engine.findings, lambda: self.steps, superseded_by(ALL_RULES),
                               self.engine.request_details, self._seq_marks, self._judge_through,
                               self._trail)
        self.engine.attach(self.rec, self.ctx)
        # each rank's collective calls, shared with the other ranks (GG019; capture/ranks.py)
        self._ranks = RankTracker(self._on_ranks_stalled, self._internal_error, self.hang_timeout)
        # which step-level events some rule still judges in a skimmed iteration
        self._skim_listens_done = self.engine.skim_listens(BackwardDone)
        self._skim_listens_step = self.engine.skim_listens(StepCall)
        self._skim_listens_end = self.engine.skim_listens(StepDone)

    # ---- results the engine keeps ----------------------------------------------------------------
    @property
    def findings(self) -> list[Finding]:
        """Every finding so far (repeats reported once), in the order found."""
        return self.engine.findings

    @findings.setter
    def findings(self, value: list[Finding]) -> None:
        self.engine.findings = value

    @property
    def expected(self) -> list[Finding]:
        """The findings an ``expect()`` block caught."""
        return self.engine.expected

    @property
    def _seen(self) -> set[tuple]:
        return self.engine.seen

    @property
    def _rules(self) -> list[Rule]:
        return self.engine.rules

    @property
    def _dormant(self) -> bool:
        return self.engine.dormant

    @_dormant.setter
    def _dormant(self, value: bool) -> None:
        self.engine.dormant = value

    @property
    def iteration(self) -> int:
        """Iterations ended so far (optimizer steps, ``guard.step()``, graph-freeing backwards)."""
        return self.clock.iteration

    @iteration.setter
    def iteration(self, value: int) -> None:
        self.clock.iteration = value

    @property
    def backward_calls(self) -> int:
        """Backward calls started so far."""
        return self.clock.backward_calls

    @backward_calls.setter
    def backward_calls(self, value: int) -> None:
        self.clock.backward_calls = value

    # ---- lifecycle ----------------------------------------------------------------------------
    def __enter__(self) -> "GraphGuard":
        if self._entered:
            raise GraphGuardUsageError("a GraphGuard cannot be entered twice; make a new one")
        self._entered = True
        self._owner = threading.get_ident()
        _raise_stack_limit()
        try:  # nodes made before this number were made before the guard (GG001's unmarked check)
            self._born_before = sequence_now()
        except Exception:
            self._born_before = 0  # no such number: that check never fires
        try:
            self._install()
        except Exception as err:
            # graphguard's own failure must not stop the user's program: run unwatched, say so
            self._uninstall()
            self._dormant = True
            self._internal_error(err, "installing the guard (nothing is watched)")
            return self
        except BaseException:
            self._uninstall()
            raise
        _ACTIVE.append(self)
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        try:
            if not isinstance(exc, GraphMisuseError):
                self._dispatch(GuardExit(user_site(1), exc), raising=False)
        except Exception as err:  # never mask the user's own exception
            self._internal_error(err, "closing the guard")
        finally:
            # Dormant first: a wrapper of ours that must stay installed (patched over by someone
            # else, or an outer guard exited before an inner one) then passes every call through.
            self._dormant = True
            self._uninstall()
            if self in _ACTIVE:
                _ACTIVE.remove(self)
        return False

    def __call__(self, fn: F) -> F:
        """Use as a decorator: each call of ``fn`` runs inside a fresh guard with these settings."""

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with GraphGuard(self.mode, self.select, self.ignore, self.record_iterations, self.max_walk,
                            self.max_steps, self.hang_timeout) as g:
                wrapper.guard = g  # type: ignore[attr-defined]
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    def step(self) -> None:
        """Mark the end of an iteration by hand (for loops without an optimizer)."""
        try:
            self._end_iteration(None)
        except Exception as err:  # graphguard's failure must not come out of the user's call
            self._internal_error(err, "ending an iteration")

    @contextmanager
    def expect(self, *codes: str) -> Iterator[Expectation]:
        """Declare that the block must produce findings of these rule codes (prefixes).

        For tests that check misuse is caught. Inside the block, findings of these codes are
        *expected*: they go to ``guard.expected`` and the returned ``Expectation.findings``, are never
        warned, and one of severity error raises :class:`~graphguard.GraphMisuseError` in every mode
        (the block stops at the misuse, before PyTorch's own error) which the block then swallows.
        Other findings behave as usual. Leaving the block without an expected finding raises
        ``AssertionError``; an unrelated exception from the block propagates unchanged.

        Example::

            >>> with GraphGuard(mode="collect") as guard:
            ...     with guard.expect("GG001") as caught:
            ...         train_with_stale_reference()
            >>> caught.findings[0].subject.name
            'reference'
        """
        if not codes:
            raise GraphGuardUsageError("expect() needs at least one rule code, e.g. expect('GG001')")
        check_codes(codes)
        exp = Expectation(tuple(c.upper() for c in codes))
        before = len(self.findings)
        self.engine.expectations.append(exp)
        try:
            yield exp
        except GraphMisuseError as err:
            if not exp.owns_all(err.findings):
                raise  # an unexpected error finding: the test must see it
        finally:
            self.engine.expectations.remove(exp)
        if not exp.findings:
            raise AssertionError(describe_missing(exp, self.findings[before:]))

    def _install(self) -> None:
        """Every installer entered in turn: a failure halfway leaves the earlier ones queued for
        `_uninstall`, which removes them (last installed, first removed)."""
        keep_dynamo_out()
        undo, errors, foreign = self._undo, self._undo_errors, self._foreign
        undo.install(function_mode(self._mode))
        undo.install(saved_tensor_hooks(self._saved, foreign, lambda: self._dormant, errors, self))
        undo.install(optimizer_hooks(OptimizerWatch(
            self.rec, foreign, self._internal_error, self._record_param_group, self._empty_optimizer,
            self._record_unpickled, self._step_pre_hook, self._step_post_hook), errors, self))
        # (looked up at each call: benchmarks/parts.py replaces the guard's _backward)
        undo.install(backward_wrappers(lambda api, orig, args, kwargs: self._backward(api, orig, args, kwargs),
                                       errors, self))
        undo.install(warnings_at_user_line(errors, self))
        undo.install(module_hooks(self.rec, foreign, self._internal_error, self._ranks, errors, self))
        undo.install(rank_hooks(self._ranks, foreign, errors))  # GG019
        # (a switch inside an optimizer's step, its own `_use_grad`, explains no cut: none is
        # recorded there; passed over at the price of one attribute read)
        rec = self.rec
        undo.install(grad_mode_switches(rec.grad_switches, lambda: rec.in_step or foreign(), errors,
                                        self))  # GG014, GG008
        undo.install(kept_watch(self.rec.kept, errors))  # GG101

    def _uninstall(self) -> None:
        self._undo.close()  # last installed, first undone
        errors = self._undo_errors[:]
        del self._undo_errors[:]  # (the list is shared with the installers)
        for err in errors:
            self._internal_error(err, "removing hooks")

    def set_recording(self, on: bool) -> None:
        """Switch full per-op recording on or off (off: the mode leaves the stack if on top)."""
        if on == self.rec.recording or not self._entered or self not in _ACTIVE:
            return
        self.rec.recording = on
        if on:
            step_back_in(self._mode)
        else:
            step_aside(self._mode)
            # nodes made while recording carry stamps: from here on, new nodes carry nothing
            self._fresh_from = sequence_now()
        self._saved.set(on)

    def _foreign(self) -> bool:
        """True in a thread other than the guard's, or in a forked child: not ours to watch."""
        return self.engine.dormant or threading.get_ident() != self._owner

    # ---- skimmed iterations (NOTE [skimmed iterations]) ------------------------------------------
    def _note_stepping(self, opt: Any) -> None:
        try:
            if opt not in self._stepping:
                self._stepping.add(opt)
                # counted here, not per call (a WeakSet's len() runs Python); an optimizer that
                # dies leaves its share until the next new one: a window judged a bit longer
                self._window_size = 2 * max(1, len(self._stepping))
        except TypeError:  # an optimizer that cannot be hashed or weakly referenced: one window
            pass

    def _window(self) -> int:
        """Iterations in one window judged in full: two per optimizer seen stepping, so that a
        rule following gradients sees each optimizer's step, its next backward and next step."""
        return self._window_size

    def _judge_through(self, iterations: int) -> None:
        """A rule asked that the next `iterations` iterations be judged in full."""
        self._full_until = max(self._full_until, self.iteration + iterations)

    def _skimming(self) -> bool:
        """Whether this iteration is skimmed (NOTE [skimmed iterations]): light mode, no recent
        non-quiet backward, and outside the sampled window of the current period."""
        it = self.clock.iteration
        if self.rec.recording or it < self._full_until:
            return False
        w = self._window_size
        return it % (w * SAMPLE_PERIOD) >= w

    # ---- optimizer -----------------------------------------------------------------------------
    def _record_unpickled(self, opt: Any) -> None:
        for group in getattr(opt, "param_groups", ()):
            params = list(group.get("params", ()))
            if params:
                self._record_param_group(opt, params)


    def _empty_optimizer(self, opt: Any) -> None:
        self._dispatch(EmptyOptimizer(user_site(1), opt))  # may raise GraphMisuseError

    def _record_param_group(self, opt: Any, params: list[Any]) -> None:
        self.rec.mark_optimized(params)
        self._quiet.clear()  # leaves judged before may be optimized now (GG011, GG009)
        self._dispatch(ParamGroupAdded(user_site(1), opt, params))

    @hidden_from_dynamo
    def _step_pre_hook(self, opt: Any, args: Any, kwargs: Any) -> Any:
        if self.rec.busy or self._foreign():
            return None
        if self._ranks.state is not None:
            self._ranks.note_step(user_site(1))
        # args holds the optimizer first, then step's own arguments
        closure = kwargs.get("closure", args[1] if len(args) > 1 else None)
        if callable(closure):
            return self._check_after_closure(opt, args, kwargs, closure)
        self._check_step(opt)
        return None

    def _check_after_closure(self, opt: Any, args: Any, kwargs: Any, closure: Any) -> Any:
        """`optimizer.step(closure)` (LBFGS, Lightning's automatic optimization): the closure runs
        the forward and backward inside step, so the step is checked after its first call, and
        the closure's ops are not the update's."""
        guard, checked = self, []

        def closure_then_check(*a: Any, **kw: Any) -> Any:
            guard.rec.in_step = False
            out = closure(*a, **kw)
            guard._pending_boundary = False  # this step ends the iteration, not the next backward
            if checked:
                guard.rec.in_step = True
            else:
                checked.append(True)
                guard._check_step(opt, closure=True)
            return out

        if "closure" in kwargs:
            return tuple(args), dict(kwargs, closure=closure_then_check)
        return (args[0], closure_then_check, *args[2:]), dict(kwargs)

    def _check_step(self, opt: Any, closure: bool = False) -> None:
        """Judge an optimizer step; `closure`: step(closure), checked after the closure's first
        call (rules that read gradients judge such a step once it is over)."""
        if not closure and not self._skim_listens_step and self._skimming():
            # a skimmed iteration: nobody judges this step (NOTE [skimmed iterations])
            self._skimmed_step = True
            self._step_site = None
            self.rec.in_step = True
            return
        self._skimmed_step = False
        self.rec.busy = True
        try:
            self._note_stepping(opt)
            self.rec.mark_optimizer_params(opt)
            event = StepCall(user_site(1), opt, closure=closure)
            # the post hook of this same step reuses the site (finding it costs ~10-30 us)
            self._step_site = (opt, event.site)
        except Exception as err:
            self._internal_error(err, "checking an optimizer step")
            event = None
        finally:
            self.rec.busy = False
        if event is not None:
            self._dispatch(event)
        self.rec.in_step = True

    @hidden_from_dynamo
    def _step_post_hook(self, opt: Any, args: Any, kwargs: Any) -> None:
        if self._foreign():
            return
        self.rec.in_step = False
        try:
            self._end_iteration(opt)
        except Exception as err:  # raised here it would come out of the user's optimizer.step()
            self._internal_error(err, "ending an iteration")
        if self.max_steps is not None and self.steps >= self.max_steps:
            raise StepLimitReached(0)

    def _end_iteration(self, opt: Any, by_backward: bool = False) -> None:
        skim, self._skimmed_step = self._skimmed_step and opt is not None, False
        self.clock.iteration += 1
        if not by_backward:
            self.steps += 1
            self._pending_boundary = False
            if opt is not None:
                self._trail.note(self.clock.iteration - 1, opt)
            pre, self._step_site = self._step_site, None
            try:
                if skim:  # its start was skimmed: the rules that judge every step's end only
                    if self._skim_listens_end:  # (they take no site: finding one costs 5-30 us)
                        self._dispatch(StepDone((), opt), raising=False, skim=True)
                else:
                    site = pre[1] if pre is not None and opt is not None and pre[0] is opt else user_site(1)
                    self._dispatch(StepDone(site, opt), raising=False)
            except Exception as err:
                self._internal_error(err, "ending an iteration")
        if (self.rec.recording and self.record_iterations is not None
                and self.iteration >= self.record_iterations
                and not self._still_rearmed() and not self._before_first_step(by_backward)):
            self.set_recording(False)

    def _before_first_step(self, by_backward: bool) -> bool:
        """An optimizer has parameters but has not stepped yet, and backwards end the iterations:
        several backwards of one training step (MAML's per-task `autograd.grad`, per-term
        backwards) are not yet the loop's iterations, so recording goes on until the first step
        (at most PRESTEP_ITERATIONS of them: an optimizer that never steps)."""
        return (by_backward and self.steps == 0 and len(self.rec.optimized) > 0
                and self.iteration < PRESTEP_ITERATIONS)

    def _still_rearmed(self) -> bool:
        return self.engine.still_rearmed()

    # ---- judging: the engine ----------------------------------------------------------------------
    def _dispatch(self, event: Event, raising: bool = True, quiet: bool = False,
                  skim: bool = False) -> None:
        self.engine.dispatch(event, raising, quiet, skim)

    def _internal_error(self, err: BaseException, doing: str) -> None:
        self.engine.internal_error(err, doing)

    def at_hang(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` (no arguments) when GG019 has found the ranks deadlocked, before the
        process ends: the place to write a report. Called from the guard's watchdog thread."""
        self._at_hang.append(fn)

    def _on_ranks_stalled(self, event: Event) -> None:
        """The watchdog thread: the ranks are deadlocked (capture/ranks.py). Judge it (GG019 is
        recorded, and warned unless collecting), let the run write its reports, and end this
        process: its main thread waits inside a collective that will never return."""
        try:
            self._dispatch(event, raising=False)
        except Exception as err:
            self._internal_error(err, "judging the ranks' collective calls")
        for fn in list(self._at_hang):
            failsafe(self._internal_error, "writing the report of a hung rank", fn)
        # the other ranks report where they wait before this one's exit closes its connections
        failsafe(self._internal_error, "waiting for the other ranks' reports", self._ranks.wait_for_the_others)
        try:
            sys.stderr.write(f"graphguard: rank {event.me.rank}: the ranks are deadlocked "  # type: ignore[attr-defined]
                             "(GG019); ending this process with status 1\n")
            sys.stderr.flush()
            sys.stdout.flush()
        except Exception:
            pass
        os._exit(1)

    # ---- results --------------------------------------------------------------------------------
    def report(self, target: str | None = None, status: str = "ok",
               exception: BaseException | None = None) -> dict[str, Any]:
        """The JSON report (REPORT.md, schema_version 1) of this guard's findings."""
        from .report.json_report import build_report

        return build_report(self.findings, self.run_record(), target=target, status=status,
                            exception=exception)

    def run_record(self) -> RunRecord:
        """What this run did besides its findings (the reports' `run` block)."""
        return RunRecord(self.iteration, self.backward_calls)

    def write_report(self, report_dir: str = "graphguard-report", diagrams: bool = True,
                     target: str | None = None) -> str:
        """Write the HTML report (and each finding's diagram) to ``report_dir``; return the path
        of ``index.html``. Diagrams are DOT files, plus SVG when Graphviz (or graphviz-pure) is
        installed.

        Example::

            >>> guard.write_report("graphguard-report")
            'graphguard-report/index.html'
        """
        from .report.html import write_html

        if diagrams:
            from .report.diagrams import write_diagrams

            write_diagrams(self.findings, report_dir)
        return write_html(self.report(target=target), report_dir)

    def _repr_html_(self) -> str:
        """Jupyter: the findings with their diagrams; never raises."""
        try:
            from .report.html import guard_html

            return guard_html(self.findings, repr(self))
        except Exception as err:  # a display must never break the notebook
            import html

            return (f"<pre>GraphGuard: {len(self.findings)} finding(s) (display failed: "
                    f"{html.escape(type(err).__name__)})</pre>")

    def summary(self) -> str:
        """The text report a person reads: every finding, worst first."""
        from .report.text import render_findings

        return render_findings(self.findings)

    def __repr__(self) -> str:
        counts = count_severities(f.severity for f in self.findings)
        return (f"GraphGuard(mode={self.mode!r}, iterations={self.iteration}, "
                f"findings={len(self.findings)} {counts})")
