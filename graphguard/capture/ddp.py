"""DistributedDataParallel as its reducer sees it (GG017, GG018).

DDP's reducer is told at the end of each forward (`_post_forward`, grad on and `no_sync()` off)
to expect one gradient for every parameter it holds, and it all-reduces them bucket by bucket as
autograd produces them. A parameter whose gradient never comes leaves the iteration's reduction
unfinished: the next forward raises "Expected to have finished reduction in the prior
iteration", naming parameter indices. A gradient that comes twice for one forward (two backwards
through it) raises "Expected to mark a variable ready only once" inside the second backward.

The guard wraps `DistributedDataParallel.forward` while it is entered: before the real forward it
reports a `DdpForward` (the previous window's account is settled there, before DDP's own check),
after it the module's new `DdpWindow` begins when the reducer was told to wait. A post-accumulate
grad hook on each of the module's parameters (removed when the guard exits) counts the gradients
each window received: what the reducer counts, seen from outside. Nothing here changes the
module's inputs, outputs or gradients.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import torch

from ..events import DdpForward
from ..model import Site
from .recorder import Recorder
from .sites import user_site

if TYPE_CHECKING:
    from .ranks import RankTracker

__all__ = ["DdpWindow", "install_ddp_hook", "open_windows", "declared_unused", "collective_calls",
           "reduced_windows"]


@dataclass(eq=False)
class DdpWindow:
    """One DDP module from a forward to its next forward: what its reducer was told to expect,
    and what it got. `names[i]` is the reducer's i-th parameter as `named_parameters()` of the
    DDP module spells it (`module.aux_head.weight`)."""

    module: "weakref.ref[Any]"
    site: Site  # the forward's user site
    expects: bool  # the reducer waits for every parameter's gradient (unused ones are an error)
    sync: bool  # grad on and require_backward_grad_sync: the reducer was prepared at all
    find_unused: bool
    static_graph: bool
    names: list[str]
    params: list["weakref.ref[torch.Tensor]"]
    iteration: int = 0
    # how many gradients each parameter received in this window, by index
    grads: list[int] = field(default_factory=list)
    # this rank's collective calls (capture/ranks.py) when the window's latest gradient came:
    # a later call may be the user's own all-reduce of gradients kept local by no_sync() (GG020)
    calls_at_grad: int = 0

    def reached(self) -> set[int]:
        return {i for i, n in enumerate(self.grads) if n}

    def missing(self) -> list[int]:
        return [i for i, n in enumerate(self.grads) if not n]

    def param(self, i: int) -> torch.Tensor | None:
        return self.params[i]()


class _ModuleHooks:
    """The grad hooks of one DDP module's parameters, and its current window."""

    def __init__(self, module: Any, ranks: "RankTracker | None") -> None:
        self.window: DdpWindow | None = None
        self.ranks = ranks
        # the synced windows that received gradients in iteration `reduced_iteration`: each one
        # all-reduced (GG105 counts them between two steps)
        self.reduced_iteration = -1
        self.reduced: list[DdpWindow] = []
        self.handles: list[Any] = []
        self.names: list[str] = []
        self.params: list[weakref.ref] = []
        ignore = set(getattr(module, "parameters_to_ignore", ()) or ())
        for name, p in module.named_parameters():
            # the reducer holds the parameters that require grad, less the ones DDP was told to ignore
            if not p.requires_grad or name in ignore or name.removeprefix("module.") in ignore:
                continue
            i = len(self.names)
            self.names.append(name)
            self.params.append(weakref.ref(p))
            self.handles.append(p.register_post_accumulate_grad_hook(self._counter(i)))

    def _counter(self, i: int) -> Callable[[torch.Tensor], None]:
        me = weakref.ref(self)

        def counted(_: torch.Tensor) -> None:
            hooks = me()
            window = hooks.window if hooks is not None else None
            if window is not None and i < len(window.grads):
                if window.sync and not any(window.grads):
                    hooks.note_reduced(window)  # type: ignore[union-attr]
                window.grads[i] += 1
                st = hooks.ranks.state if hooks.ranks is not None else None  # type: ignore[union-attr]
                if st is not None:
                    window.calls_at_grad = st.calls

        return counted

    def note_reduced(self, window: DdpWindow) -> None:
        if window.iteration != self.reduced_iteration:
            self.reduced_iteration, self.reduced = window.iteration, []
        self.reduced.append(window)

    def remove(self) -> None:
        for h in self.handles:
            try:
                h.remove()
            except Exception:
                pass
        self.handles.clear()


def install_ddp_hook(rec: Recorder, foreign: Callable[[], bool],
                     ranks: "RankTracker | None" = None) -> Callable[[], None]:
    """Wrap DistributedDataParallel.forward for `rec`; returns the undo (a no-op without
    torch.distributed). With `ranks`, a forward that broadcasts the module's buffers first
    (`broadcast_buffers=True` and buffers to send) counts as one of this rank's collective calls."""
    try:
        from torch.nn.parallel import DistributedDataParallel as DDP
    except ImportError:  # pragma: no cover - a torch built without distributed
        return lambda: None
    had = "forward" in DDP.__dict__
    old = DDP.__dict__.get("forward")
    base = DDP.forward
    modules: "weakref.WeakKeyDictionary[Any, _ModuleHooks]" = weakref.WeakKeyDictionary()
    _REGISTRY[id(rec)] = modules
    _RANKS[id(rec)] = ranks

    def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        if foreign() or rec.busy or torch.compiler.is_compiling():
            return base(self, *args, **kwargs)
        hooks = modules.get(self)
        if hooks is None:
            try:
                hooks = modules[self] = _ModuleHooks(self, ranks)
            except Exception as err:  # unwatched, said once
                rec.sink.internal_error(err, "watching a DistributedDataParallel module")
                return base(self, *args, **kwargs)
        site = user_site(1)
        rec.sink.dispatch(DdpForward(site, self, hooks.window))  # may raise: before DDP's own check
        if ranks is not None and ranks.ready() and _broadcasts(self):
            with ranks.blocking("forward", site):
                out = base(self, *args, **kwargs)
        else:
            out = base(self, *args, **kwargs)
        grad_on = torch.is_grad_enabled()
        sync = bool(grad_on and getattr(self, "require_backward_grad_sync", True))
        find_unused = bool(getattr(self, "find_unused_parameters", False))
        static = bool(getattr(self, "static_graph", False))
        # a forward inside no_sync() gets a window too (sync False): its gradients stay local
        hooks.window = DdpWindow(weakref.ref(self), site, sync and not find_unused and not static, sync,
                                 find_unused, static, hooks.names, hooks.params, rec.clock.iteration,
                                 [0] * len(hooks.names)) if grad_on else None
        return out

    DDP.forward = forward

    def undo() -> None:
        for hooks in list(modules.values()):
            hooks.remove()
        modules.clear()
        _REGISTRY.pop(id(rec), None)
        _RANKS.pop(id(rec), None)
        if DDP.__dict__.get("forward") is forward:
            if had:
                DDP.forward = old
            else:  # pragma: no cover - DDP defines forward
                del DDP.forward

    return undo


def _broadcasts(module: Any) -> bool:
    """The forward starts with a broadcast of the module's buffers from rank 0 (a collective)."""
    try:
        return bool(module.will_sync_module_buffers())
    except Exception:  # an older or newer DDP without it: not counted
        return False


# the watched modules of each recorder (one guard, one recorder)
_REGISTRY: dict[int, "weakref.WeakKeyDictionary[Any, _ModuleHooks]"] = {}
_RANKS: dict[int, "RankTracker | None"] = {}


def collective_calls(rec: Recorder) -> int:
    """This rank's collective calls so far (capture/ranks.py); 0 with one rank or none."""
    ranks = _RANKS.get(id(rec))
    st = ranks.state if ranks is not None else None
    return st.calls if st is not None else 0


def open_windows(rec: Recorder) -> list[DdpWindow]:
    """The current window of each DDP module of `rec`'s guard (`sync`: its reducer waits for
    gradients; False: a forward inside no_sync())."""
    modules = _REGISTRY.get(id(rec))
    if not modules:
        return []
    return [h.window for h in list(modules.values()) if h.window is not None]


def reduced_windows(rec: Recorder, iteration: int) -> list[list[DdpWindow]]:
    """For each DDP module of `rec`'s guard, its synced windows that received gradients in
    `iteration` (each one an all-reduce), in order; modules with none are left out."""
    modules = _REGISTRY.get(id(rec))
    if not modules:
        return []
    return [list(h.reduced) for h in list(modules.values()) if h.reduced and h.reduced_iteration == iteration]


def declared_unused(rec: Recorder, t: Any) -> bool:
    """`t` is a parameter of a watched DDP module built to allow unused parameters
    (find_unused_parameters=True, or static_graph=True, which finds them in its first iteration)."""
    modules = _REGISTRY.get(id(rec))
    if not modules:
        return False
    for module, hooks in list(modules.items()):
        allows = getattr(module, "find_unused_parameters", False) or getattr(module, "static_graph", False)
        if allows and any(r() is t for r in hooks.params):
            return True
    return False
