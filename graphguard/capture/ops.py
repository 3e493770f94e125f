"""Which torch functions are losses, copy constructors, in-place ops, backward calls."""
from __future__ import annotations

from typing import Any, Callable

import torch
import torch.nn.functional as F

__all__ = ["LOSS_TARGET_ARG", "LOSS_WEIGHT_ARGS", "COPY_FUNCS", "BACKWARD_FUNCS", "inplace_target", "func_name",
           "NOT_INPLACE", "PRODUCT_OPS", "CONTRACTION_OPS", "XLOGY_OPS", "WRITTEN_OPS", "soft_target_pair",
           "xlogy_target_pair", "written_target_pair"]

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
# The same sum of products written as a contraction (`einsum("bc,bc->b", p, log_q)`,
# `p @ log_q.T`, bmm, dot, inner, tensordot) is one when the contraction pairs the class dim of
# the one distribution with the class dim of the other (each traced through the shape ops to its
# softmax's dim); when that cannot be told (a reshape that merges it, an unknown op), nothing is
# reported. `torch.xlogy(p, q)` is `p * log(q)` with the log taken by the op: a cross-entropy
# when q is another distribution's probability, a KL for `xlogy(p, p / q)`.
PRODUCT_OPS = frozenset({"mul", "__mul__", "__rmul__"})
CONTRACTION_OPS = frozenset({"matmul", "__matmul__", "__rmatmul__", "mm", "bmm", "einsum", "dot",
                             "vdot", "inner", "tensordot"})
XLOGY_OPS = frozenset({"xlogy", "special_xlogy"})
WRITTEN_OPS = PRODUCT_OPS | CONTRACTION_OPS | XLOGY_OPS  # the recorder's one lookup per op
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
        return _ratio_other_side(_input_of(node), logits)
    if own[0] == own[1]:
        return None  # neither side is the target's distribution, or both are (a zero)
    return nodes[1] if own[0] else nodes[0]


def _ratio_other_side(node: Any, logits: Any) -> Any:
    """For a ratio of two probabilities (`p / q`, either way up), where `logits` is the target
    p's: the probability node of the other distribution, else None (as _kl_other_side)."""
    sides = _two_inputs(_through(node), "DivBackward0")
    if sides is None:
        return None
    nodes = [_prob_node(n) for n in sides]
    if nodes[0] is None or nodes[1] is None:
        return None
    own = [_same_logits(_input_of(n), logits) for n in nodes]
    if own[0] == own[1]:
        return None
    return nodes[1] if own[0] else nodes[0]


def _histories(a: Any, b: Any) -> tuple[Any, Any] | None:
    """The grad_fn of each of two tensors when both carry history, else None."""
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return None
    ga, gb = a.grad_fn, b.grad_fn
    return None if ga is None or gb is None else (ga, gb)


def soft_target_pair(a: Any, b: Any) -> tuple[Any, Any, Any] | None:
    """For the two factors of a product: (soft target, prediction, prediction node) when one is a
    probability and the other the log-probability of another distribution, or a difference or
    ratio of the logs of the target's distribution and another one (a KL written out; NOTE
    [hand-written soft targets]), else None. The prediction node is None when the prediction is
    the whole factor, else the node of the other distribution inside it. Both must carry
    history. Cheap: a few node type names."""
    nodes = _histories(a, b)
    if nodes is None:
        return None
    ga, gb = nodes
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


def xlogy_target_pair(x: Any, y: Any) -> tuple[Any, Any, Any] | None:
    """`torch.xlogy(p, q)`, which is `p * log(q)` with the log taken by the op: (soft target,
    prediction, prediction node) as soft_target_pair gives them, when `p` is a probability with
    history and `q` another distribution's probability (a cross-entropy), or a ratio of `p`'s
    distribution and another's (a KL: `xlogy(p, p / q)`), else None. `xlogy(p, p)` (an
    entropy) is None."""
    nodes = _histories(x, y)
    if nodes is None:
        return None
    gx, gy = nodes
    p = _prob_node(gx)
    if p is None:
        return None
    logits = _input_of(p)
    q = _prob_node(gy)
    if q is not None:
        return None if _same_logits(_input_of(q), logits) else (x, y, None)
    other = _ratio_other_side(gy, logits)
    return (x, y, other) if other is not None else None


# one-input ops that keep every dim where it was (elementwise), between a factor and its softmax
_SAME_DIMS = frozenset({
    "NegBackward0", "MulBackward0", "DivBackward0", "AddBackward0", "SubBackward0", "RsubBackward0",
    "RsubBackward1", "ClampBackward1", "ClampMinBackward0", "ClampMaxBackward0", "CloneBackward0",
    "ToCopyBackward0", "AliasBackward0", "ExpBackward0"}) | _LOG_NODES
_VIEW_NODES = frozenset({"ViewBackward0", "ReshapeAliasBackward0", "UnsafeViewBackward0",
                         "SqueezeBackward0", "SqueezeBackward1", "SqueezeBackward2"})
_PATH_DEPTH = 10


def _path(node: Any, stop: Any, depth: int = _PATH_DEPTH, seen: set | None = None) -> list[Any] | None:
    """The nodes from `node` down to `stop` (both included) through elementwise and shape ops,
    or None."""
    if node is stop:
        return [node]
    name = type(node).__name__
    if depth == 0 or not (name in _SAME_DIMS or name in _THROUGH_NODES):
        return None
    if seen is None:
        seen = set()
    for n, _ in node.next_functions:
        if n is not None and id(n) not in seen:
            seen.add(id(n))
            rest = _path(n, stop, depth - 1, seen)
            if rest is not None:
                return [node] + rest
    return None


def _dim(d: int, nd: int) -> int:
    """A dim saved on a graph node, from 0 (a negative one may come back as an unsigned int64)."""
    if d >= 1 << 63:
        d -= 1 << 64
    return d % nd if nd else 0


def _align(sizes_in: list[int], sizes_out: list[int], origin: list[Any]) -> list[Any]:
    """A reshape's dims: each input dim that is an output dim whole (the same size after the same
    number of elements) keeps that dim's origin, the others have none."""
    out_at = {}
    pre = 1
    for j, n in enumerate(sizes_out):
        out_at.setdefault((pre, n), j)
        pre *= n
    res = []
    pre = 1
    for n in sizes_in:
        j = out_at.get((pre, n))
        res.append(origin[j] if j is not None else None)
        pre *= n
    return res


def _dist_dims(t: torch.Tensor, stop: Any) -> tuple[list[Any], int | None] | None:
    """For a factor `t` made from the distribution node `stop` (softmax, log_softmax, sigmoid,
    logsigmoid) through elementwise and shape ops: (for each dim of `stop`'s output, the dim of
    `t` it is, or None), and `stop`'s class dim (None for a sigmoid, elementwise). None when the
    shapes cannot be followed (or its saved values were freed by a backward)."""
    try:
        return _follow_dims(t, stop)
    except (RuntimeError, IndexError):
        return None


def _follow_dims(t: torch.Tensor, stop: Any) -> tuple[list[Any], int | None] | None:
    path = _path(t.grad_fn, stop)
    if path is None:
        return None
    shape = list(t.shape)
    origin: list[Any] = list(range(len(shape)))
    for node in path[:-1]:  # from the factor down: each node's input from its output
        name = type(node).__name__
        nd = len(shape)
        if name in _SAME_DIMS:
            continue
        if name == "TBackward0":
            shape, origin = shape[::-1], origin[::-1]
        elif name == "TransposeBackward0":
            d0, d1 = _dim(node._saved_dim0, nd), _dim(node._saved_dim1, nd)
            shape[d0], shape[d1] = shape[d1], shape[d0]
            origin[d0], origin[d1] = origin[d1], origin[d0]
        elif name == "PermuteBackward0":
            dims = [_dim(d, nd) for d in node._saved_dims]
            if sorted(dims) != list(range(nd)):
                return None
            s2, o2 = [0] * nd, [None] * nd
            for i, d in enumerate(dims):
                s2[d], o2[d] = shape[i], origin[i]
            shape, origin = s2, o2
        elif name == "UnsqueezeBackward0":
            d = _dim(node._saved_dim, nd)
            shape, origin = shape[:d] + shape[d + 1:], origin[:d] + origin[d + 1:]
        elif name in _VIEW_NODES:
            sizes = [int(n) for n in node._saved_self_sym_sizes]
            shape, origin = sizes, _align(sizes, shape, origin)
        elif name == "ExpandBackward0":
            sizes = [int(n) for n in node._saved_self_sym_sizes]
            lead = nd - len(sizes)
            origin = [origin[lead + i] if n == shape[lead + i] else None for i, n in enumerate(sizes)]
            shape = sizes
        elif name in ("SelectBackward0", "SliceBackward0"):
            sizes = [int(n) for n in node._saved_self_sym_sizes]
            d = _dim(node._saved_dim, len(sizes))
            if name == "SelectBackward0":
                origin = origin[:d] + [None] + origin[d:]
            elif sizes[d] != shape[d]:
                origin = origin[:d] + [None] + origin[d + 1:]
            shape = sizes
        else:
            return None
    name = type(stop).__name__
    saved = stop._saved_self if name == "LogSigmoidBackward0" else stop._saved_result
    if not shape or list(saved.shape) != shape:
        return None  # broadcast on the way, or a shape not followed
    if name in ("SoftmaxBackward0", "LogSoftmaxBackward0"):
        return origin, _dim(stop._saved_dim, len(shape))
    return origin, None


def _einsum_pairs(eq: str, na: int, nb: int) -> list[tuple[int, int]] | None:
    """The dims of einsum's two operands that the equation gives one subscript (summed or kept)."""
    ins = eq.replace(" ", "").split("->")[0].split(",")
    if len(ins) != 2:
        return None
    labels = []
    for sub, n in zip(ins, (na, nb)):
        if "..." in sub:
            head, tail = sub.split("...", 1)
            k = n - len(head) - len(tail)
            if k < 0:
                return None
            # broadcast dims, lined up from the right
            sub = list(head) + [f".{k - i}" for i in range(k)] + list(tail)
        if len(sub) != n:
            return None
        labels.append(list(sub))
    return [(i, j) for i, x in enumerate(labels[0]) for j, y in enumerate(labels[1]) if x == y]


def _contraction_pairs(name: str, args: tuple, kwargs: dict, na: int,
                       nb: int) -> list[tuple[int, int]] | None:
    """The dims (first operand's, second's) that a contraction multiplies together, else None."""
    if name == "einsum":
        eq = args[0] if args and isinstance(args[0], str) else kwargs.get("equation")
        return _einsum_pairs(eq, na, nb) if isinstance(eq, str) else None
    if name in ("dot", "vdot"):
        return [(0, 0)]
    if name == "inner":
        return [(na - 1, nb - 1)] if na and nb else None
    if name == "mm":
        return [(1, 0)]
    if name == "bmm":
        return [(2, 1), (0, 0)]
    if name == "tensordot":
        dims = kwargs.get("dims", args[2] if len(args) > 2 else 2)
        if isinstance(dims, int):
            return [(na - dims + i, i) for i in range(dims)]
        if isinstance(dims, (list, tuple)) and len(dims) == 2:
            da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
            if len(da) == len(db) and all(isinstance(d, int) for d in da + db):
                return [(a % na, b % nb) for a, b in zip(da, db)]
        return None
    # matmul: the last dim of the first with the second's last but one, batch dims lined up
    if na == 0 or nb == 0:
        return None
    pairs = [(na - 1, 0 if nb == 1 else nb - 2)]
    pairs += [(na - i, nb - i) for i in range(3, min(na, nb) + 1)]
    return pairs


def _dist_of(node: Any) -> Any:
    """The softmax/sigmoid (or log_softmax/logsigmoid) node behind a probability or log node."""
    if node is not None and type(node).__name__ in _LOG_NODES:
        return _prob_node(_input_of(node))
    return node


def _class_dims_paired(pairs: list[tuple[int, int]], a: torch.Tensor, b: torch.Tensor,
                       na: Any, nb: Any) -> bool:
    """Whether the contraction pairs `a`'s class dim with `b`'s (of their distribution nodes
    `na`, `nb`): then it is a sum of p * log q over the classes. A sigmoid's probabilities are
    elementwise: the same dim of both is paired."""
    da = _dist_dims(a, na) if na is not None else None
    db = _dist_dims(b, nb) if nb is not None else None
    if da is None or db is None:
        return False
    (oa, ca), (ob, cb) = da, db
    if ca is not None and cb is not None:
        return oa[ca] is not None and (oa[ca], ob[cb]) in pairs
    k = ca if ca is not None else cb
    ks = [k] if k is not None else range(min(len(oa), len(ob)))
    return any(k < len(oa) and k < len(ob) and oa[k] is not None and (oa[k], ob[k]) in pairs
               for k in ks)


def written_target_pair(name: str, args: tuple, kwargs: dict, a: Any,
                        b: Any) -> tuple[Any, Any, Any] | None:
    """A product, contraction or xlogy of two tensors (the recorder's WRITTEN_OPS): (soft target,
    prediction, prediction node) of a cross-entropy or KL written out, else None."""
    if name in XLOGY_OPS:
        return xlogy_target_pair(a, b)
    if name == "__rmatmul__":
        a, b = b, a  # `other @ self`
    pair = soft_target_pair(a, b)
    if pair is None or name in PRODUCT_OPS:
        return pair
    pairs = _contraction_pairs(name, args, kwargs, a.dim(), b.dim())
    if not pairs:
        return None
    t, x, other = pair
    nt = _prob_node(t.grad_fn)
    if other is not None:
        nx = _dist_of(other)
    else:
        lp = _logp_node(x.grad_fn)
        nx = _dist_of(lp[0]) if lp is not None else None
    if t is not a:
        pairs = [(j, i) for i, j in pairs]
    return pair if _class_dims_paired(pairs, t, x, nt, nx) else None


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
