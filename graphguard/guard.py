"""GraphGuard: the context manager that installs the capture hooks and turns events into findings."""
from __future__ import annotations

import functools
import gc
import itertools
import os
import sys
import threading
import warnings
import weakref
from contextlib import ExitStack, contextmanager
from typing import Any, Callable, Iterable, Iterator, TypeVar

import torch
from torch.optim.optimizer import (register_optimizer_step_post_hook,
                                   register_optimizer_step_pre_hook)

from .capture.backward import bind_backward, materialize_iterators, plain_tensor_backward
from .capture.checkpoint import install_checkpoint_hook
from .capture.ddp import install_ddp_hook, open_windows
from .capture.ranks import DEFAULT_HANG_TIMEOUT, RankTracker, install_collective_hooks
from .capture.marks import SequenceMarks
from .capture.gradmode import switch_wrappers
from .capture.mode import FAST_PATH_MODULES, GuardMode, fast_path_call, saved_hooks_enter
from .capture.quiet import QuietShapes
from .capture.steps import StepTrail
from .capture.recorder import Recorder
from .capture.saved import SavedCheck
from .capture.scan import lean_scan, scan_graph, sequence_now
from .capture.state import Mark
from .capture.sites import PACKAGE_DIR, user_site, user_stacklevel
from .rules.context import RuleContext
from .errors import GraphGuardUsageError, GraphMisuseError
from .expectation import Expectation, describe_missing
from .capture.failsafe import PASSTHROUGH, failsafe
from .events import (AutogradError, BackwardCall, BackwardDone, Clock, EmptyOptimizer, Event, GuardExit, ParamGroupAdded, Sink, StepCall,
                     StepDone)
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


def _user_stacklevel() -> int:
    """The warnings stacklevel that points at the first user frame above graphguard and torch."""
    return user_stacklevel(sys._getframe(2))  # 1 is our caller's warn() call site


def _showwarning_at_user_line(orig: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap warnings.showwarning so that a warning torch raises from inside the mode (it points at
    graphguard's frame, since that is the innermost Python frame) is shown at the user's line."""
    own = PACKAGE_DIR

    def showwarning(message: Any, category: Any, filename: str, lineno: int, *args: Any, **kw: Any) -> Any:
        if filename.startswith(own):
            try:
                site = user_site(1, 1)
            except Exception:  # showing the warning where it was raised is good enough
                site = ()
            if site:
                filename, lineno = site[0].file, site[0].line
        return orig(message, category, filename, lineno, *args, **kw)

    return showwarning


def _skip_exited(fn: Any) -> Any:
    """`fn` without the wrappers of guards that have exited: when nested guards exit out of order,
    restoring the inner guard's saved original would otherwise reinstall the outer one's wrapper."""
    while True:
        g = getattr(fn, "__graphguard_guard__", None)
        if g is None or not g._dormant:
            return fn
        fn = fn.__graphguard_original__


def _hidden_from_dynamo(fn: F) -> F:
    """Make torch.compile run `fn` eagerly instead of tracing it. A compiled training step calls
    backward and optimizer.step, so Dynamo would trace graphguard's bookkeeping: it breaks the
    graph at sys._getframe and can replay side effects, counting a backward or a step twice.
    Dynamo is never imported for this (seconds): while it is not loaded, nothing is compiled."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if "torch._dynamo" not in sys.modules:
            return fn(*args, **kwargs)
        if _DYNAMO_SKIPS_ADDED and _GET_CALLBACK is not None and _GET_CALLBACK() is None:
            # Dynamo is loaded but no compiled region is running (its frame callback is unset):
            # nothing can be traced, so no need to pay for disable()'s context at every call.
            # (Only once graphguard's modules are skipped: Dynamo must never trace this check.)
            return fn(*args, **kwargs)
        hidden = call.__dict__.get("_graphguard_hidden")
        if hidden is None:
            import torch._dynamo

            hidden = call.__dict__["_graphguard_hidden"] = torch._dynamo.disable(fn, recursive=True)
        return hidden(*args, **kwargs)

    return call  # type: ignore[return-value]


_DYNAMO_SKIPS_ADDED = False
_NOT_LEAN = object()  # _lean_backward's answer when the full path must run (NOTE [lean backwards])
_is_compiling = torch.compiler.is_compiling


# Dynamo's frame callback getter (the callback is None outside compiled code); a torch without
# it leaves this None, and every call is then hidden
_GET_CALLBACK = getattr(getattr(getattr(torch._C, "_dynamo", None), "eval_frame", None),
                        "get_eval_frame_callback", None)


def _keep_dynamo_out() -> None:
    """Tell torch.compile never to compile graphguard's own frames. Eager code that a compiled
    function falls back to after a graph break runs under Dynamo's frame hook, which would
    otherwise compile the recorder's and the rules' functions too (graph breaks at sys._getframe,
    recompilations, warnings). The mode stays traceable: Dynamo inlines active modes, and the mode
    steps aside while compiling (capture/mode.py). Done once, when Dynamo is loaded: graphguard
    never imports it (seconds) on its own."""
    global _DYNAMO_SKIPS_ADDED
    if _DYNAMO_SKIPS_ADDED or "torch._dynamo" not in sys.modules:
        return
    _DYNAMO_SKIPS_ADDED = True
    try:
        from torch._dynamo import trace_rules

        names, paths = [], []
        for name, mod in list(sys.modules.items()):
            path = getattr(mod, "__file__", None) or ""
            # packages would add their whole directory, mode.py included: modules only
            if (name.startswith("graphguard.") and name != "graphguard.capture.mode"
                    and path.endswith(".py") and not path.endswith("__init__.py")):
                names.append(name)
                paths.append(path)
        skip_dirs = getattr(trace_rules, "SKIP_DIRS", None)
        recompile = getattr(trace_rules, "_recompile_re", None)
        if isinstance(skip_dirs, list) and callable(recompile):
            # what trace_rules.add does per module, once for all: add() rebuilds the skip regex
            # at every call (~5 ms each, half a second for graphguard's modules at guard entry)
            skip_dirs.extend(p for p in paths if p not in skip_dirs)
            recompile()
        else:
            for name in names:
                trace_rules.add(name)
    except Exception:  # an older or newer Dynamo without trace_rules.add: compile still works
        pass


def _listed_params(param_group: Any) -> dict:
    """The param group with its `params` as a list (what add_param_group will make of them)."""
    params = param_group.get("params") if isinstance(param_group, dict) else None
    params = [params] if isinstance(params, torch.Tensor) else list(params or [])
    return dict(param_group, params=params)


PRESTEP_ITERATIONS = 256  # backward-ended iterations recorded in full before an optimizer's first step


def _listed_arg(params: Any) -> Any:
    """An optimizer's `params` argument as a list (what its constructor makes of it); a tensor
    or anything not iterable is handed on untouched (None), for PyTorch's own error."""
    if isinstance(params, torch.Tensor) or not hasattr(params, "__iter__"):
        return None
    return params if isinstance(params, list) else list(params)


class StepLimitReached(SystemExit):
    """Raised out of ``optimizer.step()`` once ``max_steps`` steps are done: the program stops as
    if it had called ``sys.exit(0)`` (``graphguard run --max-steps N``, ``graphguard fix``)."""


class GraphGuard:
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
        # every installed hook is a handle whose undo is pushed here as soon as it is installed
        self._undo = ExitStack()
        self._undo_errors: list[BaseException] = []
        self.clock = Clock()  # iteration and backward_calls, read by capture per op
        self.steps = 0
        rules = instantiate(self.select, self.ignore)
        self.engine = Engine(mode, rules, self.clock, self.set_recording)
        # capture is handed what it reports to; it never sees the guard (docs/architecture.md)
        self.rec = Recorder(Sink(self.engine.dispatch, self.engine.internal_error, self._on_backward_from_mode),
                            self._stamp_key, self.clock)
        self._mode = GuardMode(self.rec)
        self.ctx = RuleContext(self.rec, self.clock, self._stamp_key, self._mark_key,
                               lambda: self.engine.findings, lambda: self.steps, superseded_by(ALL_RULES),
                               self.engine.request_details, self._seq_marks, self._judge_through,
                               self._trail)
        self.engine.attach(self.rec, self.ctx)
        # each rank's collective calls, shared with the other ranks (GG019; capture/ranks.py)
        self._ranks = RankTracker(self._on_ranks_stalled, self._internal_error, hang_timeout)
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
        _keep_dynamo_out()
        torch._C._push_on_torch_function_stack(self._mode)
        self._on_exit(self._remove_mode)
        self._push_saved_hooks()
        # each undo is queued as soon as its step is done: a failure halfway leaves nothing behind
        self._on_exit(register_optimizer_step_pre_hook(self._step_pre_hook).remove)
        self._on_exit(register_optimizer_step_post_hook(self._step_post_hook).remove)
        self._patch(torch.autograd, "backward", self._wrap_backward(torch.autograd.backward, "backward"))
        self._patch(torch.autograd, "grad", self._wrap_backward(torch.autograd.grad, "grad"))
        self._patch(warnings, "showwarning", _showwarning_at_user_line(warnings.showwarning))
        orig_add = torch.optim.Optimizer.add_param_group
        self._patch(torch.optim.Optimizer, "add_param_group", self._wrap_add_param_group(orig_add))
        orig_init = torch.optim.Optimizer.__init__
        self._patch(torch.optim.Optimizer, "__init__", self._wrap_optimizer_init(orig_init))
        orig_setstate = torch.optim.Optimizer.__setstate__
        self._patch(torch.optim.Optimizer, "__setstate__", self._wrap_optimizer_setstate(orig_setstate))
        self._patch(torch.nn.Parameter, "__new__", self._wrap_parameter_new(torch.nn.Parameter.__new__))
        self._on_exit(install_checkpoint_hook(self.rec, self._foreign))  # GG015
        self._on_exit(self._ranks.close)  # the other ranks learn that this one has finished
        self._on_exit(install_ddp_hook(self.rec, self._foreign, self._ranks))  # GG017, GG018
        self._on_exit(install_collective_hooks(self._ranks, self._foreign))  # GG019
        for name in FAST_PATH_MODULES:  # NOTE [fast paths see no mode] (capture/mode.py)
            cls = getattr(torch.nn, name)
            self._patch(cls, "__call__", fast_path_call(cls, self.rec, self._foreign))
        graph_mod = torch.autograd.graph
        hooks_cls = graph_mod.saved_tensors_hooks  # NOTE [saved values behind other hooks]
        self._patch(hooks_cls, "__enter__", saved_hooks_enter(hooks_cls.__enter__, self.rec))
        self._patch(graph_mod, "disable_saved_tensors_hooks",
                    self._wrap_disable_saved_hooks(graph_mod.disable_saved_tensors_hooks))
        for owner, name, wrapper in switch_wrappers(self.rec.grad_switches, self._foreign):
            self._patch(owner, name, wrapper)  # who turns autograd off (GG014, GG008)

    def _patch(self, owner: Any, name: str, new: Any) -> None:
        own = name in owner.__dict__
        old = owner.__dict__[name] if own else getattr(owner, name)
        new.__graphguard_guard__ = self
        new.__graphguard_original__ = old
        # a class attribute that was inherited (a fast-path module's __call__): undone by
        # deleting ours, not by copying the base class's into the class (also under another
        # guard's wrapper, which may have exited first)
        inherited = (getattr(old, "__graphguard_inherited__", False) if hasattr(old, "__graphguard_guard__")
                     else not own and isinstance(owner, type))
        new.__graphguard_inherited__ = inherited
        setattr(owner, name, new)

        def undo() -> None:
            # Restore only our own patch: a later patch by someone else is theirs to undo (ours
            # then passes through, since an exited guard is dormant).
            if owner.__dict__.get(name) is new:
                back = _skip_exited(old)
                if inherited and not hasattr(back, "__graphguard_guard__"):
                    delattr(owner, name)
                else:
                    setattr(owner, name, back)

        self._on_exit(undo)

    def _push_saved_hooks(self) -> None:
        try:
            torch._C._autograd._push_saved_tensors_default_hooks(self.rec.pack, self.rec.unpack)
        except RuntimeError as err:
            # inside torch.autograd.graph.disable_saved_tensors_hooks: watch without them (the
            # backward check reads PyTorch's own version check instead)
            self._internal_error(err, "installing the saved-tensor hooks (saved-op names are off)")
            return
        self.rec.saved_hooks_on = True
        self._on_exit(self._pop_saved_hooks)

    def _set_saved_hooks(self, on: bool) -> None:
        """Light mode takes the saved-tensor hooks off (NOTE [light mode without saved-tensor
        hooks]); recording puts them back, only when no other hooks are on the stack (only the
        top pair is called: ours would shadow the user's or another guard's, and below them ours
        are never called anyway; the backward check covers both cases)."""
        if on == self.rec.saved_hooks_on or (not on and self._light_keeps_saved_hooks):
            return
        autograd = torch._C._autograd
        if on:
            if autograd._top_saved_tensors_default_hooks(True) is not None:
                return
            try:
                autograd._push_saved_tensors_default_hooks(self.rec.pack, self.rec.unpack)
            except RuntimeError:  # inside disable_saved_tensors_hooks: stay without
                return
            self.rec.saved_hooks_on = True
        else:
            self._pop_saved_hooks()
            self.rec.saved_hooks_on = False

    def _wrap_disable_saved_hooks(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        """`torch.autograd.graph.disable_saved_tensors_hooks` that first takes the guard's own
        saved-tensor hooks off. torch.func's grad, vjp, jacrev and hessian enter it and raise
        when any hooks are on the stack, so a correct program would crash only because it runs
        under the guard. Inside, saved tensors are not named (PyTorch's own version check and the
        backward check still run); on the way out the hooks go back if the guard still wants
        them (the recording may have ended inside). The body is not watched either: torch.func
        runs its own torch.autograd.grad on wrapped tensors whose storage cannot be read, and
        what it computes is functional; the backward of the result, outside, is checked."""
        guard = self

        @contextmanager
        def disable_saved_tensors_hooks(error_message: str) -> Iterator[None]:
            rec = guard.rec
            if guard._foreign():
                with orig(error_message):
                    yield
                return
            lifted = rec.saved_hooks_on
            if lifted:
                guard._pop_saved_hooks()
                rec.saved_hooks_on = False
            busy, rec.busy = rec.busy, True
            try:
                with orig(error_message):
                    yield
            finally:
                rec.busy = busy
                if lifted and not guard._dormant:
                    guard._set_saved_hooks(rec.recording or guard._light_keeps_saved_hooks)

        functools.update_wrapper(disable_saved_tensors_hooks, orig)
        return disable_saved_tensors_hooks

    def _other_saved_hooks(self) -> bool:
        """Whether saved-tensor hooks other than ours may have packed the values of the nodes
        made since the last backward (NOTE [saved values behind other hooks])."""
        if self.rec.foreign_hooks_entered:
            return True
        top = torch._C._autograd._top_saved_tensors_default_hooks(True)
        return top is not None and top[0] != self.rec.pack

    def _pop_saved_hooks(self) -> None:
        """Take our saved-tensor hooks off their stack, wherever they are, keeping the others in
        order (a nested guard or the user's own hooks may have been pushed after ours and still be
        active when we exit)."""
        autograd = torch._C._autograd
        above = []
        while True:
            top = autograd._top_saved_tensors_default_hooks(True)
            if top is None:  # not there any more: put the others back
                break
            autograd._pop_saved_tensors_default_hooks()
            if top[0] == self.rec.pack:
                break
            above.append(top)
        for pack, unpack in reversed(above):
            autograd._push_saved_tensors_default_hooks(pack, unpack)

    def _on_exit(self, undo: Callable[[], None]) -> None:
        """Queue `undo` on the guard's ExitStack; a failing undo is kept, the others still run."""
        def run() -> None:
            try:
                undo()
            except Exception as err:  # keep undoing the rest
                self._undo_errors.append(err)

        self._undo.callback(run)

    def _uninstall(self) -> None:
        self._undo.close()  # last installed, first undone
        errors, self._undo_errors = self._undo_errors, []
        for err in errors:
            self._internal_error(err, "removing hooks")

    def _mode_index(self) -> int:
        n = torch._C._len_torch_function_stack()
        for i in range(n - 1, -1, -1):
            if torch._C._get_function_stack_at(i) is self._mode:
                return i
        return -1

    def _inside_own_mode(self) -> bool:
        """True while our mode's __torch_function__ runs (a backward or loss call seen by the mode).
        torch pops a mode for the duration of its handler and pushes it back afterwards, so it is
        missing from the stack now: pushing it here would leave it on the stack twice. Only called
        when recording switches back on (rare), so walking the frames is cheap enough."""
        code = type(self._mode).__torch_function__.__code__
        f: Any = sys._getframe(1)
        while f is not None:
            if f.f_code is code and f.f_locals.get("self") is self._mode:
                return True
            f = f.f_back
        return False

    def _remove_mode(self) -> None:
        """Take our mode off the function-mode stack, wherever it is, keeping the others."""
        i = self._mode_index()
        if i < 0:
            return
        above = []
        while torch._C._len_torch_function_stack() > i + 1:
            above.append(torch._C._pop_torch_function_stack())
        torch._C._pop_torch_function_stack()
        for m in reversed(above):
            torch._C._push_on_torch_function_stack(m)

    def set_recording(self, on: bool) -> None:
        """Switch full per-op recording on or off (off: the mode leaves the stack if on top)."""
        if on == self.rec.recording or not self._entered or self not in _ACTIVE:
            return
        self.rec.recording = on
        if on:
            if self._mode_index() < 0 and not self._inside_own_mode():
                torch._C._push_on_torch_function_stack(self._mode)
        else:
            n = torch._C._len_torch_function_stack()
            if n and torch._C._get_function_stack_at(n - 1) is self._mode:
                torch._C._pop_torch_function_stack()
            # nodes made while recording carry stamps: from here on, new nodes carry nothing
            self._fresh_from = sequence_now()
        self._set_saved_hooks(on)

    # ---- backward ------------------------------------------------------------------------------
    def _wrap_backward(self, orig: Callable[..., Any], api: str) -> Callable[..., Any]:
        guard = self

        @functools.wraps(orig)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return guard._backward(api, orig, args, kwargs)

        wrapper.__graphguard_original__ = orig  # type: ignore[attr-defined]
        return wrapper

    def _on_backward_from_mode(self, func: Any, args: tuple, kwargs: dict) -> Any:
        api = "grad" if getattr(func, "__name__", "") == "grad" else "backward"
        return self._backward(api, func, args, kwargs)

    def _foreign(self) -> bool:
        """True in a thread other than the guard's, or in a forked child: not ours to watch."""
        return self.engine.dormant or threading.get_ident() != self._owner

    @_hidden_from_dynamo
    def _backward(self, api: str, orig: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        ranks = self._ranks
        if (ranks.state is not None and api == "backward" and not self._in_backward
                and not self._foreign() and any(w.sync for w in open_windows(self.rec))):
            # DDP all-reduces inside this backward: a collective call of this rank (GG019)
            with ranks.blocking("backward", user_site(2)):
                return self._watched_backward(api, orig, args, kwargs)
        return self._watched_backward(api, orig, args, kwargs)

    @_hidden_from_dynamo
    def _watched_backward(self, api: str, orig: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        if self._in_backward or self.rec.busy or self._foreign() or _is_compiling():
            # (compiling: AOTAutograd tracing a compiled region's backward, not the user's)
            return orig(*args, **kwargs)
        # a generator passed as `inputs` (`model.parameters()`) is read once: by the real call
        plain_call = plain_tensor_backward(args, kwargs)  # `loss.backward()`: nothing to read once
        if not plain_call:
            args, kwargs = materialize_iterators(args, kwargs)
        call = None
        if not _DYNAMO_SKIPS_ADDED:
            _keep_dynamo_out()  # Dynamo may have been loaded since __enter__ (torch.compile)
        if plain_call and api == "backward":
            result = self._lean_backward(orig, args, kwargs)
            if result is not _NOT_LEAN:
                return result
        # The scan makes a Python wrapper per graph node and the rules build per-node data: on a
        # 100,000-node graph the collector ran again and again over all of them (a pre-backward
        # check 2-3x slower). Our own bursts allocate no cycles: pause it, restore it after.
        gc_paused = gc.isenabled()
        if gc_paused:
            gc.disable()
        try:
            self.rec.busy = True
            plain = quiet = skim = False
            try:
                call = self._prepare_backward(api, orig, args, kwargs, plain_call)
                if not self.rec.recording:
                    # light mode: a plain call on a graph shape already judged (NOTE [quiet events])
                    if self._quiet.plain(call, bool(self.rec.packs)):
                        plain = True
                        quiet = self._quiet.judged(call)
                    if quiet:
                        skim = self._skimming()
                    else:  # something new: this window is judged in full (NOTE [skimmed iterations])
                        self._judge_through(self._window())
            except Exception as err:
                self._internal_error(err, "checking a backward call")
            finally:
                self.rec.busy = False
            findings = self.engine.findings
            reported = len(findings)
            marked = False
            if call is not None:
                # may raise GraphMisuseError: before PyTorch, before any .grad
                self._dispatch(call, quiet=quiet, skim=skim)
                if plain and not quiet and len(findings) == reported:
                    self._quiet.remember(call)  # every rule judged this shape: nothing found
                try:
                    marked = self._mark_before(call)
                except PASSTHROUGH:
                    raise
                except Exception as err:
                    self._internal_error(err, "recording a backward call")
            reported = (sum(1 for f in findings[reported:] if f.severity == "error")
                        if len(findings) > reported else 0)
        finally:
            if gc_paused:
                gc.enable()
        self._in_backward = True
        try:
            result = orig(*args, **kwargs)
        except BaseException as err:
            self._in_backward = False
            if marked:  # this backward did not run through the graph after all
                failsafe(self._internal_error, "recording a backward call", self._unmark, call)
            if call is not None and isinstance(err, RuntimeError):
                # PyTorch raised: graphguard's account first (GG903 & co)
                self._explain_backward_error(call, err, reported)
            raise
        finally:
            self._in_backward = False
        if call is not None and skim and not self._skim_listens_done:
            # a skimmed iteration: no rule judges the backward's end (NOTE [skimmed iterations])
            if not call.retain_graph:
                self._pending_boundary = True
            call.scan = None
        elif call is not None:
            self.rec.busy = True
            gc_paused = gc.isenabled()
            if gc_paused:
                gc.disable()  # as above: marking every node allocates per node
            try:
                self._after_backward(call)
            except Exception as err:
                self._internal_error(err, "recording a backward call")
            finally:
                self.rec.busy = False
                call.scan = None  # drop the node wrappers now
                if gc_paused:
                    gc.enable()
        return result

    # NOTE [lean backwards]
    # In a skimmed iteration (NOTE [skimmed iterations]) no rule judges a quiet backward (NOTE
    # [quiet events]): what is left to do is to make sure it is quiet, and to leave its marks.
    # A plain `loss.backward()` there takes this path: one walk that reads the fresh nodes'
    # saved values and gives up at the first thing unusual (capture/scan.lean_scan), the shape
    # test, the marks; no event, no per-node lists, no dispatch. In the steady state of a small
    # step the full path's objects and calls, each cheap, cost more than the walk itself: they are
    # touched right after the forward has flushed the caches. Anything else, or anything the walk
    # gives up on, takes the full path, which walks again and every rule judges the call.
    def _lean_backward(self, orig: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """Run a plain `loss.backward()` (args as plain_tensor_backward accepts them) the lean
        way, or return _NOT_LEAN for the full path."""
        rec = self.rec
        root = args[0]
        fn = root.grad_fn
        if (fn is None or args[2] or args[3] or rec.recording or rec.saved_hooks_on
                or self._fresh_from is None or self.steps == 0 or rec.packs
                or not self._skimming() or root.numel() != 1 or self._other_saved_hooks()):
            # (steps == 0: backwards end the iterations, which the full path does)
            return _NOT_LEAN
        gc_paused = gc.isenabled()
        if gc_paused:
            gc.disable()  # as in _backward: a large graph's node wrappers are made here
        try:
            rec.busy = True
            lean = lean_scan(fn, self.max_walk, self._fresh_from)
            if lean is None or not self._quiet.judged_shape(lean.types, lean.leaves):
                return _NOT_LEAN
            clock, key = self.clock, self._mark_key
            site = user_site(3)  # (from above _backward and its dynamo wrapper, as the full path)
            index = clock.backward_calls
            mark = Mark(index, clock.iteration, site, False)
            leaf_md = lean.leaf_md
            before = [md.get(key) for md in leaf_md]
            if lean.lo >= 0:
                self._seq_marks.add(lean.lo, lean.hi, mark)
            rec.backward_roots.add(index, [fn], root)
            for md in leaf_md:
                md[key] = mark
            self._fresh_from = lean.counter
            clock.backward_calls = index + 1
        except Exception as err:
            self._internal_error(err, "checking a backward call")
            return _NOT_LEAN
        finally:
            rec.busy = False
            if gc_paused:
                gc.enable()
        del lean
        self._in_backward = True
        try:
            result = orig(*args, **kwargs)
        except BaseException as err:
            self._in_backward = False
            failsafe(self._internal_error, "recording a backward call", self._lean_unmark,
                     mark, leaf_md, before)
            if isinstance(err, RuntimeError):
                self._explain_lean_error(orig, args, kwargs, site, index, err)
            raise
        finally:
            self._in_backward = False
        self._pending_boundary = True  # a graph-freeing backward
        return result

    def _lean_unmark(self, mark: Mark, leaf_md: list[dict], before: list[Mark | None]) -> None:
        """A lean backward raised: take its marks back, as _unmark does for the full path."""
        self._seq_marks.drop(mark)
        key = self._mark_key
        for md, old in zip(leaf_md, before):
            if old is None:
                md.pop(key, None)
            else:
                md[key] = old

    def _explain_lean_error(self, orig: Any, args: tuple, kwargs: dict, site: Site, index: int,
                            err: RuntimeError) -> None:
        """PyTorch raised in a lean backward (rare: the walk found nothing unusual): the rules
        explain it on a full scan of the graph as it is now."""
        call = None
        self.rec.busy = True
        try:
            roots, grads, inputs, retain, create = bind_backward("backward", orig, args, kwargs, True)
            with torch._C.DisableTorchFunction():
                scan = scan_graph(roots, self._stamp_key, self._mark_key, self.max_walk)
            call = BackwardCall(site, "backward", roots, grads, retain, create, inputs, scan,
                                index, self.clock.iteration)
        except Exception as exc:
            self._internal_error(exc, "explaining an error")
        finally:
            self.rec.busy = False
        if call is not None:
            self._explain_backward_error(call, err, 0)

    def _explain_backward_error(self, call: BackwardCall, err: RuntimeError, reported: int) -> None:
        """PyTorch raised inside a guarded backward: the rules explain it after the fact (in
        raise mode the account comes out as GraphMisuseError, chained to PyTorch's error)."""
        event = None
        self.rec.busy = True
        try:
            event = AutogradError(call.site, "backward", call.api, err, list(call.roots), call, reported)
        except Exception as exc:
            self._internal_error(exc, "explaining an error")
        finally:
            self.rec.busy = False
        if event is not None:
            self._dispatch(event)

    def _prepare_backward(self, api: str, orig: Any, args: tuple, kwargs: dict,
                          plain_call: bool | None = None) -> BackwardCall:
        roots, grads, inputs, retain, create = bind_backward(api, orig, args, kwargs, plain_call)
        if not retain and self._pending_boundary and self.steps == 0:
            # no optimizer seen: each graph-freeing backward closes an iteration (DESIGN.md)
            self._end_iteration(None, by_backward=True)
        if inputs:
            self.rec.mark_used(inputs)
        # light mode: PyTorch's own version check, read before PyTorch runs (GG005), by the
        # scan as it walks (capture/saved.SavedCheck)
        check = None if self.rec.saved_hooks_on else SavedCheck(self.rec.unpack, self.rec.adopt,
                                                                 self._other_saved_hooks())
        self.rec.foreign_hooks_entered = False  # the next backward's fresh nodes start here
        with torch._C.DisableTorchFunction():
            if self.rec.recording or self._fresh_from is None:
                scan = scan_graph(roots, self._stamp_key, self._mark_key, self.max_walk, saved=check)
            else:  # light mode: nodes made since the last backward are not read for marks
                scan = scan_graph(roots, self._stamp_key, self._mark_key, self.max_walk,
                                  self._fresh_from, self._seq_marks, check)
            if check is not None:
                hit = check.freed_at  # a node no guarded backward freed: GG001's crash to come
            else:
                # a graph part made before the guard that a backward outside it already consumed
                # (freed and never marked); the nodes a recorded op made are not read
                hit = scan.find_unmarked_freed(self._born_before)
        if scan.function_inputs:
            self.rec.mark_used(scan.function_inputs)  # needed by a custom Function (GG103)
        if hit >= 0:
            scan.unmarked_freed = (hit, scan.old_top(hit, self._born_before))
        # (the walk for the site starts above _backward and its dynamo wrapper: graphguard's own)
        call = BackwardCall(user_site(3), api, roots, grads, retain, create, inputs, scan,
                            self.clock.backward_calls, self.clock.iteration)
        self.clock.backward_calls += 1
        return call

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

    def _after_backward(self, call: BackwardCall) -> None:
        self._dispatch(BackwardDone(call.site, call), raising=False)
        if not call.retain_graph:
            self._pending_boundary = True

    # NOTE [marks before the backward]
    # The marks are written once the rules have judged the call, just before PyTorch runs: the
    # walk has just touched every node, so the writes hit warm caches (after the backward they
    # came after PyTorch's kernels had flushed them: 2-4x the cost, ~100 us on the small
    # transformer's 156 nodes). If the backward does not complete, they are taken back.
    def _mark_before(self, call: BackwardCall) -> bool:
        it = self.clock.iteration
        if call.retain_graph and self._pending_boundary and self.steps == 0:
            # No optimizer yet and an earlier backward freed its graph: a boundary is pending, and
            # whatever comes next (a freeing backward or a step) closes it. A retained backward
            # here (R1 penalty in a gradient-accumulation micro-batch) belongs to the next iteration.
            it += 1
        self._mark_nodes(call, Mark(call.index, it, call.site, call.retain_graph))
        walk = call.scan.walk
        self.rec.backward_roots.add(call.index, walk.nodes[:walk.roots],
                                    call.roots[0] if call.roots else None)
        return True

    def _mark_nodes(self, call: BackwardCall, mark: Mark) -> None:
        """Every walked node remembers this backward (GG001/GG003/GG004/GG102 read it later):
        in its metadata, or, for the fresh nodes of a graph this backward frees, by their
        sequence numbers (NOTE [marks by sequence number] in capture/marks.py)."""
        key, scan = self._mark_key, call.scan
        if scan.has_fresh:
            if call.retain_graph:  # a retained graph may be used again: exact marks on each node
                scan.read_fresh()
            else:
                self._seq_marks.add(scan.fresh_lo, scan.fresh_hi, mark)
                scan.range_mark = mark
        for md in scan.read_md:  # the nodes' own dicts, as the scan read them
            if md is not None:
                md[key] = mark
        if scan.counter is not None:
            # every node of this graph is older than the number read before the walk
            self._fresh_from = scan.counter

    def _unmark(self, call: BackwardCall) -> None:
        """Take this backward's marks back (it raised): each node keeps the mark it had before."""
        key, scan = self._mark_key, call.scan
        if scan.range_mark is not None:
            self._seq_marks.drop(scan.range_mark)
        for md, before in zip(scan.read_md, scan.read_marks):
            if md is None:
                continue
            if before is None:
                md.pop(key, None)
            else:
                md[key] = before

    # ---- optimizer -----------------------------------------------------------------------------
    def _wrap_add_param_group(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        guard = self

        @functools.wraps(orig)
        def add_param_group(opt: Any, param_group: dict) -> Any:
            if guard._foreign():
                return orig(opt, param_group)
            doing = "recording an optimizer's parameters"
            group = failsafe(guard._internal_error, doing, _listed_params, param_group)
            if group is not None:
                param_group = group  # its params listed once: a generator is read only once
                failsafe(guard._internal_error, doing, guard._record_param_group, opt, group["params"])
            return orig(opt, param_group)

        return add_param_group

    def _wrap_optimizer_init(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        """Optimizer.__init__ (every optimizer's `super().__init__(params, defaults)`): an empty
        parameter list is reported (GG011) before PyTorch raises on it. Once per optimizer."""
        guard = self

        @functools.wraps(orig)
        def __init__(opt: Any, params: Any, *args: Any, **kwargs: Any) -> Any:
            if guard._foreign() or guard.rec.busy:
                return orig(opt, params, *args, **kwargs)
            listed = failsafe(guard._internal_error, "recording an optimizer's parameters",
                              _listed_arg, params)
            if listed is not None:
                params = listed  # a generator is read only once: by us, then handed on
                if not listed:
                    failsafe(guard._internal_error, "checking an optimizer's parameters",
                             guard._empty_optimizer, opt)
            return orig(opt, params, *args, **kwargs)

        return __init__

    def _wrap_optimizer_setstate(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        """Optimizer.__setstate__: an optimizer made by unpickling (`copy.deepcopy`, `torch.load`
        of a whole object) gets its parameter groups without add_param_group. They are recorded
        as if added there, at the user's line that made the copy: an optimizer deep-copied apart
        from its model holds copies of the parameters, not the model's (GG008 points there)."""
        guard = self

        @functools.wraps(orig)
        def __setstate__(opt: Any, state: dict) -> Any:
            out = orig(opt, state)
            if not guard._foreign() and not guard.rec.busy:
                failsafe(guard._internal_error, "recording an optimizer's parameters",
                         guard._record_unpickled, opt)
            return out

        return __setstate__

    def _record_unpickled(self, opt: Any) -> None:
        for group in getattr(opt, "param_groups", ()):
            params = list(group.get("params", ()))
            if params:
                self._record_param_group(opt, params)

    def _wrap_parameter_new(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        """`nn.Parameter(h)` of a tensor with history makes a new leaf in C++, out of the mode's
        sight: while recording, the dropped history is recorded as a cut (GG008's reason)."""
        guard = self

        def __new__(cls: Any, data: Any = None, requires_grad: bool = True) -> Any:
            p = orig(cls, data, requires_grad)
            if (guard.rec.recording and isinstance(data, torch.Tensor) and data.grad_fn is not None
                    and torch.is_grad_enabled() and not guard.rec.busy and not guard._foreign()
                    and not torch.compiler.is_compiling()):
                failsafe(guard._internal_error, "recording an op", guard.rec.on_new_leaf,
                         "nn.Parameter", data)
            return p

        return __new__

    def _empty_optimizer(self, opt: Any) -> None:
        self._dispatch(EmptyOptimizer(user_site(1), opt))  # may raise GraphMisuseError

    def _record_param_group(self, opt: Any, params: list[Any]) -> None:
        self.rec.mark_optimized(params)
        self._quiet.clear()  # leaves judged before may be optimized now (GG011, GG009)
        self._dispatch(ParamGroupAdded(user_site(1), opt, params))

    @_hidden_from_dynamo
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

    @_hidden_from_dynamo
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
