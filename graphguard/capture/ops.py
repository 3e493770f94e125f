"""Which torch functions are losses, copy constructors, in-place ops, backward calls."""
from __future__ import annotations

from typing import Any, Callable

import torch
import torch.nn.functional as F

__all__ = ["LOSS_TARGET_ARG", "LOSS_WEIGHT_ARGS", "COPY_FUNCS", "BACKWARD_FUNCS", "inplace_target", "func_name",
           "NOT_INPLACE", "PRODUCT_OPS", "CONTRACTION_OPS", "XLOGY_OPS", "WRITTEN_OPS", "product_args"]

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

# Products, contractions and xlogy: the ops a cross-entropy or KL written out by hand is made of
# (`softmax(t) * log_softmax(s)`, `einsum("bc,bc->b", p, log_q)`, `xlogy(p, q)`). The recorder
# only reports such a call of two tensors with history (events.ProductOp); whether it is one is
# GG002's to tell (NOTE [hand-written soft targets] in rules/shared/softtarget.py).
PRODUCT_OPS = frozenset({"mul", "__mul__", "__rmul__"})
CONTRACTION_OPS = frozenset({"matmul", "__matmul__", "__rmatmul__", "mm", "bmm", "einsum", "dot",
                             "vdot", "inner", "tensordot"})
XLOGY_OPS = frozenset({"xlogy", "special_xlogy"})
WRITTEN_OPS = PRODUCT_OPS | CONTRACTION_OPS | XLOGY_OPS  # the recorder's one lookup per op


def product_args(name: str, args: tuple, kwargs: dict) -> tuple[str | None, Any]:
    """The arguments of a WRITTEN_OPS call that are no tensors but say what it sums over:
    (einsum's equation, tensordot's `dims`), each None when not given."""
    if name == "einsum":
        eq = args[0] if args and isinstance(args[0], str) else kwargs.get("equation")
        return (eq if isinstance(eq, str) else None), None
    if name == "tensordot":
        return None, kwargs.get("dims", args[2] if len(args) > 2 else None)
    return None, None


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
