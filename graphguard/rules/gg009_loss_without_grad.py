"""GG009 loss-without-grad: backward on a tensor with no grad_fn, and the cuts that explain it."""
from __future__ import annotations

from typing import Any

import torch
from torch.autograd.function import BackwardCFunction

from ..events import BackwardCall
from ..lookup.source import assignment_lines
from ..model import Finding, Message, Related, Role, SourceLoc, Subject
from .shared.cuts import cut_related, cut_snapshot, describe_op, fix_for_cut, leaf_label
from .shared.cutpoint import SCALAR_OPS, cut_point, leaf_point, made_point
from .shared.deadgraph import index_graph, upward
from .base import Detection, Rule, display
from .context import Evidence, RuleContext

__all__ = ["LossWithoutGrad"]

_DELIBERATE = frozenset({"detach", "detach_", "data", "__get__"})  # cuts that say "no gradient here"
# copies of requires-grad tensors (`torch.tensor([a, b])`): GG104 reports the copy itself
_COPIES = frozenset({"tensor", "as_tensor", "new_tensor", "asarray"})


class LossWithoutGrad(Rule):
    """## What it does
    Before `backward()`, checks that the tensor it starts from has a `grad_fn`. When it has none,
    it explains why from what it recorded: the ops that cut the path between the requires-grad
    leaves (the parameters) and the loss, with their lines, or a `torch.no_grad()` region.

    ## Why is this bad?
    PyTorch raises "element 0 of tensors does not require grad and does not have a grad_fn",
    which says nothing about where the gradient was lost.

    ## Example
    ```python
    mask = torch.where((0.9 < r) & (r < 1), 1.0, 0.0)   # comparisons cut the gradient
    loss = F.mse_loss(mask, ref)
    loss.backward()
    ```

    ## Use instead
    ```python
    mask = torch.sigmoid(k * (r - 0.9)) * torch.sigmoid(k * (1 - r))
    ```

    It also fires when the loss requires grad but its graph reaches none of the optimized
    parameters, only tensors made fresh in this iteration: the history was dropped (`.item()`,
    `.data`, numpy, `torch.no_grad()`) and the value re-wrapped (`torch.tensor(v,
    requires_grad=True)`, `Variable(...)`, `loss.requires_grad = True`). Backward then runs and
    training silently learns nothing; the finding names the line that re-enabled requires_grad
    and the cut that dropped the history (`fix-at`).

    The finding names the tensor where the history was dropped, as written there (the target of
    the argmax or comparison statement, the accumulator filled under `torch.no_grad()`, the fresh
    tensor a helper returns), not the loss at the end of the chain; `subject.created_at` is that
    line.

    As a warning, it also fires when only one term of a loss is cut while the other terms train:
    values cut from the optimized parameters (a comparison, argmax) are added into an accumulator
    made with `requires_grad=True` (`loss = torch.tensor(0., requires_grad=True)`, then
    `loss = loss + ...`), whose part of the graph reaches no optimized parameter; or a scalar
    with no gradient, cut from them, is added to a loss that has one (`loss = ce + dice` with
    `dice` computed from `pred.argmax(1)`): that term only shifts the loss's value. The
    finding names the term, the line that adds it (`added-at`) and the cut (`fix-at`). A term
    made constant on purpose, with `.detach()` or under `torch.no_grad()`, is left alone, and so
    is a cut value of more than one element added to one with history (the straight-through
    estimator `x + (x.round() - x).detach()`).

    ## Known problems
    The re-wrap and one-term checks run while the guard records in full (the first iterations)
    and only for `backward()` (not `autograd.grad`, whose inputs may legitimately be fresh
    tensors). A value that went through Python (`.item()`, numpy) is named from the source: the
    statement that made the loss, followed into the user's helpers that return it.
    Cuts are recorded during full recording only (the first iterations); afterwards the finding
    says the loss has no grad_fn without naming the cut.
    A loss term computed under `torch.no_grad()` is taken as meant (a constant the author wants
    in the reported value); when it is a mistake (an entropy bonus computed from log-probs that a
    no-grad helper returned), it is not reported. The re-wrap check stays silent when the graph
    holds a custom `autograd.Function` (a reentrant checkpoint): its backward may reach parameters
    the walk cannot see (a frozen base whose adapters sit in checkpointed blocks).
    """

    code = "GG009"
    slug = "loss-without-grad"
    severity = "error"
    summary = "backward on a tensor that has no grad_fn, with the ops that cut it"
    # NOTE [GG009 stories]: the loss itself has no grad_fn (cut by a recorded op, computed with
    # grad mode off, or made from nothing that requires grad); the loss requires grad but trains
    # no optimized parameter (re-wrapped after a cut, or made from a cut value and fresh inputs);
    # one term of a loss that trains is cut (through a requires-grad accumulator, or added as a
    # plain value). Which one is decided from the recorded cuts, leaves and graph; `{state}` in
    # the first three only says whether the subject is the loss or the tensor upstream where the
    # history was dropped (a name found in the source: wording).
    messages = (
        Message("cut", "error",
                "{name} {state}: the path from {who} to it is cut by {op} at line {line}. Fix: {fix}",
                "backward from a loss with no grad_fn, whose history a recorded op (argmax, a "
                "comparison, .detach(), .item()) cut from the requires-grad tensors"),
        Message("under-no-grad", "error",
                "{name} {state}: it was computed under torch.no_grad(). Fix: {fix}",
                "backward from a loss with no grad_fn, computed with grad mode off and no cut recorded"),
        Message("nothing-requires-grad", "error",
                "{name} {state}: nothing it was computed from requires grad. Fix: {fix}",
                "backward from a loss with no grad_fn, made from nothing that requires grad"),
        Message("rewrapped-after-cut", "error",
                "{name} trains nothing: it requires grad but its history was dropped by {op} at "
                "line {line}, so no optimized parameter gets a gradient. Fix: {fix}",
                "a loss that requires grad only through a fresh leaf that re-wraps a value whose "
                "history a recorded op dropped (torch.tensor(loss.item(), requires_grad=True))"),
        Message("rewrapped", "error",
                "{name} trains nothing: it requires grad but its graph reaches none of the "
                "optimized parameters, only tensors made in this iteration: its history was "
                "dropped and re-wrapped. Fix: {fix}",
                "a loss that requires grad only through tensors made fresh in this iteration, with "
                "no recorded cut of the optimized parameters"),
        Message("fresh-inputs-only", "error",
                "{name} has no history, so {loss} made from it reaches no optimized parameter (it "
                "requires grad only through tensors made in this iteration): the path from {who} "
                "to it is cut by {op} at line {line}. Fix: {fix}",
                "a loss computed through a cut of the optimized parameters, requiring grad only "
                "through fresh inputs (images built with requires_grad=True)"),
        Message("term-cut-accumulator", "warning",
                "{name} carries a term of the loss that trains nothing: the values added into it "
                "were cut from {who} by {op} at line {line}, so that term gives them no gradient "
                "while the other terms do. Fix: {fix}",
                "values cut from the optimized parameters added into a requires_grad=True "
                "accumulator, while the rest of the loss trains"),
        Message("added-dead-term", "warning",
                "{name} trains nothing: it is added to the loss at line {added} but was cut from "
                "{who} by {op} at line {line}, so it changes the loss's value and gives no "
                "gradient. Fix: {fix}",
                "a scalar with no gradient, cut from the optimized parameters, added to a loss "
                "that has one"),
    )
    events = (BackwardCall,)
    # quiet: every root has history; the rest is judged while recording
    quiet_skip = (BackwardCall,)

    # ---- detect: from the recorded cuts, leaves and graph ---------------------------------------
    def detect(self, event: BackwardCall, ev: Evidence) -> list[Detection]:
        rewrapped = self._rewrapped(event, ev)
        if rewrapped is not None:
            return [rewrapped]  # the loss trains nothing: its terms and roots are that story
        out = []
        term = self._term_cut(event, ev) or self._added_term(event, ev)
        if term is not None:
            out.append(term)
        for root in event.roots:
            if not isinstance(root, torch.Tensor) or root.requires_grad:
                continue
            if root.is_inference() and not ev.cuts_behind(root):
                continue  # made under inference_mode, nothing else cut it: GG014 explains it
            cuts = _severing_first(ev.cuts_behind(root), ev)
            if _checkpointed_only(cuts, ev):
                continue
            tainted = bool(cuts)
            if not cuts:
                # The value went through Python (`.item()`, `float(...)`) and lost its taint: the
                # cuts of this iteration on optimized parameters are the best explanation left.
                cuts = [c for c in ev.all_cuts() if c.iteration == ev.iteration
                        and not c.no_grad and any(ev.is_optimized(r()) for r in c.leaves if r() is not None)]
            if cuts:
                message = "cut"
            elif not torch.is_grad_enabled():
                message = "under-no-grad"
            else:
                message = "nothing-requires-grad"
            out.append(Detection(message, root, {"cuts": cuts, "tainted": tainted}))
        return out

    def _rewrapped(self, event: BackwardCall, ev: Evidence) -> Detection | None:
        """A loss that requires grad but whose graph reaches none of the optimized parameters,
        only tensors made fresh in this iteration: its history was dropped and re-wrapped
        (`torch.tensor(loss.item(), requires_grad=True)`, `loss.requires_grad = True`)."""
        if (event.api != "backward" or not ev.any_optimized() or not ev.recording_details()
                or event.scan is None or event.scan.truncated):
            return None
        roots = [r for r in event.roots if isinstance(r, torch.Tensor) and r.requires_grad]
        leaves = [r for r in roots if r.grad_fn is None] + list(event.scan.leaves)  # a root that is a leaf first
        if not roots or not leaves or any(ev.is_optimized(v) for v in leaves):
            return None
        if any(issubclass(t, BackwardCFunction) for t in event.scan.types):
            # A custom autograd.Function's backward is the program's own code, and it may reach
            # parameters the walk cannot see: a reentrant checkpoint runs its forward under
            # no_grad (the cuts recorded there) and recomputes it with grad inside its backward,
            # so a frozen model whose only trainable parameters (LoRA adapters) sit in the
            # checkpointed blocks trains them although the graph shows only fresh leaves.
            return None
        for v in leaves:
            if isinstance(v, torch.nn.Parameter):
                return None
            made = ev.creation(v)
            if made is not None and made[1] != ev.iteration:
                return None
        cuts = [c for c in ev.all_cuts() if c.iteration == ev.iteration
                and any(ev.is_optimized(r()) for r in c.leaves if r() is not None)]
        # the loss's values were computed through a recorded tensor-level cut of the optimized
        # parameters (a comparison mask, an argmax) and only fresh inputs made it require grad
        # (images built with requires_grad=True): the cut is what stops training (under no_grad
        # the re-wrap is the story: the user switched gradients back on there)
        behind = [c for r in roots for c in ev.cuts_behind(r)
                  if c.op not in SCALAR_OPS and c.site and not c.no_grad
                  and any(ev.is_optimized(w()) for w in c.leaves if w() is not None)]
        if behind:
            message = "fresh-inputs-only"
        elif cuts:
            message = "rewrapped-after-cut"
        else:
            message = "rewrapped"
        return Detection(message, roots[0], {"leaves": leaves, "cuts": cuts, "behind": behind})

    def _term_cut(self, event: BackwardCall, ev: Evidence) -> Detection | None:
        """One term of a loss that trains: its history was cut (a comparison, argmax, `.item()`)
        and it re-enters through a fresh leaf (`acc = torch.tensor(0., requires_grad=True)`,
        then `acc = acc + <cut values>`). Backward runs and the other terms train the
        parameters, so nothing else notices that this term contributes no gradient. Fires when the
        graph holds such a fresh leaf whose part of the graph reaches no optimized parameter but
        mixes in values computed, in the same function, from a cut of the optimized parameters."""
        scan = event.scan
        if (event.api != "backward" or not ev.any_optimized() or not ev.recording_details()
                or scan is None or scan.truncated):
            return None
        roots = [r for r in event.roots if isinstance(r, torch.Tensor) and r.grad_fn is not None]
        if not roots or not any(ev.is_optimized(v) for v in scan.leaves):
            return None
        called = {id(v) for v in scan.function_inputs}
        fresh = []
        for v in scan.leaves:
            rec = ev.leaf_record(v)
            if (rec is not None and rec.iteration == ev.iteration and id(v) not in called
                    and not isinstance(v, torch.nn.Parameter) and not ev.is_optimized(v)
                    and not ev.leaf_used(v)):
                fresh.append(v)
        if not fresh:
            return None
        cuts = [c for r in roots for c in ev.cuts_behind(r) if c.iteration == ev.iteration
                and not c.no_grad and c.site
                and any(ev.is_optimized(w()) for w in c.leaves if w() is not None)]
        if not cuts:
            return None
        g = index_graph(scan.nodes)
        opt = [i for i in scan.leaf_index if ev.is_optimized(getattr(g.nodes[i], "variable", None))]
        live = upward(g, opt)  # reaches an optimized parameter
        for leaf in fresh:
            acc = next((i for i in scan.leaf_index if getattr(g.nodes[i], "variable", None) is leaf), None)
            if acc is None:
                continue
            dead = upward(g, [acc]) - live - {acc}  # ops built on the leaf that reach no parameter
            places = set()
            for i in dead:
                st = ev.stamp(g.nodes[i])
                if st is not None and st.site:
                    places.add((st.site[0].file, st.site[0].function))
            match = [c for c in cuts if (c.site[0].file, c.site[0].function) in places]
            if match:
                return Detection("term-cut-accumulator", leaf, {"cuts": match})
        return None

    def _added_term(self, event: BackwardCall, ev: Evidence) -> Detection | None:
        """One term of a loss that trains, added as a plain value: a scalar cut from the
        optimized parameters (`dice = dice_score(pred.argmax(1), y)`, a count of correct
        predictions, `.item()` of a penalty) summed into a loss that has a gradient
        (`loss = ce + dice`). Backward runs on the other terms; this one only shifts the value.
        Recorded at the sum (capture: `AddedTerm`), judged when the loss it went into reaches
        backward, in the iteration that made it."""
        if event.api != "backward" or not ev.any_optimized() or not ev.recording_details():
            return None
        terms = [t for t in ev.added_terms() if t.iteration == ev.iteration]
        if not terms:
            return None
        for root in event.roots:
            if not isinstance(root, torch.Tensor) or root.grad_fn is None:
                continue
            behind = ev.cuts_behind(root)
            if not behind:
                continue
            for term in terms:
                if any(c.index in term.cuts and c.op in _COPIES for c in behind):
                    # its history was dropped by a `torch.tensor(...)` copy of values that had
                    # one (GG104 names that copy); an earlier cut behind it (an index, a
                    # comparison inside it) is not why it trains nothing
                    continue
                # an explicit `.detach()` or `torch.no_grad()` says the term is a constant on
                # purpose (a detached statistic, a logged value): only cuts made unawares count
                cuts = [c for c in behind if c.index in term.cuts and c.site and not c.no_grad
                        and c.op not in _DELIBERATE and c.op not in _COPIES
                        and any(ev.is_optimized(w()) for w in c.leaves if w() is not None)]
                if cuts:
                    return Detection("added-dead-term", term.value(), {"term": term, "cuts": cuts})
        return None

    # ---- describe: names, lines and fixes, from the cut sites and the source ------------------
    def describe(self, d: Detection, event: BackwardCall, ctx: RuleContext) -> Finding:
        if d.message == "term-cut-accumulator":
            return self._term_finding(ctx, event, d.subject, d.facts["cuts"])
        if d.message == "added-dead-term":
            return self._added_term_finding(ctx, event, d.facts["term"], d.facts["cuts"])
        if d.message in ("rewrapped", "rewrapped-after-cut", "fresh-inputs-only"):
            return self._rewrapped_finding(ctx, event, d)
        return self._no_grad_fn_finding(ctx, event, d)

    def _no_grad_fn_finding(self, ctx: RuleContext, event: BackwardCall, d: Detection) -> Finding:
        """The loss has no grad_fn: named where the history was dropped, as the user wrote it."""
        root, cuts, tainted = d.subject, d.facts["cuts"], d.facts["tainted"]
        subject = ctx.subject(root)
        name = subject.name
        # the tensor where the history was dropped, as the user wrote it: the cut's statement;
        # after a trip through Python (`.item()`, numpy) or with no cut at all (a fresh
        # tensor), the statement that made the value backward starts from
        point = cut_point(ctx, cuts[0]) if tainted and cuts[0].op not in SCALAR_OPS else None
        if point is None or point.name is None:
            point = made_point(ctx, root) or point
        related: list[Related] = cut_related(ctx, cuts)
        leaves = []
        seen: set[int] = set()
        for c in cuts:
            for r in c.leaves:
                v = r()
                if v is not None and id(v) not in seen:
                    seen.add(id(v))
                    leaves.append(v)
        names = []
        leaves.sort(key=lambda v: not ctx.is_optimized(v))  # optimized parameters first
        for leaf in leaves[:4]:
            label = leaf_label(ctx, leaf)
            made = ctx.creation(leaf)
            related.append(Related(Role.UNREACHABLE, label, None, ctx.loc(made[0]) if made else None))
            if label:
                names.append(label)
        args: dict[str, Any] = {}
        if d.message == "cut":
            c = cuts[0]
            args = {"who": ", ".join(names) if names else "the requires-grad tensors",
                    "op": describe_op(c), "line": c.site[0].line if c.site else "?"}
            fix = fix_for_cut(c, names[0] if names else "the parameters")
        elif d.message == "under-no-grad":
            fix = "compute the loss outside torch.no_grad()"
        else:
            fix = ("make sure the model's parameters require grad and the loss is computed "
                   "from the model's output, not from .item() or a new tensor")
        # the fix goes where the history is dropped (the first cut), else where the loss is made
        made_here = point.where if point is not None and point.where else subject.created_at
        related += ctx.fix_at(ctx.loc(cuts[0].site) if tainted and cuts[0].site else
                              made_here if made_here else ctx.loc(cuts[0].site) if cuts else None,
                              None, describe_op(cuts[0]) if cuts else None)
        state = "does not require grad, so backward() would fail"
        if point is not None and point.name:
            related += point.related
            if point.name != name:
                state = (f"has no history, so {display(name, 'the loss')} made from it does not "
                         "require grad and backward() would fail")
            subject = Subject(point.name, "tensor", subject.summary, point.where or subject.created_at,
                              ctx.iteration)
        # no cut recorded (a fresh tensor, a value through .item()): the optimized parameters
        # are what gets no gradient, so they are what the diagram shows
        graph = cut_snapshot(ctx, cuts, leaves or list(ctx.optimized_params())[:8],
                             f"GG009: {name or 'the loss'} has no grad_fn",
                             sink=root, entry_site=event.site, entry_op=f"{event.api}()")
        args.update({"fix": fix, "name": display(subject.name, "The loss"), "state": state})
        return self.finding(ctx, subject, ctx.loc(event.site), fix, args, related, graph=graph,
                            message=d.message)

    def _rewrapped_finding(self, ctx: RuleContext, event: BackwardCall, d: Detection) -> Finding:
        """The loss requires grad but trains nothing: named where the history was dropped (the
        cut the loss was computed through) or where it was re-wrapped (the fresh leaf)."""
        root, leaves, cuts, behind = d.subject, d.facts["leaves"], d.facts["cuts"], d.facts["behind"]
        subject = ctx.subject(root)
        name = subject.name
        related: list[Related] = cut_related(ctx, cuts)
        # the subject is the fresh leaf that stands in for the history (the re-wrapped loss, or the
        # `torch.tensor(0., requires_grad=True)` a helper returns), as written where it was made
        order = {id(t): k for k, t in enumerate(ctx.recorded_leaf_tensors())}
        fresh = sorted(leaves, key=lambda v: order.get(id(v), -1))  # the first one made first
        point = leaf_point(ctx, fresh[0])
        # through a cut: the finding names the tensor the cut made, where it was made
        through_cut = cut_point(ctx, behind[0]) if behind else None
        if through_cut is not None and through_cut.name:
            related += through_cut.related
            related += ctx.fix_at(ctx.loc(behind[0].site), through_cut.name, describe_op(behind[0]))
            subject = Subject(through_cut.name, "tensor", subject.summary,
                              through_cut.where or subject.created_at, ctx.iteration)
        elif point is not None and point.name:
            related += point.related
            related += ctx.fix_at(point.where, point.name, "re-wrapped without history")
            subject = Subject(point.name, "tensor", ctx.subject(fresh[0]).summary,
                              point.where or subject.created_at, ctx.iteration)
        if name and event.site:
            # where the user switched requires_grad back on (`loss.requires_grad = True`): the
            # re-wrap to remove (source read for wording only: the behaviour decided in detect)
            fr = event.site[0]
            for ln in assignment_lines(fr.file, fr.line, f"{name}.requires_grad"):
                if ln <= fr.line:
                    related.append(Related(Role.FIX_AT, name, "requires_grad = True",
                                           SourceLoc(fr.file, ln, fr.function), ctx.iteration))
        if cuts and cuts[0].site and not (through_cut is not None and through_cut.name):
            related.append(Related(Role.FIX_AT, None, describe_op(cuts[0]), ctx.loc(cuts[0].site),
                                   cuts[0].iteration))
            related += cut_point(ctx, cuts[0]).related  # the `with torch.no_grad():` that cut it
        starved = [r() for c in cuts for r in c.leaves if r() is not None and ctx.is_optimized(r())]
        args: dict[str, Any] = {"name": display(subject.name, "The loss")}
        if d.message == "fresh-inputs-only":
            c = behind[0]
            params = list(dict.fromkeys(leaf_label(ctx, v) for v in {id(v): v for v in starved}.values()))[:3]
            args.update({"loss": display(name, "the loss"),
                         "who": ", ".join(p for p in params if p) or "the optimized parameters",
                         "op": describe_op(c), "line": c.site[0].line})
            fix = fix_for_cut(c, next((p for p in params if p), "the parameters"))
        else:
            if d.message == "rewrapped-after-cut":
                c = cuts[0]
                args.update({"op": describe_op(c), "line": c.site[0].line if c.site else "?"})
            fix = ("keep the loss a tensor computed from the model's output (no .item(), .data, "
                   "numpy or torch.tensor(...) re-wrap), and drop the requires_grad=True re-wrap")
        args["fix"] = fix
        graph = cut_snapshot(ctx, cuts, starved or leaves, f"GG009: {name or 'the loss'} is re-wrapped",
                             sink=root, entry_site=event.site)
        return self.finding(ctx, subject, ctx.loc(event.site), fix, args, related, graph=graph,
                            message=d.message)

    def _added_term_finding(self, ctx: RuleContext, event: BackwardCall, term: Any,
                            cuts: list[Any]) -> Finding:
        value = term.value()
        hit = ctx.name_of(value) if value is not None else None
        if hit is None:  # a temporary was added (`lam * dice_loss`): the value it was made from
            hit = ctx.name_of_cut_value(term.cuts)
            value = hit.value if hit is not None else value
        subject = ctx.subject(value, hit=hit) if value is not None else Subject(None, "tensor")
        # the first cut is where the term lost its gradient (argmax before the one-hot, the
        # comparison before the count): the fix goes there
        c = cuts[0]
        params = _optimized_labels(ctx, c)
        fix = (fix_for_cut(c, params[0] if params else "the parameters") +
               ", or leave it out of the loss and log it on its own")
        related = [Related(Role.ADDED_AT, subject.name, term.op, ctx.loc(term.site))]
        related += cut_related(ctx, cuts)
        related += ctx.fix_at(ctx.loc(c.site), None, describe_op(c))
        graph = cut_snapshot(ctx, cuts, [], "GG009: a term of the loss is cut", sink=event.roots[0],
                             entry_site=event.site)
        return self.finding(ctx, subject, ctx.loc(event.site), fix,
                            {"fix": fix, "name": display(subject.name, "A term of the loss"),
                             "who": ", ".join(params[:3]) if params else "the optimized parameters",
                             "added": term.site[0].line if term.site else "?",
                             "op": describe_op(c), "line": c.site[0].line},
                            related, graph=graph, message="added-dead-term")

    def _term_finding(self, ctx: RuleContext, event: BackwardCall, leaf: torch.Tensor,
                      cuts: list[Any]) -> Finding:
        point = leaf_point(ctx, leaf)
        subject = ctx.subject(leaf)
        if point is not None and point.name:
            subject = Subject(point.name, "tensor", subject.summary, point.where or subject.created_at,
                              ctx.iteration)
        c = cuts[0]
        params = _optimized_labels(ctx, c)
        fix = fix_for_cut(c, params[0] if params else "the parameters") + \
            "; and drop requires_grad=True on the accumulator"
        related = cut_related(ctx, cuts)
        related += ctx.fix_at(ctx.loc(c.site), None, describe_op(c))
        if point is not None:
            related += point.related
            related += ctx.fix_at(point.where, point.name, "requires_grad=True")
        graph = cut_snapshot(ctx, cuts, [leaf], "GG009: a term of the loss is cut", sink=event.roots[0],
                             entry_site=event.site)
        return self.finding(ctx, subject, ctx.loc(event.site), fix,
                            {"fix": fix, "name": display(subject.name, "A term of the loss"),
                             "who": ", ".join(params[:3]) if params else "the optimized parameters",
                             "op": describe_op(c), "line": c.site[0].line},
                            related, graph=graph, message="term-cut-accumulator")

def _optimized_labels(ctx: RuleContext, cut: Any) -> list[str]:
    """The user's names of the optimized parameters behind a cut, each once, in its order."""
    params: list[str] = []
    for r in cut.leaves:
        v = r()
        if v is not None and ctx.is_optimized(v):
            label = leaf_label(ctx, v)
            if label and label not in params:
                params.append(label)
    return params


def _severing_first(cuts: list, ev: Evidence) -> list:
    """The recorded cuts behind a loss (oldest first), those that severed it first.

    A cut whose value went into a tensor that has history again did not sever what was
    computed from it (MAML's `p - lr * grad` after `autograd.grad`): the later cut is where
    that history ended (the forward under `torch.no_grad()`). Such cuts go behind the others;
    none is dropped (their order is kept)."""
    if len(cuts) < 2:
        return cuts
    flags = [ev.cut_healed(c) for c in cuts]
    if all(flags):
        return cuts
    return [c for c, h in zip(cuts, flags) if not h] + [c for c, h in zip(cuts, flags) if h]


def _checkpointed_only(cuts: list, ev: Evidence) -> bool:
    """Whether the history was dropped only by grad mode being off inside a reentrant
    checkpoint's forward, under no switch of the user's: the checkpoint ran the forward under
    torch.no_grad() (GG015 explains the loss). Decided from the recorded cuts alone."""
    return (bool(cuts) and all(c.no_grad and c.checkpointed for c in cuts)
            and all(c.switch is None or not c.switch.user for c in cuts))
