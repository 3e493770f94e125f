"""The guard's backward check: what runs around every `backward()` and `autograd.grad()` a
guarded thread makes (docs/architecture.md, "The guard").

Before PyTorch runs: bind the call's arguments (capture/backward.py), scan its graph, dispatch a
`BackwardCall` to the rules (may raise `GraphMisuseError`: nothing has been touched yet) and mark
the walked nodes; then run the real backward (a failure takes the marks back and the rules
explain PyTorch's error), then dispatch `BackwardDone`. A plain `loss.backward()` in a skimmed
iteration takes the lean path (NOTE [lean backwards]).

`BackwardChecks` is a part of `GraphGuard` (its base class): the state it reads and writes is the
guard's, declared below, so that the guard's iteration and step logic share it.
"""
from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Any, Callable

import torch

from .capture.backward import bind_backward, materialize_iterators, plain_tensor_backward
from .capture.ddp import open_windows
from .capture.failsafe import PASSTHROUGH, failsafe
from .capture.marks import SequenceMarks
from .capture.quiet import QuietShapes
from .capture.ranks import RankTracker
from .capture.recorder import Recorder
from .capture.saved import SavedCheck
from .capture.scan import lean_scan, scan_graph
from .capture.sites import user_site
from .capture.state import Mark
from .engine import Engine
from .events import AutogradError, BackwardCall, BackwardDone, Clock, Event
from .install import SavedHooks, hidden_from_dynamo, keep_dynamo_out, skips_added
from .model import Site

__all__ = ["BackwardChecks"]

_NOT_LEAN = object()  # _lean_backward's answer when the full path must run (NOTE [lean backwards])
_is_compiling = torch.compiler.is_compiling


class BackwardChecks:
    """The backward check of `GraphGuard` (see the module's docstring)."""

    # the guard's state this part reads and writes (set by GraphGuard.__init__ / __enter__)
    rec: Recorder
    clock: Clock
    engine: Engine
    steps: int
    max_walk: int
    _stamp_key: str
    _mark_key: str
    _born_before: int  # autograd sequence number at the guard's entry
    _in_backward: bool
    _pending_boundary: bool  # a graph-freeing backward ended; the next one may end the iteration
    _fresh_from: int | None  # NOTE [marks by sequence number] (capture/marks.py)
    _seq_marks: SequenceMarks
    _quiet: QuietShapes
    _ranks: RankTracker
    _saved: SavedHooks
    _skim_listens_done: bool

    if TYPE_CHECKING:  # the guard's methods it calls
        def _foreign(self) -> bool: ...
        def _dispatch(self, event: Event, raising: bool = True, quiet: bool = False,
                      skim: bool = False) -> None: ...
        def _internal_error(self, err: BaseException, doing: str) -> None: ...
        def _end_iteration(self, opt: Any, by_backward: bool = False) -> None: ...
        def _skimming(self) -> bool: ...
        def _window(self) -> int: ...
        def _judge_through(self, iterations: int) -> None: ...

    def _on_backward_from_mode(self, func: Any, args: tuple, kwargs: dict) -> Any:
        api = "grad" if getattr(func, "__name__", "") == "grad" else "backward"
        return self._backward(api, func, args, kwargs)

    @hidden_from_dynamo
    def _backward(self, api: str, orig: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        ranks = self._ranks
        if (ranks.state is not None and api == "backward" and not self._in_backward
                and not self._foreign() and any(w.sync for w in open_windows(self.rec))):
            # DDP all-reduces inside this backward: a collective call of this rank (GG019)
            with ranks.blocking("backward", user_site(2)):
                return self._watched_backward(api, orig, args, kwargs)
        return self._watched_backward(api, orig, args, kwargs)

    @hidden_from_dynamo
    def _watched_backward(self, api: str, orig: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        if self._in_backward or self.rec.busy or self._foreign() or _is_compiling():
            # (compiling: AOTAutograd tracing a compiled region's backward, not the user's)
            return orig(*args, **kwargs)
        # a generator passed as `inputs` (`model.parameters()`) is read once: by the real call
        plain_call = plain_tensor_backward(args, kwargs)  # `loss.backward()`: nothing to read once
        if not plain_call:
            args, kwargs = materialize_iterators(args, kwargs)
        if not skips_added():
            keep_dynamo_out()  # Dynamo may have been loaded since __enter__ (torch.compile)
        if plain_call and api == "backward":
            result = self._lean_backward(orig, args, kwargs)
            if result is not _NOT_LEAN:
                return result
        call, skim, errors, marked = self._judge_backward(api, orig, args, kwargs, plain_call)
        result = self._run_backward(orig, args, kwargs, call, errors, marked)
        if call is not None:
            self._end_backward(call, skim)
        return result

    def _judge_backward(self, api: str, orig: Callable[..., Any], args: tuple, kwargs: dict,
                        plain_call: bool) -> tuple[BackwardCall | None, bool, int, bool]:
        """The rules judge the call before PyTorch runs it (may raise GraphMisuseError: nothing
        has been touched yet), then its marks are written. Returns the call (None: graphguard
        failed to build it), whether its iteration is skimmed, the errors found, whether marked."""
        # The scan makes a Python wrapper per graph node and the rules build per-node data: on a
        # 100,000-node graph the collector ran again and again over all of them (a pre-backward
        # check 2-3x slower). Our own bursts allocate no cycles: pause it, restore it after.
        gc_paused = gc.isenabled()
        if gc_paused:
            gc.disable()
        try:
            call, plain, quiet, skim = self._classify_backward(api, orig, args, kwargs, plain_call)
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
            errors = (sum(1 for f in findings[reported:] if f.severity == "error")
                      if len(findings) > reported else 0)
        finally:
            if gc_paused:
                gc.enable()
        return call, skim, errors, marked

    def _classify_backward(self, api: str, orig: Callable[..., Any], args: tuple, kwargs: dict,
                           plain_call: bool) -> tuple[BackwardCall | None, bool, bool, bool]:
        """The call bound and its graph scanned; in light mode whether it is plain, quiet (NOTE
        [quiet events]) and skimmed (NOTE [skimmed iterations]). Graphguard's failure: no call."""
        call = None
        plain = quiet = skim = False
        self.rec.busy = True
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
        return call, plain, quiet, skim

    def _run_backward(self, orig: Callable[..., Any], args: tuple, kwargs: dict,
                      call: BackwardCall | None, errors: int, marked: bool) -> Any:
        """PyTorch's backward; if it raises, the marks are taken back and the rules explain it."""
        self._in_backward = True
        try:
            return orig(*args, **kwargs)
        except BaseException as err:
            self._in_backward = False
            if marked:  # this backward did not run through the graph after all
                failsafe(self._internal_error, "recording a backward call", self._unmark, call)
            if call is not None and isinstance(err, RuntimeError):
                # PyTorch raised: graphguard's account first (GG903 & co)
                self._explain_backward_error(call, err, errors)
            raise
        finally:
            self._in_backward = False

    def _end_backward(self, call: BackwardCall, skim: bool) -> None:
        """After PyTorch's backward: BackwardDone judged (unless skimmed), the scan dropped."""
        if skim and not self._skim_listens_done:
            # a skimmed iteration: no rule judges the backward's end (NOTE [skimmed iterations])
            if not call.retain_graph:
                self._pending_boundary = True
            call.scan = None
            return
        self.rec.busy = True
        gc_paused = gc.isenabled()
        if gc_paused:
            gc.disable()  # as in _judge_backward: marking every node allocates per node
        try:
            self._after_backward(call)
        except Exception as err:
            self._internal_error(err, "recording a backward call")
        finally:
            self.rec.busy = False
            call.scan = None  # drop the node wrappers now
            if gc_paused:
                gc.enable()


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
                or not self._skimming() or root.numel() != 1 or self._saved.others()):
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
                                                                 self._saved.others())
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
        # (the walk for the site starts above _backward and its dynamo wrapper: graphguard's own;
        # 4: called by _classify_backward from _watched_backward)
        call = BackwardCall(user_site(4), api, roots, grads, retain, create, inputs, scan,
                            self.clock.backward_calls, self.clock.iteration)
        self.clock.backward_calls += 1
        return call


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
