"""The recorder's saved-tensor hooks on autograd's default-hooks stack, and the two torch
functions around them the guard wraps (NOTE [light mode without saved-tensor hooks] in guard.py,
NOTE [saved values behind other hooks] in capture/saved.py)."""
from __future__ import annotations

import functools
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import torch

from ..capture.mode import saved_hooks_enter
from ..capture.recorder import Recorder
from .undo import Undos

__all__ = ["SavedHooks", "saved_tensor_hooks"]


class SavedHooks:
    """Puts `rec`'s pack/unpack hooks on autograd's default-hooks stack and takes them off.

    `keep_in_light`: whether light mode keeps them on (benchmarks/overhead.py's A/B)."""

    def __init__(self, rec: Recorder, internal_error: Callable[[BaseException, str], None],
                 keep_in_light: Callable[[], bool]) -> None:
        self.rec = rec
        self.internal_error = internal_error
        self.keep_in_light = keep_in_light

    def push(self) -> bool:
        """At the guard's entry; False when they cannot be (the guard watches without them)."""
        try:
            torch._C._autograd._push_saved_tensors_default_hooks(self.rec.pack, self.rec.unpack)
        except RuntimeError as err:
            # inside torch.autograd.graph.disable_saved_tensors_hooks: watch without them (the
            # backward check reads PyTorch's own version check instead)
            self.internal_error(err, "installing the saved-tensor hooks (saved-op names are off)")
            return False
        self.rec.saved_hooks_on = True
        return True

    def set(self, on: bool) -> None:
        """Light mode takes the saved-tensor hooks off (NOTE [light mode without saved-tensor
        hooks]); recording puts them back, only when no other hooks are on the stack (only the
        top pair is called: ours would shadow the user's or another guard's, and below them ours
        are never called anyway; the backward check covers both cases)."""
        rec = self.rec
        if on == rec.saved_hooks_on or (not on and self.keep_in_light()):
            return
        autograd = torch._C._autograd
        if on:
            if autograd._top_saved_tensors_default_hooks(True) is not None:
                return
            try:
                autograd._push_saved_tensors_default_hooks(rec.pack, rec.unpack)
            except RuntimeError:  # inside disable_saved_tensors_hooks: stay without
                return
            rec.saved_hooks_on = True
        else:
            self.pop()
            rec.saved_hooks_on = False

    def pop(self) -> None:
        """Take our saved-tensor hooks off their stack, wherever they are, keeping the others in
        order (a nested guard or the user's own hooks may have been pushed after ours and still be
        active when we exit)."""
        autograd = torch._C._autograd
        above = []
        while True:
            top = autograd._top_saved_tensors_default_hooks(True)
            if top is None:  # not there any more: put the others back
                break
            autograd._pop_saved_tensors_default_hooks()
            if top[0] == self.rec.pack:
                break
            above.append(top)
        for pack, unpack in reversed(above):
            autograd._push_saved_tensors_default_hooks(pack, unpack)

    def others(self) -> bool:
        """Whether saved-tensor hooks other than ours may have packed the values of the nodes
        made since the last backward (NOTE [saved values behind other hooks])."""
        if self.rec.foreign_hooks_entered:
            return True
        top = torch._C._autograd._top_saved_tensors_default_hooks(True)
        return top is not None and top[0] != self.rec.pack

    def wrap_disable(self, orig: Callable[..., Any], foreign: Callable[[], bool],
                     dormant: Callable[[], bool]) -> Callable[..., Any]:
        """`torch.autograd.graph.disable_saved_tensors_hooks` that first takes the guard's own
        saved-tensor hooks off. torch.func's grad, vjp, jacrev and hessian enter it and raise
        when any hooks are on the stack, so a correct program would crash only because it runs
        under the guard. Inside, saved tensors are not named (PyTorch's own version check and the
        backward check still run); on the way out the hooks go back if the guard still wants
        them (the recording may have ended inside). The body is not watched either: torch.func
        runs its own torch.autograd.grad on wrapped tensors whose storage cannot be read, and
        what it computes is functional; the backward of the result, outside, is checked."""
        hooks = self

        @contextmanager
        def disable_saved_tensors_hooks(error_message: str) -> Iterator[None]:
            rec = hooks.rec
            if foreign():
                with orig(error_message):
                    yield
                return
            lifted = rec.saved_hooks_on
            if lifted:
                hooks.pop()
                rec.saved_hooks_on = False
            busy, rec.busy = rec.busy, True
            try:
                with orig(error_message):
                    yield
            finally:
                rec.busy = busy
                if lifted and not dormant():
                    hooks.set(rec.recording or hooks.keep_in_light())

        functools.update_wrapper(disable_saved_tensors_hooks, orig)
        return disable_saved_tensors_hooks


@contextmanager
def saved_tensor_hooks(hooks: SavedHooks, foreign: Callable[[], bool], dormant: Callable[[], bool],
                       errors: list[BaseException], guard: Any) -> Iterator[None]:
    """The recorder's saved-tensor hooks pushed (when they can be), `saved_tensors_hooks.__enter__`
    wrapped to note someone else's hooks, and `disable_saved_tensors_hooks` wrapped to lift ours."""
    with Undos(errors) as undo:
        if hooks.push():
            undo.on_exit(hooks.pop)
        graph_mod = torch.autograd.graph
        hooks_cls = graph_mod.saved_tensors_hooks  # NOTE [saved values behind other hooks]
        undo.patch(hooks_cls, "__enter__", saved_hooks_enter(hooks_cls.__enter__, hooks.rec), guard)
        undo.patch(graph_mod, "disable_saved_tensors_hooks",
                   hooks.wrap_disable(graph_mod.disable_saved_tensors_hooks, foreign, dormant), guard)
        yield
