"""RuleContext: the typed, narrow questions a rule may ask (never the recorder or the guard)."""
from __future__ import annotations

import ast
import weakref
from typing import Any, Callable, Mapping, TypeVar

import torch

from ..lookup.names import NameHit, find_held_object, find_name, find_names, find_objects, live_user_frames, resolve
from ..lookup.origins import made_name, origin_in_tree, origin_of, origin_of_name
from ..lookup.source import assigned_targets, inplace_receivers, statement_at, target_lines
from ..capture.ddp import DdpWindow, collective_calls, declared_unused, open_windows, reduced_windows
from ..capture.gradmode import GradSwitch
from ..capture.graph import live_optimizers, summarize
from ..capture.kept import Held, containers_holding, owning_module
from ..capture.marks import SequenceMarks
from ..capture.holding import Holding, PlainHold, containers_with, held_by_program, holdings, plain_holders
from ..capture.modtree import ModuleTree, module_tree
from ..capture.recorder import Recorder
from ..capture.steps import StepTrail
from ..capture.state import AddedTerm, Cut, InplaceRecord, LeafRecord, LeafSite, Mark, Packed, Stamp
from ..events import Clock, Event
from ..model import Finding, Frame, Related, Role, Site, SourceLoc, Subject

T = TypeVar("T")


class _TreeKey:
    """A stand-in event for the per-event memo (weakly referable)."""


def _module_tree_of(event: Event) -> ModuleTree:
    """The shared analysis behind `Evidence.module_tree(event)` (the tree does not depend on the
    event: keyed by it so that it is built once while the event is judged)."""
    return module_tree()

__all__ = ["Evidence", "RuleContext", "assigned_name"]


def assigned_name(frame: Frame, func: str | None = None) -> str | None:
    """The variable a line assigns the result of `func(...)` to: `x = torch.zeros(...)` -> `x`.

    Only a name the user wrote on that line, for a call that is the whole right-hand side.
    """
    stmt = statement_at(frame.file, frame.line)
    if not isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        return None
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    if len(targets) != 1 or not isinstance(stmt.value, ast.Call):
        return None
    if func is not None:
        callee = stmt.value.func
        cname = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", None)
        if cname != func:
            return None
    return ast.unparse(targets[0]) if isinstance(targets[0], (ast.Name, ast.Attribute)) else None


class Evidence:
    """What `detect` may ask: capture data only (docs/architecture.md). The run's time, the
    recorded leaves and their creation sites, cuts, in-place writes, grad-mode switches, marks
    of backwards, optimizer state, DDP windows. Narrow questions only: a rule never sees the
    recorder or the guard, so capture state changes only in capture. `RuleContext` adds the
    questions only `describe` may ask (names, source lines).

    Built by the guard; `findings` and `steps` are callables so that the context reads the
    engine's current state without knowing the engine.

    Args:
        rec: the guard's recorder (read through the methods below only).
        clock: the run's iteration and backward count.
        stamp_key, mark_key: this guard's `node.metadata` keys (Stamp, Mark).
        findings: the findings reported so far.
        steps: optimizer steps seen so far.
        supersedes: rule code -> the codes of the rules that supersede it (`Rule.supersedes`).
        want_details: switches full recording on for a few iterations (`want_details`).
        judge_more: keeps the next n iterations from being skimmed (`keep_judging`).
        seq_marks: the marks kept by sequence number (`mark_of`; capture/marks.py).
        trail: every optimizer step with the iteration it ended (`steps_between`;
            capture/steps.py).
    """

    def __init__(self, rec: Recorder, clock: Clock, stamp_key: str, mark_key: str,
                 findings: Callable[[], list[Finding]], steps: Callable[[], int],
                 supersedes: Mapping[str, frozenset[str]],
                 want_details: Callable[[], None] | None = None,
                 seq_marks: SequenceMarks | None = None,
                 judge_more: Callable[[int], None] | None = None,
                 trail: StepTrail | None = None) -> None:
        self._rec = rec
        self._trail = trail if trail is not None else StepTrail()
        self._want_details = want_details
        self._judge_more = judge_more
        self._seq_marks = seq_marks
        self._clock = clock
        self.stamp_key = stamp_key  # node.metadata key of the Stamp written when a node is made
        self.mark_key = mark_key  # node.metadata key of the Mark written by a backward
        self._findings = findings
        self._steps = steps
        self._superseded_by = supersedes
        # claims on leaves (NOTE [supersedes]): id(LeafSite) -> codes of the rules that claimed it
        self._claims: dict[int, set[str]] = {}
        # shared analyses of the event being judged: (analysis, id(event)) -> result
        self._memo: dict[tuple[Callable[..., Any], int], Any] = {}
        self._memo_events: list[weakref.ref] = []
        # the key of the module tree asked for while an event is judged without the event at
        # hand (origin's fallback): one tree per event, like `module_tree(event)`
        self._tree_key = _TreeKey()
        # live_optimizers, once per iteration: (iteration, weak references to them)
        self._live_optimizers: tuple[int, list[weakref.ref]] | None = None

    # ---- distributed ----------------------------------------------------------------------------
    def ddp_windows(self) -> list[DdpWindow]:
        """The current window of each DDP module (capture/ddp.py): since its latest forward with
        grad on; `sync` False for a forward inside no_sync()."""
        return open_windows(self._rec)

    def ddp_reduced_windows(self) -> list[list[DdpWindow]]:
        """Per DDP module, its synced windows that received gradients in this iteration (each
        one an all-reduce; capture/ddp.py)."""
        return reduced_windows(self._rec, self.iteration)

    def collective_calls(self) -> int:
        """This rank's collective calls so far (capture/ranks.py; 0 with a single rank)."""
        return collective_calls(self._rec)

    def ddp_unused_declared(self, t: Any) -> bool:
        """`t` belongs to a DDP module built with find_unused_parameters=True (capture/ddp.py)."""
        return declared_unused(self._rec, t)

    # ---- time -----------------------------------------------------------------------------------
    @property
    def iteration(self) -> int:
        """The iteration under way (0-based)."""
        return self._clock.iteration

    def optimizer_steps(self) -> int:
        """How many optimizer steps ended an iteration so far."""
        return self._steps()

    def steps_between(self, since: int, until: int) -> list[tuple[int, Any]]:
        """The optimizer steps that ended iterations `since` .. `until - 1`, judged or skimmed:
        (iteration, optimizer, None once it is gone), oldest first."""
        return self._trail.between(since, until)

    def recording_details(self) -> bool:
        """Whether full recording (creation lines, cuts, .grad reads) is on (off: light mode)."""
        return self._rec.recording

    def mark_of(self, node: Any, md: dict | None = None) -> Mark | None:
        """The Mark of the last backward that ran through `node` (its metadata `md`, if already
        read), also when that backward kept it by sequence number (NOTE [marks by sequence
        number] in capture/marks.py: there it is the backward whose range holds the node, which
        a node of the same window that it never reached shares)."""
        m = (node.metadata if md is None else md).get(self.mark_key)
        if m is None and self._seq_marks is not None and len(self._seq_marks):
            try:
                seq = node._sequence_nr()
            except Exception:
                return None
            m = self._seq_marks.find(seq)
        return m

    def started_backward(self, node: Any, mark: Mark) -> bool:
        """Whether `node` is a node the backward of `mark` started from (its loss's own node):
        a graph that holds it carries that whole earlier loss (capture/marks.BackwardRoots)."""
        return self._rec.backward_roots.started_from(mark.backward, node)

    def same_root_tensor(self, t: Any, mark: Mark) -> bool:
        """Whether the backward of `mark` started from the tensor object `t` itself (an
        accumulator grown in place since: `loss += t` on a tensor)."""
        return self._rec.backward_roots.same_root_tensor(mark.backward, t)

    def want_details(self) -> None:
        """Ask for full recording over the next few iterations: the rule saw a misuse in light
        mode that it can only report with names and lines, and reports its next occurrence."""
        if self._want_details is not None and not self._rec.recording:
            self._want_details()

    def keep_judging(self, iterations: int) -> None:
        """Ask that the next `iterations` iterations be judged in full, not skimmed (NOTE
        [skimmed iterations] in engine.py): the rule follows something over consecutive
        iteration ends (GG101 telling the ages of a kept graph apart)."""
        if self._judge_more is not None:
            self._judge_more(iterations)

    def in_optimizer_step(self) -> bool:
        """Whether the event happens inside optimizer.step() (its no_grad updates are not misuse)."""
        return self._rec.in_step

    # ---- shared analyses ------------------------------------------------------------------------
    def shared(self, analysis: Callable[[Event], T], event: Event) -> T:
        """`analysis(event)`, computed once per event for all rules that ask (GG001/3/4/102 share
        the stale-graph analysis). Forgotten when the engine has finished judging the event."""
        key = (analysis, id(event))
        if key in self._memo:
            return self._memo[key]
        out = self._memo[key] = analysis(event)
        self._memo_events.append(weakref.ref(event))  # keeps the id from being reused meanwhile
        return out

    def forget_shared(self) -> None:
        """Called by the engine after each event: analyses never outlive the event they are about."""
        if self._memo:
            self._memo.clear()
            self._memo_events.clear()

    # ---- supersedes -----------------------------------------------------------------------------
    # NOTE [supersedes]: a rule that silences another says so as data (`supersedes = ("GG103",)`);
    # the engine builds the code -> superseding codes table. The silenced rule asks `superseded`
    # before reporting a subject: by the subject's name (a finding of a superseding rule names it)
    # or by a leaf that a superseding rule claimed (`claim_leaf`).
    def claim_leaf(self, rule: Any, t: Any) -> None:
        """`rule` covers the recorded leaf `t` (and every leaf made by the same line)."""
        rec = self._rec.leaves.get(t) if isinstance(t, torch.Tensor) else None
        if rec is not None:
            self._claims.setdefault(id(rec.stats), set()).add(rule.code)


    # ---- recorded leaves, cuts, writes, optimizers ----------------------------------------------
    def live_optimizers(self) -> list[Any]:
        """Every live optimizer, found by the collector (capture/graph.live_optimizers): for the
        time before the first step under the guard, when an optimizer built before it is not
        known yet. One pass over the collector per iteration at most (a loop with no optimizer
        at all, a hand-written update, would otherwise pay it at every loss call); kept weakly."""
        cached = self._live_optimizers
        if cached is not None and cached[0] == self.iteration:
            found = [r() for r in cached[1]]
            return [o for o in found if o is not None]
        found = live_optimizers()
        self._live_optimizers = (self.iteration, [weakref.ref(o) for o in found])
        return found

    def live_graph_tensors(self) -> list[torch.Tensor]:
        """Every live tensor with a grad_fn, whoever holds it (capture/kept.py's KeptWatch: the
        collector's young generations and the tensors noted on their way to the old one, after
        one whole-heap pass), for GG101's looks only, never per step. Drop them soon."""
        return self._rec.kept.live()

    def containers_holding(self, tensors: list[torch.Tensor], own: tuple[Any, ...] = ()) -> list[Held]:
        """The lists, deques, tuples, sets and keyed dicts that hold any of `tensors`, read from
        the referrers (`own`: the caller's own lists of them). One pass over the collector."""
        return containers_holding(tensors, own)

    def owning_module(self, t: torch.Tensor) -> tuple[torch.nn.Module, str] | None:
        """(module, attribute) when a module keeps `t` as a buffer or a plain attribute."""
        return owning_module(t)

    def module_tree(self, event: Event | None = None) -> ModuleTree:
        """Every live module, which module registers each parameter and each module, and so the
        chain up to a model's root (capture/modtree.py): one pass over the collector, whoever
        holds the model. With `event`, one tree for every rule that asks while that event is
        judged. Ask at report time or at an optimizer's construction, never per step."""
        if event is None:
            return module_tree()
        return self.shared(_module_tree_of, event)

    def holdings(self, tensors: list[torch.Tensor], tree: ModuleTree, own: tuple[Any, ...] = ()
                 ) -> dict[int, Holding]:
        """id(tensor) -> how the live modules of `tree` hold it: registered, a plain attribute, in
        a plain container (capture/holding.py), read from the object graph whoever holds the
        model; a tensor no module holds is left out. `own`: the caller's lists of them."""
        return holdings(tensors, tree, own)

    def plain_holders(self, objs: list[Any], tree: ModuleTree, own: tuple[Any, ...] = ()
                      ) -> dict[int, PlainHold]:
        """id(obj) -> the module of `tree` that keeps `obj` outside its registries: a plain
        attribute, or inside a plain list / tuple / dict its __dict__ keeps."""
        return plain_holders(objs, tree, own)

    def held_by_program(self, objs: list[Any], own: tuple[Any, ...] = ()) -> set[int]:
        """The ids of `objs` something of the program holds (any referrer but `own`, or a local of
        a live frame of the user's code): not only the autograd graph."""
        return held_by_program(objs, own)

    def containers_with(self, t: torch.Tensor, own: tuple[Any, ...] = ()) -> list[tuple[int, list[Any]]]:
        """(id, elements) of each plain list, tuple or non-namespace dict that holds `t` directly,
        whoever holds it (`own`: the caller's lists, left out)."""
        return containers_with(t, own)

    def claimed_by_superseding(self, rule: Any, leaf_site: LeafSite) -> bool:
        """Whether a rule that supersedes `rule` claimed the leaves of `leaf_site`."""
        by = self._superseded_by.get(rule.code)
        return bool(by) and bool(by & self._claims.get(id(leaf_site), set()))

    def leaf_record(self, t: Any) -> LeafRecord | None:
        """How the guard saw a requires-grad leaf made (None when it did not)."""
        return self._rec.leaves.get(t) if isinstance(t, torch.Tensor) else None

    def recorded_leaves(self) -> list[tuple[torch.Tensor, LeafRecord]]:
        """The live recorded leaves, oldest first."""
        return list(self._rec.leaves.items())

    def leaf_sites(self) -> list[LeafSite]:
        """Every line that made requires-grad leaves, with its counts."""
        return list(self._rec.leaf_sites.values())

    def leaf_used(self, t: Any) -> bool:
        """Whether `t`'s gradient is used: optimized, `.grad` read, an input of autograd.grad, or
        claimed by a rule that treats it as meant to be trained."""
        rec = self.leaf_record(t)
        return rec is not None and (rec.stats.used or id(rec.stats) in self._claims)

    def leaf_read(self, t: Any) -> bool:
        """Whether some op read the requires-grad leaf `t` with grad mode on while recording
        (the forward used it, whether or not its result reached a loss)."""
        return isinstance(t, torch.Tensor) and t in self._rec.read_leaves

    def recorded_leaf_tensors(self) -> list[torch.Tensor]:
        """The live recorded leaves, oldest first (tensors only)."""
        return list(self._rec.leaves.keys())

    def is_optimized(self, t: Any) -> bool:
        return t in self._rec.optimized

    def any_optimized(self) -> bool:
        """Whether some optimizer has been given parameters."""
        return len(self._rec.optimized) > 0

    def optimized_params(self) -> list[torch.Tensor]:
        return list(self._rec.optimized.keys())

    def cuts_for_leaf(self, leaf: torch.Tensor, iteration: int | None = None) -> list[Cut]:
        """Recorded cuts with `leaf` behind their inputs (in one iteration, when given)."""
        return self._rec.cuts_for_leaf(leaf, iteration)

    def cuts_behind(self, t: Any) -> list[Cut]:
        """The recorded cuts `t` was computed from (its taint), oldest first."""
        taint = self._rec.taint
        if not len(taint):  # light mode: nothing tainted (a lookup builds a weak reference)
            return []
        ids = taint.get(t) or frozenset()
        cuts = self._rec.cuts
        return [cuts[i] for i in sorted(ids) if i in cuts]


    def added_terms(self) -> list[AddedTerm]:
        """Recorded scalars without gradient, cut from values with one, added into a scalar with
        one (a loss term that trains nothing), oldest first."""
        return list(self._rec.added_terms)

    def cut_healed(self, cut: Cut) -> bool:
        """Whether a value the cut made went into a tensor with history again (combined with
        one that still had it): the cut did not sever what was computed from that."""
        return cut.index in self._rec.healed

    def all_cuts(self) -> list[Cut]:
        return list(self._rec.cuts.values())

    def modified_saved(self) -> list[Packed]:
        """Live saved tensors changed in place since they were saved."""
        return self._rec.modified_packs()

    def inplace_writes(self) -> Mapping[int, InplaceRecord]:
        """The latest recorded in-place write per storage (data_ptr -> record)."""
        return self._rec.inplace_log






    def creation(self, t: torch.Tensor) -> tuple[Site, int] | None:
        """Where and in which iteration a tensor was made, when the guard saw it."""
        rec = self.leaf_record(t)
        if rec is not None:
            return rec.site, rec.iteration
        gf = t.grad_fn
        if gf is not None:
            st = gf.metadata.get(self.stamp_key)
            if isinstance(st, Stamp):
                return st.site, st.iteration
        return None

    def error_codes(self) -> set[str]:
        """The codes of the error findings reported so far (GG903: a family already explained)."""
        return {f.code for f in self._findings() if f.severity == "error"}

    def grad_switch(self) -> GradSwitch | None:
        """The grad-mode switch in force now, when it turned autograd off (capture/gradmode.py)."""
        return self._rec.grad_switches.current()

    def inference_switch(self, t: Any) -> GradSwitch | None:
        """The inference_mode switch a recorded inference tensor was made under, if seen."""
        try:
            return self._rec.inference_switch.get(t)
        except TypeError:
            return None

    def inference_origin(self, t: Any) -> tuple[Any, Site] | None:
        """For an inference tensor: the tensor made under inference_mode that it is (or is a view
        of) and the site that made it, when the guard recorded it (GG014)."""
        made = self._rec.inference_made
        for v in (t, getattr(t, "_base", None)):
            if isinstance(v, torch.Tensor):
                site = made.get(v)
                if site is not None:
                    return v, site
        try:  # a view made outside inference mode keeps no _base: match the storage
            ptr = t.untyped_storage().data_ptr()
            for v, site in list(made.items()):
                if v.untyped_storage().data_ptr() == ptr and v._base is None:
                    return v, site
        except Exception:  # storage-less tensors
            pass
        return None

    def stamp(self, node: Any) -> Stamp | None:
        st = node.metadata.get(self.stamp_key) if node is not None else None
        return st if isinstance(st, Stamp) else None


class RuleContext(Evidence):
    """What `describe` may ask besides the evidence: the user's names for tensors, modules and
    optimizers (lookup/), source lines, creation and fix lines. Only describing may use these:
    `detect` decides from `Evidence` alone (tests/test_architecture.py)."""

    def superseded(self, rule: Any, name: str | None = None, leaf_site: LeafSite | None = None) -> bool:
        """Whether a rule that supersedes `rule` already covers this subject."""
        by = self._superseded_by.get(rule.code)
        if not by:
            return False
        if leaf_site is not None and by & self._claims.get(id(leaf_site), set()):
            return True
        if name is not None:
            return any(f.code in by and f.subject.name == name for f in self._findings())
        return False

    def name_of_cut_value(self, cut_ids: frozenset[int]) -> NameHit | None:
        """The user's name for a live scalar without gradient computed through one of the cuts
        `cut_ids` (the term as the program holds it: `dice_loss`, when `lam * dice_loss` is
        what was added)."""
        taint = self._rec.taint
        if not len(taint):
            return None

        def computed_through(v: Any) -> bool:
            if not isinstance(v, torch.Tensor) or v.requires_grad or v.numel() != 1:
                return False
            ids = taint.get(v)
            return bool(ids) and not ids.isdisjoint(cut_ids)

        return find_name(computed_through)

    @staticmethod
    def loc(site: Site | None, prefer: Frame | None = None) -> SourceLoc | None:
        """A SourceLoc for a site; the frame in the same function as `prefer` when there is one."""
        if not site:
            return None
        if prefer is not None:
            for fr in site:
                if fr.file == prefer.file and fr.function == prefer.function:
                    return SourceLoc.from_frame(fr)
        return SourceLoc.from_frame(site[0])

    @staticmethod
    def frames() -> list[Any]:
        return live_user_frames()

    def name_of(self, t: Any) -> NameHit | None:
        """The user's name for `t`: the name its creation line assigns when that name still holds
        it (`w`, `self.hidden`), else the innermost name found in the user's frames."""
        if t is None:
            return None
        frames = live_user_frames()
        made = self.creation(t) if isinstance(t, torch.Tensor) else None
        if made is not None and made[0]:
            file, line = made[0][0].file, made[0][0].line
            # `w.requires_grad_(True)` made the leaf: the name is its receiver
            for target in assigned_targets(file, line) or inplace_receivers(file, line):
                hit = resolve(target, frames)
                if hit is not None and hit.value is t:
                    return hit
        hit = find_name(lambda v: v is t, frames)
        if hit is None and not isinstance(t, torch.Tensor):
            # an optimizer kept as an attribute of an object the user holds (a model's own
            # `self.optimizer`, inside a trainer): followed through instance dicts
            hit = find_held_object(t, frames)
        return hit

    def name_of_node(self, node: Any) -> NameHit | None:
        return find_name(lambda v: isinstance(v, torch.Tensor) and v.grad_fn is node)

    def made_name_of_node(self, node: Any) -> tuple[NameHit, SourceLoc | None] | None:
        """For a node made before the guard (no op seen): the user's name for its tensor as
        written where it was made (not a later alias of it), and that assignment's line."""
        hits = find_names(lambda v: isinstance(v, torch.Tensor) and v.grad_fn is node)
        return made_name(hits)

    def subject(self, t: Any, kind: str = "tensor", hit: NameHit | None = None,
                site: Site | None = None, iteration: int | None = None,
                fallback_func: str | None = None) -> Subject:
        """Describe a tensor: the user's name, its one-line summary, where it was made."""
        if hit is None and t is not None:
            hit = self.name_of(t)
        if site is None and isinstance(t, torch.Tensor):
            made = self.creation(t)
            if made is not None:
                site, iteration = made
        name = hit.name if hit else None
        if name is None and site and fallback_func:
            name = assigned_name(site[0], fallback_func)
        if kind == "tensor" and isinstance(t, torch.nn.Parameter):
            kind = "parameter"
        made_at = self.loc(site, hit.frame if hit else None) if site else None
        if made_at is not None and isinstance(t, torch.Tensor):
            made_at = self._made_before_requires_grad(t, made_at)
        if made_at is None and (isinstance(t, torch.nn.Module)
                                or isinstance(t, torch.Tensor) and t.grad_fn is None):
            # no op seen making it (built before the guard, a parameter): read the source. A
            # tensor with history is dated by its ops only: a name's assignment line may be
            # another branch's
            made_at = self.origin(t, hit)
        return Subject(name, kind, summarize(t) if t is not None else "",
                       made_at, iteration)

    def _made_before_requires_grad(self, t: torch.Tensor, at: SourceLoc) -> SourceLoc:
        """For a leaf that a statement `w.requires_grad_()` made trainable: the line that made the
        tensor (`w = torch.tensor(...)` before it), which is where the tensor was created; the
        requires_grad_ line itself only switched gradients on. `at` otherwise. Report time only."""
        rec = self.leaf_record(t)
        if rec is None or rec.func != "requires_grad_":
            return at
        try:
            receivers = inplace_receivers(at.file, at.line)
            if len(receivers) != 1:
                return at
            found = [loc for loc in target_lines(at.file, at.line, receivers[0]) if loc.line < at.line]
        except Exception:  # wording only: never let a look-up fail a finding
            return at
        return found[-1] if found else at

    def origin(self, t: Any, hit: NameHit | None = None) -> SourceLoc | None:
        """Where the user's source makes `t` when the guard saw no op make it (built before the
        guard was entered, or a parameter): the line that builds its module (`self.fc =
        nn.Linear(...)`), or the line that assigns its name. Report time only."""
        try:
            if hit is not None:
                found = origin_of_name(hit.name, hit.frame, hit.value)
            else:
                found = origin_of(t)
            if found is None and isinstance(t, (torch.nn.Parameter, torch.nn.Module)):
                # no module the frames name holds it (a model in a closure's cell, a slotted
                # object): up the module tree, whoever holds the model
                found = origin_in_tree(t, self.module_tree(self._tree_key))
            return found
        except Exception:  # wording only: never let a look-up fail a finding
            return None

    @staticmethod
    def fix_at(where: SourceLoc | Site | Frame | None, name: str | None = None,
               op: str | None = None) -> list[Related]:
        """A `related` entry with role `fix-at`: the line where the fix goes (a creation line, the
        constructor that says `inplace=True`, the line that drops the history). A list, empty when
        the place is unknown, so that rules write `related += ctx.fix_at(...)`."""
        if isinstance(where, Frame):
            where = SourceLoc.from_frame(where)
        elif isinstance(where, tuple) and where and isinstance(where[0], Frame):
            where = SourceLoc.from_frame(where[0])
        if not isinstance(where, SourceLoc):
            return []
        return [Related(Role.FIX_AT, name, op, where)]

    def subject_of_node(self, node: Any, hit: NameHit | None = None) -> Subject:
        """Describe the tensor whose grad_fn is `node`: its user name (looked up unless given),
        and where and in which iteration the node was made."""
        if hit is None:
            hit = self.name_of_node(node)
        st = self.stamp(node)
        return self.subject(hit.value if hit else None, hit=hit, site=st.site if st else None,
                            iteration=st.iteration if st else None)

    def optimizers(self) -> list[tuple[str, Any]]:
        return find_objects(torch.optim.Optimizer)
