"""Write each finding's diagram: the DOT source always, an SVG when a Graphviz renderer exists.

The renderer is, in this order: the command named by ``GRAPHGUARD_DOT`` (``none`` switches
rendering off), ``dot`` on PATH, or ``graphviz-pure`` (PyPI's self-contained port) on PATH or
next to the running interpreter. It runs as a subprocess with a timeout, so a renderer that
crashes or hangs costs a note on stderr, never the user's run.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import weakref
from typing import Any, Iterable, Mapping

from ..model import relpath
from .dot import LAYOUT_ATTRS, render_dot

__all__ = ["write_diagrams", "find_renderer", "render_svg", "svg_for", "RenderError",
           "ENV_RENDERER", "how_to_render"]

ENV_RENDERER = "GRAPHGUARD_DOT"
TIMEOUT = 30.0  # seconds for one diagram (a 300-node graph takes ~1 s with LAYOUT_ATTRS)
BUDGET = 120.0  # seconds for all diagrams of a run; the rest stay DOT only
_OFF = ("", "none", "off", "0", "false")
_OURS = re.compile(r"^GG\d{3}-\d+\.(dot|svg)$")
_AUTO: Any = object()
_SVG_CACHE: "weakref.WeakKeyDictionary[Any, str | None]" = weakref.WeakKeyDictionary()


class RenderError(RuntimeError):
    """The renderer failed, timed out or could not be started."""


def find_renderer(env: Mapping[str, str] | None = None) -> str | None:
    """The renderer command to use, or None when there is none (or GRAPHGUARD_DOT=none)."""
    env = os.environ if env is None else env
    named = env.get(ENV_RENDERER)
    if named is not None:
        named = named.strip()
        if named.lower() in _OFF:
            return None
        found = shutil.which(named)
        return found or (named if os.path.isfile(named) and os.access(named, os.X_OK) else None)
    for cmd in ("dot", "graphviz-pure"):
        found = shutil.which(cmd, path=env.get("PATH"))
        if found:
            return found
    # `pip install graphviz-pure` puts the command next to the interpreter, which is not on PATH
    # when a virtualenv is used by its full path (/venv/bin/python train.py)
    for d in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        found = shutil.which("graphviz-pure", path=d) if d else None
        if found:
            return found
    return None


def how_to_render(dot_path: str) -> str:
    """One line: how to get a renderer and how to render a .dot file by hand."""
    svg = dot_path[:-4] + ".svg" if dot_path.endswith(".dot") else dot_path + ".svg"
    return (f"no Graphviz renderer found, so diagrams are DOT source only; install one "
            f"(apt-get install graphviz, brew install graphviz, or pip install graphviz-pure; "
            f"or set {ENV_RENDERER}=/path/to/dot) and render by hand with: "
            f"dot -Tsvg {dot_path} -o {svg}")


def render_svg(source: str, renderer: str, timeout: float = TIMEOUT) -> str:
    """Lay out DOT source as SVG text with `renderer`; raises RenderError (never hangs)."""
    cmd = [renderer, "-Tsvg", *(f"-G{k}={v}" for k, v in LAYOUT_ATTRS.items())]
    try:
        proc = subprocess.run(cmd, input=source.encode("utf-8"), capture_output=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise RenderError(f"{os.path.basename(renderer)} took longer than {timeout:g} s") from None
    except OSError as err:
        raise RenderError(f"could not run {renderer}: {err}") from None
    out = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0 or "<svg" not in out:
        why = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise RenderError(f"{os.path.basename(renderer)} exited with status {proc.returncode}"
                          + (f": {why[0]}" if why else ""))
    return out


def svg_for(graph: Any, timeout: float = 10.0) -> str | None:
    """The SVG of a GraphSnapshot, rendered once and cached (Jupyter displays); None when no
    renderer exists or it fails."""
    if graph in _SVG_CACHE:
        return _SVG_CACHE[graph]
    renderer = find_renderer()
    svg = None
    if renderer is not None:
        try:
            svg = render_svg(render_dot(graph), renderer, timeout)
        except RenderError:
            svg = None
    _SVG_CACHE[graph] = svg
    return svg


def _clear_old(folder: str) -> None:
    """Remove diagrams of an earlier run (only files named like ours), so none is mistaken for
    this run's."""
    for name in os.listdir(folder):
        if _OURS.match(name):
            try:
                os.remove(os.path.join(folder, name))
            except OSError:
                pass


def write_diagrams(findings: Iterable[Any], report_dir: str, renderer: Any = _AUTO,
                   timeout: float = TIMEOUT, budget: float = BUDGET, quiet: bool = False) -> list[str]:
    """Write `<report_dir>/graphs/<code>-<n>.dot` (and `.svg`) for every finding with a graph,
    and set ``finding.diagram = {"dot": path, "svg": path}`` (no "svg" when not rendered).

    Args:
        renderer: a command, None for DOT only, or (default) `find_renderer()`.
    Returns the notes (no renderer, a failed render), also printed to stderr unless `quiet`.
    """
    if renderer is _AUTO:
        renderer = find_renderer()
    folder = os.path.join(report_dir, "graphs")
    todo = [f for f in findings if getattr(f, "graph", None) is not None]
    notes: list[str] = []
    if not todo:
        return notes
    os.makedirs(folder, exist_ok=True)
    _clear_old(folder)
    counts: dict[str, int] = {}
    deadline = time.monotonic() + budget
    first_dot = None
    for f in todo:
        counts[f.code] = n = counts.get(f.code, 0) + 1
        dot_path = os.path.join(folder, f"{f.code}-{n}.dot")
        try:
            source = render_dot(f.graph)
        except Exception as err:  # a bug in drawing must not cost the report
            notes.append(f"diagram of {f.code} skipped ({type(err).__name__}: {err})")
            continue
        with open(dot_path, "w", encoding="utf-8") as fh:
            fh.write(source)
        first_dot = first_dot or dot_path
        diagram = {"dot": relpath(dot_path)}
        left = deadline - time.monotonic()
        if renderer is not None and left > 1.0:
            try:
                svg = render_svg(source, renderer, min(timeout, left))
                svg_path = dot_path[:-4] + ".svg"
                with open(svg_path, "w", encoding="utf-8") as fh:
                    fh.write(svg)
                diagram["svg"] = relpath(svg_path)
            except RenderError as err:
                notes.append(f"{relpath(dot_path)} not rendered ({err}); the DOT source is there")
        elif renderer is not None:
            notes.append(f"{relpath(dot_path)} not rendered (diagram time budget of {budget:g} s used up)")
        f.diagram = diagram
    if renderer is None and first_dot:
        notes.insert(0, how_to_render(relpath(first_dot)))
    if notes and not quiet:
        for note in notes:
            print(f"graphguard: {note}", file=sys.stderr)
    return notes
