"""GG002's recognizer of cross-entropies and KL divergences written out by hand.

The recorder only reports that a product, contraction or xlogy of two tensors with history was
called (events.ProductOp: the op's name, einsum's equation, tensordot's dims and the two
factors); what the factors are is told here, from their graph nodes, when GG002 judges the event.

NOTE [hand-written soft targets]. A cross-entropy or KL written out by hand is a product of a
probability and a log-probability: `softmax(t) * log_softmax(s)`, `p_t * torch.log(q_s + eps)`,
`sigmoid(t) * logsigmoid(s)`, summed later. The probability side is the soft target, as the
target of F.kl_div / F.cross_entropy is. It is recognised by what the two factors' graph nodes
are (the op that made each factor, seen through sign, scalar scaling, clamping and shape ops),
never by how the user spelled it. A product of a distribution and its own log (an entropy) is
no target and is dropped here; whose parameters the two sides reach is the rule's question.
A KL written as `p * (log p - log q)` or `p * log(p / q)` is the same product with the log of
the target's own distribution folded in: its other factor is a difference (ratio) of two logs
(probabilities), one of the target's distribution, the other of another one. The prediction is
then that other side alone, not the whole factor (which depends on the target's parameters
too): its graph node is handed on, and the rule judges by the leaves behind it.
The same sum of products written as a contraction (`einsum("bc,bc->b", p, log_q)`,
`p @ log_q.T`, bmm, dot, inner, tensordot) is one when the contraction pairs the class dim of
the one distribution with the class dim of the other (each traced through the shape ops to its
softmax's dim); when that cannot be told (a reshape that merges it, an unknown op), nothing is
reported. `torch.xlogy(p, q)` is `p * log(q)` with the log taken by the op: a cross-entropy
when q is another distribution's probability, a KL for `xlogy(p, p / q)`.

NOTE [walks that stop on structure]. No walk here is cut by a count: a count would change the
verdict on a deep enough graph (a probability seen through five views instead of four). Each
walk goes down a graph (a DAG: it ends) through a fixed set of node types only, and stops at
the first node of another type, at a node with more than one input where one is needed, or at a
node it has already seen; so its cost is bounded by the nodes of those types it meets, which is
a few for any real loss.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ...capture.ops import CONTRACTION_OPS, PRODUCT_OPS, XLOGY_OPS

__all__ = ["SoftTarget", "written_target", "soft_target_pair", "xlogy_target_pair", "prob_node",
           "logp_node"]

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
# one-input ops that keep every dim where it was (elementwise), between a factor and its softmax
_SAME_DIMS = frozenset({
    "NegBackward0", "MulBackward0", "DivBackward0", "AddBackward0", "SubBackward0", "RsubBackward0",
    "RsubBackward1", "ClampBackward1", "ClampMinBackward0", "ClampMaxBackward0", "CloneBackward0",
    "ToCopyBackward0", "AliasBackward0", "ExpBackward0"}) | _LOG_NODES
_VIEW_NODES = frozenset({"ViewBackward0", "ReshapeAliasBackward0", "UnsafeViewBackward0",
                         "SqueezeBackward0", "SqueezeBackward1", "SqueezeBackward2"})


@dataclass(frozen=True)
class SoftTarget:
    """A cross-entropy or KL written out: its soft target (the probability factor), the
    prediction (the other factor), and, for a KL with the target's own log folded in, the graph
    node of the prediction's side inside that factor (None when the factor is the prediction)."""

    target: torch.Tensor
    prediction: torch.Tensor
    prediction_node: Any = None


def _name(node: Any) -> str:
    """The node's type name (`SoftmaxBackward0`), "" for None (a factor without history)."""
    return node.name() if node is not None else ""


def _inputs(node: Any) -> list[Any]:
    """The node's inputs that have history (a constant operand has no node)."""
    return [n for n, _ in node.next_functions if n is not None]


def _through(node: Any) -> Any:
    """The node below `node`'s sign, scaling, clamping and shape ops: followed while each is one
    of those and has one input with history, so the walk ends at the first other node (NOTE
    [walks that stop on structure])."""
    while node is not None and _name(node) in _THROUGH_NODES:
        inner = _inputs(node)
        if len(inner) != 1:
            return node
        node = inner[0]
    return node


def _input_of(node: Any) -> Any:
    nxt = node.next_functions if node is not None else ()
    return nxt[0][0] if nxt else None


def prob_node(node: Any) -> Any:
    """The softmax/sigmoid node that made a probability factor (`exp(log_softmax(x))` too), or None."""
    node = _through(node)
    name = _name(node)
    if name in _PROB_NODES:
        return node
    if name == "ExpBackward0":
        inner = _through(_input_of(node))
        if _name(inner) == "LogSoftmaxBackward0":
            return inner
    return None


def logp_node(node: Any) -> tuple[Any, Any] | None:
    """(the log node, the logits node below it) of a log-probability factor: log_softmax /
    logsigmoid, or the log of a probability (`torch.log(softmax(x) + eps)`), else None. The
    logits node is what the softmax/sigmoid was applied to."""
    node = _through(node)
    name = _name(node)
    if name in _LOGP_NODES:
        return node, _input_of(node)
    if name in _LOG_NODES:
        p = prob_node(_input_of(node))
        if p is not None:
            return node, _input_of(p)
    return None


def _same_logits(a: Any, b: Any) -> bool:
    """Whether two logits nodes are the same distribution's (`t / T` computed twice counts).
    Seen through sign and scaling without a bound: two chains that end at one node are over
    the same values, whatever their length."""
    return a is b or (a is not None and b is not None and _through(a) is _through(b))


def _two_inputs(node: Any, kind: str) -> tuple[Any, Any] | None:
    """The two inputs (both with history) of a binary op node of type `kind`, else None."""
    if _name(node) != kind:
        return None
    inner = _inputs(node)
    return (inner[0], inner[1]) if len(inner) == 2 else None


def _kl_other_side(node: Any, logits: Any) -> Any:
    """For the second factor of a KL written out (`log p - log q`, `log(p / q)`, or the reverse
    sign), where `logits` is the target p's: the node of the other distribution's side (q's log
    or probability node), else None. One side must be p's own distribution, the other not."""
    node = _through(node)
    sides = _two_inputs(node, "SubBackward0")
    if sides is None:
        if _name(node) not in _LOG_NODES:
            return None
        return _ratio_other_side(_input_of(node), logits)
    found = [logp_node(n) for n in sides]
    if found[0] is None or found[1] is None:
        return None
    own = [_same_logits(lp[1], logits) for lp in found]
    if own[0] == own[1]:
        return None  # neither side is the target's distribution, or both are (a zero)
    return found[1][0] if own[0] else found[0][0]


def _ratio_other_side(node: Any, logits: Any) -> Any:
    """For a ratio of two probabilities (`p / q`, either way up), where `logits` is the target
    p's: the probability node of the other distribution, else None (as _kl_other_side)."""
    sides = _two_inputs(_through(node), "DivBackward0")
    if sides is None:
        return None
    nodes = [prob_node(n) for n in sides]
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


def soft_target_pair(a: Any, b: Any) -> SoftTarget | None:
    """For the two factors of a product: the soft target when one is a probability and the other
    the log-probability of another distribution, or a difference or ratio of the logs of the
    target's distribution and another one (a KL written out; NOTE [hand-written soft targets]),
    else None. Both must carry history. Cheap: a few node type names."""
    nodes = _histories(a, b)
    if nodes is None:
        return None
    ga, gb = nodes
    for t, x, gt, gx in ((a, b, ga, gb), (b, a, gb, ga)):
        p = prob_node(gt)
        if p is None:
            continue
        lp = logp_node(gx)
        if lp is None:
            other = _kl_other_side(gx, _input_of(p))
            if other is not None:
                return SoftTarget(t, x, other)
            continue
        # an entropy: the log of the same distribution (the same logits below both)
        if _same_logits(lp[1], _input_of(p)):
            return None
        return SoftTarget(t, x)
    return None


def xlogy_target_pair(x: Any, y: Any) -> SoftTarget | None:
    """`torch.xlogy(p, q)`, which is `p * log(q)` with the log taken by the op: the soft target
    as soft_target_pair gives it, when `p` is a probability with history and `q` another
    distribution's probability (a cross-entropy), or a ratio of `p`'s distribution and
    another's (a KL: `xlogy(p, p / q)`), else None. `xlogy(p, p)` (an entropy) is None."""
    nodes = _histories(x, y)
    if nodes is None:
        return None
    gx, gy = nodes
    p = prob_node(gx)
    if p is None:
        return None
    logits = _input_of(p)
    q = prob_node(gy)
    if q is not None:
        return None if _same_logits(_input_of(q), logits) else SoftTarget(x, y)
    other = _ratio_other_side(gy, logits)
    return SoftTarget(x, y, other) if other is not None else None


def _path(node: Any, stop: Any) -> list[Any] | None:
    """The nodes from `node` down to `stop` (both included) through elementwise and shape ops,
    or None. Depth-first with a seen set and an explicit stack (a long chain of views must not
    hit the recursion limit); it stops at every node of another type (NOTE [walks that stop on
    structure])."""
    seen = {id(node)}
    stack: list[tuple[Any, list[Any]]] = [(node, [node])]
    while stack:
        cur, path = stack.pop()
        if cur is stop:
            return path
        name = _name(cur)
        if not (name in _SAME_DIMS or name in _THROUGH_NODES):
            continue
        # reversed: the first input is tried first, as a recursive walk would
        for n in reversed(_inputs(cur)):
            if id(n) not in seen:
                seen.add(id(n))
                stack.append((n, path + [n]))
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
        name = _name(node)
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
    name = _name(stop)
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


def _contraction_pairs(name: str, equation: str | None, dims: Any, na: int,
                       nb: int) -> list[tuple[int, int]] | None:
    """The dims (first operand's, second's) that a contraction multiplies together, else None.
    `equation` is einsum's, `dims` tensordot's (None: its default, 2)."""
    if name == "einsum":
        return _einsum_pairs(equation, na, nb) if isinstance(equation, str) else None
    if name in ("dot", "vdot"):
        return [(0, 0)]
    if name == "inner":
        return [(na - 1, nb - 1)] if na and nb else None
    if name == "mm":
        return [(1, 0)]
    if name == "bmm":
        return [(2, 1), (0, 0)]
    if name == "tensordot":
        if dims is None:
            dims = 2
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
    if _name(node) in _LOG_NODES:
        return prob_node(_input_of(node))
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


def written_target(op: str, a: Any, b: Any, equation: str | None = None,
                   dims: Any = None) -> SoftTarget | None:
    """A product, contraction or xlogy `op` of the tensors `a` and `b` (in the op's order): the
    soft target of a cross-entropy or KL written out, else None. `equation` is einsum's,
    `dims` tensordot's."""
    if op in XLOGY_OPS:
        return xlogy_target_pair(a, b)
    if op == "__rmatmul__":
        a, b = b, a  # `other @ self`
    pair = soft_target_pair(a, b)
    if pair is None or op in PRODUCT_OPS:
        return pair
    if op not in CONTRACTION_OPS:
        return None
    pairs = _contraction_pairs(op, equation, dims, a.dim(), b.dim())
    if not pairs:
        return None
    t, x, other = pair.target, pair.prediction, pair.prediction_node
    nt = prob_node(t.grad_fn)
    if other is not None:
        nx = _dist_of(other)
    else:
        lp = logp_node(x.grad_fn)
        nx = _dist_of(lp[0]) if lp is not None else None
    if t is not a:
        pairs = [(j, i) for i, j in pairs]
    return pair if _class_dims_paired(pairs, t, x, nt, nx) else None
