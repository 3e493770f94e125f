"""The small installers: backward and grad wrappers, grad-mode switches, the ranks' collective
calls, and warnings shown at the user's line."""
from __future__ import annotations

import functools
import warnings
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import torch

from ..capture.gradmode import GradSwitches, switch_wrappers
from ..capture.kept import KeptWatch
from ..capture.ranks import RankTracker, install_collective_hooks
from ..capture.sites import PACKAGE_DIR, user_site
from .undo import Undos

__all__ = ["backward_wrappers", "grad_mode_switches", "rank_hooks", "warnings_at_user_line"]

# (api, orig, args, kwargs) -> what orig returns: the guard's backward check
BackwardCheck = Callable[[str, Callable[..., Any], tuple, dict], Any]


@contextmanager
def backward_wrappers(check: BackwardCheck, errors: list[BaseException], guard: Any) -> Iterator[None]:
    """`torch.autograd.backward` and `torch.autograd.grad` run through `check` while entered.
    (`Tensor.backward` reaches the guard through its mode.)"""
    with Undos(errors) as undo:
        for api in ("backward", "grad"):
            undo.patch(torch.autograd, api, _wrap_backward(getattr(torch.autograd, api), api, check),
                       guard)
        yield


def _wrap_backward(orig: Callable[..., Any], api: str, check: BackwardCheck) -> Callable[..., Any]:
    @functools.wraps(orig)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return check(api, orig, args, kwargs)

    wrapper.__graphguard_original__ = orig  # type: ignore[attr-defined]
    return wrapper


@contextmanager
def grad_mode_switches(switches: GradSwitches, foreign: Callable[[], bool],
                       errors: list[BaseException], guard: Any) -> Iterator[None]:
    """torch's grad-mode switches wrapped to note who turns autograd off (GG014, GG008)."""
    with Undos(errors) as undo:
        for owner, name, wrapper in switch_wrappers(switches, foreign):
            undo.patch(owner, name, wrapper, guard)
        yield


@contextmanager
def kept_watch(watch: KeptWatch, errors: list[BaseException]) -> Iterator[None]:
    """The collector callback that notes tensors with history on their way to the old
    generation (GG101's looks read the young generations and those, capture/kept.py)."""
    with Undos(errors) as undo:
        watch.install()
        undo.on_exit(watch.remove)
        yield


@contextmanager
def rank_hooks(ranks: RankTracker, foreign: Callable[[], bool],
               errors: list[BaseException]) -> Iterator[None]:
    """torch.distributed's blocking collectives seen by `ranks` (GG019); on exit the other ranks
    learn that this one has finished."""
    with Undos(errors) as undo:
        undo.on_exit(ranks.close)
        undo.on_exit(install_collective_hooks(ranks, foreign))
        yield


@contextmanager
def warnings_at_user_line(errors: list[BaseException], guard: Any) -> Iterator[None]:
    """`warnings.showwarning` wrapped while entered (see `_showwarning_at_user_line`)."""
    with Undos(errors) as undo:
        undo.patch(warnings, "showwarning", _showwarning_at_user_line(warnings.showwarning), guard)
        yield


def _showwarning_at_user_line(orig: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap warnings.showwarning so that a warning torch raises from inside the mode (it points at
    graphguard's frame, since that is the innermost Python frame) is shown at the user's line."""
    own = PACKAGE_DIR

    def showwarning(message: Any, category: Any, filename: str, lineno: int, *args: Any, **kw: Any) -> Any:
        if filename.startswith(own):
            try:
                site = user_site(1, 1)
            except Exception:  # showing the warning where it was raised is good enough
                site = ()
            if site:
                filename, lineno = site[0].file, site[0].line
        return orig(message, category, filename, lineno, *args, **kw)

    return showwarning
