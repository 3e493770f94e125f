"""A small inline SVG line plot of a finding's growth series (`details["growth"]`).

GG004, GG101 and GG102 record the graph nodes kept alive (and bytes, when known) at the
iterations where they measured the graph; the HTML report and the notebook display draw them so
that the climbing line is seen at a glance. No dependency: the SVG is written by hand, every text
escaped, the numbers formatted with a fixed precision (the same data always gives the same bytes).
"""
from __future__ import annotations

import html
import math
from typing import Any

__all__ = ["growth_svg", "growth_points", "WIDTH", "HEIGHT"]

WIDTH, HEIGHT = 360, 140
_NODES_COLOR = "#c62828"
_BYTES_COLOR = "#1565c0"
_AXIS_COLOR = "#757575"
_MAX_TITLE = 60  # characters of the visible title (the full one is in <title>)


def growth_points(growth: Any) -> list[tuple[int, int, int | None]] | None:
    """The (iteration, nodes, bytes or None) points of a growth series, in order; None when the
    data is not a usable series (a tampered or foreign report must not break the page)."""
    if not isinstance(growth, dict):
        return None
    its, nodes = growth.get("iterations"), growth.get("nodes")
    if not isinstance(its, list) or not isinstance(nodes, list) or not its or len(its) != len(nodes):
        return None
    nbytes = growth.get("bytes")
    if not isinstance(nbytes, list) or len(nbytes) != len(its):
        nbytes = [None] * len(its)
    out: list[tuple[int, int, int | None]] = []
    for it, n, b in zip(its, nodes, nbytes):
        if not _is_int(it) or not _is_int(n) or (b is not None and not _is_int(b)):
            return None
        out.append((int(it), int(n), None if b is None else int(b)))
    out.sort(key=lambda p: p[0])
    return out


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _nice_max(v: int) -> int:
    """The axis top: `v` rounded up to 1, 2 or 5 times a power of ten (at least 1)."""
    if v <= 1:
        return 1
    p = 10 ** int(math.floor(math.log10(v)))
    for m in (1, 2, 5, 10):
        if m * p >= v:
            return m * p
    return 10 * p


def _x_ticks(lo: int, hi: int, most: int = 6) -> list[int]:
    """Whole iterations between `lo` and `hi`, evenly spaced by a 1/2/5 step, `most` at most."""
    if hi <= lo:
        return [lo]
    step = max(1, _nice_max(math.ceil((hi - lo) / (most - 1))))
    first = -(-lo // step) * step
    return list(range(first, hi + 1, step))


def _bytes_label(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _f(v: float) -> str:
    return f"{v:.1f}"


def growth_svg(growth: Any, title: str, width: int = WIDTH, height: int = HEIGHT) -> str | None:
    """The plot as an `<svg>` element (a string), or None when `growth` holds no usable series.

    One point per recorded iteration on the node-count line (a `<circle class="n">` each, so a
    reader or a test can count them); bytes, when any point has them, on a dashed second line
    against a right-hand axis. `title` names the subject; it is the accessible name (`<title>`)
    and, shortened, the plot's heading.
    """
    pts = growth_points(growth)
    if not pts:
        return None
    has_bytes = any(b is not None for _, _, b in pts)
    left, right = 44, (62 if has_bytes else 14)
    top, bottom = 24, 30
    pw, ph = width - left - right, height - top - bottom
    lo, hi = pts[0][0], pts[-1][0]
    ymax = _nice_max(max(n for _, n, _ in pts))
    bmax = _nice_max(max(b for _, _, b in pts if b is not None)) if has_bytes else 1

    def x(it: int) -> float:
        return left + (pw / 2 if hi == lo else (it - lo) * pw / (hi - lo))

    def y(v: int, top_value: int) -> float:
        return top + ph - v * ph / top_value

    truncated = bool(isinstance(growth, dict) and growth.get("truncated"))
    full = title + (" (the walk stopped at its node limit: the graph is larger)" if truncated else "")
    shown = title if len(title) <= _MAX_TITLE else title[:_MAX_TITLE - 1] + "\u2026"
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="gg-growth" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
           f'font-family="system-ui,sans-serif" font-size="10">',
           f'<title>{_e(full)}</title>',
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text x="6" y="14" font-size="11" font-weight="600" fill="#212121">{_e(shown)}</text>']
    # axes
    base, edge = top + ph, left + pw
    out.append(f'<g stroke="{_AXIS_COLOR}" stroke-width="1" fill="none">'
               f'<line x1="{left}" y1="{top}" x2="{left}" y2="{_f(base)}"/>'
               f'<line x1="{left}" y1="{_f(base)}" x2="{_f(edge)}" y2="{_f(base)}"/>'
               + (f'<line x1="{_f(edge)}" y1="{top}" x2="{_f(edge)}" y2="{_f(base)}"/>' if has_bytes else "")
               + '</g>')
    # y ticks: 0, half, top (nodes on the left, bytes on the right)
    ticks = []
    for frac in (0.0, 0.5, 1.0):
        yy = top + ph - frac * ph
        ticks.append(f'<line x1="{left - 3}" y1="{_f(yy)}" x2="{left}" y2="{_f(yy)}" stroke="{_AXIS_COLOR}"/>'
                     f'<text x="{left - 5}" y="{_f(yy + 3)}" text-anchor="end" fill="{_NODES_COLOR}">'
                     f'{_e(_count_label(frac * ymax))}</text>')
        if has_bytes:
            ticks.append(f'<line x1="{_f(edge)}" y1="{_f(yy)}" x2="{_f(edge + 3)}" y2="{_f(yy)}" '
                         f'stroke="{_AXIS_COLOR}"/><text x="{_f(edge + 5)}" y="{_f(yy + 3)}" '
                         f'fill="{_BYTES_COLOR}">{_e(_bytes_label(int(frac * bmax)))}</text>')
    # x ticks: iterations
    for it in _x_ticks(lo, hi):
        xx = x(it)
        ticks.append(f'<line x1="{_f(xx)}" y1="{_f(base)}" x2="{_f(xx)}" y2="{_f(base + 3)}" '
                     f'stroke="{_AXIS_COLOR}"/><text x="{_f(xx)}" y="{_f(base + 13)}" '
                     f'text-anchor="middle" fill="#424242">{it}</text>')
    out.append("".join(ticks))
    out.append(f'<text x="{_f(left + pw / 2)}" y="{height - 3}" text-anchor="middle" '
               f'fill="#616161">iteration</text>')
    # the node-count line and its points
    coords = " ".join(f"{_f(x(it))},{_f(y(n, ymax))}" for it, n, _ in pts)
    out.append(f'<polyline class="nodes" points="{coords}" fill="none" stroke="{_NODES_COLOR}" '
               f'stroke-width="2" stroke-linejoin="round"/>')
    out.append("".join(f'<circle class="n" cx="{_f(x(it))}" cy="{_f(y(n, ymax))}" r="2.5" '
                       f'fill="{_NODES_COLOR}"><title>iteration {it}: {n} graph nodes'
                       f'{_e(", " + _bytes_label(b)) if b is not None else ""}</title></circle>'
                       for it, n, b in pts))
    # bytes: dashed, broken where a point has none
    if has_bytes:
        runs: list[list[str]] = [[]]
        for it, _, b in pts:
            if b is None:
                runs.append([])
            else:
                runs[-1].append(f"{_f(x(it))},{_f(y(b, bmax))}")
        out.append("".join(f'<polyline class="bytes" points="{" ".join(r)}" fill="none" '
                           f'stroke="{_BYTES_COLOR}" stroke-width="1.5" stroke-dasharray="4 3"/>'
                           for r in runs if r))
    # legend, inside the plot's top left (a growing line starts low on the left)
    out.append(f'<text x="{left + 6}" y="{top + 9}" fill="{_NODES_COLOR}">\u2014 graph nodes'
               + (f' <tspan fill="{_BYTES_COLOR}">- - bytes</tspan>' if has_bytes else "") + "</text>")
    out.append("</svg>")
    return "".join(out)


def _count_label(v: float) -> str:
    n = int(round(v))
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 10_000:
        return f"{n / 1000:.0f}k"
    return str(n)
