"""Hugging Face ``Trainer``: ``GraphGuardCallback`` (a ``TrainerCallback``) guards ``train()``.

    from graphguard.integrations.transformers import GraphGuardCallback
    cb = GraphGuardCallback()                      # or fail_on="error"
    trainer = Trainer(model, args, train_dataset=ds, callbacks=[cb])
    with cb:                                       # optional: closes the guard if train() raises
        trainer.train()
    cb.findings

The guard spans training (``on_train_begin`` to ``on_train_end``); the gradient checks run at the
optimizer step, right after ``on_pre_optimizer_step``, where new findings are reported (again at
``on_step_end``) as ``GraphGuardWarning``s on the main process. ``fail_on`` stops training with
``GraphMisuseError``. The HTML and JSON report go to ``args.output_dir/graphguard-report/``.
The Trainer has no exception hook: if ``train()`` raises, the guard is closed by ``with cb:``,
``cb.close()`` or the next ``on_train_begin``. ``transformers`` is imported on first use only.
"""
from __future__ import annotations

import os
import sys
import warnings
from typing import Any, Iterable

from ..errors import GraphGuardWarning
from ._common import GuardedRun

__all__ = ["GraphGuardCallback"]

_CLASSES: dict[type, type] = {}


def _warn(message: str) -> None:
    warnings.warn(message, GraphGuardWarning, stacklevel=3)


class GraphGuardCallback:
    """Guard Hugging Face ``Trainer.train`` with a ``GraphGuard``.

    Args:
        mode: ``"warn"`` (default): each finding is reported once as a ``GraphGuardWarning`` on the
            main process; ``"raise"``: an error raises ``GraphMisuseError`` before PyTorch's own
            error; ``"collect"``: silent, read ``callback.findings``.
        select / ignore: rule code prefixes, as for ``GraphGuard``.
        fail_on: ``None`` (default), ``"error"``, ``"warning"`` or ``"info"``: a finding at or above
            it stops training with ``GraphMisuseError``.
        report_dir: where the report goes (default ``<output_dir>/graphguard-report``); ``False``:
            none.
        record_iterations, diagrams: as for ``GraphGuard`` / ``write_report``.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> "GraphGuardCallback":
        base = _trainer_callback()
        if not issubclass(cls, base):
            sub = _CLASSES.get(cls)
            if sub is None:
                sub = _CLASSES[cls] = type(cls.__name__, (cls, base),
                                           {"__module__": cls.__module__, "__qualname__": cls.__qualname__})
            cls = sub
        return object.__new__(cls)

    def __init__(self, mode: str = "warn", select: Iterable[str] | None = None,
                 ignore: Iterable[str] | None = None, fail_on: str | None = None,
                 report_dir: str | bool | None = None, record_iterations: int | None = 2,
                 diagrams: bool = True) -> None:
        self._run = GuardedRun(mode, select, ignore, fail_on, record_iterations, diagrams)
        self.report_dir = report_dir
        self.report_path: str | None = None
        self._folder: str | None = None
        self._main = True
        self._rank, self._world = 0, 1  # the process index and count, read at on_train_begin

    @property
    def findings(self) -> list[Any]:
        """The findings of the current (or last) training run."""
        return self._run.findings

    @property
    def guard(self) -> Any:
        """The ``GraphGuard`` while training runs, else ``None``."""
        return self._run.guard

    # ---- closing when train() raised -------------------------------------------------------------
    def __enter__(self) -> "GraphGuardCallback":
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        self.close(exc)
        return False

    def close(self, exc: BaseException | None = None) -> list[Any]:
        """Leave the guard (if training left it open) and write the report; return the findings
        not reported before."""
        if not self._run.active:
            return []
        new: list[Any] = []
        try:
            self._run.stop(exc)
        finally:
            new = self._run.report_new(self._say)
            if self.report_dir is not False and self._folder:
                # every process's findings in one report, written by the main one
                self.report_path = self._run.write_run_report(self._folder, "transformers train",
                                                              self._rank, self._world)
        return new

    # ---- TrainerCallback events ----------------------------------------------------------------
    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.close()  # a run that raised before
        self._main = bool(getattr(state, "is_world_process_zero", True))
        self._rank = int(getattr(args, "process_index", 0) or 0)
        self._world = int(getattr(args, "world_size", 1) or 1)
        self._folder = (self.report_dir if isinstance(self.report_dir, str)
                        else os.path.join(str(getattr(args, "output_dir", None) or "."),
                                          "graphguard-report"))
        self._run.start()

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._report()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._report()

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not self._run.active:
            return
        self._run.check_fail(self.close())

    # ---- helpers --------------------------------------------------------------------------------
    def _say(self, message: str) -> None:
        if self._main:
            _warn(message)

    def _report(self) -> None:
        if not self._run.active:
            return
        new = self._run.report_new(self._say)
        try:
            self._run.check_fail(new)
        except BaseException as err:
            self.close(err)  # the Trainer has no exception hook: leave the guard now
            raise


def _trainer_callback() -> type:
    mod = sys.modules.get("transformers")
    if mod is None or not hasattr(mod, "TrainerCallback"):
        import transformers as mod  # noqa: F811
    return mod.TrainerCallback
