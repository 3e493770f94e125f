"""Lightning: ``GraphGuardCallback`` guards ``Trainer.fit``.

    from graphguard.integrations.lightning import GraphGuardCallback
    trainer = Trainer(callbacks=[GraphGuardCallback()])      # or fail_on="error"
    trainer.fit(model)
    trainer.callbacks[0].findings

Works with ``lightning.pytorch`` and ``pytorch_lightning`` alike: the callback class is made on
first instantiation from the ``Callback`` base of whichever is imported (both, when both are), and
neither is imported before that.

The guard spans training (``on_train_start`` to ``on_train_end``, or ``on_exception``); iterations
follow optimizer steps, with automatic and manual optimization alike. New findings are reported
after each optimizer step and batch through Lightning's rank-zero warnings; with ``fail_on`` the
first finding at that severity stops ``fit`` (an error before the backward it would crash). The
HTML and JSON report go to ``trainer.default_root_dir/graphguard-report/`` (rank zero).
"""
from __future__ import annotations

import os
import sys
from typing import Any, Iterable

from ._common import GuardedRun

__all__ = ["GraphGuardCallback"]

_FLAVOURS = ("lightning.pytorch", "pytorch_lightning")
_CLASSES: dict[tuple[type, ...], type] = {}


def _callback_bases() -> tuple[type, ...]:
    mods = [sys.modules[m] for m in _FLAVOURS if m in sys.modules]
    if not mods:
        import importlib

        for name in _FLAVOURS:
            try:
                mods = [importlib.import_module(name)]
                break
            except ImportError:
                continue
        else:
            raise ImportError("GraphGuardCallback needs lightning (pip install lightning) "
                              "or pytorch_lightning")
    return tuple(m.Callback for m in mods)


def _rank_zero_warn(message: str) -> None:
    for name in _FLAVOURS:
        mod = sys.modules.get(name + ".utilities.rank_zero") or sys.modules.get(name + ".utilities")
        fn = getattr(mod, "rank_zero_warn", None)
        if fn is not None:
            from ..errors import GraphGuardWarning

            fn(message, category=GraphGuardWarning)
            return
    import warnings

    from ..errors import GraphGuardWarning

    warnings.warn(message, GraphGuardWarning, stacklevel=2)


class GraphGuardCallback:
    """Guard Lightning training with a ``GraphGuard``.

    Args:
        mode: ``"warn"`` (default): each finding is reported once as a rank-zero
            ``GraphGuardWarning``; ``"raise"``: an error raises ``GraphMisuseError`` before
            PyTorch's own error; ``"collect"``: silent, read ``callback.findings``.
        select / ignore: rule code prefixes, as for ``GraphGuard``.
        fail_on: ``None`` (default), ``"error"``, ``"warning"`` or ``"info"``: a finding at or above
            it stops ``fit`` with ``GraphMisuseError``.
        report_dir: where the report goes (default ``<default_root_dir>/graphguard-report``);
            ``False``: no report.
        record_iterations, diagrams: as for ``GraphGuard`` / ``write_report``.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> "GraphGuardCallback":
        if cls is GraphGuardCallback or not any(b in cls.__mro__ for b in _callback_bases()):
            bases = _callback_bases()
            sub = _CLASSES.get(bases)
            if sub is None:
                sub = type(cls.__name__, (cls, *bases), {"__module__": cls.__module__,
                                                         "__qualname__": cls.__qualname__})
                _CLASSES[bases] = sub
            cls = sub
        return object.__new__(cls)

    def __reduce__(self) -> Any:
        return (GraphGuardCallback, (), self.__dict__ | {"_run": None})

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __init__(self, mode: str = "warn", select: Iterable[str] | None = None,
                 ignore: Iterable[str] | None = None, fail_on: str | None = None,
                 report_dir: str | bool | None = None, record_iterations: int | None = 2,
                 diagrams: bool = True) -> None:
        self._run = GuardedRun(mode, select, ignore, fail_on, record_iterations, diagrams)
        self.report_dir = report_dir
        self.report_path: str | None = None

    # ---- results --------------------------------------------------------------------------------
    @property
    def findings(self) -> list[Any]:
        """The findings of the current (or last) ``fit``."""
        return self._run.findings if self._run is not None else []

    @property
    def guard(self) -> Any:
        """The ``GraphGuard`` while training runs, else ``None``."""
        return self._run.guard if self._run is not None else None

    # ---- Lightning hooks ------------------------------------------------------------------------
    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self._run.start()

    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
        self._report(trainer)

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        self._report(trainer)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self._finish(trainer, None)

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self._finish(trainer, exception)

    # ---- helpers --------------------------------------------------------------------------------
    def _report(self, trainer: Any) -> None:
        if not self._run.active:
            return
        new = self._run.report_new(_rank_zero_warn)
        self._run.check_fail(new)

    def _finish(self, trainer: Any, exc: BaseException | None) -> None:
        if not self._run.active:
            return
        try:
            self._run.stop(exc)
        finally:
            new = self._run.report_new(_rank_zero_warn)
            if self.report_dir is not False:
                folder = self.report_dir or os.path.join(str(trainer.default_root_dir),
                                                         "graphguard-report")
                # every rank's findings in one report, written by rank zero
                rank = int(getattr(trainer, "global_rank", 0) or 0)
                world = int(getattr(trainer, "world_size", 1) or 1)
                self.report_path = self._run.write_run_report(folder, "lightning fit", rank, world)
        if exc is None:
            self._run.check_fail(new)
