"""The HTML report: one self-contained page (no external assets) rendered from the JSON report.

A summary table, then per finding its sentence, the source lines that matter (marked), the fix
and the diagram (inline SVG, or the DOT source and how to render it). Every string that comes
from the user's program (names, code, paths, messages) is escaped; inline SVG is re-serialized
through an allowlist, so a tampered report or SVG file cannot run script in the page.
"""
from __future__ import annotations

import html
import linecache
import os
import re
import xml.etree.ElementTree as ET
from typing import Any, Iterable

from ..model import count_severities
from .growth import growth_svg
from .text import worst_first

__all__ = ["render_html", "write_html", "page_html", "finding_html", "findings_fragment",
           "clean_svg", "CSS"]

_CONTEXT = 2  # source lines shown around each marked line
_MAX_MARKS = 8

CSS = """
.gg{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#212121;line-height:1.45}
.gg h1{font-size:1.6em;margin:.2em 0}.gg h2{font-size:1.2em;margin:0 0 .4em 0}
.gg .meta{color:#616161;margin:.2em 0 1em 0}.gg code,.gg pre{font-family:ui-monospace,Menlo,Consolas,monospace}
.gg table.sum{border-collapse:collapse;width:100%;margin:.5em 0 1.5em 0;font-size:.92em}
.gg table.sum th,.gg table.sum td{border-bottom:1px solid #e0e0e0;padding:.35em .5em;text-align:left;vertical-align:top}
.gg table.sum th{background:#f5f5f5}
.gg .sev{display:inline-block;border-radius:3px;padding:0 .45em;font-size:.8em;font-weight:600;color:#fff}
.gg .sev-error{background:#c62828}.gg .sev-warning{background:#ef6c00}.gg .sev-info{background:#1565c0}
.gg section.f{border:1px solid #e0e0e0;border-left:6px solid #9e9e9e;border-radius:4px;padding:.8em 1em;margin:1.2em 0}
.gg section.f.error{border-left-color:#c62828}.gg section.f.warning{border-left-color:#ef6c00}
.gg section.f.info{border-left-color:#1565c0}
.gg .msg{font-size:1.02em;margin:.3em 0 .6em 0}.gg .subj{color:#616161;font-size:.9em}
.gg .file{font-size:.85em;color:#616161;margin-top:.6em}
.gg pre.src{background:#fafafa;border:1px solid #eeeeee;padding:.4em 0;overflow-x:auto;font-size:.85em;margin:.2em 0}
.gg pre.src span.l{display:block;padding:0 .6em 0 4.1em;text-indent:-3.5em;white-space:pre-wrap;overflow-wrap:anywhere}
.gg pre.src span.m{background:#fff3c4;border-left:3px solid #f9a825}
.gg pre.src span.gap{color:#9e9e9e}
.gg pre.src i.n{font-style:normal;color:#9e9e9e;display:inline-block;min-width:3.5em;text-indent:0}
.gg pre.src b.t{font-weight:600;color:#6d4c41;font-family:system-ui,sans-serif;font-size:.9em}
.gg .fix{background:#e8f5e9;border:1px solid #c8e6c9;border-radius:4px;padding:.4em .7em;margin:.7em 0}
.gg .diagram{margin-top:.8em;overflow:auto;border:1px solid #eeeeee;border-radius:4px;padding:.4em;max-height:1400px}
.gg .diagram svg{max-width:100%;height:auto}
.gg .growth{margin-top:.7em}.gg .growth svg{border:1px solid #eeeeee;border-radius:4px;max-width:100%;height:auto}
.gg .note{color:#616161;font-size:.88em}.gg details pre{font-size:.78em;background:#fafafa;padding:.5em;overflow:auto;max-height:30em}
"""

# ---- SVG sanitizing -------------------------------------------------------------------------------
_SVG_TAGS = frozenset({"svg", "g", "title", "desc", "polygon", "polyline", "path", "ellipse",
                       "circle", "rect", "line", "text", "tspan", "defs", "linearGradient",
                       "radialGradient", "stop", "clipPath"})
_UNWRAP = frozenset({"a"})  # keep the children, drop the element (graphviz links)
_BAD_ATTR = re.compile(r"^(on|href$|xlink:href$|src$)", re.I)


def _local(name: str) -> str:
    return name.rsplit("}", 1)[-1]


def clean_svg(text: str) -> str | None:
    """Graphviz SVG re-serialized with allowed elements and attributes only; None when `text` is
    not SVG. Scripts, event handlers, links and foreign content are dropped."""
    start = text.find("<svg")
    if start < 0:
        return None
    try:
        root = ET.fromstring(text[start:])
    except ET.ParseError:
        return None
    if _local(root.tag) != "svg":
        return None
    out: list[str] = []
    # iterative walk: ("open", element) / ("close", tag) / ("text", str)
    stack: list[tuple[str, Any]] = [("open", root)]
    while stack:
        kind, item = stack.pop()
        if kind == "text":
            out.append(html.escape(item, quote=False))
            continue
        if kind == "close":
            out.append(f"</{item}>")
            continue
        tag = _local(item.tag)
        if tag not in _SVG_TAGS and tag not in _UNWRAP:
            if item.tail:
                out.append(html.escape(item.tail, quote=False))
            continue
        todo: list[tuple[str, Any]] = []
        if tag in _SVG_TAGS:
            attrs = "".join(f' {_local(k)}="{html.escape(v, quote=True)}"'
                            for k, v in item.attrib.items() if not _BAD_ATTR.match(_local(k)))
            out.append(f"<{tag}{attrs}>")
        if item.text:
            todo.append(("text", item.text))
        todo.extend(("open", child) for child in item)
        if tag in _SVG_TAGS:
            todo.append(("close", tag))
        if item.tail and item is not root:
            todo.append(("text", item.tail))
        stack.extend(reversed(todo))
    return "".join(out)


# ---- pieces ---------------------------------------------------------------------------------------
def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _message(text: str) -> str:
    """Escape a sentence, then show its `backticked` names as code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", _e(text))


def _where(loc: dict | None) -> str:
    if not loc:
        return ""
    return f"{loc.get('file', '')}:{loc.get('line', '')}"


def _marks(f: dict[str, Any]) -> list[tuple[str, dict]]:
    """(tag, location) of every line worth showing: here, created, related places."""
    out: list[tuple[str, dict]] = []
    if f.get("location"):
        out.append((f"here (iteration {f.get('iteration', '?')})", f["location"]))
    subj = f.get("subject") or {}
    if subj.get("created_at"):
        it = subj.get("created_in_iteration")
        out.append(("created" + (f" (iteration {it})" if it is not None else ""), subj["created_at"]))
    for r in f.get("related") or []:
        if r.get("location"):
            what = " ".join(x for x in (r.get("op"), r.get("name")) if x)
            out.append((f"{r.get('role', '')}{': ' + what if what else ''}", r["location"]))
    return out[:_MAX_MARKS]


def _read_lines(path: str) -> list[str] | None:
    lines = linecache.getlines(path) if os.path.isfile(path) else []
    return [ln.rstrip("\n") for ln in lines] or None


def _source_html(f: dict[str, Any]) -> str:
    """The marked lines with a little context, per file, in order of the first mark."""
    by_file: dict[str, dict[int, list[str]]] = {}
    codes: dict[tuple[str, int], str] = {}
    for tag, loc in _marks(f):
        path, line = loc.get("file") or "", int(loc.get("line") or 0)
        if not path or line <= 0:
            continue
        by_file.setdefault(path, {}).setdefault(line, []).append(tag)
        codes[(path, line)] = loc.get("code") or ""
    parts = []
    for path, marked in by_file.items():
        lines = _read_lines(path)
        parts.append(f'<div class="file">{_e(path)}</div><pre class="src">')
        if lines is None:  # the file is not here (a report read elsewhere): the saved lines
            for ln in sorted(marked):
                parts.append(_src_line(ln, codes[(path, ln)], marked[ln]))
        else:
            shown = sorted({k for ln in marked for k in range(ln - _CONTEXT, ln + _CONTEXT + 1)
                            if 1 <= k <= len(lines)})
            prev = None
            for k in shown:
                if prev is not None and k != prev + 1:
                    parts.append('<span class="l gap">\u22ee</span>')
                parts.append(_src_line(k, lines[k - 1], marked.get(k)))
                prev = k
        parts.append("</pre>")
    return "".join(parts)


def _src_line(num: int, text: str, tags: list[str] | None) -> str:
    cls = "l m" if tags else "l"
    tag = f'  <b class="t">\u25c0 {_e(", ".join(tags))}</b>' if tags else ""
    return f'<span class="{cls}"><i class="n">{num}</i>{_e(text)}{tag}</span>'


def _diagram_html(diagram: dict[str, Any] | None, svg: str | None, dot: str | None) -> str:
    if svg:
        return f'<div class="diagram">{svg}</div>'
    if dot:
        path = (diagram or {}).get("dot", "")
        from .diagrams import how_to_render

        how = _e(how_to_render(path)) if path else _e(how_to_render("graph.dot"))
        return (f'<div class="diagram"><p class="note">{how}</p><details><summary>DOT source'
                f'</summary><pre>{_e(dot)}</pre></details></div>')
    return ""


def _section(i: int, f: dict[str, Any], svg: str | None, dot: str | None) -> str:
    subj = f.get("subject") or {}
    sev = f.get("severity", "error")
    name = f' \u2014 <code>{_e(subj["name"])}</code>' if subj.get("name") else ""
    summary = f'<div class="subj">{_e(subj.get("kind", ""))} {_e(subj.get("summary", ""))}</div>' \
        if subj.get("summary") else ""
    return (f'<section class="f {_e(sev)}" id="finding-{i}">'
            f'<h2><span class="sev sev-{_e(sev)}">{_e(sev)}</span> {_e(f.get("code"))} '
            f'{_e(f.get("slug"))}{name}</h2>'
            f'<p class="msg">{_message(f.get("message", ""))}</p>{summary}'
            f'{_source_html(f)}'
            f'<div class="fix"><b>Fix:</b> <code>{_e(f.get("fix", ""))}</code></div>'
            f'{_growth_html(f)}{_diagram_html(f.get("diagram"), svg, dot)}</section>')


def _growth_html(f: dict[str, Any]) -> str:
    """The growth plot of a finding that recorded one (GG004, GG101, GG102), else nothing."""
    details = f.get("details")
    growth = details.get("growth") if isinstance(details, dict) else None
    if growth is None:
        return ""
    name = (f.get("subject") or {}).get("name")
    title = f'{f.get("code", "")} {name or "the graph"}: graph nodes kept alive per iteration'
    svg = growth_svg(growth, title)
    return f'<div class="growth">{svg}</div>' if svg else ""


def _summary_table(findings: list[tuple[int, dict]]) -> str:
    rows = []
    for i, f in findings:
        subj = (f.get("subject") or {}).get("name")
        sev = f.get("severity", "")
        who = f"<code>{_e(subj)}</code>" if subj else "\u2014"
        rows.append(f'<tr><td><a href="#finding-{i}">{_e(f.get("code"))}</a></td>'
                    f'<td><span class="sev sev-{_e(sev)}">{_e(sev)}</span></td>'
                    f'<td>{who}</td>'
                    f'<td><code>{_e(_where(f.get("location")))}</code></td>'
                    f'<td>{_e(f.get("iteration", ""))}</td><td>{_message(f.get("message", ""))}</td></tr>')
    return ('<table class="sum"><tr><th>code</th><th>severity</th><th>subject</th><th>where</th>'
            '<th>iteration</th><th>finding</th></tr>' + "".join(rows) + "</table>")


def _sorted(findings: list[dict]) -> list[tuple[int, dict]]:
    order = sorted(range(len(findings)),
                   key=lambda k: (worst_first(findings[k].get("severity")), k))
    return [(k + 1, findings[k]) for k in order]


def findings_fragment(findings: list[dict], assets: dict[int, tuple[str | None, str | None]]) -> str:
    """Summary table and one section per finding (1-based index -> (svg, dot) for diagrams)."""
    fs = _sorted(findings)
    if not fs:
        return '<p class="meta">No findings.</p>'
    body = [_summary_table(fs)]
    for i, f in fs:
        svg, dot = assets.get(i, (None, None))
        body.append(_section(i, f, svg, dot))
    return "".join(body)


def page_html(data: dict[str, Any], assets: dict[int, tuple[str | None, str | None]]) -> str:
    """The whole page, a pure function of the report and its diagrams (1-based finding index ->
    (clean svg, dot source))."""
    run = data.get("run") or {}
    tool = data.get("tool") or {}
    exc = run.get("exception")
    counts = count_severities(f.get("severity") for f in data.get("findings", []))
    meta = (f'{_e(run.get("target") or "")} \u00b7 run {_e(run.get("status", ""))} \u00b7 '
            f'{_e(run.get("iterations", 0))} iteration(s), {_e(run.get("backward_calls", 0))} backward '
            f'call(s) \u00b7 {counts["error"]} error(s), {counts["warning"]} warning(s), '
            f'{counts["info"]} info \u00b7 torch {_e(data.get("torch_version", ""))}, graphguard '
            f'{_e(tool.get("version", ""))}')
    exc_html = (f'<p class="meta">The program stopped with <code>{_e(exc.get("type"))}: '
                f'{_e(exc.get("message"))}</code></p>' if exc else "")
    title = f'graphguard report: {run.get("target") or ""}'
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>{_e(title)}</title><style>{CSS}body{{max-width:1250px;margin:1.2em auto;'
            'padding:0 1em}</style></head>'
            f'<body class="gg"><h1>graphguard report</h1><p class="meta">{meta}</p>{exc_html}'
            f'{findings_fragment(data.get("findings", []), assets)}</body></html>\n')


def _read(path: str | None, base_dir: str | None) -> str | None:
    if not path:
        return None
    for p in (path, os.path.join(base_dir, path) if base_dir else None):
        if p and os.path.isfile(p):
            try:
                with open(p, encoding="utf-8", errors="replace") as fh:
                    return fh.read()
            except OSError:
                return None
    return None


def load_assets(findings: Iterable[dict], base_dir: str | None = None
                ) -> dict[int, tuple[str | None, str | None]]:
    """The diagrams a report points at, read from disk (svg cleaned; dot as text)."""
    out = {}
    for i, f in enumerate(findings, 1):
        d = f.get("diagram") or {}
        svg_text = _read(d.get("svg"), base_dir)
        svg = clean_svg(svg_text) if svg_text else None
        dot = None if svg else _read(d.get("dot"), base_dir)
        if svg or dot:
            out[i] = (svg, dot)
    return out


def render_html(data: dict[str, Any], base_dir: str | None = None) -> str:
    """The page for a (saved) JSON report; diagram files are read from the paths it records."""
    return page_html(data, load_assets(data.get("findings", []), base_dir))


def write_html(report: dict[str, Any], report_dir: str) -> str:
    """Write `<report_dir>/index.html` and return its path."""
    os.makedirs(report_dir, exist_ok=True)
    path = os.path.join(report_dir, "index.html")
    text = render_html(report)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)
    return path


def finding_html(finding: Any) -> str:
    """One live finding as an HTML fragment (Jupyter), with its diagram drawn on the fly."""
    d = finding.to_dict()
    svg, dot = _live_diagram(finding)
    return f'<div class="gg"><style>{CSS}</style>{_section(1, d, svg, dot)}</div>'


def guard_html(findings: list[Any], header: str) -> str:
    """A guard's findings as an HTML fragment (Jupyter)."""
    data = [f.to_dict() for f in findings]
    assets = {i: _live_diagram(f) for i, f in enumerate(findings, 1)}
    return (f'<div class="gg"><style>{CSS}</style><p class="meta">{_e(header)}</p>'
            f'{findings_fragment(data, assets)}</div>')


def _live_diagram(finding: Any) -> tuple[str | None, str | None]:
    graph = getattr(finding, "graph", None)
    if graph is None:
        return None, None
    from .diagrams import svg_for
    from .dot import render_dot

    raw = svg_for(graph)
    svg = clean_svg(raw) if raw else None
    return svg, (None if svg else render_dot(graph))
