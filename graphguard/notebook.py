"""Jupyter / IPython: ``%load_ext graphguard``, then

    %%graphguard [--mode raise|warn|collect] [--select GG0] [--ignore GG103] [--report-dir DIR]
    <a cell run inside its own guard; the findings are shown below it, with their diagrams>

    %graphguard on [options]   # one guard for every following cell of the session: a graph
                               # built in one cell and consumed in a later one is known
    %graphguard off            # leave it; its findings are shown once more
    %graphguard                # what is on, and the findings so far

Findings render as HTML (the diagram inline); a display never raises. Options are the
``graphguard run`` ones (default mode ``raise``: an error stops the cell before PyTorch's own).
"""
from __future__ import annotations

import argparse
import html
import shlex
from typing import Any

from .model import Finding

__all__ = ["load_ipython_extension", "unload_ipython_extension", "GraphGuardMagics",
           "register_displays", "finding_html_display", "finding_svg_display"]

_STATE: dict[str, Any] = {"session": None, "shown": 0, "shell": None, "registered": False}


# NOTE [display hooks]: a Finding's rich display is registered with IPython's formatters here, so
# model/ stays free of report/ (a `_repr_html_` on the class would make model import report).
def finding_html_display(finding: Finding) -> str:
    """A finding as the HTML card of the reports (diagram inline); never raises."""
    try:
        from .report.html import finding_html

        return finding_html(finding)
    except Exception as err:  # a display must never break the notebook
        return f"<pre>{html.escape(str(finding.code))} {html.escape(type(err).__name__)}</pre>"


def finding_svg_display(finding: Finding) -> str | None:
    """The finding's graph diagram as SVG, or None when there is none to draw; never raises."""
    try:
        from .report.diagrams import svg_for
        from .report.html import clean_svg

        raw = svg_for(finding.graph) if finding.graph is not None else None
        return clean_svg(raw) if raw else None
    except Exception:
        return None


def register_displays(shell: Any) -> bool:
    """Teach an IPython shell to display findings as HTML and SVG; False when it has no formatters."""
    formatters = getattr(getattr(shell, "display_formatter", None), "formatters", None)
    if not isinstance(formatters, dict):
        return False
    try:
        formatters["text/html"].for_type(Finding, finding_html_display)
        formatters["image/svg+xml"].for_type(Finding, finding_svg_display)
    except (KeyError, AttributeError):
        return False
    return True


def register_running_shell() -> None:
    """register_displays on the IPython shell this process runs, if any (called at import)."""
    import sys

    if "IPython" not in sys.modules:  # never import IPython for a plain script
        return
    try:
        shell = sys.modules["IPython"].get_ipython()
    except Exception:
        return
    if shell is not None:
        register_displays(shell)


def _parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, add_help=False, exit_on_error=False)
    p.add_argument("--mode", choices=("raise", "warn", "collect"), default="raise")
    p.add_argument("--select", default=None)
    p.add_argument("--ignore", default=None)
    p.add_argument("--record-iterations", type=int, default=2)
    p.add_argument("--report-dir", default=None)
    p.add_argument("--no-diagrams", action="store_true")
    return p


def _codes(text: str | None) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()] if text else []


def _guard(opts: Any) -> Any:
    from .guard import GraphGuard

    return GraphGuard(mode=opts.mode, select=_codes(opts.select), ignore=_codes(opts.ignore),
                      record_iterations=opts.record_iterations)


class _Findings:
    """Some findings, displayed as HTML (diagrams inline) or as text; never raises."""

    def __init__(self, findings: list[Any], header: str) -> None:
        self.findings, self.header = list(findings), header

    def _repr_html_(self) -> str:
        try:
            from .report.html import guard_html

            return guard_html(self.findings, self.header)
        except Exception as err:
            import html

            return (f"<pre>graphguard: {len(self.findings)} finding(s) (display failed: "
                    f"{html.escape(type(err).__name__)})</pre>")

    def __repr__(self) -> str:
        try:
            from .report.text import render_findings, render_summary_line

            return (f"{self.header}\n" + render_findings(self.findings).strip() + "\n"
                    + render_summary_line(self.findings))
        except Exception as err:
            return f"graphguard: {len(self.findings)} finding(s) (display failed: {type(err).__name__})"


def _show(findings: list[Any], header: str) -> None:
    try:
        from IPython.display import display

        if findings:
            display(_Findings(findings, header))
        else:
            print(f"{header}: no findings")
    except Exception as err:  # a display must never break the notebook
        print(f"graphguard: display failed ({type(err).__name__}: {err})")


def _write(guard: Any, report_dir: str | None, diagrams: bool) -> None:
    if not report_dir:
        return
    try:
        path = guard.write_report(report_dir, diagrams=diagrams)
        print(f"graphguard: report {path}")
    except Exception as err:
        print(f"graphguard: report not written ({type(err).__name__}: {err})")


def _after_cell(result: Any = None) -> None:
    """post_run_cell: show what the session guard found in this cell."""
    session = _STATE["session"]
    if session is None:
        return
    guard = session[0]
    new = guard.findings[_STATE["shown"]:]
    _STATE["shown"] = len(guard.findings)
    if new:
        _show(new, f"graphguard: {len(new)} new finding(s)")


def _session_on(line: str) -> None:
    if _STATE["session"] is not None:
        print("graphguard: already on (%graphguard off first to change options)")
        return
    opts = _parser("%graphguard on").parse_args(shlex.split(line))
    guard = _guard(opts)
    guard.__enter__()
    _STATE["session"] = (guard, opts)
    _STATE["shown"] = 0
    print(f"graphguard: on (mode {opts.mode}); every cell runs in one guard until %graphguard off")


def _session_off() -> None:
    session, _STATE["session"] = _STATE["session"], None
    if session is None:
        print("graphguard: not on")
        return
    guard, opts = session
    try:
        guard.__exit__(None, None, None)
    finally:
        _show(guard.findings, f"graphguard: off; {len(guard.findings)} finding(s) in the session")
        _write(guard, opts.report_dir, not opts.no_diagrams)


def _line_magic(line: str) -> Any:
    words = line.split(None, 1)
    cmd, rest = (words[0] if words else ""), (words[1] if len(words) > 1 else "")
    if cmd == "on":
        return _session_on(rest)
    if cmd == "off":
        return _session_off()
    if cmd in ("", "status"):
        session = _STATE["session"]
        if session is None:
            print("graphguard: off (%graphguard on to guard every cell, %%graphguard for one)")
            return None
        return _Findings(session[0].findings, f"graphguard: on ({session[0]!r})")
    print("graphguard: use %graphguard on [options], %graphguard off, or %%graphguard for a cell")
    return None


def _cell_magic(line: str, cell: str) -> None:
    shell = _STATE["shell"]
    session = _STATE["session"]
    if session is not None:  # the session guard already watches this cell (and shows its findings)
        shell.run_cell(cell, store_history=False)
        return
    try:
        opts = _parser("%%graphguard").parse_args(shlex.split(line))
    except (argparse.ArgumentError, SystemExit) as err:
        print(f"graphguard: {err}")
        return
    guard = _guard(opts)
    with guard:
        shell.run_cell(cell, store_history=False)
    _show(guard.findings, "graphguard")
    _write(guard, opts.report_dir, not opts.no_diagrams)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext graphguard``."""
    _STATE["shell"] = ipython
    register_displays(ipython)
    ipython.register_magic_function(_line_magic, "line", "graphguard")
    ipython.register_magic_function(_cell_magic, "cell", "graphguard")
    if not _STATE["registered"]:
        ipython.events.register("post_run_cell", _after_cell)
        _STATE["registered"] = True


def unload_ipython_extension(ipython: Any) -> None:
    if _STATE["session"] is not None:
        _session_off()
    if _STATE["registered"]:
        try:
            ipython.events.unregister("post_run_cell", _after_cell)
        except ValueError:
            pass
        _STATE["registered"] = False


GraphGuardMagics = (_line_magic, _cell_magic)
