"""Verification: run the program (or a patched scratch copy of its files) under the guard, and
judge a candidate patch against the first run.

Every run happens in a fresh temporary copy of the program's folder, so the user's files are only
read, never written (command.py writes them on `--apply`, with the kept patches only).
"""
from __future__ import annotations

import atexit
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

from .candidates import SILENT, Candidate, subject_name

# what a scratch copy of the program's folder leaves out; "graphguard-fix-*" is the scratch folder
# itself (and another fix's), met when the script's folder is the temp directory: copying it into
# itself recursed until "File name too long"
SCRATCH_PREFIX = "graphguard-fix-"
_IGNORE = shutil.ignore_patterns(".git", "__pycache__", ".venv", "venv", "graphguard-report",
                                 "node_modules", ".mypy_cache", ".pytest_cache", "*.pyc",
                                 SCRATCH_PREFIX + "*")
# a program folder larger than this is not copied for every verification run (a script saved in
# a home or download folder): the user is asked to move it into a folder of its own
MAX_COPY_FILES = 5_000
MAX_COPY_BYTES = 200 * 1024 * 1024


def copy_too_large(root: str) -> str | None:
    """Why `root` is too large to copy for each verification run ("12,000+ files"), or None.
    Walks with the copy's own ignore list and stops as soon as a limit is passed."""
    files = size = 0
    for here, dirs, names in os.walk(root):
        skipped = _IGNORE(here, dirs + names)
        dirs[:] = [d for d in dirs if d not in skipped and not os.path.islink(os.path.join(here, d))]
        for name in names:
            if name in skipped:
                continue
            files += 1
            try:
                size += os.lstat(os.path.join(here, name)).st_size
            except OSError:
                continue
            if files > MAX_COPY_FILES:
                return f"more than {MAX_COPY_FILES:,} files"
            if size > MAX_COPY_BYTES:
                return f"more than {MAX_COPY_BYTES // (1024 * 1024)} MB"
    return None
SEVERE = ("error", "warning")

Edit = tuple[int, int, tuple[str, ...]]   # replace original lines [i1, i2) (0-based) by these
Edits = dict[str, tuple[Edit, ...]]       # file (relative to the program's root) -> its edits


@dataclass
class Program:
    root: str                 # the folder that is copied (absolute)
    cwd: str                  # where the program runs, relative to root ("." usually)
    script: str | None        # relative to cwd
    module: str | None
    args: list[str]
    max_steps: int
    timeout: float

    def read(self, rel: str) -> str | None:
        path = os.path.normpath(os.path.join(self.root, rel))
        if not path.startswith(self.root + os.sep) or not path.endswith(".py") or not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8") as fh:
            return fh.read()


@dataclass
class Result:
    ok: bool                  # a report was written
    findings: list[dict[str, Any]] = field(default_factory=list)
    run: dict[str, Any] = field(default_factory=dict)
    grads: dict[str, Any] = field(default_factory=dict)
    returncode: int = 0
    stderr: str = ""

    def severe(self) -> list[dict[str, Any]]:
        return [f for f in self.findings if f.get("severity") in SEVERE]

    def summary(self) -> dict[str, Any]:
        counts = {s: sum(f.get("severity") == s for f in self.findings) for s in ("error", "warning", "info")}
        params = self.grads.get("params", {})
        return {"status": self.run.get("status"), "exception": (self.run.get("exception") or {}).get("type"),
                "steps": self.grads.get("steps", 0), "findings": counts,
                "params_with_nonzero_grad": sum(bool(p.get("nonzero")) for p in params.values()),
                "params": len(params)}


# ---- edits -------------------------------------------------------------------------------------
def edits_of(old: str, new: str) -> tuple[Edit, ...]:
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    return tuple((i1, i2, tuple(b[j1:j2])) for tag, i1, i2, j1, j2 in ops if tag != "equal")


def merge(base: Edits, more: Edits) -> Edits | None:
    """`base` and `more` together, or None when they edit the same lines differently."""
    out = dict(base)
    for file, edits in more.items():
        have = list(out.get(file, ()))
        for e in edits:
            if e in have:
                continue
            for h in have:
                same_insert = e[0] == e[1] == h[0] == h[1]
                overlap = max(e[0], h[0]) < min(e[1], h[1])
                if same_insert or overlap:
                    return None
            have.append(e)
        out[file] = tuple(sorted(have, key=lambda e: (e[0], e[1] - e[0])))
    return out


def apply_edits(text: str, edits: tuple[Edit, ...]) -> str:
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    pos = 0
    for i1, i2, new in sorted(edits, key=lambda e: (e[0], e[1] - e[0])):
        out.extend(lines[pos:i1])
        out.extend(new)
        pos = max(pos, i2)
    out.extend(lines[pos:])
    return "".join(out)


def size(edits: Edits) -> tuple[int, int]:
    """How big a patch is: lines touched, then characters written."""
    lines = sum(max(i2 - i1, len(new)) for es in edits.values() for i1, i2, new in es)
    return lines, sum(len("".join(new)) for es in edits.values() for _, _, new in es)


def unified(prog: Program, edits: Edits, shown: dict[str, str]) -> str:
    out = []
    for file, es in sorted(edits.items()):
        old = prog.read(file) or ""
        new = apply_edits(old, es)
        name = shown.get(file, file)
        out.extend(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        f"a/{name}", f"b/{name}"))
    return "".join(out)


# ---- runs ----------------------------------------------------------------------------------------
_ENV = {"GRAPHGUARD_DOT": "none", "PYTHONDONTWRITEBYTECODE": "1"}


class _Server:
    """The fork server of probe.py (one per fix process, started on the first run): each run is a
    fork of a process that has imported torch and the guard and run nothing, which saves the
    interpreter's start and those imports on every verification run."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.broken = not hasattr(os, "fork") or os.environ.get("GRAPHGUARD_FIX_FORK", "1") == "0"

    def _start(self) -> bool:
        if self.broken:
            return False
        if self.proc is not None and self.proc.poll() is None:
            return True
        try:
            self.proc = subprocess.Popen([sys.executable, "-m", "graphguard.fix.probe", "--serve"],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                         env=dict(os.environ, **_ENV))
            assert self.proc.stdout is not None
            if self.proc.stdout.readline().strip() != "{}":
                raise OSError("the fork server did not start")
        except (OSError, AssertionError):
            self.broken = True
            self.close()
            return False
        atexit.register(self.close)
        return True

    def run(self, argv: list[str], cwd: str, tmp: str, timeout: float) -> tuple[int | None, str] | None:
        """(exit status or None on timeout, stderr), or None when there is no server to ask."""
        if not self._start():
            return None
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stdout is not None
        out, err = os.path.join(tmp, "stdout.txt"), os.path.join(tmp, "stderr.txt")
        try:
            self.proc.stdin.write(json.dumps({"argv": argv, "cwd": cwd, "stdout": out, "stderr": err,
                                              "timeout": timeout}) + "\n")
            self.proc.stdin.flush()
            rc = json.loads(self.proc.stdout.readline())["rc"]
        except (OSError, ValueError, KeyError):
            self.broken = True
            self.close()
            return None
        try:
            with open(err, encoding="utf-8", errors="replace") as fh:
                return rc, fh.read()
        except OSError:
            return rc, ""

    def close(self) -> None:
        if self.proc is not None:
            try:
                if self.proc.stdin:
                    self.proc.stdin.close()
                self.proc.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
            self.proc = None


_server = _Server()


def run(prog: Program, edits: Edits, steps: int | None = None) -> Result:
    """The program, patched by `edits`, in a scratch copy, under the guard (collect mode), cut after
    `steps` optimizer steps (`prog.max_steps` by default)."""
    with tempfile.TemporaryDirectory(prefix=SCRATCH_PREFIX) as tmp:
        root = os.path.join(tmp, "program")
        shutil.copytree(prog.root, root, ignore=_IGNORE, symlinks=True)
        for file, es in edits.items():
            original = prog.read(file)
            if original is None:
                continue
            with open(os.path.join(root, file), "w", encoding="utf-8") as fh:
                fh.write(apply_edits(original, es))
        report, grads = os.path.join(tmp, "report.json"), os.path.join(tmp, "grads.json")
        argv = [grads, "run", "--mode", "collect", "--no-diagrams", "--json", report,
                "--report-dir", os.path.join(tmp, "html"), "--max-steps", str(steps or prog.max_steps)]
        argv += ["-m", prog.module] if prog.module else [prog.script or ""]
        argv += prog.args
        cwd = os.path.normpath(os.path.join(root, prog.cwd))
        forked = _server.run(argv, cwd, tmp, prog.timeout)
        if forked is not None:
            rc, stderr = forked
            if rc is None:
                return Result(False, stderr=f"timed out after {prog.timeout:g} s")
        else:
            try:
                proc = subprocess.run([sys.executable, "-m", "graphguard.fix.probe", *argv], cwd=cwd,
                                      env=dict(os.environ, **_ENV), capture_output=True, text=True,
                                      timeout=prog.timeout)
            except subprocess.TimeoutExpired:
                return Result(False, stderr=f"timed out after {prog.timeout:g} s")
            rc, stderr = proc.returncode, proc.stderr
        if not os.path.isfile(report):
            return Result(False, returncode=rc, stderr=stderr)
        with open(report, encoding="utf-8") as fh:
            data = json.load(fh)
        g: dict[str, Any] = {}
        if os.path.isfile(grads):
            with open(grads, encoding="utf-8") as fh:
                g = json.load(fh)
        findings = [_relocate(f, cwd, root) for f in data.get("findings", [])]
        return Result(True, findings, data.get("run", {}), g, rc, stderr)


def _relocate(f: dict[str, Any], cwd: str, root: str) -> dict[str, Any]:
    """File paths made relative to the program's root (None when outside it)."""
    def fix(loc: Any) -> Any:
        if not isinstance(loc, dict) or not loc.get("file"):
            return loc
        path = os.path.normpath(os.path.join(cwd, loc["file"]))
        rel = os.path.relpath(path, root)
        return dict(loc, file=None if rel.startswith("..") else rel)

    f = dict(f)
    if isinstance(f.get("subject"), dict):
        f["subject"] = dict(f["subject"], created_at=fix(f["subject"].get("created_at")))
    f["location"] = fix(f.get("location"))
    f["related"] = [dict(r, location=fix(r.get("location"))) for r in f.get("related") or []]
    return f


# ---- judging -------------------------------------------------------------------------------------
def key(f: dict[str, Any]) -> tuple[str, str]:
    """A finding's identity across runs of patched copies (lines move; names and codes stay)."""
    name = subject_name(f)
    if name:
        return f.get("code", ""), name
    loc = f.get("location") or {}
    return f.get("code", ""), (loc.get("code") or "").strip()


def present(f: dict[str, Any], res: Result) -> bool:
    return any(key(g) == key(f) for g in res.findings)


def iteration_of(f: dict[str, Any]) -> int:
    """The iteration (from 0) under way when `f` was first reported (0 when the report has none)."""
    it = f.get("iteration")
    return it if isinstance(it, int) and it >= 0 else 0


def covered(f: dict[str, Any], res: Result, base: Result) -> bool:
    """`res` ran past the iteration in which `f` first showed in the first run `base`, or as far as
    `base` did (a finding of the run's end), so its absence there means something (a run cut at 3
    steps says nothing of a finding of iteration 4). Only a run that exited (the step limit, or the
    program's own sys.exit) can fall short: one that ended or raised went as far as the program does."""
    done = res.run.get("iterations")
    if res.run.get("status") != "exited" or not isinstance(done, int):
        return True
    return done > iteration_of(f) or done >= (base.run.get("iterations") or 0)


def gone(f: dict[str, Any], res: Result, base: Result) -> bool:
    """`f` (a finding of the first run `base`) is no longer reported by a run that got far enough
    to report it."""
    return not present(f, res) and covered(f, res, base)


def _shape(f: dict[str, Any]) -> list[int] | None:
    m = re.match(r"\s*\w+\[([\d, ]*)\]", (f.get("subject") or {}).get("summary") or "")
    if not m:
        return None
    return [int(x) for x in m.group(1).replace(" ", "").split(",") if x]


def judge(f: dict[str, Any], base: Result, res: Result) -> str | None:
    """None when the patched run proves the patch, else why not."""
    if not res.ok:
        tail = [ln for ln in res.stderr.strip().splitlines() if ln.strip()][-1:] or ["no report written"]
        return f"the patched program did not run: {tail[0][:200]}"
    exc = res.run.get("exception") or {}
    if res.run.get("status") == "raised":
        return f"the patched program raised {exc.get('type')}: {(exc.get('message') or '')[:160]}"
    if res.returncode not in (0, 1):
        return f"the patched program exited with status {res.returncode}"
    if present(f, res):
        return f"{f.get('code')} is still reported"
    if not covered(f, res, base):
        return (f"the patched run stopped after {res.run.get('iterations')} iteration(s), before iteration "
                f"{iteration_of(f)} where {f.get('code')} first showed")
    old = {key(g) for g in base.findings}
    new = [g for g in res.severe() if key(g) not in old]
    if new:
        g = new[0]
        line = (g.get("location") or {}).get("line")
        return f"new finding {g.get('code')} {subject_name(g) or '-'} at line {line}"
    if f.get("code") in SILENT:
        params = res.grads.get("params", {})
        if not params:
            return "no optimizer step ran, so the gradients could not be checked"
        shape = _shape(f) if f.get("code") != "GG009" else None
        concerned = [p for p in params.values() if shape is None or p.get("shape") == shape]
        if f.get("code") == "GG011":
            before = sum(bool(p.get("nonzero")) for p in base.grads.get("params", {}).values())
            if sum(bool(p.get("nonzero")) for p in params.values()) <= before:
                return "no more parameters receive a non-zero gradient than before"
        elif f.get("code") == "GG008" and _held_not_cut(f) \
                and not any(p.get("requires_grad", True) for p in concerned):
            # the patch took the parameters out of training (left out of the optimizer, or frozen):
            # right only for a frozen subject or a module the forward never calls, and only if
            # the parameters that trained before still do
            before = sum(bool(p.get("nonzero")) for p in base.grads.get("params", {}).values())
            after = sum(bool(p.get("nonzero")) for p in params.values())
            if not (_frozen(f) or f.get("severity") == "warning"):
                return "the parameters concerned were taken out of training"
            if after == 0 or after < before:
                return "fewer parameters receive a non-zero gradient than before"
        elif not concerned or not all(p.get("nonzero") for p in concerned):
            if not (f.get("code") == "GG009" and _reached_by_loss(concerned, res.grads.get("steps", 0))):
                dead = sum(not p.get("nonzero") for p in concerned)
                return f"{dead} of the parameters concerned still receive no non-zero gradient"
    return None


def _reached_by_loss(concerned: list[dict[str, Any]], steps: int) -> bool:
    """GG009 (the loss has no history): the patched loss moves some parameter, and every other one
    got a computed gradient (not None) at every step. Exact zeros there are the program's own
    arithmetic (a term multiplied by 0 on batches without objects), not a cut: a cut leaves None."""
    return any(p.get("nonzero") for p in concerned) and all(
        p.get("nonzero") or p.get("steps_with_grad", 0) >= max(1, steps) for p in concerned)


def _held_not_cut(f: dict[str, Any]) -> bool:
    """A GG008 about what the optimizer holds (its fix is at the optimizer), not about a cut path."""
    rel = f.get("related") or []
    return any(r.get("role") == "fix-at" and r.get("op") == "optimizer" for r in rel) \
        and not any(r.get("role") == "cut-by" for r in rel)


def _frozen(f: dict[str, Any]) -> bool:
    """The subject had requires_grad=False when reported (its summary has no requires_grad mark)."""
    summary = (f.get("subject") or {}).get("summary") or ""
    return bool(summary) and "requires_grad" not in summary and "grad_fn" not in summary


def evidence_of(c: Candidate) -> dict[str, Any]:
    return {"family": c.family, "file": c.file, "line": c.line, "note": c.note}
