"""Backward interception: the arguments of a backward call, bound as torch itself binds them."""
from __future__ import annotations

import inspect
from typing import Any, Callable, NamedTuple

import torch

__all__ = ["BackwardArgs", "bind_backward", "materialize_iterators", "plain_tensor_backward"]


_BACKWARD_SIG = inspect.signature(torch.autograd.backward)
_GRAD_SIG = inspect.signature(torch.autograd.grad)
_TENSOR_BACKWARD_SIG = inspect.signature(torch.Tensor.backward)


def _fast_binder(sig: inspect.Signature) -> Callable[..., dict[str, Any]]:
    """A function with `sig`'s parameters that returns their values (defaults applied) by name.

    Python's own call binding does in about half a microsecond what `Signature.bind` does in
    about ten; made from the installed torch's signature, so it follows its version.
    """
    P = inspect.Parameter
    params = list(sig.parameters.values())
    last_positional_only = max((i for i, q in enumerate(params) if q.kind is P.POSITIONAL_ONLY),
                               default=-1)
    defaults: dict[str, Any] = {}
    parts: list[str] = []
    star = False
    for i, prm in enumerate(params):
        if prm.kind is P.VAR_POSITIONAL:
            parts.append("*" + prm.name)
            star = True
            continue
        if prm.kind is P.VAR_KEYWORD:
            parts.append("**" + prm.name)
            continue
        if prm.kind is P.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        if prm.default is not P.empty:
            defaults[prm.name] = prm.default
            parts.append(f"{prm.name}=__defaults[{prm.name!r}]")
        else:
            parts.append(prm.name)
        if i == last_positional_only:
            parts.append("/")
    names = ", ".join(f"{n!r}: {n}" for n in sig.parameters)
    src = f"def bind({', '.join(parts)}):\n    return {{{names}}}\n"
    ns: dict[str, Any] = {"__defaults": defaults}
    exec(src, ns)  # noqa: S102 - source built from parameter names only
    return ns["bind"]


_BIND_BACKWARD = _fast_binder(_BACKWARD_SIG)
_BIND_GRAD = _fast_binder(_GRAD_SIG)
_BIND_TENSOR_BACKWARD = _fast_binder(_TENSOR_BACKWARD_SIG)


def _as_list(x: Any) -> list[Any]:
    if x is None:
        return []
    if isinstance(x, torch.Tensor):
        return [x]
    return list(x)


class BackwardArgs(NamedTuple):
    """What a backward call asks for."""

    roots: list[Any]  # the tensors backward starts from
    gradients: list[Any]  # grad_tensors / grad_outputs
    inputs: list[Any]  # `inputs=` of backward, or the inputs of autograd.grad
    retain_graph: bool  # retain_graph, defaulting to create_graph as torch does
    create_graph: bool


def plain_tensor_backward(args: tuple, kwargs: dict) -> bool:
    """Whether this is `loss.backward()` as Tensor.backward hands it to autograd.backward: the
    tensor, no gradient, retain_graph/create_graph as given, `inputs=None` (the call of nearly
    every training step: bound here without the general binder, and holding no iterator)."""
    return (len(args) == 4 and len(kwargs) == 1 and kwargs.get("inputs", 0) is None
            and args[1] is None and isinstance(args[0], torch.Tensor)
            and (args[2] is None or type(args[2]) is bool) and type(args[3]) is bool)


def bind_backward(api: str, orig: Any, args: tuple, kwargs: dict,
                  plain: bool | None = None) -> BackwardArgs:
    """The arguments of `orig(*args, **kwargs)`: api "grad" (autograd.grad) or "backward"
    (Tensor.backward or autograd.backward). `plain`: plain_tensor_backward(args, kwargs), when
    the caller has it already."""
    if plain is None:
        plain = plain_tensor_backward(args, kwargs)
    if api == "backward" and orig is not torch.Tensor.backward and plain:
        create = args[3]
        return BackwardArgs([args[0]], [], [], create if args[2] is None else args[2], create)
    if api == "grad":
        a = _BIND_GRAD(*args, **kwargs)
        roots = _as_list(a.get("outputs"))
        grads = _as_list(a.get("grad_outputs"))
    else:
        bind = _BIND_TENSOR_BACKWARD if orig is torch.Tensor.backward else _BIND_BACKWARD
        a = bind(*args, **kwargs)
        roots = _as_list(a.get("self", a.get("tensors")))
        grads = _as_list(a.get("gradient", a.get("grad_tensors")))
    inputs = _as_list(a.get("inputs"))
    create = bool(a.get("create_graph", False))
    retain = a.get("retain_graph")
    retain = create if retain is None else bool(retain)
    return BackwardArgs(roots, grads, inputs, retain, create)


def _one_shot(x: Any) -> bool:
    return (x is not None and not isinstance(x, (torch.Tensor, list, tuple, bool, int, float))
            and hasattr(type(x), "__next__"))


def materialize_iterators(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """`args`, `kwargs` with every iterator among them (a generator such as `model.parameters()`,
    `map(...)`, `iter(...)`) made a list, once: the guard reads the list and the real call gets
    the same list, so binding the arguments never consumes what torch is to read
    (NOTE [the guard never changes what training computes])."""
    if plain_tensor_backward(args, kwargs):
        return args, kwargs  # a tensor, None, bools: nothing to read once
    if any(_one_shot(a) for a in args):
        args = tuple(list(a) if _one_shot(a) else a for a in args)
    if kwargs and any(_one_shot(v) for v in kwargs.values()):
        kwargs = {k: (list(v) if _one_shot(v) else v) for k, v in kwargs.items()}
    return args, kwargs
