"""`graphguard fix`: propose patches for the findings of a run, keep only those a re-run proves.

For each finding of severity error or warning (errors first), the candidates of its family are
tried smallest first, each on a scratch copy together with the patches kept so far; the first
that passes `verify.judge` is kept. The last kept run therefore verifies all kept patches
together. Diffs and evidence go to stdout, rejected candidates to stderr.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any, TextIO

from .candidates import candidates_for, subject_name
from .verify import (SEVERE, Edits, Program, Result, apply_edits, edits_of, judge, key, merge, present,
                     run, size, unified)


class FixUsageError(ValueError):
    """Bad input to `graphguard fix` (the CLI prints it as one line)."""


@dataclass
class Options:
    script: str | None
    module: str | None
    args: list[str]
    max_steps: int = 5
    timeout: float = 300.0
    apply: bool = False
    json_path: str | None = None   # "-": the JSON document on stdout instead of the text


def _program(opts: Options) -> tuple[Program, dict[str, str]]:
    here = os.getcwd()
    if opts.module:
        import importlib.util

        try:
            spec = importlib.util.find_spec(opts.module)
        except (ImportError, ValueError) as err:
            raise FixUsageError(f"cannot find module {opts.module}: {err}") from None
        if spec is None or not spec.origin or not os.path.isfile(spec.origin):
            raise FixUsageError(f"cannot find module {opts.module}")
        top = opts.module.split(".")[0]
        origin = os.path.abspath(spec.origin)
        parts = opts.module.split(".")
        depth = len(parts) - (0 if origin.endswith("__init__.py") else 1)
        root = os.path.dirname(origin)
        for _ in range(depth):
            root = os.path.dirname(root)
        if not os.path.isdir(os.path.join(root, top)) and not os.path.isfile(os.path.join(root, top + ".py")):
            raise FixUsageError(f"cannot find the files of module {opts.module}")
        prog = Program(root, ".", None, opts.module, opts.args, opts.max_steps, opts.timeout)
    else:
        if not opts.script:
            raise FixUsageError("fix needs a script (graphguard fix train.py) or -m module")
        if not os.path.isfile(opts.script):
            raise FixUsageError(f"no such script: {opts.script}")
        if not opts.script.endswith(".py"):
            raise FixUsageError(f"not a Python script: {opts.script}")
        path = os.path.abspath(opts.script)
        root = os.path.dirname(path)
        cwd = os.path.relpath(here, root) if (here + os.sep).startswith(root + os.sep) else "."
        script = os.path.relpath(path, os.path.join(root, cwd))
        prog = Program(root, cwd, script, None, opts.args, opts.max_steps, opts.timeout)
        try:
            compile(prog.read(os.path.basename(path)) or "", opts.script, "exec", dont_inherit=True)
        except SyntaxError as err:
            raise FixUsageError(f"{opts.script}:{err.lineno}: syntax error: {err.msg}") from None
    shown: dict[str, str] = {}

    def show(rel: str) -> str:
        p = os.path.join(prog.root, rel)
        r = os.path.relpath(p, here)
        return p if r.startswith("..") else r

    return prog, _Shown(show)  # type: ignore[return-value]


class _Shown(dict):
    """file relative to the program's root -> how the user sees it (relative to their cwd)."""

    def __init__(self, fn: Any) -> None:
        super().__init__()
        self.fn = fn

    def get(self, k: str, default: Any = None) -> str:  # type: ignore[override]
        return self.fn(k)


def _describe(f: dict[str, Any], shown: Any) -> dict[str, Any]:
    loc = f.get("location") or {}
    return {"code": f.get("code"), "severity": f.get("severity"), "name": subject_name(f),
            "file": shown.get(loc["file"]) if loc.get("file") else None, "line": loc.get("line"),
            "message": f.get("message")}


def _brief(d: dict[str, Any]) -> str:
    where = f"{d['file']}:{d['line']}" if d.get("file") else "?"
    return f"{d['code']} {d['name'] or '-'} [{d['severity']}] at {where}"


def fix(opts: Options, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    prog, shown = _program(opts)
    base = run(prog, {})
    if not base.ok:
        raise FixUsageError(f"the program did not run under the guard: "
                            f"{(base.stderr.strip().splitlines() or ['no report'])[-1][:200]}")
    targets = sorted(base.severe(), key=lambda f: f.get("severity") != "error")
    doc: dict[str, Any] = {"target": opts.module or opts.script, "max_steps": prog.max_steps,
                           "before": base.summary(), "findings": [_describe(f, shown) for f in targets],
                           "patches": [], "rejected": [], "unpatched": [], "after": None, "applied": []}
    text = opts.json_path != "-"
    if not targets:
        if text:
            print(f"graphguard fix: no error or warning finding in {doc['target']}; nothing changed", file=out)
        return _finish(doc, opts, out, 0)
    kept: Edits = {}
    current = base
    raws: list[dict[str, Any]] = []  # findings already fixed by a kept patch
    for f in targets:
        d = _describe(f, shown)
        if not present(f, current):
            continue  # an earlier patch fixed it too (listed under that patch's also_fixes)
        cands = []
        for c in candidates_for(f, prog.read):
            e = {c.file: edits_of(prog.read(c.file) or "", c.text)}
            cands.append((size(e), c, e))
        cands.sort(key=lambda t: t[0])
        done = False
        for _, c, e in cands:
            together = merge(kept, e)
            if together is None:
                reason = "conflicts with a patch already kept"
                res = None
            else:
                res = run(prog, together)
                reason = judge(f, base, res)
            if reason is not None:
                doc["rejected"].append({"finding": d, "family": c.family, "file": shown.get(c.file),
                                        "line": c.line, "reason": reason})
                print(f"graphguard fix: rejected {c.family} for {_brief(d)} "
                      f"({shown.get(c.file)}:{c.line}): {reason}", file=err)
                continue
            assert res is not None and together is not None
            kept, current, done = together, res, True
            doc["patches"].append({"finding": d, "family": c.family, "note": c.note, "file": shown.get(c.file),
                                   "line": c.line, "diff": unified(prog, e, shown), "after": res.summary(),
                                   "also_fixes": [_describe(g, shown) for g in targets
                                                  if g is not f and present(g, base) and not present(g, res)
                                                  and not any(key(g) == key(p["finding_raw"]) for p in raws)]})
            raws.append({"finding_raw": f})
            raws.extend({"finding_raw": g} for g in targets if not present(g, res))
            break
        if not done:
            doc["unpatched"].append(d)
            if not cands:
                print(f"graphguard fix: no candidate patch for {_brief(d)}", file=err)
    doc["after"] = current.summary()
    errors_left = [f for f in base.findings if f.get("severity") == "error" and present(f, current)]
    doc["errors_left"] = [_describe(f, shown) for f in errors_left]
    if opts.apply and kept:
        for file, es in sorted(kept.items()):
            original = prog.read(file)
            if original is None:
                continue
            with open(os.path.join(prog.root, file), "w", encoding="utf-8") as fh:
                fh.write(apply_edits(original, es))
            doc["applied"].append(shown.get(file))
    if text:
        _print_text(doc, out)
    return _finish(doc, opts, out, 1 if errors_left else 0)


def _finish(doc: dict[str, Any], opts: Options, out: TextIO, status: int) -> int:
    doc["exit_status"] = status
    if opts.json_path == "-":
        json.dump(doc, out, indent=2)
        out.write("\n")
    elif opts.json_path:
        with open(opts.json_path, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=2)
    return status


def _counts(s: dict[str, Any]) -> str:
    c = s["findings"]
    run_ = s["status"] + (f" ({s['exception']})" if s.get("exception") else "")
    return (f"run {run_}, {s['steps']} optimizer step(s), {c['error']} error(s), {c['warning']} warning(s), "
            f"{s['params_with_nonzero_grad']}/{s['params']} optimized parameter(s) with a non-zero gradient")


def _print_text(doc: dict[str, Any], out: TextIO) -> None:
    print(f"graphguard fix: before: {_counts(doc['before'])}", file=out)
    for n, p in enumerate(doc["patches"], 1):
        print(f"\npatch {n}: {p['family']} ({p['note']}) for {_brief(p['finding'])}", file=out)
        print(f"  before   {p['finding']['message']}", file=out)
        for extra in p["also_fixes"]:
            print(f"  also     {_brief(extra)} is gone", file=out)
        print(f"  after    {_counts(p['after'])}; {p['finding']['code']} gone, no new finding", file=out)
        out.write(p["diff"])
    for d in doc["unpatched"]:
        print(f"\nno verified patch for {_brief(d)}", file=out)
    if doc["patches"]:
        print(f"\ngraphguard fix: all {len(doc['patches'])} patch(es) together: {_counts(doc['after'])}", file=out)
    if doc["applied"]:
        print(f"graphguard fix: applied to {', '.join(doc['applied'])}", file=out)
    elif doc["patches"]:
        print("graphguard fix: nothing written (use --apply to write the patches)", file=out)
