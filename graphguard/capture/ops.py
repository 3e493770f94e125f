"""Which torch functions are losses, copy constructors, in-place ops, backward calls."""
from __future__ import annotations

from typing import Any, Callable

import torch
import torch.nn.functional as F

__all__ = ["LOSS_TARGET_ARG", "LOSS_WEIGHT_ARGS", "COPY_FUNCS", "BACKWARD_FUNCS", "inplace_target", "func_name",
           "NOT_INPLACE", "PRODUCT_OPS", "soft_target_pair"]

# Loss function -> position of its target argument (also accepted as `target=`).
LOSS_TARGET_ARG: dict[Callable[..., Any], int] = {}
for _name in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
              "binary_cross_entropy_with_logits", "cross_entropy", "nll_loss", "kl_div",
              "poisson_nll_loss", "gaussian_nll_loss", "soft_margin_loss",
              "multilabel_soft_margin_loss", "multilabel_margin_loss", "multi_margin_loss",
              "hinge_embedding_loss"):
    _f = getattr(F, _name, None)
    if _f is not None:
        LOSS_TARGET_ARG[_f] = 1



def _weight_positions() -> dict[Callable[..., Any], tuple[tuple[str, int], ...]]:
    """Loss function -> (name, position) of its `weight` / `pos_weight` parameters."""
    import inspect

    out: dict[Callable[..., Any], tuple[tuple[str, int], ...]] = {}
    for f in LOSS_TARGET_ARG:
        try:
            params = list(inspect.signature(f).parameters)
        except (TypeError, ValueError):
            continue
        found = tuple((n, params.index(n)) for n in ("weight", "pos_weight") if n in params)
        if found:
            out[f] = found
    return out


LOSS_WEIGHT_ARGS = _weight_positions()

COPY_FUNCS: dict[Callable[..., Any], str] = {torch.tensor: "torch.tensor",
                                             torch.as_tensor: "torch.as_tensor",
                                             torch.Tensor.new_tensor: "Tensor.new_tensor"}
if hasattr(torch, "asarray"):
    COPY_FUNCS[torch.asarray] = "torch.asarray"

# NOTE [hand-written soft targets]. A cross-entropy or KL written out by hand is a product of a
# probability and a log-probability: `softmax(t) * log_softmax(s)`, `p_t * torch.log(q_s + eps)`,
# `sigmoid(t) * logsigmoid(s)`, summed later. The probability side is the soft target, as the
# target of F.kl_div / F.cross_entropy is. It is recognised by what the two factors' graph nodes
# are (the op that made each factor, seen through sign, scalar scaling, clamping and shape ops),
# never by how the user spelled it. A product of a distribution and its own log (an entropy) is
# no target and is dropped here; whose parameters the two sides reach is the rule's question.
# A KL written as `p * (log p - log q)` or `p * log(p / q)` is the same product with the log of
# the target's own distribution folded in: its other factor is a difference (ratio) of two logs
# (probabilities), one of the target's distribution, the other of another one. The prediction is
# then that other side alone, not the whole factor (which depends on the target's parameters
# too): its graph node is handed on, and the rule judges by the leaves behind it.
PRODUCT_OPS = frozenset({"mul", "__mul__", "__rmul__"})
_PROB_NODES = frozenset({"SoftmaxBackward0", "SigmoidBackward0"})
_LOGP_NODES = frozenset({"LogSoftmaxBackward0", "LogSigmoidBackward0"})
_LOG_NODES = frozenset({"LogBackward0", "Log2Backward0", "Log10Backward0"})  # torch.log & co
# one-input nodes that keep a factor what it was: sign, scalar scale/shift, clamp, copies, views
_THROUGH_NODES = frozenset({
    "NegBackward0", "MulBackward0", "DivBackward0", "AddBackward0", "SubBackward0", "RsubBackward1",
    "ClampBackward1", "ClampMinBackward0", "ClampMaxBackward0", "CloneBackward0", "ToCopyBackward0",
    "ViewBackward0", "ReshapeAliasBackward0", "UnsqueezeBackward0", "SqueezeBackward0",
    "SqueezeBackward1", "SqueezeBackward2", "ExpandBackward0", "PermuteBackward0", "TBackward0",
    "TransposeBackward0", "SliceBackward0", "SelectBackward0", "UnsafeViewBackward0",
    "AliasBackward0"})
_THROUGH_DEPTH = 4


def _through(node: Any) -> Any:
    """The node below `node`'s sign, scaling, clamping and shape ops (a few at most)."""
    for _ in range(_THROUGH_DEPTH):
        if type(node).__name__ not in _THROUGH_NODES:
            return node
        inner = [n for n, _ in node.next_functions if n is not None]
        if len(inner) != 1:
            return node
        node = inner[0]
    return node


def _input_of(node: Any) -> Any:
    nxt = node.next_functions
    return nxt[0][0] if nxt else None


def _prob_node(node: Any) -> Any:
    """The softmax/sigmoid node that made a probability factor (`exp(log_softmax(x))` too), or None."""
    node = _through(node)
    name = type(node).__name__
    if name in _PROB_NODES:
        return node
    if name == "ExpBackward0":
        inner = _through(_input_of(node))
        if type(inner).__name__ == "LogSoftmaxBackward0":
            return inner
    return None


def _logp_node(node: Any) -> tuple[Any, Any] | None:
    """(the log node, the logits node below it) of a log-probability factor: log_softmax /
    logsigmoid, or the log of a probability (`torch.log(softmax(x) + eps)`), else None. The
    logits node is what the softmax/sigmoid was applied to."""
    node = _through(node)
    name = type(node).__name__
    if name in _LOGP_NODES:
        return node, _input_of(node)
    if name in _LOG_NODES:
        p = _prob_node(_input_of(node))
        if p is not None:
            return node, _input_of(p)
    return None


def _same_logits(a: Any, b: Any) -> bool:
    """Whether two logits nodes are the same distribution's (`t / T` computed twice counts)."""
    return a is b or (a is not None and b is not None and _through(a) is _through(b))


def _two_inputs(node: Any, kind: str) -> tuple[Any, Any] | None:
    """The two inputs (both with history) of a binary op node of type `kind`, else None."""
    if node is None or type(node).__name__ != kind:
        return None
    inner = [n for n, _ in node.next_functions if n is not None]
    return (inner[0], inner[1]) if len(inner) == 2 else None


def _kl_other_side(node: Any, logits: Any) -> Any:
    """For the second factor of a KL written out (`log p - log q`, `log(p / q)`, or the reverse
    sign), where `logits` is the target p's: the node of the other distribution's side (q's log
    or probability node), else None. One side must be p's own distribution, the other not."""
    node = _through(node)
    sides = _two_inputs(node, "SubBackward0")
    if sides is not None:
        found = [_logp_node(n) for n in sides]
        if found[0] is None or found[1] is None:
            return None
        nodes = [lp[0] for lp in found]
        own = [_same_logits(lp[1], logits) for lp in found]
    else:
        if type(node).__name__ not in _LOG_NODES:
            return None
        sides = _two_inputs(_through(_input_of(node)), "DivBackward0")
        if sides is None:
            return None
        nodes = [_prob_node(n) for n in sides]
        if nodes[0] is None or nodes[1] is None:
            return None
        own = [_same_logits(_input_of(n), logits) for n in nodes]
    if own[0] == own[1]:
        return None  # neither side is the target's distribution, or both are (a zero)
    return nodes[1] if own[0] else nodes[0]


def soft_target_pair(a: Any, b: Any) -> tuple[Any, Any, Any] | None:
    """For the two factors of a product: (soft target, prediction, prediction node) when one is a
    probability and the other the log-probability of another distribution, or a difference or
    ratio of the logs of the target's distribution and another one (a KL written out; NOTE
    [hand-written soft targets]), else None. The prediction node is None when the prediction is
    the whole factor, else the node of the other distribution inside it. Both must carry
    history. Cheap: a few node type names."""
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
            and a.requires_grad and b.requires_grad):
        return None
    ga, gb = a.grad_fn, b.grad_fn
    if ga is None or gb is None:
        return None
    for t, x, gt, gx in ((a, b, ga, gb), (b, a, gb, ga)):
        p = _prob_node(gt)
        if p is None:
            continue
        lp = _logp_node(gx)
        if lp is None:
            other = _kl_other_side(gx, _input_of(p))
            if other is not None:
                return t, x, other
            continue
        # an entropy: the log of the same distribution (the same logits below both)
        if _same_logits(lp[1], _input_of(p)):
            return None
        return t, x, None
    return None


BACKWARD_FUNCS = frozenset({torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad})

# Methods ending in "_" that do not write tensor data.
NOT_INPLACE = frozenset({"requires_grad_", "share_memory_", "retain_grad", "record_stream",
                         "_fix_weakref", "pin_memory_"})
_INPLACE_DUNDER = frozenset({"__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
                             "__ifloordiv__", "__imod__", "__ipow__", "__iand__", "__ior__",
                             "__ixor__", "__ilshift__", "__irshift__", "__imatmul__"})


def _inplace_positions() -> dict[str, int]:
    """Functional activations/dropouts whose `inplace` flag nn modules pass by position
    (`nn.Dropout` calls `F.dropout(input, p, training, inplace)`), by function name."""
    import inspect

    out: dict[str, int] = {}
    for name in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
                 "feature_alpha_dropout", "threshold", "hardtanh", "elu", "celu", "selu",
                 "leaky_relu", "rrelu", "hardswish", "hardsigmoid", "relu", "relu6", "silu", "mish"):
        fn = getattr(F, name, None)
        try:
            params = list(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            continue
        if "inplace" in params:
            out[getattr(fn, "__name__", name)] = params.index("inplace")
    return out


# Same-named aten functions (`torch.dropout(input, p, train)`) have no argument at that
# position, or one that is never `True`, so a name lookup is safe.
_INPLACE_POS = _inplace_positions()


def func_name(func: Any) -> str:
    return getattr(func, "__name__", None) or type(func).__name__


def inplace_target(name: str, args: tuple, kwargs: dict) -> Any:
    """The tensor (or list of tensors) an op writes in place, or None for out-of-place ops."""
    out = kwargs.get("out") if kwargs else None
    if out is not None:
        return out
    pos = _INPLACE_POS.get(name)
    if (kwargs and kwargs.get("inplace") is True) or (
            pos is not None and len(args) > pos and args[pos] is True):
        if "dropout" in name and not (args[2] if len(args) > 2 else kwargs.get("training", True)):
            return None  # dropout in eval mode returns its input untouched (no version bump)
        return args[0] if args else kwargs.get("input")
    if name in _INPLACE_DUNDER or (name.endswith("_") and not name.endswith("__")
                                   and name not in NOT_INPLACE):
        return args[0] if args else None
    return None
