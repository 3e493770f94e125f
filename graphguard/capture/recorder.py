"""The per-op recorder: stamps graph nodes, records leaves, cuts, taint and in-place writes.

Everything here runs inside the TorchFunctionMode, for every torch call, while recording is on:
keep it lean. Judging happens in rules/, wording in the rule templates, output in report/.
"""
from __future__ import annotations

import weakref
from collections import deque
from typing import Any, Callable

import torch
from torch.utils.weak import WeakIdKeyDictionary

from ..events import (AutogradError, CheckpointCall, Clock, CopyConstruct, DataAssign, GradRead, InplaceOp,
                      LossCall, ProductOp, Sink)
from ..model import Site
from .failsafe import PASSTHROUGH
from .graph import iter_tensors, leaf_of, walk
from .ops import COPY_FUNCS, LOSS_TARGET_ARG, LOSS_WEIGHT_ARGS, WRITTEN_OPS, inplace_target, product_args
from .state import AddedTerm, Cut, InplaceRecord, LeafRecord, LeafSite, Packed
from .state import Stamp
from .sites import user_site
from .gradmode import GradSwitches
from .marks import BackwardRoots
from .kept import KeptWatch

__all__ = ["Recorder", "SavedTensorModified"]

MAX_CUTS = 4096  # cut records kept per guard (oldest dropped)
MAX_INPLACE_LOG = 4096  # storages whose latest in-place write is kept (oldest dropped)
INFERENCE_FRAMES = 12  # user frames kept for them (the no-grad region may be far out)
MAX_INFERENCE = 4096  # live tensors made under inference_mode whose site is kept (GG014)
CUT_WALK = 2000  # nodes walked to find the leaves behind a cut
_SCALAR_OUT = frozenset({"item", "tolist", "numpy", "__float__", "__int__", "__bool__"})
# sums and differences: a term without gradient added to one with it adds nothing to the gradient
_ADDITIVE = frozenset({"add", "sub", "add_", "sub_", "__add__", "__radd__", "__iadd__", "__sub__",
                       "__rsub__", "__isub__"})
# ops that return values with gradient and integer indices without (`values, perm = s.topk(k)`)
_INDEX_OUT = frozenset({"topk", "sort", "max", "min", "kthvalue", "mode", "median", "nanmedian",
                        "cummax", "cummin"})
MAX_ADDED_TERMS = 64  # the latest added terms kept (a loss has a few; they are judged per iteration)


class SavedTensorModified(RuntimeError):
    """Raised by the unpack hook, as PyTorch's own version check would (ours replaces it)."""

    def __init__(self, packed: Packed) -> None:
        t = packed.tensor
        super().__init__(
            "one of the variables needed for gradient computation has been modified by an inplace "
            f"operation: [{t.type()} {list(t.shape)}] is at version {t._version}; expected "
            f"version {packed.version} instead. (reported by graphguard's saved-tensor check)")
        self.packed = packed


class Recorder:
    """Records what torch calls do, for one guard.

    Args:
        sink: where events and graphguard's own failures go (the guard's engine).
        stamp_key: the `node.metadata` key of this guard's stamps.
        clock: the run's iteration and backward count, kept by the guard.
    """

    def __init__(self, sink: Sink, stamp_key: str, clock: Clock) -> None:
        self.sink = sink
        self.stamp_key = stamp_key
        self.clock = clock
        self.recording = True  # full recording (first iterations); False: light mode
        self.busy = False  # graphguard's own code is running: the mode must not record it
        self.in_step = False  # inside optimizer.step(): its no_grad updates are not cuts
        self.leaves: WeakIdKeyDictionary = WeakIdKeyDictionary()  # tensor -> LeafRecord
        self.leaf_sites: dict[tuple, LeafSite] = {}
        self.optimized: WeakIdKeyDictionary = WeakIdKeyDictionary()  # param -> optimizer name hint
        # requires-grad leaves some op read with grad mode on while recording: a parameter
        # that is read but never reaches a backward feeds an output the loss leaves unused
        self.read_leaves: WeakIdKeyDictionary = WeakIdKeyDictionary()
        # optimizer -> weak references to the parameters marked at its last step
        self._marked_params: "weakref.WeakKeyDictionary[Any, list]" = weakref.WeakKeyDictionary()
        self.cuts: dict[int, Cut] = {}
        self._cut_keys: dict[tuple, int] = {}
        self._next_cut = 0
        self.taint: WeakIdKeyDictionary = WeakIdKeyDictionary()  # tensor -> frozenset of cut ids
        # cuts whose values went into a tensor that has history again (`p - lr * grad` after
        # autograd.grad): they did not sever what follows (GG009 names another cut first)
        self.healed: set[int] = set()
        # scalars without gradient, cut from values with one, added into a scalar with one (GG009)
        self.added_terms: "deque[AddedTerm]" = deque(maxlen=MAX_ADDED_TERMS)
        self.inplace_log: dict[int, InplaceRecord] = {}  # storage data_ptr -> latest write
        self.packs: "weakref.WeakSet[Packed]" = weakref.WeakSet()
        # whether pack/unpack are on the saved-tensor hook stack: on while recording; off in light
        # mode, where PyTorch's own version check runs and the backward check reads it
        # (capture/saved.SavedCheck)
        self.saved_hooks_on = False
        # saved-tensor hooks of someone else (a non-reentrant checkpoint, save_on_cpu, the user's)
        # were entered since the last backward: their saved values are not read before it
        # (NOTE [saved values behind other hooks] in capture/saved.py)
        self.foreign_hooks_entered = False
        self._cur_op = ""
        self._cur_site: Site | None = None
        self.ops_seen = 0
        # inside a reentrant checkpoint call (GG015): the requires-grad tensors its ops read
        self.ckpt_used: list | None = None
        self.inference_made: WeakIdKeyDictionary = WeakIdKeyDictionary()  # tensor -> Site (GG014)
        # tensor -> the inference_mode switch it was made under, when the guard saw it enter
        self.inference_switch: WeakIdKeyDictionary = WeakIdKeyDictionary()
        # the grad-mode switches in force (capture/gradmode.py): who turned autograd off
        self.grad_switches = GradSwitches()
        # the nodes each marking backward started from (GG001/GG003: a loss carried into the next)
        self.backward_roots = BackwardRoots()
        # the live tensors with history, for GG101's looks (installed by the guard)
        self.kept = KeptWatch()

    # ---- the mode's entry point -------------------------------------------------------------
    def on_op(self, func: Callable[..., Any], name: str, args: tuple, kwargs: dict) -> Any:
        self.ops_seen += 1
        self._cur_op = name
        self._cur_site = None
        # NOTE [per-op failsafe]: this is capture/failsafe.py's `failsafe` written out, the one
        # place it is: a call through the helper costs ~200 ns more than an inline try (zero-cost
        # in Python 3.11), twice per op, on the path every torch call takes while recording.
        pre = None
        try:
            pre = self._before(func, name, args, kwargs)
        except PASSTHROUGH:
            raise
        except Exception as exc:  # a graphguard bug must not break the user's op
            self.sink.internal_error(exc, "recording an op")
        try:
            out = func(*args, **kwargs)
        except RuntimeError as err:  # zero-cost until PyTorch raises (GG014, GG903)
            if pre is not None:
                self._on_error(name, pre, err)
            raise
        if pre is not None:
            try:
                self._after(func, name, args, kwargs, out, pre)
            except PASSTHROUGH:
                raise
            except Exception as exc:
                self.sink.internal_error(exc, "recording an op")
        return out

    def _on_error(self, name: str, pre: tuple, err: RuntimeError) -> None:
        """PyTorch refused the op: let the rules explain it before the error leaves (a finding
        in raise mode comes out as GraphMisuseError, chained to PyTorch's error)."""
        try:
            self.sink.dispatch(AutogradError(self.site(), "op", name, err, list(pre[3])))
        except PASSTHROUGH:
            raise
        except Exception as exc:
            self.sink.internal_error(exc, "explaining an error")

    def site(self) -> Site:
        """The user site of the op being recorded (computed once per op, on demand)."""
        s = self._cur_site
        if s is None:
            s = self._cur_site = user_site(1)
        return s

    # ---- before the op ----------------------------------------------------------------------
    def _before(self, func: Any, name: str, args: tuple, kwargs: dict) -> tuple:
        tensors = [t for a in args for t in iter_tensors(a, 1)]
        if kwargs:
            tensors.extend(t for a in kwargs.values() for t in iter_tensors(a, 1))
        rg_in = False
        for t in tensors:
            if t.requires_grad:
                rg_in = True
                break
        dispatch = self.sink.dispatch
        if func in LOSS_TARGET_ARG and len(args) >= 1:
            target = kwargs.get("target", args[1] if len(args) > 1 else None)
            weights = []
            for wname, wpos in LOSS_WEIGHT_ARGS.get(func, ()):
                w = kwargs.get(wname, args[wpos] if len(args) > wpos else None)
                if isinstance(w, torch.Tensor):
                    weights.append((wname, w))
            dispatch(LossCall(self.site(), name, args[0], target, weights))
        elif (name in WRITTEN_OPS and rg_in and len(tensors) == 2 and tensors[0].grad_fn is not None
              and tensors[1].grad_fn is not None):
            # a product, contraction or xlogy of two tensors with history: maybe a cross-entropy
            # written out (`softmax(t) * log_softmax(s)`), which GG002 tells from their nodes.
            # Only the call's facts go: einsum's equation is no tensor, its operands (listed or
            # not) are the two.
            equation, dims = product_args(name, args, kwargs)
            dispatch(ProductOp(self.site(), name, tensors[0], tensors[1], equation, dims))
        elif func in COPY_FUNCS and args:
            # `batch.new_tensor(data)`: args[0] is `batch` (dtype and device only), data is next
            data = (args[1] if len(args) > 1 else kwargs.get("data")) if func is torch.Tensor.new_tensor else args[0]
            sources = [t for t in iter_tensors(data, 3) if t.requires_grad]
            if sources:
                dispatch(CopyConstruct(self.site(), COPY_FUNCS[func], sources,
                                              bool(kwargs.get("requires_grad"))))
        elif name == "__set__" and len(args) > 1 and getattr(
                getattr(func, "__self__", None), "__name__", None) == "data":
            dispatch(DataAssign(self.site(), args[0], args[1], torch.is_grad_enabled()))
        target = inplace_target(name, args, kwargs)
        if target is not None:
            grad_on = torch.is_grad_enabled()
            for t in iter_tensors(target, 1):
                dispatch(InplaceOp(self.site(), name, t, grad_on))
        taint_in: frozenset = frozenset()
        if self.taint:
            for t in tensors:
                tt = self.taint.get(t)
                if tt:
                    taint_in = taint_in | tt
        return rg_in, taint_in, target, tensors

    # ---- after the op -----------------------------------------------------------------------
    def _after(self, func: Any, name: str, args: tuple, kwargs: dict, out: Any, pre: tuple) -> None:
        rg_in, taint_in, target, tensors = pre
        if isinstance(out, torch.Tensor):
            outs: tuple = (out,)
        elif isinstance(out, (tuple, list)):
            outs = tuple(o for o in out if isinstance(o, torch.Tensor))
        else:
            outs = ()
        if outs and torch.is_inference_mode_enabled():
            self._record_inference(outs)
        key = self.stamp_key
        any_rg_out = any_node_out = False
        for o in outs:
            if not o.requires_grad:
                continue
            any_rg_out = True
            try:
                gf = o.grad_fn
            except RuntimeError:
                # A view made under no_grad whose base then changed in place: torch forbids
                # reading its grad_fn (Adam's view_as_real of complex parameters). Not a new node.
                continue
            if gf is not None:
                any_node_out = True
                md = gf.metadata
                if key not in md:
                    md[key] = Stamp(self.clock.iteration, self.site(), self.clock.backward_calls)
            elif (kwargs.get("requires_grad") or name == "requires_grad_") and o not in self.leaves:
                self._record_leaf(o, name)
        if any_node_out and target is None and not self.in_step:
            # a differentiable use: an output with history (not `w.size()`, not the leaf that
            # `init.kaiming_uniform_(w)` hands back)
            read = self.read_leaves
            for t in tensors:
                if t.requires_grad and t.grad_fn is None and t not in read:
                    read[t] = True
        if taint_in and any_rg_out:  # only ops reading a cut value
            self.healed.update(taint_in)
            if name in _ADDITIVE and len(outs) == 1 and outs[0].numel() == 1:
                self._record_added_term(name, tensors)
        if rg_in and not any_rg_out and not self.in_step and target is None:
            used = self.ckpt_used
            if used is not None and len(used) < 256:
                used.extend(t for t in tensors if t.requires_grad)
            if outs or name in _SCALAR_OUT:
                cut = self._record_cut(name, tensors)
                taint_in = taint_in | {cut}
        if taint_in and outs:
            for o in outs:
                self.taint[o] = taint_in
        if rg_in and any_rg_out and name in _INDEX_OUT and len(outs) > 1 and target is None \
                and not self.in_step:
            # The values keep their gradient, the indices have none: what is computed from the
            # indices alone (`x[perm]`, a gather by `perm`) is cut from the scores there. Only the
            # index outputs carry the cut.
            idx = [o for o in outs if not o.requires_grad]
            if idx:
                cut = self._record_cut(name, tensors)
                for o in idx:
                    self.taint[o] = taint_in | {cut}
        if target is not None:
            it = self.clock.iteration
            for t in iter_tensors(target, 1):
                try:
                    ptr = t.untyped_storage().data_ptr()
                    version = t._version  # raises for an inference tensor (no version counter)
                except Exception:
                    continue  # nothing to log: no backward can have saved such a tensor
                self.inplace_log[ptr] = InplaceRecord(name, self.site(), version, it, self.in_step)
            if len(self.inplace_log) > MAX_INPLACE_LOG:
                # keyed by address: freed storages' entries would pile up over a long run
                del self.inplace_log[next(iter(self.inplace_log))]

    def _record_inference(self, outs: tuple) -> None:
        """Where tensors made under inference_mode were made (GG014 names the line later)."""
        made = self.inference_made
        if len(made) < MAX_INFERENCE:
            # deeper than an op's site: the decorator or `with` is often several calls out
            site = user_site(2, INFERENCE_FRAMES)
            switch = self.grad_switches.current()
            for o in outs:
                made[o] = site
                if switch is not None:
                    self.inference_switch[o] = switch

    def _record_leaf(self, t: torch.Tensor, func: str) -> None:
        site = self.site()
        key = (site[0].file, site[0].line, func) if site else ("?", 0, func)
        stats = self.leaf_sites.get(key)
        if stats is None:
            stats = self.leaf_sites[key] = LeafSite(site, func, self.clock.iteration)
        stats.count += 1
        if t in self.optimized:
            stats.used = True
        self.leaves[t] = LeafRecord(site, self.clock.iteration, func, stats)

    def _record_added_term(self, name: str, tensors: list[torch.Tensor]) -> None:
        """A scalar sum with gradient took in a tensor without one that was cut from values with
        one (its taint): a loss term that trains nothing (`loss = ce + dice(argmax(p), y)`).
        Values of more than one element are not terms (`x + (q - x).detach()`, the
        straight-through estimator, adds a cut value on purpose)."""
        if not any(t.requires_grad for t in tensors):
            return
        for t in tensors:
            if not t.requires_grad and t.numel() == 1:
                cuts = self.taint.get(t)
                if cuts:
                    self.added_terms.append(AddedTerm(name, self.site(), self.clock.iteration,
                                                      frozenset(cuts), weakref.ref(t)))
                    return

    def _record_cut(self, name: str, tensors: list[torch.Tensor]) -> int:
        site = self.site()
        it = self.clock.iteration
        no_grad = not torch.is_grad_enabled()
        key = (name, site, it)
        idx = self._cut_keys.get(key)
        if idx is not None and idx in self.cuts:
            return idx
        leaves = []
        roots = []
        for t in tensors:
            if t.requires_grad:
                if t.grad_fn is None:
                    # a view taken under no_grad (`kernel[:, 0]`, `w.t()`) requires grad with no
                    # grad_fn: the leaf behind it is its base, the parameter
                    base = t._base
                    leaves.append(base if base is not None and base.grad_fn is None else t)
                else:
                    roots.append(t.grad_fn)
        if roots:
            w = walk(roots, CUT_WALK)
            leaves.extend(v for v in (leaf_of(n) for n in w.nodes) if v is not None)
        idx = self._next_cut
        self._next_cut += 1
        switch = self.grad_switches.current() if no_grad else None
        self.cuts[idx] = Cut(idx, name, site, it, no_grad, tuple(weakref.ref(v) for v in leaves),
                             frozenset(id(v) for v in leaves), switch, self.ckpt_used is not None)
        self._cut_keys[key] = idx
        if len(self.cuts) > MAX_CUTS:
            # indices grow, so the first one is the oldest; its key goes too, or the keys of
            # every iteration's cuts would pile up over a long run
            old = self.cuts.pop(next(iter(self.cuts)))
            self._cut_keys.pop((old.op, old.site, old.iteration), None)
            self.healed.discard(old.index)
        return idx

    def cuts_for_leaf(self, leaf: torch.Tensor, iteration: int | None = None) -> list[Cut]:
        """Recorded cuts with `leaf` behind their inputs (in one iteration, when given)."""
        out = []
        for c in self.cuts.values():
            if iteration is not None and c.iteration != iteration:
                continue
            if id(leaf) in c.leaf_ids and any(r() is leaf for r in c.leaves):
                out.append(c)
        return out

    # ---- other capture points ---------------------------------------------------------------
    def on_new_leaf(self, name: str, data: torch.Tensor) -> None:
        """A tensor with history was made a new leaf (`nn.Parameter(h)` in a forward): its
        history is dropped as by a cut, so the cut is recorded (GG008 names it as the reason a
        parameter behind `data` gets no gradient). PyTorch does this in C++, unseen by the mode."""
        self._cur_site = None
        self._record_cut(name, [data])

    def on_checkpoint(self, args: tuple, out: Any, used: list, grad_enabled: bool) -> None:
        """A reentrant checkpoint call returned: args are CheckpointFunction.apply's
        (function, preserve_rng_state, *inputs)."""
        if not args:
            return
        inputs = [t for a in args[2:] for t in iter_tensors(a, 1)]
        outs = list(iter_tensors(out, 2))
        seen: set[int] = set()
        uniq = [t for t in used if not (id(t) in seen or seen.add(id(t)))]
        self._cur_site = None
        self.sink.dispatch(CheckpointCall(self.site(), args[0], inputs, outs, uniq, grad_enabled))

    def on_grad_read(self, t: Any) -> None:
        rec = self.leaves.get(t) if isinstance(t, torch.Tensor) else None
        if rec is not None:
            rec.stats.used = True
        self._cur_site = None  # the cached site belongs to the last op, not to this read
        self.sink.dispatch(GradRead(self.site(), t))

    def mark_used(self, tensors: Any) -> None:
        for t in iter_tensors(tensors, 2):
            rec = self.leaves.get(t)
            if rec is not None:
                rec.stats.used = True

    def mark_optimizer_params(self, opt: Any) -> None:
        """mark_optimized for an optimizer's parameters, at each of its steps. Skipped when its
        parameter list is the one marked at its previous step (the usual case: the weak lookups
        cost a few microseconds per parameter, at every step of a long run)."""
        params = [p for g in opt.param_groups for p in g["params"]]
        try:
            before = self._marked_params.get(opt)
        except TypeError:  # an optimizer subclass that cannot be hashed: mark every time
            self.mark_optimized(params)
            return
        if before is not None and len(before) == len(params) and all(
                r() is p for r, p in zip(before, params)):
            return
        self.mark_optimized(params)
        try:
            self._marked_params[opt] = [weakref.ref(p) for p in params if isinstance(p, torch.Tensor)]
        except TypeError:  # an optimizer (or parameter) that cannot be weakly referenced
            pass

    def mark_optimized(self, params: Any) -> None:
        for p in params:
            if isinstance(p, torch.Tensor):
                self.optimized[p] = True
                rec = self.leaves.get(p)
                if rec is not None:
                    rec.stats.used = True

    # ---- saved-tensor hooks (GG005) -----------------------------------------------------------
    def pack(self, t: torch.Tensor) -> Packed:
        # Runs for every tensor autograd saves, in light mode too. A leaf (no grad_fn) is kept as
        # it is, as PyTorch itself keeps leaves: the cycle that `t.detach()` avoids (pytorch#115255)
        # needs t's own grad_fn to be the node that saves it. detach() costs ~1 us per save.
        try:
            if self.recording and not self.busy:
                p = Packed(t.detach(), t._version, self._cur_op, self.site())
            else:
                p = Packed(t if t.is_leaf else t.detach(), t._version, "", ())
            self.packs.add(p)
            return p
        except Exception as exc:
            # Raised here it would fail the user's forward op. Keep the version check at least.
            self.sink.internal_error(exc, "saving a tensor for backward")
            return Packed(t.detach(), t._version, "", ())

    def adopt(self, t: torch.Tensor, version: int) -> Packed:
        """The record of a saved tensor found changed in place by the light-mode check (saved at
        `version`): from now on unpack checks it, as for the tensors pack saw."""
        p = Packed(t, version, "", ())
        self.packs.add(p)
        return p

    @staticmethod
    def unpack(p: Packed) -> torch.Tensor:
        # Installing saved_tensors_hooks switches off PyTorch's own version check: do it here,
        # or an in-place change would silently give a wrong gradient.
        if p.tensor._version != p.version:
            raise SavedTensorModified(p)
        return p.tensor

    def modified_packs(self) -> list[Packed]:
        """Live saved tensors changed in place since they were saved (usually none: cheap)."""
        if not self.packs:  # light mode: none are made (only adopted ones, when changed)
            return []
        # `_version` reads would each pass through our own mode (~10 us): switch it off here.
        with torch._C.DisableTorchFunction():
            return [p for p in list(self.packs) if p.tensor._version != p.version]
