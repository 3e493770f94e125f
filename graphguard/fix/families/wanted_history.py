"""A tensor copy of tensors that require grad, asked to require grad itself (GG104): the history
was wanted, so the elements are stacked with it instead of copied by value.

`torch.tensor([loss_a, loss_b], requires_grad=True)` copies the values of tensors that have a
history and makes the copy a new leaf: backward through it stops at the copy, and nothing before it
trains. `requires_grad=True` on the copy says the gradient was meant to flow, so the remedy is the
same as for the lost history it causes (GG009): `torch.stack` of the elements (copies.py). A copy
without that flag keeps detach-copy-source, which computes what the program computes now.
"""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from ..tree import Source
from .copies import cut_lines, is_copy, stack_copies

__all__ = ["stack_wanted_copies"]


def _asks_for_grad(call: cst.Call) -> bool:
    return any(a.keyword is not None and a.keyword.value == "requires_grad"
               and isinstance(a.value, cst.Name) and a.value.value == "True" for a in call.args)


def stack_wanted_copies(src: Source, f: dict[str, Any], file: str) -> Iterator[tuple[str, int, str, str]]:
    """GG104 on a copy made with requires_grad=True: the elements stacked, with their history."""
    for line in cut_lines(f):
        stmt = src.statement(line)
        if stmt is None:
            continue
        if any(is_copy(c) and _asks_for_grad(c) for c in src.nodes(cst.Call, line)
               if src.statement(src.start(c)) is stmt):
            yield from stack_copies(src, f, file)
            return
