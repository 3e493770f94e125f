"""The guard's undo stack, and the one way the guard patches an attribute.

Every installer is a context manager entered on one `Undos` (an ExitStack): its removal is queued
as soon as it is installed, so a failure halfway leaves nothing behind, and closing the stack
undoes everything in reverse, also when the guarded body raised. A failing undo is kept (the
guard reports it as GG901) and the others still run.
"""
from __future__ import annotations

from contextlib import ExitStack, contextmanager
from typing import Any, Callable, ContextManager, Iterator, TypeVar

__all__ = ["Undos", "patched", "skip_exited"]

T = TypeVar("T")


class Undos(ExitStack):
    """An ExitStack whose undos never raise: a failing one is appended to `errors` (shared by
    nested stacks, so one list holds every failure, in the order undone)."""

    def __init__(self, errors: list[BaseException]) -> None:
        super().__init__()
        self.errors = errors

    def on_exit(self, undo: Callable[[], None]) -> None:
        """Queue `undo`; if it raises, the error is kept and the rest is still undone."""
        errors = self.errors

        def run() -> None:
            try:
                undo()
            except Exception as err:  # keep undoing the rest
                errors.append(err)

        self.callback(run)

    def install(self, installer: ContextManager[T]) -> T:
        """Enter `installer` (it installs); its exit (it removes) is queued like an undo."""
        value = installer.__enter__()
        self.on_exit(lambda: installer.__exit__(None, None, None))
        return value

    def patch(self, owner: Any, name: str, new: Any, guard: Any) -> None:
        """`setattr(owner, name, new)` until this stack closes (see `patched`)."""
        self.install(patched(owner, name, new, guard))


def skip_exited(fn: Any) -> Any:
    """`fn` without the wrappers of guards that have exited: when nested guards exit out of order,
    restoring the inner guard's saved original would otherwise reinstall the outer one's wrapper."""
    while True:
        g = getattr(fn, "__graphguard_guard__", None)
        if g is None or not g._dormant:  # the tag is a GraphGuard; an exited one is dormant
            return fn
        fn = fn.__graphguard_original__


@contextmanager
def patched(owner: Any, name: str, new: Any, guard: Any) -> Iterator[None]:
    """Set `owner.name` to `new` (a wrapper tagged with `guard` and the original) while entered.

    On exit only our own patch is restored: a later patch by someone else is theirs to undo (ours
    then passes through, since an exited guard is dormant)."""
    own = name in owner.__dict__
    old = owner.__dict__[name] if own else getattr(owner, name)
    new.__graphguard_guard__ = guard
    new.__graphguard_original__ = old
    # a class attribute that was inherited (a fast-path module's __call__): undone by deleting
    # ours, not by copying the base class's into the class (also under another guard's wrapper,
    # which may have exited first)
    inherited = (getattr(old, "__graphguard_inherited__", False) if hasattr(old, "__graphguard_guard__")
                 else not own and isinstance(owner, type))
    new.__graphguard_inherited__ = inherited
    setattr(owner, name, new)
    yield
    if owner.__dict__.get(name) is new:
        back = skip_exited(old)
        if inherited and not hasattr(back, "__graphguard_guard__"):
            delattr(owner, name)
        else:
            setattr(owner, name, back)
