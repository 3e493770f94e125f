"""GG007 non-leaf-parameter: a tensor meant as a parameter is a moved/cast/scaled copy of the
real leaf, so the optimizer refuses it and its `.grad` stays None."""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import Any, Iterator

import torch
from torch.utils.weak import WeakIdKeyDictionary

from ..capture.graph import leaf_of
from ..events import GradRead, ParamGroupAdded
from ..model import Finding, Message, Related, Role
from .shared.inplace import line_stmt
from .base import Detection, Rule, display
from .context import Evidence, RuleContext

__all__ = ["NonLeafParameter", "hidden_leaf"]

MAX_CHAIN = 16  # single-input nodes followed from the tensor back to its leaf

# How a node type reads when the creating line cannot be parsed.
_NODE_WORDS = {"ToCopyBackward0": "a device/dtype copy", "MulBackward0": "a multiplication",
               "DivBackward0": "a division", "AddBackward0": "an addition",
               "SubBackward0": "a subtraction", "CloneBackward0": "clone()",
               "SliceBackward0": "slicing", "SelectBackward0": "indexing",
               "ViewBackward0": "view()", "TBackward0": ".t()", "PermuteBackward0": "permute()",
               "ExpandBackward0": "expand()", "UnsqueezeBackward0": "unsqueeze()",
               "SqueezeBackward0": "squeeze()", "ReshapeAliasBackward0": "reshape()"}


def hidden_leaf(t: torch.Tensor) -> tuple[torch.Tensor, list[Any]] | None:
    """The leaf that a non-leaf tensor is a plain copy of, and the nodes in between.

    Follows `grad_fn` while each node has exactly one input that needs grad (`.to()`, `.double()`,
    `* 0.01`, a slice): the tensor is then nothing but that leaf, moved, cast or scaled.
    """
    node = t.grad_fn
    chain: list[Any] = []
    for _ in range(MAX_CHAIN):
        if node is None:
            return None
        leaf = leaf_of(node)
        if leaf is not None:
            return leaf, chain
        chain.append(node)
        inputs = [n for n, _ in node.next_functions if n is not None]
        if len(inputs) != 1:
            return None
        node = inputs[0]
    return None


_CASTS = frozenset({"to", "type", "double", "float", "half", "bfloat16", "cuda", "cpu", "long",
                    "int", "type_as", "contiguous", "clone", "view", "reshape", "t", "permute",
                    "expand", "unsqueeze", "squeeze", "mul", "div", "add", "sub"})
_BINOPS = {"MulBackward0": ast.Mult, "DivBackward0": ast.Div, "AddBackward0": ast.Add,
           "SubBackward0": ast.Sub, "RsubBackward1": ast.Sub, "PowBackward0": ast.Pow}


def _short(node: ast.AST, limit: int = 40) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _describe_making(frame: Any, node: Any) -> str:
    """How the user wrote the op that made the non-leaf, found on its line by the node's kind:
    `.to(dtype)`, `* 0.01`, `model.emb.weight[n_old:]`; else a plain description."""
    stmt = line_stmt(frame)
    kind = type(node).__name__
    for sub in ast.walk(stmt) if stmt is not None else ():
        if kind in _BINOPS and isinstance(sub, ast.BinOp) and isinstance(sub.op, _BINOPS[kind]):
            sym = ast.unparse(ast.BinOp(ast.Name("x"), sub.op, ast.Name("y")))[2:-2]
            return f"`{sym} {_short(sub.right)}`"
        if kind in ("SliceBackward0", "SelectBackward0", "IndexBackward0") and isinstance(sub, ast.Subscript):
            return f"indexing `{_short(sub)}`"
        if (kind not in _BINOPS and isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute)
                and sub.func.attr in _CASTS):
            args = ", ".join([ast.unparse(a) for a in sub.args]
                             + [f"{k.arg}={ast.unparse(k.value)}" for k in sub.keywords])
            return f"`.{sub.func.attr}({args if len(args) <= 30 else '...'})`"
    return _NODE_WORDS.get(kind, f"`{kind}`")


def _without_requires_grad(frame: Any) -> str | None:
    """The creating line rewritten to make the leaf last: `w = torch.randn(3, requires_grad=True)
    .double()` -> `w = torch.randn(3).double().requires_grad_()`."""
    stmt = line_stmt(frame)
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return None
    dropped = False
    for node in ast.walk(stmt.value):
        if isinstance(node, ast.Call):
            kept = [k for k in node.keywords if k.arg != "requires_grad"]
            if len(kept) != len(node.keywords):
                node.keywords = kept
                dropped = True
    if not dropped:
        return None
    if isinstance(stmt.value, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
        # `[torch.ones(2, requires_grad=True).to(w) for w in ws]`: each element is the leaf
        stmt.value.elt = ast.Call(ast.Attribute(stmt.value.elt, "requires_grad_", ast.Load()), [], [])
        return ast.unparse(stmt)
    value = ast.Call(ast.Attribute(stmt.value, "requires_grad_", ast.Load()), [], [])
    return ast.unparse(ast.Assign(stmt.targets, value, lineno=0))


def _container_name(ctx: RuleContext, p: torch.Tensor, group: list[torch.Tensor]) -> tuple[bool, str | None]:
    """Whether to report `p`, and the name to report it by, when it is one of the non-leaf
    tensors `group` given to an optimizer at once: elements named `scaling_factors[0]`,
    `scaling_factors[1]`, ... made by the same line are the list `scaling_factors`, reported
    once at its first element (one line to fix); others are reported one by one (name None:
    looked up). Wording only: every element is a detection, this only merges their reports."""

    def key(t: torch.Tensor) -> tuple[str, Any] | None:
        hit = ctx.name_of(t)
        made = ctx.creation(t)
        line = (made[0][0].file, made[0][0].line) if made and made[0] else None
        base = hit.name.rsplit("[", 1)[0] if hit is not None and hit.name.endswith("]") else None
        return (base, line) if base and line is not None else None

    mine = key(p)
    if mine is None:
        return True, None
    members = [t for t in group if t is p or key(t) == mine]
    if len(members) == 1:
        return True, None
    return members[0] is p, mine[0]


class NonLeafParameter(Rule):
    """## What it does
    Fires when a tensor that is not a leaf is handed to an optimizer, or when the `.grad` of a
    tensor is read that is only a moved, cast or scaled copy of a requires-grad leaf nothing else
    refers to: `torch.randn(..., requires_grad=True).to(device)`, `... * 0.01`, `.double()`,
    `.type(...)`, or a slice of a parameter. It names the line that made the copy.

    ## Why is this bad?
    `requires_grad=True` makes the tensor returned by the factory the leaf; `.to()` or `* 0.01`
    then returns a new tensor with history. The optimizer raises "can't optimize a non-leaf
    Tensor"; in a hand-written loop `w.grad` is always `None` (the gradient goes to the hidden
    leaf) and the update fails or silently does nothing.

    ## Example
    ```python
    W = torch.randn(784, 10, requires_grad=True) * 0.01
    opt = torch.optim.SGD([W, b], lr=0.1)     # ValueError: can't optimize a non-leaf Tensor
    ```

    ## Use instead
    ```python
    W = (torch.randn(784, 10) * 0.01).requires_grad_()
    w = torch.randn(10, device=device, dtype=torch.float64, requires_grad=True)
    ```

    ## Known problems
    A `.grad` read is reported when the tensor is a straight chain of single-input ops from one
    leaf (a copy, named or not); reading `.grad` of an ordinary intermediate result of several
    inputs is left alone.
    """

    code = "GG007"
    slug = "non-leaf-parameter"
    severity = "error"
    summary = "a moved/cast/scaled copy of a requires-grad tensor is optimized or has its .grad read"
    # two stories: the copy is given to an optimizer (which raises), or its .grad is read (None
    # at every read: the gradient went to the hidden leaf)
    messages = (
        Message("given-to-optimizer", "error",
                "{name} is not a leaf tensor: {how} at line {line} derived it from {leaf}, so the "
                "optimizer cannot update it (PyTorch raises \"can't optimize a non-leaf Tensor\"). {fix}",
                "a tensor that is not a leaf (a moved, cast or scaled copy) is given to an optimizer"),
        Message("grad-read", "error",
                "{name} is not a leaf tensor: {how} at line {line} derived it from {leaf}, so its "
                ".grad is always None: the gradient goes to that leaf instead. {fix}",
                "the .grad of a moved, cast or scaled copy of a requires-grad leaf is read"),
    )
    events = (ParamGroupAdded, GradRead)
    supersedes = ("GG103",)  # its leaf is meant to be trained

    def __init__(self) -> None:
        # copies already reported on a .grad read: one finding per copy, at its first read (a
        # loop reads it at several lines); weak, so the rule keeps no tensor alive
        self.told: WeakIdKeyDictionary = WeakIdKeyDictionary()

    def detect(self, event: ParamGroupAdded | GradRead, ev: Evidence) -> Iterator[Detection]:
        if isinstance(event, ParamGroupAdded):
            defaults = getattr(event.optimizer, "defaults", None) or {}
            if defaults.get("differentiable"):
                return  # differentiable optimizers accept non-leaf tensors on purpose
            # the condition under which Optimizer.add_param_group raises
            bad = [p for p in event.params
                   if isinstance(p, torch.Tensor) and not p.is_leaf and not p.retains_grad]
            for p in bad:
                found = self._claim(ev, hidden_leaf(p))
                yield Detection("given-to-optimizer", p, {"found": found, "group": bad})
            return
        t = event.tensor
        if not isinstance(t, torch.Tensor) or t.grad_fn is None or t.retains_grad:
            return
        found = hidden_leaf(t)
        # Decided from the graph alone: the tensor read is nothing but a leaf moved, cast,
        # scaled or sliced (a straight chain), so its .grad is None at every read, whatever the
        # program calls the leaf. An intermediate result of several inputs (`h = x @ w`) is a
        # different mistake (retain_grad) and is left alone.
        if found is None or t in self.told:
            return
        self.told[t] = True
        yield Detection("grad-read", t, {"found": self._claim(ev, found), "group": [t]})

    def _claim(self, ev: Evidence, found: tuple[torch.Tensor, list[Any]] | None
               ) -> tuple[torch.Tensor, list[Any]] | None:
        """The hidden leaf is meant to be trained: claimed, so that GG103 does not call its
        requires_grad needless (decided here, whether or not the finding is worded)."""
        if found is not None:
            ev.claim_leaf(self, found[0])
        return found

    def describe(self, d: Detection, event: ParamGroupAdded | GradRead, ctx: RuleContext) -> Finding | None:
        report, name = _container_name(ctx, d.subject, d.facts["group"])
        if not report:
            return None  # an element of a list reported once, at its first element
        return self._finding(ctx, event, d.subject, d.facts["found"], d.message, name=name)

    def _finding(self, ctx: RuleContext, event: Any, t: torch.Tensor,
                 found: tuple[torch.Tensor, list[Any]] | None, message: str,
                 name: str | None = None) -> Finding:
        optimizer = message == "given-to-optimizer"
        subject = ctx.subject(t)
        if name is not None:
            subject = replace(subject, name=name)
        made = ctx.creation(t)
        made_frame = made[0][0] if made and made[0] else None
        if made is not None:
            # the innermost frame is the op itself (`self.w = ...to(dtype)` inside __init__)
            subject = replace(subject, created_at=ctx.loc(made[0]))
        name = subject.name
        related = [Related(Role.MADE_NON_LEAF, name, _describe_making(made_frame, t.grad_fn),
                           ctx.loc(made[0]) if made else None, made[1] if made else None)]
        leaf_words, fix = "a requires-grad tensor", self._fix(t, name, made_frame, None, None)
        if found is not None:
            leaf = found[0]  # claimed by detect: meant to be trained
            hit = ctx.name_of(leaf)
            rec = ctx.leaf_record(leaf)
            leaf_loc = ctx.loc(rec.site) if rec is not None else None
            if hit is not None:
                leaf_words = f"`{hit.name}`"
            elif leaf_loc is not None:
                where = ("on that line" if made_frame is not None and leaf_loc.line == made_frame.line
                         and leaf_loc.file == made_frame.file else f"at line {leaf_loc.line}")
                leaf_words = f"the tensor made with requires_grad=True by {rec.func}(...) {where}"
            related.append(Related(Role.LEAF, hit.name if hit else None, rec.func if rec else None,
                                   leaf_loc, rec.iteration if rec else None))
            fix = self._fix(t, name, made_frame, leaf, hit.name if hit else None, optimizer)
        if made is not None:
            related += ctx.fix_at(ctx.loc(made[0]), name, "make the leaf last")
        return self.finding(ctx, subject, ctx.loc(event.site), fix,
                            {"how": related[0].op, "line": made_frame.line if made_frame else "?",
                             "leaf": leaf_words, "fix": fix,
                             "name": display(name, "The tensor given to the optimizer" if optimizer
                                             else "The tensor")}, related, message=message)

    @staticmethod
    def _fix(t: torch.Tensor, name: str | None, made_frame: Any, leaf: torch.Tensor | None,
             leaf_name: str | None, optimizer: bool = True) -> str:
        if leaf_name is not None and not optimizer:
            # `w = base.type(torch.float32)`, then `w.grad`: the gradient is on `base`
            who = name or "the copy"
            return (f"Read `{leaf_name}.grad` (and update `{leaf_name}`), or make {who} the leaf: "
                    f"`{who} = {leaf_name}.detach().<the same cast>.requires_grad_()` and train it instead")
        if leaf_name is not None:
            # a slice or view of a parameter the user holds: the parameter is the leaf
            return (f"Give the optimizer `{leaf_name}` itself; to train only part of it, zero the "
                    f"rest of its gradient (`{leaf_name}.register_hook(lambda g: g * mask)`) or "
                    "split it into separate nn.Parameters")
        rewrite = _without_requires_grad(made_frame)
        if rewrite is not None:
            cast = leaf is not None and type(t.grad_fn).__name__ == "ToCopyBackward0"
            also = (" (or pass device=/dtype= to the factory together with requires_grad=True)"
                    if cast else "")
            return f"Make the leaf last: `{rewrite}`{also}"
        if isinstance(leaf, torch.nn.Parameter):
            return ("Move, cast or scale the data before wrapping it in nn.Parameter, or move the "
                    "whole module with model.to(device)")
        who = name or "the tensor"
        line = f" after line {made_frame.line}" if made_frame is not None else ""
        return (f"Start a new leaf from the final value: `{who} = {who}.detach().requires_grad_()`"
                f"{line}, and drop requires_grad=True where it was created")
