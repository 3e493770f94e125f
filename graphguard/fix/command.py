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

from .candidates import RANK, candidates_for, subject_name
from .verify import (Edits, copy_too_large, Program, apply_edits, edits_of, gone, iteration_of, judge, key, merge,
                     present, run, size, unified)


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
    max_runs: int | None = None    # verification runs allowed after the first run (None: no limit)


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

    too_large = copy_too_large(prog.root)
    if too_large:
        # every verification run copies this folder: a script saved in a home or download folder
        # would copy all of it, again and again
        raise FixUsageError(f"the folder of the program, {prog.root}, holds {too_large}; fix copies it for "
                            "every verification run: move the program into a folder of its own")

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


# the first run gets this many times the verification runs' optimizer steps, so that a finding
# that shows only some iterations in (a running statistic kept with its graph is seen leaking at
# iteration 4; a copy of the model made after a few epochs) is found, and can then be verified by
# runs as long as it needs (steps_for)
FIRST_RUN_FACTOR = 4


def steps_for(fs: list[dict[str, Any]], least: int, most: int) -> int:
    """Optimizer steps a verification run of findings `fs` gets: a finding first reported at
    iteration k needs k + 2 (the iteration it showed in, and one more for the patched program to
    show it or not), at least `least` (--max-steps), at most `most` (what the first run had)."""
    need = max((iteration_of(f) + 2 for f in fs), default=least)
    return least if need <= least else min(need, most)


def fix(opts: Options, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Run the program once, then try each error/warning finding's candidate patches (smallest
    first, each verified by a re-run with the patches kept so far); returns the exit status."""
    prog, shown = _program(opts)
    first_steps = prog.max_steps * FIRST_RUN_FACTOR
    base = run(prog, {}, first_steps)
    if not base.ok:
        raise FixUsageError(f"the program did not run under the guard: "
                            f"{(base.stderr.strip().splitlines() or ['no report'])[-1][:200]}")
    targets = sorted(base.severe(), key=lambda f: f.get("severity") != "error")
    doc: dict[str, Any] = {"target": opts.module or opts.script, "max_steps": prog.max_steps,
                           "first_run_steps": first_steps,
                           "before": base.summary(), "findings": [_describe(f, shown) for f in targets],
                           "patches": [], "rejected": [], "unpatched": [], "after": None, "applied": []}
    text = opts.json_path != "-"
    if not targets:
        if text:
            print(f"graphguard fix: no error or warning finding in {doc['target']}; nothing changed", file=out)
        return _finish(doc, opts, out, 0)
    session = _Session(opts, prog, shown, base, first_steps, targets, doc, err)
    for i, f in enumerate(targets):
        session.try_alone(i, f)
    session.try_pairs()
    session.try_consequences()
    errors_left = session.conclude()
    if opts.apply and session.kept:
        _apply(session.kept, prog, shown, doc)
    if text:
        _print_text(doc, out)
    return _finish(doc, opts, out, 1 if errors_left else 0)


def _apply(kept: Edits, prog: Program, shown: Any, doc: dict[str, Any]) -> None:
    """--apply: the kept patches written to the program's own files."""
    for file, es in sorted(kept.items()):
        original = prog.read(file)
        if original is None:
            continue
        with open(os.path.join(prog.root, file), "w", encoding="utf-8") as fh:
            fh.write(apply_edits(original, es))
        doc["applied"].append(shown.get(file))


class _Session:
    """One `graphguard fix`: the first run, the patches kept so far (verified together), the
    verification runs made, and the report document `doc` filled as candidates are judged."""

    def __init__(self, opts: Options, prog: Program, shown: Any, base: Any, first_steps: int,
                 targets: list[dict[str, Any]], doc: dict[str, Any], err: TextIO) -> None:
        self.opts, self.prog, self.shown, self.base = opts, prog, shown, base
        self.first_steps, self.targets, self.doc, self.err = first_steps, targets, doc, err
        self.kept: Edits = {}
        self.current = base
        self.runs = 0  # verification runs so far (the budget of --max-runs)
        self.fixed: list[dict[str, Any]] = []  # findings a kept patch removed (its own, and also_fixes)
        # finding index -> its smallest candidate that only failed on a new finding (the next
        # finding's patch may be what it needs: tried in pairs, try_pairs)
        self.pending: dict[int, tuple[Any, Edits]] = {}
        self.per_finding: dict[int, list[tuple[Any, Any, Edits]]] = {}
        self.followed: set[int] = set()  # findings whose chain (follow) was tried once

    def _budget_spent(self) -> bool:
        return self.opts.max_runs is not None and self.runs >= self.opts.max_runs

    def _gone(self, f: dict[str, Any]) -> bool:
        return gone(f, self.current, self.base)

    def attempt(self, fs: list[dict[str, Any]], edits: Edits) -> tuple[str | None, Any, Edits | None]:
        """A verification run of `edits` on top of the kept patches: (why it fails or None, the
        run, the patches together)."""
        together = merge(self.kept, edits)
        if together is None:
            return "conflicts with a patch already kept", None, None
        if self._budget_spent():
            return f"not tried: the budget of {self.opts.max_runs} verification run(s) is spent", None, None
        self.runs += 1
        res = run(self.prog, together, steps_for(fs, self.prog.max_steps, self.first_steps))
        for g in fs:
            reason = judge(g, self.base, res)
            if reason is not None:
                return reason, res, together
        return None, res, together

    def reject(self, f: dict[str, Any], c: Any, reason: str) -> None:
        shown = self.shown
        d = _describe(f, shown)
        self.doc["rejected"].append({"finding": d, "family": c.family, "file": shown.get(c.file),
                                     "line": c.line, "reason": reason})
        print(f"graphguard fix: rejected {c.family} for {_brief(d)} ({shown.get(c.file)}:{c.line}): {reason}",
              file=self.err)

    def keep(self, f: dict[str, Any], c: Any, e: Edits, together: Edits, res: Any, note: str = "",
             partner: dict[str, Any] | None = None) -> None:
        shown, base, targets = self.shown, self.base, self.targets
        self.kept, self.current = together, res
        self.doc["patches"].append({
            "finding": _describe(f, shown), "family": c.family, "note": c.note + note,
            "file": shown.get(c.file), "line": c.line, "diff": unified(self.prog, e, shown),
            "after": res.summary(),
            "also_fixes": [_describe(g, shown) for g in targets
                           if g is not f and g is not partner and gone(g, res, base)
                           and not any(key(g) == key(h) for h in self.fixed)]})
        self.fixed.append(f)
        self.fixed.extend(g for g in targets if gone(g, res, base) and g is not f and g is not partner)

    def _chain_options(self, g: dict[str, Any], together: Edits) -> list[tuple[Any, Any, Edits]]:
        """The candidates for `g` in the program patched by `together`, best first."""
        prog = self.prog

        def patched(file: str, t: Edits = together) -> str | None:
            text = prog.read(file)
            return None if text is None else apply_edits(text, t.get(file, ()))

        options = []
        for c2 in candidates_for(g, patched):
            whole = dict(together)  # already holds the patches kept so far
            for file, text in [(c2.file, c2.text), *getattr(c2, "also", ())]:
                whole[file] = edits_of(prog.read(file) or "", text)
            own = {c2.file: edits_of(patched(c2.file) or "", c2.text)}
            options.append(((RANK.get(c2.family, 0), *size(own)), c2, whole))
        options.sort(key=lambda t: t[0])
        return options

    def follow(self, f: dict[str, Any], c: Any, together: Edits, res: Any, only: tuple[str, ...] = ()) -> bool:
        """`c` removed `f` and the program ran further than before, into an error it had never
        reached (the stale style target behind an optimizer that could not be built): patch that
        error on top, up to three deep, and keep the chain as `f`'s patch when the last run passes
        every check against the first run. True when kept."""
        seen = {key(g) for g in self.base.findings}
        steps: list[str] = []
        for _ in range(3):
            news = [g for g in res.severe() if g.get("severity") == "error" and key(g) not in seen
                    and (not only or g.get("code") in only)]
            if not news:
                return False
            g = news[0]
            seen.add(key(g))
            for _, c2, whole in self._chain_options(g, together)[:2]:
                if self._budget_spent():
                    return False
                self.runs += 1
                res2 = run(self.prog, whole, steps_for([f, g], self.prog.max_steps, self.first_steps))
                what = f"{c2.family} for {g.get('code')} {subject_name(g) or '-'}"
                if not res2.ok or present(g, res2):
                    self.reject(f, c, f"then {what}: {judge(g, res, res2) or 'no better'}")
                    continue
                reason = judge(f, self.base, res2)
                if reason is None:
                    mine = {file: es for file, es in whole.items() if es != self.kept.get(file)}
                    self.keep(f, c, mine, whole, res2, "; then " + ", then ".join([*steps, what])
                              + ": errors the patched program ran into")
                    return True
                # not a rejection yet: the chain goes on from this run
                print(f"graphguard fix: {c.family} for {_brief(_describe(f, self.shown))}, then {what}: "
                      f"{reason}; following the next error", file=self.err)
                together, res = whole, res2
                steps.append(what)
                break
            else:
                return False
        return False

    def try_alone(self, i: int, f: dict[str, Any]) -> None:
        """Finding `i`'s candidates, best first, each on top of the kept patches."""
        if self._gone(f):
            return  # an earlier patch fixed it too (listed under that patch's also_fixes)
        prog = self.prog
        cands = []
        for c in candidates_for(f, prog.read):
            e = {c.file: edits_of(prog.read(c.file) or "", c.text)}
            e.update({other: edits_of(prog.read(other) or "", t) for other, t in c.also})
            cands.append(((RANK.get(c.family, 0), *size(e)), c, e))
        cands.sort(key=lambda t: t[0])  # by family rank, then smallest first
        self.per_finding[i] = cands
        for _, c, e in cands:
            reason, res, together = self.attempt([f], e)
            if reason is None:
                self.keep(f, c, e, together, res)
                break
            if together is not None and i not in self.followed and _went_further(f, self.base, res):
                self.followed.add(i)  # one chain per finding: the verification runs are few
                if self.follow(f, c, together, res):
                    break
            self.reject(f, c, reason)
            if reason.startswith("new finding") and i not in self.pending:
                self.pending[i] = (c, e)
        if not cands:
            print(f"graphguard fix: no candidate patch for {_brief(_describe(f, self.shown))}", file=self.err)

    def try_pairs(self) -> None:
        """A patch that only failed on a new finding, with a candidate of another finding still
        reported (a detached target plus a smooth mask: each alone leaves the other's symptom)."""
        for i, (c1, e1) in self.pending.items():
            f = self.targets[i]
            if self._gone(f):
                continue
            for j, cands in self.per_finding.items():
                g = self.targets[j]
                if j == i or self._gone(g):
                    continue
                for _, c2, e2 in cands:
                    both = merge(e1, e2)
                    if both is None:
                        continue
                    reason, res, together = self.attempt([f, g], both)
                    if reason is None:
                        self.keep(f, c1, e1, merge(self.kept, e1) or self.kept, res,
                                  f"; verified with the next patch, for {g.get('code')}", partner=g)
                        self.keep(g, c2, e2, together, res)
                        break
                    self.reject(g, c2, f"with {c1.family} for {f.get('code')}: {reason}")
                if self._gone(f):
                    break
            if self._gone(f):
                self._retry_after_pair()

    def _retry_after_pair(self) -> None:
        """The pair may have been what the other findings' candidates needed too: once more."""
        for k, cands in self.per_finding.items():
            h = self.targets[k]
            if self._gone(h):
                continue
            for _, c, e in cands:
                reason, res, together = self.attempt([h], e)
                if reason is None:
                    self.keep(h, c, e, together, res)
                    break
                self.reject(h, c, f"after the pair: {reason}")

    def try_consequences(self) -> None:
        """A patch whose only fault was a new error it brings out (the loss's history given back
        makes a feature both the prediction and the target of another loss): that error's
        candidates on top, as for a crash the patch ran past, once per finding, kept when the last
        run passes. Only errors whose edits keep what is trained (a target detached, a graph
        rebuilt): one about what the optimizer holds (GG008, GG011) would be answered by training
        something else."""
        for i, (c1, e1) in self.pending.items():
            f = self.targets[i]
            if self._gone(f) or i in self.followed:
                continue
            together = merge(self.kept, e1)
            if together is None or self._budget_spent():
                continue
            self.runs += 1
            res = run(self.prog, together, steps_for([f], self.prog.max_steps, self.first_steps))
            if not (judge(f, self.base, res) or "").startswith("new finding") or present(f, res):
                continue
            self.followed.add(i)
            self.follow(f, c1, together, res, only=_CONSEQUENCES)

    def conclude(self) -> list[dict[str, Any]]:
        """The document's closing fields; returns the errors of the first run still reported."""
        doc, shown, base, current = self.doc, self.shown, self.base, self.current
        doc["unpatched"] = [_describe(f, shown) for f in self.targets if not gone(f, current, base)
                            and not any(key(f) == key(h) for h in self.fixed)]
        doc["after"] = current.summary()
        doc["verification_runs"] = self.runs
        errors_left = [f for f in base.findings if f.get("severity") == "error" and not gone(f, current, base)]
        doc["errors_left"] = [_describe(f, shown) for f in errors_left]
        return errors_left


# the new errors a patch may bring out that are patched on top of it in a program that did not crash
_CONSEQUENCES = ("GG001", "GG002", "GG003", "GG004", "GG005", "GG012")


def _went_further(f: dict[str, Any], base: Any, res: Any) -> bool:
    """The first run stopped on an exception; the patched one no longer reports `f` and got further
    (more backward calls, or as many and more iterations) before it stopped again."""
    if res is None or not res.ok or base.run.get("status") != "raised" or present(f, res):
        return False
    b, r = base.run, res.run
    return (r.get("backward_calls") or 0, r.get("iterations") or 0) > \
        (b.get("backward_calls") or 0, b.get("iterations") or 0)


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
