"""What the framework callbacks share: one guard over a training run, new findings reported once,
``fail_on`` judged, the report written at the end. Public graphguard API only."""
from __future__ import annotations

import json
import os
import time
from typing import Any, Callable, Iterable

from ..errors import GraphGuardUsageError, GraphGuardWarning, GraphMisuseError

__all__ = ["GuardedRun", "LEVELS"]

LEVELS = {"info": 0, "warning": 1, "error": 2}
_MODES = ("warn", "raise", "collect")


class GuardedRun:
    """A ``GraphGuard`` entered by one framework hook and left by another.

    ``mode``: ``"warn"`` (default): findings are collected and each is reported once as a
    ``GraphGuardWarning`` through ``warn`` (the framework's rank-zero warning); ``"raise"``: an error
    raises ``GraphMisuseError`` before PyTorch's own error; ``"collect"``: silent.
    ``fail_on``: ``None`` (default) or a severity; a finding at or above it stops training
    (errors are then raised before the backward that would crash).
    """

    def __init__(self, mode: str = "warn", select: Iterable[str] | None = None,
                 ignore: Iterable[str] | None = None, fail_on: str | None = None,
                 record_iterations: int | None = 2, diagrams: bool = True) -> None:
        if mode not in _MODES:
            raise GraphGuardUsageError(f"unknown mode {mode!r}: use warn, raise or collect")
        if fail_on is not None and fail_on not in LEVELS:
            raise GraphGuardUsageError(f"unknown fail_on {fail_on!r}: use error, warning, info or None")
        self.mode, self.fail_on = mode, fail_on
        self.select, self.ignore = list(select or []), list(ignore or [])
        self.record_iterations, self.diagrams = record_iterations, diagrams
        self.guard: Any = None
        self._reported = 0
        self._last: list[Any] = []

    # ---- lifecycle ------------------------------------------------------------------------------
    @property
    def findings(self) -> list[Any]:
        return list(self.guard.findings) if self.guard is not None else list(self._last)

    @property
    def active(self) -> bool:
        return self.guard is not None

    def start(self) -> None:
        from ..guard import GraphGuard

        if self.guard is not None:
            return
        # errors must stop before PyTorch's own error when training is to stop with the finding
        guard_mode = "raise" if self.mode == "raise" or self.fail_on is not None else "collect"
        self.guard = GraphGuard(mode=guard_mode, select=self.select, ignore=self.ignore,
                                record_iterations=self.record_iterations)
        self._reported = 0
        self._started = time.time()  # rank reports older than this are an earlier run's
        self.guard.__enter__()

    def stop(self, exc: BaseException | None = None) -> list[Any]:
        guard, self.guard = self.guard, None
        if guard is None:
            return list(self._last)
        try:
            guard.__exit__(type(exc) if exc else None, exc, None)
        finally:
            self._last = list(guard.findings)
            self._closed = guard
        return self._last

    # ---- reporting ------------------------------------------------------------------------------
    def new_findings(self) -> list[Any]:
        fs = self.findings
        new, self._reported = fs[self._reported:], len(fs)
        return new

    def report_new(self, warn: Callable[[str], None]) -> list[Any]:
        """Report the findings not reported yet (in ``warn`` mode) and return them."""
        new = self.new_findings()
        if self.mode == "warn" and self.fail_on is None:
            from ..report.text import render_finding

            for f in new:
                try:
                    text = render_finding(f)
                except Exception:
                    text = f"{f.code} {f.slug} [{f.severity}]"
                warn("graphguard: " + text.rstrip())
        return new

    def check_fail(self, findings: list[Any]) -> None:
        """Stop training (raise) when one of these findings is at or above ``fail_on``."""
        if self.fail_on is None:
            return
        bad = [f for f in findings if LEVELS.get(f.severity, 0) >= LEVELS[self.fail_on]]
        if bad:
            from ..report.text import render_findings

            raise GraphMisuseError(f"graphguard: autograd misuse (fail-on: {self.fail_on})\n"
                                   + render_findings(bad), bad)

    def write_run_report(self, report_dir: str, target: str | None, rank: int, world_size: int,
                         wait: float = 15.0) -> str | None:
        """One report per run, whatever the number of ranks: every rank but zero leaves its
        report in ``report_dir/ranks/``; rank zero waits for them (``wait`` seconds at most: a rank
        that died writes none) and writes the merged report, each finding with its ``rank``.
        Returns the HTML path on rank zero; never raises."""
        if world_size <= 1:
            return self.write_report(report_dir, target) if rank == 0 else None
        guard = getattr(self, "_closed", None) or self.guard
        if guard is None:
            return None
        folder = os.path.join(report_dir, "ranks")
        try:
            if rank != 0:
                os.makedirs(folder, exist_ok=True)
                part = dict(guard.report(target=target),
                            process={"pid": os.getpid(), "rank": rank, "name": f"rank {rank}", "function": None})
                tmp = os.path.join(folder, f".rank{rank}.{os.getpid()}.tmp")
                with open(tmp, "w", encoding="utf-8") as fh:
                    json.dump(part, fh, indent=2)
                os.replace(tmp, os.path.join(folder, f"rank{rank}.json"))  # never half a file
                return None
            parts = self._rank_parts(folder, world_size, wait)
            from ..report.html import write_html
            from ..report.json_report import merge_processes

            os.makedirs(report_dir, exist_ok=True)
            if self.diagrams:
                from ..report.diagrams import write_diagrams

                write_diagrams(guard.findings, report_dir)
            merged = merge_processes(guard.report(target=target), parts, os.getpid(), 0)
            with open(os.path.join(report_dir, "report.json"), "w", encoding="utf-8") as fh:
                json.dump(merged, fh, indent=2)
            return write_html(merged, report_dir)
        except Exception as err:  # the report is a bonus: never fail training for it
            import warnings

            warnings.warn(f"graphguard: report not written ({type(err).__name__}: {err})",
                          GraphGuardWarning, stacklevel=2)
            return None

    def _rank_parts(self, folder: str, world_size: int, wait: float) -> list[dict[str, Any]]:
        started = getattr(self, "_started", 0.0)
        deadline = time.monotonic() + wait
        while True:
            parts = []
            for r in range(1, world_size):
                path = os.path.join(folder, f"rank{r}.json")
                try:
                    if os.path.getmtime(path) + 1.0 < started:
                        continue  # an earlier run's
                    with open(path, encoding="utf-8") as fh:
                        parts.append(json.load(fh))
                except (OSError, ValueError):
                    continue
            if len(parts) == world_size - 1 or time.monotonic() > deadline:
                return parts
            time.sleep(0.2)

    def write_report(self, report_dir: str, target: str | None = None) -> str | None:
        """``index.html`` (with diagrams) and ``report.json`` in ``report_dir``; never raises."""
        guard = getattr(self, "_closed", None) or self.guard
        if guard is None:
            return None
        try:
            os.makedirs(report_dir, exist_ok=True)
            path = guard.write_report(report_dir, diagrams=self.diagrams, target=target)
            with open(os.path.join(report_dir, "report.json"), "w", encoding="utf-8") as fh:
                json.dump(guard.report(target=target), fh, indent=2)
            return path
        except Exception as err:  # the report is a bonus: never fail training for it
            import warnings

            warnings.warn(f"graphguard: report not written ({type(err).__name__}: {err})",
                          GraphGuardWarning, stacklevel=2)
            return None
