"""GG011 unregistered-parameter: a trainable tensor gets gradients, but no optimizer holds it.

`detect` decides from the run: which leaves each backward reached that no optimizer holds, and
how the live modules hold them (registered, a plain attribute, in a plain list or dict, by no
module: capture/holding.py, read from the object graph whoever holds the model), against a
snapshot of the models taken when each optimizer was built (the module tree). `describe` names
the leaves as the user wrote them and reads the source for the lines to fix; a finding whose
names cannot be found is worded by its attribute and module class."""
from __future__ import annotations

import ast
import dataclasses
import os
import re
import weakref
from dataclasses import dataclass, field
from typing import Any

import torch

from ..capture.graph import summarize
from ..capture.holding import Holding
from ..capture.modtree import ModuleTree
from ..lookup.layers import layers_built_in_forward, parameters_owner, plain_layer_holders
from ..lookup.names import find_name, find_names, resolve
from ..lookup.owners import find_owner
from ..capture.weakmap import WeakIdMap
from ..lookup.source import (assignment_lines, attribute_assignment_lines, called_names,
                              enclosing_scope, name_assignment_lines, parsed)
from .context import Evidence, RuleContext, assigned_name
from ..events import (BackwardCall, EmptyOptimizer, GradRead, GuardExit, InplaceOp, ParamGroupAdded,
                      StepCall)
from ..model import Finding, Frame, Message, Related, Role, Site, SourceLoc, Subject
from .base import Detection, Rule, display
from .shared.reads import read_by_user
from .shared.modules import is_container, smallest_holder, written_module_name
from ..lookup.names import python_path

__all__ = ["UnregisteredParameter"]

MAX_SEARCHES = 64  # owner searches for plain tensors (Parameters are always looked up)
MAX_GROUPS = 256
MAX_PLACES = 256  # places (parameter paths) remembered per group, for naming its leaves


@dataclass
class _Group:
    """The untrained leaves that enter the graph at one line (plain data: no tensor is kept)."""

    how: str  # registered-late | attribute | container | standalone | unnamed | left-out
    use: Site  # where they enter the graph (or the backward, when unrecorded)
    backward: Site
    iteration: int
    summary: str
    born: Site | None = None  # where the tensor was created / the layer initialised
    kind: str = "tensor"  # parameter | module | tensor (describe: module when several of one)
    # where its leaves sit, as run-time places (the model's id and the object graph's keys down
    # to the leaf): what tells two groups apart where no use line does (an unrecorded iteration)
    places: list[tuple] = field(default_factory=list)
    # place -> weakref to the newest leaf seen there, first seen first: what describe names
    by_place: dict[tuple, Any] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)  # the leaves' user names (describe fills it)
    attr: str | None = None  # its attribute in the module holding it (wording when unnamed)
    holder_class: str | None = None  # that module's class
    model_class: str | None = None  # the class of the model above it
    in_layer: bool = False  # container: a layer in the container registers it
    joined: set[int] = field(default_factory=set)  # iterations in which new leaves showed up
    leaves: list[Any] = field(default_factory=list)  # weakrefs
    used: bool = False  # a leaf's .grad was read by the user's code
    reported: bool = False
    # left out of the optimizer although it existed (how == "left-out"): the top module left out,
    # one optimized leaf the same backward reached (which optimizer), and whether it is the
    # milder story (`partly`: the one part a list of per-part parameter groups leaves out)
    module: Any = None  # weakref
    trained: Any = None  # weakref
    partly: bool = False
    existed: bool = False
    # (weakref) an optimizer that stepped with no gradient in any parameter it holds while this
    # module had gradients: the one built for it, over other parameters
    meant: Any = None


@dataclass
class _Verdict:
    """Why a leaf is this rule's: how it is held, its run-time place, the holding (None for a
    tensor no module holds) and, for a module left out of the parameter groups, that module."""

    how: str
    place: tuple | None
    owner: Holding | None = None
    left: "_LeftOut | None" = None


class _Holds:
    """How the new leaves of one backward are held (capture/holding.py), asked lazily and for all
    of them at once: one module tree and a few passes over the referrers per backward that meets
    new untrained leaves (never in the steady state). Dropped when the backward is judged."""

    def __init__(self, ev: Evidence, leaves: list[torch.Tensor], own: tuple[Any, ...]) -> None:
        self._ev = ev
        self._leaves = leaves
        self.own = own  # graphguard's own lists of the leaves: referrers, never holders
        self._tree: ModuleTree | None = None
        self._of: dict[int, Holding] | None = None
        self._held: set[int] | None = None

    def tree(self) -> ModuleTree:
        if self._tree is None:
            self._tree = self._ev.module_tree()
        return self._tree

    def of(self, v: torch.Tensor) -> Holding | None:
        """How the live modules hold `v` (None: no module holds it)."""
        if self._of is None:
            cands = [x for x in self._leaves if not self._ev.is_optimized(x)]
            self._of = self._ev.holdings(cands, self.tree(), self.own + (cands,))
        return self._of.get(id(v))

    def held(self, v: torch.Tensor) -> bool:
        """Whether anything of the program but the autograd graph keeps `v`."""
        if self._held is None:
            loose = [x for x in self._leaves if not self._ev.is_optimized(x) and self.of(x) is None]
            self._held = self._ev.held_by_program(loose, self.own + (loose,))
        return id(v) in self._held

    def drop(self) -> None:
        self._tree = self._of = self._held = None


def _local_layer(use: Frame) -> tuple[str | None, SourceLoc | None]:
    """A layer that lives only inside forward: the name the use line calls (`head(h)`) and the
    line of that function that assigned it (`head = nn.Linear(16, 1)`)."""
    called = called_names(use.file, use.line)
    if len(called) != 1:
        return None, None
    lines = [n for n in assignment_lines(use.file, use.line, called[0]) if n <= use.line]
    made = SourceLoc.from_frame(Frame(use.file, lines[-1], use.function)) if lines else None
    return called[0], made


def _container_holder(file: str, path: str) -> str:
    """The part of `path` that names the plain Python container: `model.blocks` for
    `model.blocks[0].weight`, and `generator.resblocks[0].alpha1` for a list of tensors kept in
    a registered block (`self.alpha1 = [nn.Parameter(...) ...]` inside a ModuleList member): the
    last attribute along the path that the file assigns a list/dict/tuple display or
    comprehension to, else the part before the first index."""
    steps = re.split(r"(?=[.\[])", path)
    for k in range(len(steps) - 1, 0, -1):
        step = steps[k]
        if not step.startswith("."):
            continue
        if _assigns_container(file, step[1:]):
            return "".join(steps[:k + 1])
    return path.split("[", 1)[0]


def _assigns_container(file: str, attr: str) -> bool:
    """Whether some `<x>.<attr> = ...` in `file` assigns a plain list, dict or tuple."""
    tree = parsed(file)

    def plain(v: ast.AST, line: int, depth: int = 2) -> bool:
        if isinstance(v, (ast.List, ast.ListComp, ast.Dict, ast.DictComp, ast.Tuple)):
            return True
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id in ("list", "dict", "tuple"):
            return True
        if isinstance(v, ast.IfExp):  # `nn.ModuleList(blocks) if registered else blocks`
            return plain(v.body, line, depth) or plain(v.orelse, line, depth)
        if isinstance(v, ast.Name) and depth > 0:  # `blocks = [...]` a line earlier
            for loc in name_assignment_lines(file, line, v.id):
                for node in ast.walk(tree):
                    if isinstance(node, ast.Assign) and node.lineno == loc.line and plain(node.value, loc.line, depth - 1):
                        return True
        return False

    for line in attribute_assignment_lines(file, attr):
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.Assign) and node.lineno == line and plain(node.value, line):
                return True
    return False


def _attribute_made(file: str, path: str) -> SourceLoc | None:
    """Where the module attribute at the start of the unregistered part of `path` is assigned
    (`self.blocks = [...]` for `model.blocks[0].weight`, `self.alpha1 = [...]` for
    `generator.resblocks[0].alpha1`)."""
    holder = _container_holder(file, path)
    if holder != path.split("[", 1)[0]:
        lines = attribute_assignment_lines(file, holder.rsplit(".", 1)[-1])
        if lines:
            scope = enclosing_scope(file, lines[0])
            return SourceLoc.from_frame(Frame(file, lines[0], getattr(scope, "name", "<module>")))
    head = path.split("[", 1)[0].split(".")
    if len(head) < 2:
        return None
    lines = attribute_assignment_lines(file, head[-1])
    if not lines:
        return None
    scope = enclosing_scope(file, lines[0])
    return SourceLoc.from_frame(Frame(file, lines[0], getattr(scope, "name", "<module>")))


# the sentence of every "no optimizer holds it" message; `why` is each message's own reason
_UNTRAINED = ("{{name}} gets gradients from the backward at line {{backward_line}} but no optimizer "
              "holds it{why}, so it never trains. {{fix}}")
_MEANT_WHY = (" (it is in no optimizer's parameter groups; {optimizer} steps while none of the "
              "parameters it holds has a gradient and this module has one: it is built over other "
              "parameters)")
_EMPTY = ("{{optimizer}} is built from {{name}}, which has no parameters{why}: PyTorch raises "
          "\"optimizer got an empty parameter list\" and nothing would train. {{fix}}")


class UnregisteredParameter(Rule):
    """## What it does
    Lists the leaves each backward reaches that no optimizer holds, and reports those meant to
    be trained: an `nn.Parameter` (or a tensor with `requires_grad=True` stored on a module) of a
    model the optimizer trains, that the optimizer was never given. Typical causes: a layer built
    inside `forward` (new, untrained weights at every call), a tensor assigned to a module
    without `nn.Parameter`, layers kept in a plain Python list instead of `nn.ModuleList`, a
    layer added (a head replaced, a block widened) after the optimizer was built, or one tensor
    of a hand-built list of weights the optimizer was given only part of.

    ## Why is this bad?
    Backward computes their gradients, nothing applies them, and nothing crashes: that part of
    the model stays at its random initial value while the rest trains around it.

    ## Example
    ```python
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = [nn.Linear(16, 16) for _ in range(3)]   # a plain list: not registered
            self.out = nn.Linear(16, 1)
    opt = torch.optim.Adam(Net().parameters())                 # holds only `out`
    ```

    ## Use instead
    ```python
            self.blocks = nn.ModuleList(nn.Linear(16, 16) for _ in range(3))
    ```
    Build layers in `__init__`, wrap tensors in `nn.Parameter`, and build the optimizer after the
    model is complete (or `optimizer.add_param_group(...)` for parts added later).

    It also reports modules that existed when the optimizer was built but are in none of its
    parameter groups, judged by what the backward does: a backward that trains optimized
    parameters also reaches this module's parameters, applied to the trained activations (a
    metric head, a classifier inside the loss module, a projection head): an error; or the one
    part of a model that a list of per-part parameter groups leaves out: a warning. When an
    optimizer steps while none of the parameters it holds has a gradient, another optimizer
    holds them all too, and such a module has one (a GAN's `optm_d` built over the generator
    again), that optimizer is the one meant for the module: fix-at its construction line, "build it over the module's parameters".

    An optimizer built from a model that has no parameters at all (its layers are built inside
    `forward`, or kept in plain lists) is reported when it is constructed, before PyTorch raises
    "optimizer got an empty parameter list", with fix-at the layer constructions in `forward`.

    ## Known problems
    A part of the model left out of the optimizer on purpose while still requiring grad looks
    like a forgotten one. graphguard stays quiet on a feature extractor whose output only feeds
    the optimized part (freezing by omission, `Adam(model.fc.parameters())`), on a teacher whose
    output meets the model's only at the loss, and on models none of whose parameters a backward
    trains; freeze such parts with `requires_grad_(False)` to say so. Leaves whose `.grad` the user
    reads or writes in place under `no_grad` (an EMA update), or that are inputs of
    `torch.autograd.grad`, are not reported; nor is anything when no optimizer is used at all.
    A module left out by a parameter group added mid-training, while it required grad, next to
    the layers that group added (staged unfreezing that keeps BatchNorm frozen) is a choice made
    there: reported as info. A module whose first backward reaches nothing an optimizer holds
    (a discriminator step run before the generator's, its optimizer built over the generator) is
    judged then and not again: GG008's finding at that optimizer's step tells the story.
    """

    code = "GG011"
    slug = "unregistered-parameter"
    severity = "error"
    summary = "a trainable tensor gets gradients but no optimizer holds it"
    messages = (
        # a trainable tensor no optimizer holds, by the reason model.parameters() misses it
        Message("built-anew", "error",
                _UNTRAINED.format(why=" (it is built anew at every call: new weights in "
                                      "{iterations} iterations so far)"),
                "a layer or Parameter built inside forward: new, untrained weights at every call"),
        Message("built-while-running", "error",
                _UNTRAINED.format(why=" (it is built while the model runs, after the optimizer)"),
                "a layer or Parameter built while the model runs, after the optimizer was built"),
        Message("plain-tensor-attribute", "error",
                _UNTRAINED.format(why=" (a plain tensor attribute, not an nn.Parameter, so "
                                      "model.parameters() skips it)"),
                "a requires-grad tensor stored on a module without nn.Parameter"),
        Message("tensor-in-plain-container", "error",
                _UNTRAINED.format(why=" (it sits in a plain Python list/dict, which nn.Module does "
                                      "not register)"),
                "Parameters kept in a plain list/dict of a module instead of nn.ParameterList"),
        Message("layer-in-plain-container", "error",
                _UNTRAINED.format(why=" (its layer sits in a plain Python list/dict, which "
                                      "nn.Module does not register)"),
                "layers kept in a plain list/dict of a module instead of nn.ModuleList"),
        Message("not-given", "error", _UNTRAINED.format(why=""),
                "one tensor of a list of trainable tensors the optimizer was given only part of"),
        Message("added-after-optimizer", "error",
                _UNTRAINED.format(why=" (added to the model after the optimizer was built)"),
                "a layer added to (or swapped into) the model after the optimizer was built"),
        # a module that existed, left out of every parameter group
        Message("left-out", "error",
                _UNTRAINED.format(why=" (it is in none of {optimizer}'s parameter groups{existed})"),
                "a module applied to trained activations (a head, a metric layer) that no "
                "parameter group holds"),
        Message("left-out-partly", "warning",
                _UNTRAINED.format(why=" (it is in none of {optimizer}'s parameter groups{existed})"),
                "the one part of a model that a list of per-part parameter groups leaves out"),
        Message("optimizer-over-other-params", "error",
                _UNTRAINED.format(why=_MEANT_WHY),
                "a module left out while the optimizer meant for it steps with no gradient: it "
                "was built over other parameters (a GAN's D optimizer over G)"),
        Message("optimizer-over-other-params-partly", "warning",
                _UNTRAINED.format(why=_MEANT_WHY),
                "as optimizer-over-other-params, for a part that only feeds the trained one"),
        Message("passed-over", "info",
                _UNTRAINED.format(why=" (it required grad when {optimizer}.add_param_group"
                                      "{added_at} added the parameters next to it, and was not "
                                      "included)"),
                "a module left out by an add_param_group that unfroze its neighbours (frozen "
                "BatchNorm while fine-tuning): most likely on purpose"),
        # an optimizer given a model without parameters (PyTorch raises right after)
        Message("empty-layers-in-forward", "error",
                _EMPTY.format(why=" (its forward builds {layers}, new at every call)"),
                "an optimizer built from a model whose layers are all built inside forward"),
        Message("empty-plain-container", "error",
                _EMPTY.format(why=" (its layers are in the plain container {container})"),
                "an optimizer built from a model whose layers sit in a plain list/dict"),
        Message("empty-no-parameters", "error", _EMPTY.format(why=""),
                "an optimizer built from a model that registers no parameters"),
    )
    events = (ParamGroupAdded, StepCall, BackwardCall, GradRead, InplaceOp, GuardExit, EmptyOptimizer)
    # quiet: the same leaves were judged before (each is judged once)
    quiet_skip = (BackwardCall,)
    skim_skip = (StepCall,)  # the leaves judged at a step persist: a sampled step sees them too
    supersedes = ("GG103",)  # its leaf is meant to be trained

    def __init__(self) -> None:
        self.known: WeakIdMap[bool] = WeakIdMap()  # params present when an optimizer was built
        # modules some of whose parameters an optimizer held when it was first seen: a model
        # being trained, even once every layer the optimizer knew has been swapped for a new one
        self.trained_modules: WeakIdMap[bool] = WeakIdMap()
        # every module alive when an optimizer was built: a wrapper made later (a trainer's
        # model-with-loss around the optimized model) is not the model the optimizer was built for
        self.known_modules: WeakIdMap[bool] = WeakIdMap()
        self.optimizers: WeakIdMap[bool] = WeakIdMap()  # optimizers whose models were looked at
        self.born: WeakIdMap[Site] = WeakIdMap()  # Parameter -> site of its first init write
        self.checked: WeakIdMap[bool] = WeakIdMap()  # leaves judged not ours (optimized, or not trainable)
        self.cands: WeakIdMap[_Group] = WeakIdMap()  # leaf -> _Group
        self.groups: dict[tuple, _Group] = {}
        self.searches = 0
        self.opt_sites: WeakIdMap[Site] = WeakIdMap()  # optimizer -> where it was given parameters
        self.stepped: WeakIdMap[bool] = WeakIdMap()  # optimizers that have stepped
        # parameter -> the add_param_group that passed it over: it required grad in a sibling
        # layer of the ones that group added to an optimizer already training, and was left out
        # (Lightning's unfreeze_and_add_param_group with train_bn=False unfreezes BatchNorm and
        # adds only the rest): a selection made when the group was added, not a forgotten part
        self.passed_over: WeakIdMap[Site] = WeakIdMap()


    # ---- detect: from capture data only ---------------------------------------------------------
    def detect(self, event: Any, ev: Evidence) -> list[Detection] | None:
        """Collect the untrained leaves at each backward (how the live modules hold them, from the
        object graph), note what existed when each optimizer was built, and at the next step (or
        the guard's exit) give one Detection per group still untrained."""
        if isinstance(event, BackwardCall):
            self._collect(event, ev)
        elif isinstance(event, GradRead):
            g = self.cands.get(event.tensor) if isinstance(event.tensor, torch.Tensor) else None
            if g is not None and not g.used and read_by_user():
                g.used = True
        elif isinstance(event, InplaceOp):
            self._note_birth(event, ev)
        elif isinstance(event, ParamGroupAdded):
            if event.optimizer not in self.opt_sites:
                self.opt_sites[event.optimizer] = event.site
            elif event.optimizer in self.stepped:
                self._note_passed_over(event, ev)
            self._note_models(event.optimizer, ev, event.params)
        elif isinstance(event, StepCall):
            self.stepped[event.optimizer] = True
            self._note_models(event.optimizer, ev)
            self._note_idle(event.optimizer)
            return self._judge(ev, before=ev.iteration, step=event.site)
        elif isinstance(event, GuardExit):
            return self._judge(ev, before=None)
        elif isinstance(event, EmptyOptimizer):
            return self._detect_empty(event)
        return None

    def describe(self, d: Detection, event: Any, ctx: RuleContext) -> Finding | None:
        """Name and word one detection: the leaves' names (lookup/), the lines that made them
        and where the fix goes, read in the source."""
        if isinstance(event, EmptyOptimizer):
            return self._empty_optimizer(event, ctx)
        g = d.facts["group"]
        if g.how == "left-out":
            return self._left_out_finding(ctx, g, d.message)
        return self._finding(ctx, g, d.message)

    # ---- an optimizer given no parameters -------------------------------------------------------
    _EMPTY_MESSAGES = ("empty-layers-in-forward", "empty-plain-container", "empty-no-parameters")

    def _detect_empty(self, event: EmptyOptimizer) -> list[Detection] | None:
        """The optimizer is being built over an empty parameter list (the event is the run-time
        evidence; PyTorch raises right after). Which model it was given, and so which of the
        three stories it is, is read from its line's source: `describe` decides between them and
        drops the finding when no model is found. The Detection carries one message not muted,
        so that --select / --ignore of any of the three still reach `describe`, which honours
        them for the story it tells."""
        if not event.site:
            return None
        open_ = [m for m in self._EMPTY_MESSAGES if m not in self.muted]
        return [Detection(open_[0], event.optimizer)] if open_ else None

    def _empty_optimizer(self, event: EmptyOptimizer, ctx: RuleContext) -> Finding | None:
        """The optimizer's parameter list is empty: the model it was given (`model.parameters()`
        on its line) registers none. Its layers are built inside `forward` (new ones at every
        call) or kept in plain lists: fix-at those lines. None when the line names no model (an
        empty list of the user's own making: PyTorch's message says it all)."""
        frames = ctx.frames()
        owner_text = parameters_owner(event.site[0])
        hit = resolve(owner_text, frames) if owner_text else None
        model = hit.value if hit is not None and isinstance(hit.value, torch.nn.Module) else None
        if model is None:
            return None
        model_name = hit.name
        built = layers_built_in_forward(model)
        holders = plain_layer_holders(model) if not built else []
        related: list[Related] = []
        if built:
            first = built[0]
            subject = Subject(first.name, "module", type(model).__name__ + ".forward", first.loc, None)
            message = "empty-layers-in-forward"
            extra = {"layers": f"{len(built)} layer{'s' if len(built) > 1 else ''}"}
            fix = (f"build the layers once in {type(model).__name__}.__init__ (self.fc = "
                   f"{built[0].name if '(' in built[0].name else 'nn.Linear(...)'}) and call them in "
                   "forward, so they are registered and trained")
            for b in built:
                related += ctx.fix_at(b.loc, b.name, "build in __init__")
        else:
            subject = ctx.subject(model, kind="module", hit=hit)
            if holders:
                attr, names = holders[0]
                message, extra = "empty-plain-container", {"container": f"{model_name}.{attr}"}
                fix = f"hold them in nn.ModuleList / nn.ModuleDict: self.{attr} = nn.ModuleList(...)"
                subject = dataclasses.replace(subject, name=f"{model_name}.{attr}")
                loc = _attribute_made(event.site[0].file, f"{model_name}.{attr}")
                if loc is None and subject.created_at is not None:
                    loc = _attribute_made(subject.created_at.file, f"{model_name}.{attr}")
                related += ctx.fix_at(loc, subject.name, "ModuleList")
            else:
                message, extra = "empty-no-parameters", {}
                fix = f"register {model_name}'s layers as attributes in __init__ (or pass the right model)"
        if message in self.muted:
            return None
        opt_name = assigned_name(event.site[0]) or type(event.optimizer).__name__
        related.append(Related(Role.MODEL, model_name, type(model).__name__, ctx.origin(model, hit), None))
        args = {"name": display(model_name), "optimizer": f"`{opt_name}`", "fix": fix, **extra}
        return self.finding(ctx, subject, ctx.loc(event.site), fix, args, related, message=message)

    # ---- what existed when an optimizer was built ------------------------------------------------
    def _note_models(self, opt: Any, ev: Evidence, given: list[Any] | None = None) -> None:
        """A snapshot of the live models when an optimizer is first seen, from the module tree
        (whoever holds them): every parameter their modules register is known (leaving one of
        those out of the optimizer is a choice, freezing by omission, not this bug), and the
        models some of whose parameters the optimizer holds are trained. A layer kept in a plain
        list of a module belongs to no model (model.parameters() never saw it). Once per
        optimizer: one module tree and one pass over the referrers of the trees' roots."""
        if opt in self.optimizers:
            return
        self.optimizers[opt] = True
        # (at the constructor the event comes before torch fills param_groups: the given list)
        held = {id(p) for group in opt.param_groups for p in group["params"]}
        for item in given or ():
            for p in (item.get("params", ()) if isinstance(item, dict) else (item,)):
                held.add(id(p))
        tree = ev.module_tree()
        roots = {id(r): r for r in (tree.root_of(m) for m in tree.modules)}
        boxes = ev.plain_holders(list(roots.values()), tree, (roots,))
        model_of: dict[int, torch.nn.Module | None] = {}
        for rid, r in roots.items():
            box = boxes.get(rid)
            # a root in a plain container of a module: that module's model is trained, the
            # layer's parameters are not the model's
            model_of[rid] = tree.root_of(box.module) if box is not None and box.keys else None
        for m in tree.modules:
            self.known_modules[m] = True
            root = tree.root_of(m)
            boxed = model_of.get(id(root))
            for p in m.__dict__.get("_parameters", {}).values():
                if p is None:
                    continue
                if boxed is None:
                    self.known[p] = True
                if id(p) in held:
                    self.trained_modules[boxed if boxed is not None else root] = True

    def _note_passed_over(self, event: ParamGroupAdded, ev: Evidence) -> None:
        """A group added to an optimizer that has already stepped (unfreezing part of a model
        mid-training): the parameters that require grad in the sibling layers of the added ones
        (children of the same parent module, from the module tree) but were neither added nor
        held before were passed over by that choice. Runs only at such a late add_param_group."""
        added = {id(p) for p in event.params if isinstance(p, torch.Tensor)}
        if not added:
            return
        tree = ev.module_tree()
        parents: dict[int, torch.nn.Module] = {}
        for p in event.params:
            hit = tree.registering(p) if isinstance(p, torch.Tensor) else None
            up = tree.parent_of(hit[0]) if hit is not None else None
            if up is not None:
                parents.setdefault(id(up), up)
        for m in parents.values():
            for c in m.children():
                for p in c.parameters():
                    if (p.requires_grad and id(p) not in added and not ev.is_optimized(p)
                            and p not in self.passed_over):
                        self.passed_over[p] = event.site

    def _note_idle(self, opt: Any) -> None:
        """An optimizer steps while no parameter it holds has a gradient, another optimizer holds
        them all too, and a module left out of every optimizer has one (a GAN's `optm_d` built
        over the generator again, stepped after the discriminator's backward): that optimizer
        was meant for the module. Only while such
        a module waits to be reported."""
        pending = [g for g in self.groups.values()
                   if g.how == "left-out" and not g.reported and g.meant is None]
        if not pending:
            return
        mine = [q for grp in opt.param_groups for q in grp["params"]
                if isinstance(q, torch.Tensor) and q.requires_grad]
        if not mine or any(q.grad is not None for q in mine):
            return
        # ... and a copy of another optimizer's parameters (GG008 asks the same)
        others = [o for o in (r() for r, _ in list(self.opt_sites.entries.values()))
                  if o is not None and o is not opt]
        elsewhere = {id(q) for o in others for grp in o.param_groups for q in grp["params"]}
        if not all(id(q) in elsewhere for q in mine):
            return
        for g in pending:
            if any(v is not None and v.grad is not None for v in (r() for r in g.leaves)):
                try:
                    g.meant = weakref.ref(opt)
                except TypeError:  # an optimizer that cannot be weakly referenced
                    return

    def _note_birth(self, event: InplaceOp, ev: Evidence) -> None:
        # nn.Linear & co. initialise their new Parameters in place under no_grad: the first such
        # write tells where a layer was built (PyTorch's Parameter() itself is invisible to us).
        t = event.target
        if event.grad_enabled or ev.in_optimizer_step() or not isinstance(t, torch.nn.Parameter):
            return
        g = self.cands.get(t)
        if g is not None:
            g.used = True  # updated by the user's own code (an EMA teacher, a manual update)
        elif t not in self.born:
            self.born[t] = event.site

    # ---- collecting at each backward ------------------------------------------------------------
    def _collect(self, event: BackwardCall, ev: Evidence) -> None:
        if event.api == "grad" or event.inputs or event.scan is None:
            return  # autograd.grad fills no .grad; backward(inputs=...) chose its leaves
        if not ev.any_optimized():
            return  # no optimizer known yet (or none at all): nothing to compare with
        done, cands = self.checked.entries, self.cands.entries
        # (WeakIdMap lookups inlined: this runs over every leaf at every backward)
        new = [v for v in event.scan.leaves
               if ((e := done.get(id(v))) is None or e[0]() is not v)
               and ((c := cands.get(id(v))) is None or c[0]() is not v)]
        if not new:
            return  # the steady state: every leaf already judged (fast lookups only)
        found = []
        order: _Order | None = None
        holds = _Holds(ev, new, (event.scan.leaves, event.scan.function_inputs, new, found))
        for v in new:
            # an optimized leaf stays judged: handed to an optimizer is the end of the story
            if ev.is_optimized(v):
                verdict = None
            else:
                if order is None:
                    order = _Order(event.scan, ev)  # lazy: analyses only when asked
                verdict = self._owner_of(v, ev, order, holds)
            if verdict is None:
                self.checked[v] = True  # optimized, or not a trainable tensor of a trained model
            else:
                found.append((v, verdict))
        if found:
            sites = self._use_sites(event, {id(v) for v, _ in found})
            for v, verdict in found:
                self._add(v, verdict, event, ev, sites.get(id(v)), order)
        holds.drop()

    def _owner_of(self, v: torch.Tensor, ev: Evidence, order: "_Order | None", holds: "_Holds"
                  ) -> "_Verdict | None":
        """How `v` is held, when it is meant to be trained but sits outside every optimizer."""
        if v._backward_hooks or getattr(v, "_post_accumulate_grad_hooks", None):
            return None  # its gradient is taken by a hook (an optimizer in backward, DDP-like)
        known = v in self.known
        is_param = isinstance(v, torch.nn.Parameter)
        if not is_param:
            if known or self.searches >= MAX_SEARCHES:
                return None
            self.searches += 1  # plain tensors are many (inputs with requires_grad_): bounded
            if ev.leaf_used(v):
                # its creation line's tensors are used (an optimizer holds some of them): only
                # one of a list the optimizer got part of is ours (`layers[:2]` passed, not all)
                if holds.of(v) is not None:
                    return None
                box = _optimized_sibling(v, ev, holds.own)
                return _Verdict("standalone", ("box", box, id(v))) if box is not None else None
        owner = holds.of(v)
        if owner is not None:
            place = ("model", id(owner.model), owner.path)
            model = self._model_of(owner, holds.tree(), ev)
            trained_root = model in self.trained_modules or any(
                ev.is_optimized(p) for p in model.parameters())
            if known or not trained_root:
                # it existed when the optimizer was built, or belongs to a model nothing of which
                # is optimized: a part left out of the parameter groups, when the same backward
                # also trains optimized parameters (else a probe, a teacher, no optimizer here)
                if owner.how != "registered" or order is None:
                    return None
                left = _left_out(v, owner, ev, order, holds.tree())
                if left is not None:
                    left.existed = known
                return None if left is None else _Verdict("left-out", place, owner, left)
            how = "registered-late" if owner.how == "registered" else owner.how
            return _Verdict(how, place, owner)
        if known:
            return None
        if not is_param:
            # a plain tensor outside any module is GG103's business, not ours, unless it sits in
            # a list or dict some of whose other tensors an optimizer holds (`layers[2]` of a
            # hand-built net whose optimizer got `layers[:2]`): a part left out of that list
            box = _optimized_sibling(v, ev, holds.own)
            return _Verdict("standalone", ("box", box, id(v))) if box is not None else None
        # a Parameter no module holds: one the program keeps (a variable, a list, a closure) was
        # not given to the optimizer; one nothing keeps but the graph was built while running
        if holds.held(v):
            return _Verdict("standalone", ("loose", id(v)))
        return _Verdict("unnamed", None)

    def _model_of(self, owner: Holding, tree: ModuleTree, ev: Evidence) -> torch.nn.Module:
        """The model `owner`'s tensor belongs to, as the optimizer saw models: the outermost
        module above it that existed when an optimizer was built or that holds no optimized
        parameter. A wrapper built after the optimizer around the optimized model and a new part
        (FairMOT's model-with-loss around the net and the loss's classifier) does not make that
        part a layer added to the trained model: its model is the new part itself."""
        for m in tree.chain_to(owner.module):
            if m in self.known_modules or not any(ev.is_optimized(p) for p in m.parameters()):
                return m
        return owner.model

    @staticmethod
    def _use_sites(event: BackwardCall, ids: set[int]) -> dict[int, Site]:
        """For each leaf in `ids`, the site of the op that consumed it (its AccumulateGrad's parent)."""
        out: dict[int, Site] = {}
        scan = event.scan
        for i, node in enumerate(scan.nodes):
            var = getattr(node, "variable", None) if type(node).__name__ == "AccumulateGrad" else None
            if var is None or id(var) not in ids:
                continue
            # climb to the first op the user called: the weight of F.linear hangs off a transpose
            # node made inside that op, which carries no stamp of its own
            p = scan.walk.parent[i]
            while p >= 0 and scan.stamps[p] is None:
                p = scan.walk.parent[p]
            st = scan.stamps[p] if p >= 0 else None
            if st is not None and st.site:
                out[id(var)] = st.site
        return out

    def _add(self, v: torch.Tensor, verdict: "_Verdict", event: BackwardCall,
             ev: Evidence, use: Site | None, order: "_Order | None") -> None:
        how, place, left = verdict.how, verdict.place, verdict.left
        if left is not None:
            # one finding per module left out (its layers are used at several lines)
            key: tuple = ("left-out", id(left.top))
        elif use is None and how == "registered-late" and place is not None and verdict.owner is not None:
            # no use site (an unrecorded iteration): the tensors of one layer swapped in after
            # the optimizer (`weight` and `bias`) are one finding, keyed by that layer's place
            key = (None, place[1], place[2].rpartition(".")[0])
        else:
            key = ((use[0].file, use[0].line) if use else None, place if use is None else None)
        g = self.groups.get(key)
        if g is None and use is None and place is not None:
            # unrecorded iteration (light mode): the same place seen earlier belongs to its group
            g = next((x for x in self.groups.values() if place in x.places), None)
        rec = ev.leaf_record(v)
        if g is None:
            if not ev.recording_details() and how in ("standalone", "unnamed"):
                # a loose Parameter made fresh each step is often an input whose .grad is read
                # (a saliency map); reads are seen only while recording, so stay quiet
                self.checked[v] = True
                return
            if len(self.groups) >= MAX_GROUPS:
                return
            born = self.born.get(v) or (rec.site if rec is not None else None)
            kind = "parameter" if isinstance(v, torch.nn.Parameter) else "tensor"
            g = self.groups[key] = _Group(how, use or event.site, event.site,
                                          ev.iteration, summarize(v), born)
            owner = verdict.owner
            if owner is not None:
                # plain data for wording a finding whose names are gone: its attribute, the class
                # of the module holding it; and whether a plain container holds its layer
                g.attr, g.holder_class = owner.attr, type(owner.module).__name__
                g.model_class = type(owner.model).__name__
                g.in_layer = owner.layer is not None
            g.kind = kind
            if left is not None:
                g.module, g.partly, g.existed = weakref.ref(left.top), left.partly, left.existed
                if order is not None and order.trained is not None:
                    g.trained = weakref.ref(order.trained)
        # its gradient is meant for an optimizer: one finding (this one), not also GG103's
        # "needless requires_grad", whose fix would be the opposite (supersedes, NOTE [supersedes])
        ev.claim_leaf(self, v)
        if place is not None and place not in g.places and len(g.places) < MAX_PLACES:
            g.places.append(place)
        if place is not None and place in g.places:
            g.by_place[place] = weakref.ref(v)  # the newest leaf at that place: the one to name
        if len(g.joined) < 8:  # two iterations already tell "built anew at every call"
            g.joined.add(ev.iteration)
        # keep the newest few: a layer built in forward adds new leaves at every call
        g.leaves = [r for r in g.leaves[-15:] if r() is not None] + [weakref.ref(v)]
        self.cands[v] = g

    # ---- judging ---------------------------------------------------------------------------------
    def _judge(self, ev: Evidence, before: int | None, step: Site | None = None
               ) -> list[Detection] | None:
        if not self.groups or not ev.any_optimized():
            return None  # no optimizer at all: a manual loop applies gradients itself
        out = []
        for g in self.groups.values():
            if g.reported or (before is not None and g.iteration >= before):
                continue  # give the user the rest of the iteration to read .grad
            alive = [v for v in (r() for r in g.leaves) if v is not None]
            if g.used or any(ev.is_optimized(v) for v in alive):
                g.reported = True  # read by the user, or handed to an optimizer since
                continue
            g.reported = True
            if g.how == "left-out" and g.use is g.backward and step:
                g.use = step  # unrecorded use (light mode): the step that leaves it out
            out.append(Detection(self._message_of(g, alive), alive[-1] if alive else None, {"group": g}))
        return out

    def _message_of(self, g: _Group, alive: list[torch.Tensor]) -> str:
        """The group's story, from how its leaves are held and what the optimizers did (why
        model.parameters() misses it; for a module left out, which optimizer left it out)."""
        if g.how == "left-out":
            opt = self._optimizer_for(g)
            meant = g.meant() if g.meant is not None else None
            message = "left-out-partly" if g.partly else "left-out"
            if meant is not None and meant is opt:
                message = "optimizer-over-other-params-partly" if g.partly else "optimizer-over-other-params"
            if alive and all(self.passed_over.get(v) is not None for v in alive):
                # left out by the add_param_group that unfroze its neighbours: most likely on
                # purpose (frozen BatchNorm during fine-tuning)
                message = "passed-over"
            return message
        if len(g.joined) > 1:
            return "built-anew"
        return {"unnamed": "built-while-running", "attribute": "plain-tensor-attribute",
                "container": "layer-in-plain-container" if g.in_layer else "tensor-in-plain-container",
                "standalone": "not-given"}.get(g.how, "added-after-optimizer")

    def _optimizer_for(self, g: _Group) -> Any:
        """The optimizer that holds the parameters the group's backward trained (the one meant
        for it, when one was found), else the first one seen; None when none is alive."""
        return self._optimizer_and_site(g)[0]

    def _optimizer_and_site(self, g: _Group) -> tuple[Any, Site | None]:
        trained = g.trained() if g.trained is not None else None
        meant = g.meant() if g.meant is not None else None
        if meant is not None and self.opt_sites.get(meant) is not None:
            return meant, self.opt_sites.get(meant)
        found = None
        for ref, site in list(self.opt_sites.entries.values()):
            opt = ref()
            if opt is None:
                continue
            if found is None:
                found = (opt, site)
            if trained is not None and any(p is trained for grp in opt.param_groups for p in grp["params"]):
                found = (opt, site)
                break
        return found if found is not None else (None, None)

    # ---- describe: names and words -------------------------------------------------------------
    def _name_leaves(self, ctx: RuleContext, g: _Group) -> None:
        """The user's names of the group's leaves (one per place, first seen first), looked up
        in the user's frames now: the path to a module's tensor, a list's element, a variable."""
        names: list[str] = []
        for ref in g.by_place.values():
            v = ref()
            n = _leaf_name(ctx, g.how, v) if v is not None else None
            if n and n not in names:
                names.append(n)
        g.names = names

    def _unnamed(self, g: _Group, default: str) -> str:
        """How to word a subject no name reaches: its place in its model (the object graph's
        keys, `head.weight`; their common part for several leaves) and the model's class, else
        its attribute and its module's class."""
        paths = [p[2] for p in g.places if p and p[0] == "model" and p[2]]
        if paths and g.model_class:
            if len(paths) == 1:
                return f"`{paths[0]}` ({g.summary}) of a {g.model_class} model"
            common = os.path.commonprefix(paths)
            cut = max(common.rfind("."), common.rfind("["))
            if common in paths or cut <= 0:
                return f"the parameters of a {g.model_class} model"
            return f"`{common[:cut]}` of a {g.model_class} model"
        if g.attr and g.holder_class:
            return f"`{g.attr}` ({g.summary}) of a {g.holder_class} module"
        return default

    def _finding(self, ctx: RuleContext, g: _Group, message: str) -> Finding:
        self._name_leaves(ctx, g)
        name, kind = self._subject_name(g)
        born = ctx.loc(g.born)
        made_at: list[tuple[str, SourceLoc]] = []
        if kind == "module" and name and len(g.names) > 1:
            part = _tensors_of_trained_module(ctx, name, g.names)
            if part:
                # a few tensors of a module whose other parameters train (`rel_h`, `rel_w` made
                # in forward next to optimized convs): name them, not the module
                (name, born), made_at = part[0], [(n, loc) for n, loc in part if loc is not None]
                kind = g.kind
        g.kind = kind
        if name is None and g.born:
            name = assigned_name(g.born[0])
        if name is None and g.use and not g.attr:
            # a layer no module holds (built in forward): the name its use line calls; a tensor a
            # module holds is worded by its place instead (the use line calls a loop variable)
            name, made = _local_layer(g.use[0])
            born = born or made
        if born is None and name and g.how in ("attribute", "container") and g.use:
            born = _attribute_made(g.use[0].file, name)
        alive = [v for v in (r() for r in g.leaves) if v is not None]
        if born is None and alive:
            born = ctx.origin(alive[-1])  # the line that builds its layer, read in the source
        late: tuple[SourceLoc, SourceLoc | None] | None = None
        if g.how == "registered-late" and name:
            name, kind = _whole_late_module(ctx, name, kind, alive)
            g.kind = kind
            files = [loc.file for loc in (born, ctx.loc(g.backward), ctx.loc(g.use)) if loc is not None]
            late = _late_assignment(name, files)
            if late is not None:
                # the line that built the layer now in the model (`new1 = nn.Conv2d(...)`, or the
                # assignment itself), not the __init__ line of the layer it replaced
                born = late[1] or late[0]
        subject = Subject(name, kind, g.summary, born, g.iteration)
        fix, extra = self._explain(g, name, ctx, message)
        if made_at and len(g.joined) > 1:
            attrs = ", ".join(f"self.{n.rsplit('.', 1)[-1]}" for n, _ in made_at)
            fix = (f"create {attrs} once in __init__ (self.{name.rsplit('.', 1)[-1]} = "
                   "nn.Parameter(...)) and only use them in forward, so model.parameters() "
                   "includes them")
        backward = ctx.loc(g.backward)
        related = [Related(Role.REACHED_BY, None, "backward", backward, g.iteration)]
        if late is not None:
            related.append(Related(Role.ASSIGNED_AT, name, "attached after the optimizer was built", late[0]))
        if len(g.joined) > 1 or g.how == "unnamed":
            for n, loc in made_at or [(name, born)]:  # each tensor's own line moves to __init__
                related += ctx.fix_at(loc, n, "layer built in forward")  # build it in __init__
        elif g.how == "container" and name:
            # the fix wraps the container where the module assigns it (`self.hids = []`), which
            # is not where its layers are built when they are appended in a loop
            holder = _container_holder(g.use[0].file, name) if g.use else name.split("[", 1)[0]
            made = _attribute_made(g.use[0].file, holder) if g.use else None
            if made is None and born is not None:
                made = _attribute_made(born.file, holder)
            related += ctx.fix_at(made, holder, "ModuleList")
        return self.finding(ctx, subject, ctx.loc(g.use), fix,
                            {"backward_line": backward.line if backward else "?", "fix": fix,
                             "name": display(name, self._unnamed(g, "A trainable tensor")), **extra}, related,
                            message=message)

    def _left_out_finding(self, ctx: RuleContext, g: _Group, message: str) -> Finding:
        """A module that existed when the optimizer was built (or whose model nothing else of is
        optimized), reached by a backward that trains the optimized parameters, left out of every
        parameter group: named as the user wrote it where it was built; fix at the optimizer."""
        top = g.module() if g.module is not None else None
        leaves = [v for v in (r() for r in g.leaves) if v is not None]
        self._name_leaves(ctx, g)
        path_name, _ = self._subject_name(g)
        name, made = path_name, None
        if top is not None and leaves:
            path, m = smallest_holder(top, leaves)
            parent = None
            while path:
                up = path.rsplit(".", 1)[0] if "." in path else ""
                parent = top.get_submodule(up) if up else top
                if not is_container(parent) or any(ctx.is_optimized(q) for q in parent.parameters()):
                    break
                path, m, parent = up, parent, None  # a layer built inline: name the container
            written, made = written_module_name(m, parent)
            if written is not None:
                name = written
            elif path_name is not None and path:
                # the path as the user writes it, down to the module (not one of its tensors)
                root_path = path_name.split(".")[0]
                name = python_path(root_path, path) if g.names and "." in g.names[0] else path_name
            elif path_name is not None and not path:
                # the holder is the top module itself, held by no model (an embedding a data
                # object keeps: `model.data.embedding`): the module, not one of its tensors
                for pname, p in top.named_parameters():
                    if any(p is v for v in leaves) and path_name.endswith("." + pname):
                        name = path_name[:-len(pname) - 1]
                        break
        opt, opt_name, opt_site = self._optimizer_of(ctx, g)
        meant = g.meant() if g.meant is not None else None
        if made is None and top is not None and name:
            # `self.discriminator` named in a method of the object that built it in __init__
            made = ctx.origin(top, resolve(name))
        subject = Subject(name, "module", g.summary, made or ctx.loc(g.born), g.iteration)
        what = name or "the module"
        # the story (`message`, chosen by detect): left out, the optimizer meant for it built over
        # other parameters, or passed over on purpose by a late add_param_group
        extra = {"optimizer": opt_name,
                 "existed": ", although it existed when the optimizer was built" if g.existed else ""}
        if message == "passed-over":
            added = ctx.loc(self.passed_over.get(leaves[0]) if leaves else None)
            extra["added_at"] = f" at line {added.line}" if added else ""
        fix = (f"give it to the optimizer: list {what}.parameters() where {opt_name} is built, or "
               f"{opt_name}.add_param_group({{'params': {what}.parameters()}}); to leave it "
               f"untrained on purpose, freeze it: {what}.requires_grad_(False)")
        if meant is not None and meant is opt:
            fix = f"build {opt_name} over {what}.parameters()"
        backward = ctx.loc(g.backward)
        related = [Related(Role.REACHED_BY, None, "backward", backward, g.iteration)]
        related += ctx.fix_at(opt_site, opt_name, "optimizer")
        return self.finding(ctx, subject, ctx.loc(g.use), fix,
                            {"backward_line": backward.line if backward else "?", "fix": fix,
                             "name": display(name, self._unnamed(g, "A module")), **extra}, related,
                            message=message)

    def _optimizer_of(self, ctx: RuleContext, g: _Group) -> tuple[Any, str, Site | None]:
        """The optimizer that holds the parameters the group's backward trained: (optimizer, its
        name, where it was given its parameters)."""
        opt, site = self._optimizer_and_site(g)
        if opt is None:
            return None, "the optimizer", None
        hit = ctx.name_of(opt)
        return opt, hit.name if hit else "the optimizer", site

    @staticmethod
    def _subject_name(g: _Group) -> tuple[str | None, str]:
        """One leaf: its name. Several of one module (`weight` and `bias`): the module."""
        if len(g.names) == 1:
            return g.names[0], g.kind
        if not g.names:
            return None, "module" if len(g.leaves) > 1 else g.kind
        common = os.path.commonprefix(g.names)
        cut = max(common.rfind("."), common.rfind("["))
        if cut > 0:
            return common[:cut], "module"
        return g.names[0], g.kind

    @staticmethod
    def _explain(g: _Group, name: str | None, ctx: RuleContext, message: str
                 ) -> tuple[str, dict[str, Any]]:
        """The fix for the group's message (why model.parameters() misses it), and the
        message's own fields."""
        opts = ctx.optimizers()
        opt = opts[0][0] if opts else "optimizer"
        what = name or "it"
        if message in ("built-anew", "built-while-running"):
            fix = ("build the layer once in __init__ (self.layer = nn.Linear(...)) and call it in "
                   "forward, so model.parameters() includes it")
            return fix, ({"iterations": len(g.joined)} if message == "built-anew" else {})
        if message == "plain-tensor-attribute":
            attr = what.rsplit(".", 1)[-1] if name else (g.attr or what)
            return f"wrap it where the module assigns it: self.{attr} = nn.Parameter(...)", {}
        if message in ("tensor-in-plain-container", "layer-in-plain-container"):
            if name:
                holder = _container_holder(g.use[0].file, what) if g.use else what.split("[", 1)[0]
                attr = holder.rsplit(".", 1)[-1]
            else:
                attr = g.attr or what
            if message == "tensor-in-plain-container":
                # the container holds the tensors themselves (`self.alpha1 = [nn.Parameter(...)]`)
                return f"self.{attr} = nn.ParameterList(...)  (nn.ParameterDict for a dict)", {}
            return (f"self.{attr} = nn.ModuleList(...)  (nn.ModuleDict for a dict, "
                    "nn.ParameterList for tensors)", {})
        if message == "not-given":
            return (f"pass it to the optimizer too: {opt}.add_param_group({{'params': [{what}]}}), "
                    "or list it when building the optimizer", {})
        params = f"{what}.parameters()" if g.kind == "module" else f"[{what}]"
        return (f"build the optimizer after the model is complete, or "
                f"{opt}.add_param_group({{'params': {params}}})", {})


def _optimized_sibling(v: torch.Tensor, ev: Evidence, own: tuple[Any, ...]) -> int | None:
    """The id of a list, tuple or dict holding `v` that also holds a tensor an optimizer is
    given, whoever holds that container (read from the referrers): the container is the
    program's set of trainable tensors, and `v` is the one missing from the optimizer."""
    for cid, items in ev.containers_with(v, own):
        # (type() and issubclass: the elements are anything the program keeps, lazy proxies too)
        if any(x is not v and issubclass(type(x), torch.Tensor) and x.requires_grad and ev.is_optimized(x)
               for x in items):
            return cid
    return None


def _leaf_name(ctx: RuleContext, how: str, v: torch.Tensor) -> str | None:
    """The user's name for one leaf of a group: the path to it inside a module the user holds,
    the element of a list of trainable tensors (`layers[2]`), or a variable. Report time only."""
    if how == "unnamed":
        return None
    if how != "standalone":
        owner = find_owner(v)
        return owner.path if owner is not None else None
    if not isinstance(v, torch.nn.Parameter):
        return _sibling_name(v, ctx)
    hit = find_name(lambda x: x is v)
    return hit.name if hit else None


def _sibling_name(v: torch.Tensor, ctx: RuleContext) -> str | None:
    """The user's name for `v` (`layers[2]`) when it is an element of a list, tuple or dict that
    also holds a tensor an optimizer is given, as the user's frames reach it."""
    frames = ctx.frames()
    for hit in find_names(lambda x: x is v, frames)[:8]:
        if not hit.name.endswith("]") or "[" not in hit.name:
            continue  # a plain name (the loop variable `w`): look for the container's element
        holder = resolve(hit.name.rsplit("[", 1)[0], frames)
        box = holder.value if holder is not None else None
        items = list(box.values()) if isinstance(box, dict) else \
            box if isinstance(box, (list, tuple)) else None
        if not items or len(items) > 4096:
            continue
        if any(x is not v and isinstance(x, torch.Tensor) and x.requires_grad and ctx.is_optimized(x)
               for x in items):
            return hit.name
    return None


def _whole_late_module(ctx: RuleContext, name: str, kind: str, alive: list[torch.Tensor]
                       ) -> tuple[str, str]:
    """A parameter added after the optimizer that is all its module holds (`op.weight` of a
    bias-free conv swapped in): the module is what was attached, so it is the subject."""
    if kind == "module" or "." not in name:
        return name, kind
    path = name.rsplit(".", 1)[0]
    hit = resolve(path, ctx.frames())
    module = hit.value if hit is not None else None
    if not isinstance(module, torch.nn.Module):
        return name, kind
    params = list(module.parameters())
    if params and all(any(p is v for v in alive) for p in params):
        return path, "module"
    return name, kind


def _late_assignment(module_path: str, files: list[str]) -> tuple[SourceLoc, SourceLoc | None] | None:
    """Where a layer added after the optimizer joined the model, read in the source: an
    assignment of its attribute (`self.bound_model.conv1 = new1`, `self.op = grow(self.op)`)
    outside `__init__` (which builds the model the optimizer saw), with the line that built the
    value when it is a plain name assigned earlier in the same function (`new1 = nn.Conv2d(...)`).
    Report time only."""
    head = module_path.split("[", 1)[0]
    if "." not in head:
        return None
    attr = head.rsplit(".", 1)[-1]
    for file in dict.fromkeys(files):
        for line in attribute_assignment_lines(file, attr):
            scope = enclosing_scope(file, line)
            if getattr(scope, "name", None) == "__init__":
                continue
            where = SourceLoc.from_frame(Frame(file, line, getattr(scope, "name", "<module>")))
            made = None
            value = _assigned_value(file, line)
            if isinstance(value, ast.Name):
                lines = [x for x in name_assignment_lines(file, line, value.id) if x.line < line]
                made = lines[-1] if lines else None
            return where, made
    return None


def _assigned_value(file: str, line: int) -> ast.expr | None:
    tree = parsed(file)
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Assign) and node.lineno == line:
            return node.value
    return None


def _tensors_of_trained_module(ctx: RuleContext, module_name: str, names: list[str]
                               ) -> list[tuple[str, SourceLoc | None]]:
    """When `module_name` (the common prefix of a group's leaves) is a module some of whose other
    parameters an optimizer holds, the group is a few tensors of it, not the module: their names
    with the lines that made them, the earliest first. Empty when the whole module is left out."""
    hit = resolve(module_name, ctx.frames())
    module = hit.value if hit is not None else None
    if not isinstance(module, torch.nn.Module):
        return []
    if not any(ctx.is_optimized(p) for p in module.parameters()):
        return []
    out = []
    for n in names:
        t = resolve(n, ctx.frames())
        v = t.value if t is not None else None
        if not isinstance(v, torch.Tensor) or ctx.is_optimized(v):
            continue
        rec = ctx.leaf_record(v)
        loc = ctx.loc(rec.site) if rec is not None else None
        out.append((n, loc or ctx.origin(v, t)))  # nn.Parameter(...) is not recorded: the source
    out.sort(key=lambda x: (x[1] is None, x[1].line if x[1] is not None else 0))
    return out


class _Order:
    """How the leaves one backward reached sit relative to the optimized ones: for a leaf, whether
    it joins the trained part of the graph as a weight (the op where its gradient path first meets
    an optimized parameter's takes it through a branch that holds no other leaf: its module is
    applied to trained activations) or as a part with a history of its own (a feature extractor
    feeding the trained part, a teacher whose output meets the model's only at the loss).
    Built lazily, at most once per backward, and only for a leaf that may have been left out."""

    def __init__(self, scan: Any, ev: Evidence) -> None:
        self._scan = scan
        self._ev = ev
        self.trained: torch.Tensor | None = None  # one optimized leaf reached
        self._index: dict[int, int] | None = None
        self._deps: list[bool] = []

    def _build(self) -> None:
        nodes = self._scan.nodes
        self._index = {id(n): i for i, n in enumerate(nodes)}
        index = self._index
        children = [[index[id(c)] for c, _ in getattr(n, "next_functions", ()) if c is not None
                     and id(c) in index] for n in nodes]
        deps = [False] * len(nodes)
        for i in self._scan.leaf_index:
            v = getattr(nodes[i], "variable", None)
            # Only optimized *parameters* make activations "trained": when the optimized leaf is
            # a plain tensor (the canvas of style transfer, an adversarial input, deep dream), the
            # modules applied to it are fixed functions of it, not heads left out of the optimizer.
            if v is not None and isinstance(v, torch.nn.Parameter) and self._ev.is_optimized(v):
                deps[i] = True
                if self.trained is None:
                    self.trained = v
        # propagate "its output depends on an optimized leaf" up the DAG (children before parents)
        state = [0] * len(nodes)
        for start in range(len(nodes)):
            if state[start]:
                continue
            stack = [start]
            while stack:
                i = stack[-1]
                if state[i] == 0:
                    state[i] = 1
                    stack.extend(c for c in children[i] if state[c] == 0)
                else:
                    stack.pop()
                    if state[i] == 1:
                        state[i] = 2
                        if not deps[i]:
                            deps[i] = any(deps[c] for c in children[i])
        self._deps, self._children = deps, children

    def joins_as_weight(self, v: torch.Tensor) -> bool | None:
        """True: `v` enters the trained part through a branch of its own (a weight applied to
        trained activations); False: through a branch with other leaves; None: not connected to
        the trained part (or not found)."""
        if self._index is None:
            self._build()
        nodes, parent = self._scan.nodes, self._scan.walk.parent
        at = next((i for i in self._scan.leaf_index if getattr(nodes[i], "variable", None) is v), None)
        if at is None or self.trained is None:
            return None
        below, i = at, parent[at]
        while i >= 0 and not self._deps[i]:
            below, i = i, parent[i]
        if i < 0:
            return None
        # leaves in the branch `below` (stop at two)
        seen, stack, leaves = {below}, [below], 0
        while stack and leaves < 2:
            j = stack.pop()
            if j in self._scan.leaf_index:
                leaves += 1
            for c in self._children[j]:
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
        return leaves < 2

    def has_trained(self) -> bool:
        if self._index is None:
            self._build()
        return self.trained is not None


@dataclass
class _LeftOut:
    top: Any  # the outermost module left out (a child of the trained model, or its own model)
    partly: bool  # only feeds the trained part, the one part the parameter groups leave out
    existed: bool = False  # registered when the optimizer was built


def _left_out(v: torch.Tensor, owner: Holding, ev: Evidence, order: _Order, tree: ModuleTree
              ) -> _LeftOut | None:
    """Whether `v`, a registered parameter no optimizer holds, belongs to a module left out of the
    parameter groups by mistake. The backward that reached it must also train optimized
    parameters. A module applied to trained activations (a head, a metric layer, a loss with
    weights) is an error. One whose output only feeds the trained part (a feature extractor) or
    meets it at the loss (a teacher run with grad on) is what freezing by omission looks like,
    left alone, unless the optimizer lists every other part of the same
    model but this one (a gap in a list of parameter groups): a warning."""
    if not order.has_trained():
        return None
    # the registering modules from the model down to the one whose `_parameters` holds `v`
    chain = tree.chain_to(owner.module)
    par = None
    for i, m in enumerate(chain):
        if any(ev.is_optimized(q) for q in m.parameters()):
            par = i
    if par is not None and par == len(chain) - 1:
        return None  # its own module is partly optimized: a tensor left out on purpose
    top = chain[0 if par is None else par + 1]
    joins = order.joins_as_weight(v)
    if joins is None:
        return None
    if joins:
        return _LeftOut(top, False)
    if par is None:
        return None
    covered = left = 0
    for child in chain[par].children():
        ps = [q for q in child.parameters() if q.requires_grad]
        if not ps:
            continue
        if all(ev.is_optimized(q) for q in ps):
            covered += 1
        elif child is not top:
            left += 1
    return _LeftOut(top, True) if covered >= 2 and left == 0 else None
