"""Score graphguard and two baselines on the realbugs benchmark (benchmarks/realbugs/).

Each manifest case runs three times, each in its own subprocess (cwd: the repository root):
  graphguard      `graphguard run --mode collect --no-diagrams --json R.json case.py`; only the JSON
                  report is read;
  plain PyTorch   the script as `__main__` (runpy.run_path, its folder first on sys.path, as
                  `python case.py` does); its stderr traceback is read;
  detect_anomaly  the same with torch.autograd.set_detect_anomaly(True) set before the script runs;
                  stderr (traceback, and the anomaly warning's forward traceback) is read.
The baselines run in a fork server: a process that has imported torch (and run nothing) forks one
child per run, so that each run is a fresh process without paying torch's import each time.
A run that takes longer than `--timeout` seconds is killed and counts as no detection.

    python benchmarks/accuracy.py                    # all cases, all tools; rewrites docs/accuracy.md
    python benchmarks/accuracy.py --no-baselines --category stale-graph,cut-path --json /tmp/r.json
    python benchmarks/accuracy.py --cases stale-graph/which_is_freed.py -j 2

Scores (over the buggy cases; `early` over the cases that crash under plain PyTorch). graphguard's
detected, exact, located and named count only findings made from the guard's own evidence: a finding
with before_crash: false explains an error PyTorch had already raised (GG903's account, which takes
the family's code) and is counted in `after crash only` instead:
  detected  a finding (any severity) with one of the case category's codes (baselines: the program raises);
  exact     such a finding with the category's primary code (baselines: not applicable);
  located   such a finding's location, subject.created_at or a related location is the offender's
            line or one of its fix lines (baselines: a traceback line of the case's files is);
  named     such a finding's subject.name is the offender's name, `self.fc` and `model.fc` alike
            (baselines: the name appears in the error text);
  early     such a finding has before_crash: true (crash cases; baselines never);
  after crash only  the category's codes came only in findings with before_crash: false;
  false alarms  clean programs with a finding of severity warning or error, or that raise (or
            leave no report) under graphguard (baselines: a clean program that raises).

The fix pass (skip it with --no-fix) runs `graphguard fix --json` on every case, each verification run
cut to --fix-steps optimizer steps and --fix-runs runs per case:
  patched   a buggy case where a verified patch removed a finding with one of the category's codes
            and no finding with those codes was left without one;
  changed   a clean case for which fix proposed a patch (must be none).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE / "realbugs"))

import verify  # noqa: E402

__all__ = ["TOOLS", "Outcome", "Score", "main", "run_tool", "score", "render_docs"]

DOCS = ROOT / "docs" / "accuracy.md"
VENV_BIN = ROOT / ".venv" / "bin"
TOOLS = ("graphguard", "plain", "anomaly")
TOOL_LABELS = {"graphguard": "graphguard", "plain": "plain PyTorch", "anomaly": "detect_anomaly",
               "fix": "graphguard fix"}
FRAME = re.compile(r'File "([^"]+)", line (\d+)')


@dataclass
class Outcome:
    """What one tool made of one case."""
    file: str
    tool: str
    status: str  # "ok" | "raised" | "timeout" | "no-report"
    seconds: float
    detected: bool = False
    exact: bool = False
    located: bool = False
    named: bool = False
    early: bool = False
    after_only: bool = False  # graphguard: the category's codes only in after-the-crash accounts
    alarm: bool = False  # clean cases: a false alarm
    patched: bool = False  # fix: a verified patch for the category's finding (buggy cases)
    changed: bool = False  # fix: a patch proposed for a clean case
    patches: list[dict[str, Any]] = field(default_factory=list)  # fix: code, family, file:line
    findings: list[dict[str, Any]] = field(default_factory=list)  # graphguard: code, severity, name, lines
    error: str = ""  # baselines: the exception text (first 300 characters)


def _python() -> str:
    exe = VENV_BIN / "python"
    return str(exe) if exe.exists() else sys.executable


def _graphguard() -> list[str]:
    exe = VENV_BIN / "graphguard"
    return [str(exe)] if exe.exists() else [_python(), "-m", "graphguard"]


def _resolve(path: str | None, cwd: Path) -> Path | None:
    if not path:
        return None
    p = Path(path)
    return (p if p.is_absolute() else cwd / p).resolve()


def _targets(entry: dict[str, Any]) -> set[tuple[Path, int]]:
    """(resolved file, line) of the offender's line and the fix lines."""
    refs = [(entry.get("offender") or {}).get("line")] + list(entry.get("fix_lines") or [])
    out: set[tuple[Path, int]] = set()
    for ref in refs:
        lr = verify.parse_line_ref(ref, entry["file"])
        if lr is not None:
            out.add((lr.path.resolve(), lr.line))
    return out


def _places(finding: dict[str, Any], cwd: Path) -> list[tuple[Path, int]]:
    """Every (file, line) a finding points at: location, subject.created_at, related locations."""
    locs = [finding.get("location"), (finding.get("subject") or {}).get("created_at")]
    locs += [(r or {}).get("location") for r in finding.get("related") or []]
    out = []
    for loc in locs:
        if isinstance(loc, dict) and isinstance(loc.get("line"), int):
            p = _resolve(loc.get("file"), cwd)
            if p is not None:
                out.append((p, loc["line"]))
    return out


def _label(path: Path) -> str:
    """`path` relative to cases/ when it is below it, else as is."""
    try:
        return str(path.relative_to(verify.CASES.resolve()))
    except ValueError:
        return str(path)


# the last attribute of a parameter's path (`.weight`, `.bias`, `.in_proj_weight`, `.weight_hh_l0`):
# the names only say which offenders are parameters, so that a finding about a module never names
# a parent of an offending module (`model` for `model.fc`)
_PARAM_LEAF = re.compile(r"\.(\w+_)?(weight|bias)(_\w+)?$")


def _paths(name: str) -> list[str]:
    """`name` and, for an entry of a container (`tracker.losses['total']`, `layers[2][0]`), the
    container paths it is an entry of, innermost first."""
    out = [name]
    while name.endswith("]") and "[" in name:
        name = name[:name.rfind("[")]
        if name:
            out.append(name)
    return out


def same_name(found: str | None, offender: str, kind: str | None = None) -> bool:
    """Whether a finding's subject name is the offender as written. Inside a method the program
    writes `self.fc2`, outside it `model.fc2`: the same object seen from two places, so a leading
    `self` on either side matches any receiver path (`self.rel_h` in a submodule's code is
    `model.attn.rel_h` from the training loop) when the rest of the path is the same. An entry of
    the offender, as the program indexes it (`total_loss['BoxLoss']` of a dict `total_loss`,
    `tracker.train_losses['total']` of `self.train_losses`), names it too. A finding about a whole
    module (`kind` "module") names a parameter of it (`model.decoder.linear` for the offender
    `model.decoder.linear.weight`): when every parameter of a layer is left without gradient, the
    layer is the thing to fix, and listing its weight and bias one by one says less."""
    if not found:
        return False
    offenders = [offender]
    if kind == "module" and _PARAM_LEAF.search(offender):
        offenders.append(offender.rsplit(".", 1)[0])  # the module that owns the parameter
    return any(_same_path(f, o) for f in _paths(found) for o in offenders)


def _same_path(found: str, offender: str) -> bool:
    if found == offender:
        return True
    for a, b in ((found, offender), (offender, found)):
        head, _, rest = a.partition(".")
        if head == "self" and rest and b.endswith("." + rest):
            return True
    return False


def _alarm_text(o: Outcome) -> str:
    """What made a clean program a false alarm: the finding codes, and whether it broke."""
    codes = ", ".join(sorted({f["code"] for f in o.findings if f["severity"] in ("warning", "error")}))
    broke = {"raised": "raised under graphguard", "no-report": "graphguard wrote no report"}.get(o.status)
    return "; ".join(x for x in (codes, broke) if x)


def _score_graphguard(entry: dict[str, Any], report: dict[str, Any], o: Outcome, cwd: Path) -> None:
    findings = [f for f in report.get("findings") or [] if isinstance(f, dict)]
    o.findings = [{"code": f.get("code"), "severity": f.get("severity"),
                   "before_crash": f.get("before_crash") is not False,
                   "name": (f.get("subject") or {}).get("name"),
                   "lines": sorted({f"{_label(p)}:{ln}" for p, ln in _places(f, cwd)})} for f in findings]
    if entry.get("clean"):
        # a clean program runs under plain PyTorch (tests/test_realbugs.py): one that raises under
        # graphguard was broken by it, findings or not (torch.func refusing the guard's hooks)
        o.alarm = o.status == "raised" or any(f.get("severity") in ("warning", "error") for f in findings)
        return
    codes = verify.CATEGORIES.get(entry.get("category", ""), ())
    family = [f for f in findings if f.get("code") in codes]
    # Strict: an account of PyTorch's own error, given after it raised, is not a detection.
    relevant = [f for f in family if f.get("before_crash") is not False]
    o.after_only = bool(family) and not relevant
    targets = _targets(entry)
    name = (entry.get("offender") or {}).get("name")
    o.detected = bool(relevant)
    o.exact = any(f.get("code") == codes[0] for f in relevant)
    o.located = any(pl in targets for f in relevant for pl in _places(f, cwd))
    o.named = any(same_name((f.get("subject") or {}).get("name"), name, (f.get("subject") or {}).get("kind"))
                  for f in relevant) if name else False
    o.early = (entry.get("symptom") or {}).get("kind") == "raises" and any(
        f.get("before_crash") is True for f in relevant)


def _error_text(stderr: str) -> str:
    """The exception text of the last traceback in `stderr` (lines after its frames)."""
    i = stderr.rfind("Traceback (most recent call last)")
    if i < 0:
        return ""
    lines = stderr[i:].splitlines()[1:]
    k = 0
    while k < len(lines) and (lines[k].startswith((" ", "\t")) or not lines[k].strip()):
        k += 1
    return "\n".join(lines[k:]).strip()


def _score_baseline(entry: dict[str, Any], rc: int, stderr: str, o: Outcome, cwd: Path) -> None:
    raised = rc != 0 and "Traceback (most recent call last)" in stderr
    o.status = "raised" if raised else "ok"
    o.error = _error_text(stderr)[:300] if raised else ""
    if entry.get("clean"):
        o.alarm = raised
        return
    if not raised:
        return
    files = {p.resolve() for p in verify.case_files(entry["file"])}
    frames = {(p, int(ln)) for f, ln in FRAME.findall(stderr)
              if (p := _resolve(f, cwd)) is not None and p in files}
    name = (entry.get("offender") or {}).get("name")
    o.detected = True
    o.located = bool(frames & _targets(entry))
    o.named = bool(name) and re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", _error_text(stderr)) is not None


def _child(case: str, anomaly: bool, stderr_path: str) -> None:
    """In a forked child: run `case` as `__main__` (as `python case.py`, or with detect_anomaly),
    stderr into `stderr_path`; never returns."""
    import runpy
    import traceback
    code = 0
    try:
        out = os.open(os.devnull, os.O_WRONLY)
        err = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(out, 1)
        os.dup2(err, 2)
        sys.argv = [case]
        sys.path.insert(0, os.path.dirname(case))
        if anomaly:
            import torch
            torch.autograd.set_detect_anomaly(True)
        runpy.run_path(case, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001 - printed like the interpreter does
        traceback.print_exc()
        code = 1
    finally:
        with_flush = (sys.stdout, sys.stderr)
        for f in with_flush:
            try:
                f.flush()
            except Exception:
                pass
        os._exit(code)


def _serve() -> int:
    """Fork server: per stdin line {"case", "anomaly", "stderr", "timeout"}, fork a child that runs
    the case; answer {"rc"} (or {"rc": null} on timeout, the child killed) on stdout."""
    import signal
    import torch  # noqa: F401 - imported once, inherited by every child
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    proto.write("{}\n")
    for line in sys.stdin:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            os.setsid()
            _child(req["case"], req["anomaly"], req["stderr"])
        deadline = time.monotonic() + req["timeout"]
        rc: int | None = None
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                rc = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            time.sleep(0.01)
        proto.write(json.dumps({"rc": rc}) + "\n")
    return 0


class _ForkServer:
    """One fork-server subprocess (used by one thread at a time)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([_python(), str(Path(__file__).resolve()), "--serve"], cwd=ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"})
        assert self.proc.stdout is not None
        self.proc.stdout.readline()

    def run(self, case: Path, anomaly: bool, timeout: float) -> tuple[int | None, str]:
        """(exit status or None on timeout, stderr) of one run."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with tempfile.NamedTemporaryFile(prefix="gg-accuracy-", suffix=".err", delete=False) as f:
            err = Path(f.name)
        try:
            self.proc.stdin.write(json.dumps({"case": str(case), "anomaly": anomaly, "stderr": str(err),
                                              "timeout": timeout}) + "\n")
            self.proc.stdin.flush()
            rc = json.loads(self.proc.stdout.readline())["rc"]
            return rc, err.read_text(errors="replace")
        finally:
            err.unlink(missing_ok=True)

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(10)


_servers: dict[int, _ForkServer] = {}


def _server() -> _ForkServer:
    """This thread's fork server (started on first use)."""
    import threading
    key = threading.get_ident()
    if key not in _servers:
        _servers[key] = _ForkServer()
    return _servers[key]


def run_tool(entry: dict[str, Any], tool: str, timeout: float = 60.0, cwd: Path = ROOT) -> Outcome:
    """Run one case under one tool and score it."""
    case = (verify.CASES / entry["file"]).resolve()
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gg-accuracy-") as tmp:
        report = Path(tmp) / "report.json"
        if tool != "graphguard":
            rc, stderr = _server().run(case, tool == "anomaly", timeout)
            if rc is None:
                return Outcome(entry["file"], tool, "timeout", time.perf_counter() - t0)
            o = Outcome(entry["file"], tool, "ok", time.perf_counter() - t0)
            _score_baseline(entry, rc, stderr, o, cwd)
            return o
        cmd = _graphguard() + ["run", "--mode", "collect", "--no-diagrams", "--report-dir",
                               str(Path(tmp) / "report"), "--json", str(report), str(case)]
        try:
            proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                                  timeout=timeout, errors="replace")
        except subprocess.TimeoutExpired:
            return Outcome(entry["file"], tool, "timeout", time.perf_counter() - t0)
        o = Outcome(entry["file"], tool, "ok", time.perf_counter() - t0)
        try:
            data = json.loads(report.read_text())
        except (OSError, ValueError):
            o.status = "no-report"
            o.error = proc.stderr.strip().splitlines()[-1][:300] if proc.stderr.strip() else ""
            o.alarm = bool(entry.get("clean"))  # graphguard itself failed on a correct program
            return o
        o.status = (data.get("run") or {}).get("status", "ok")
        _score_graphguard(entry, data, o, cwd)
    return o


def _score_fix(entry: dict[str, Any], doc: dict[str, Any], o: Outcome) -> None:
    o.patches = [{"code": p["finding"]["code"], "family": p["family"], "at": f"{p['file']}:{p['line']}",
                  "also": sorted({a["code"] for a in p.get("also_fixes") or []})} for p in doc.get("patches") or []]
    if entry.get("clean"):
        o.changed = bool(o.patches)
        return
    codes = set(verify.CATEGORIES.get(entry.get("category", ""), ()))
    fixed = any(p["code"] in codes or codes & set(p["also"]) for p in o.patches)
    left = any(d.get("code") in codes for d in doc.get("unpatched") or [])
    o.patched = fixed and not left
    o.error = "; ".join(f"{r['finding']['code']} {r['family']}: {r['reason']}" for r in doc.get("rejected") or [])[:300]


def run_fix(entry: dict[str, Any], steps: int, runs: int, timeout: float) -> Outcome:
    """`graphguard fix` on one case (its files are only read: every run is on a scratch copy);
    `timeout` bounds the whole case (its process group is killed then)."""
    import signal
    case = (verify.CASES / entry["file"]).resolve()
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gg-accuracy-fix-") as tmp:
        out = Path(tmp) / "fix.json"
        cmd = _graphguard() + ["fix", "--max-steps", str(steps), "--max-runs", str(runs),
                               "--timeout", str(max(10.0, timeout / 2)), "--json", str(out), str(case)]
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, errors="replace", start_new_session=True)
        try:
            _, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return Outcome(entry["file"], "fix", "timeout", time.perf_counter() - t0)
        o = Outcome(entry["file"], "fix", "ok", time.perf_counter() - t0)
        try:
            doc = json.loads(out.read_text())
        except (OSError, ValueError):
            o.status = "no-report"
            o.error = stderr.strip().splitlines()[-1][:300] if stderr.strip() else ""
            return o
        _score_fix(entry, doc, o)
    return o


# --------------------------------------------------------------------------------------------------
# scores


@dataclass
class Score:
    """Counts of one tool over a set of cases."""
    buggy: int = 0
    crash: int = 0
    clean: int = 0
    detected: int = 0
    exact: int = 0
    located: int = 0
    named: int = 0
    early: int = 0
    after_only: int = 0
    alarms: int = 0
    timeouts: int = 0
    patched: int = 0  # fix outcomes: buggy cases with a verified patch
    changed: int = 0  # fix outcomes: clean cases with a proposed patch


def score(entries: Iterable[dict[str, Any]], outcomes: Iterable[Outcome]) -> Score:
    """Sum the outcomes of `entries` (one tool's outcomes)."""
    by_file = {o.file: o for o in outcomes}
    s = Score()
    for e in entries:
        o = by_file.get(e["file"])
        if o is None:
            continue
        s.timeouts += o.status == "timeout"
        if e.get("clean"):
            s.clean += 1
            s.alarms += o.alarm
            s.changed += o.changed
            continue
        s.buggy += 1
        s.patched += o.patched
        crash = (e.get("symptom") or {}).get("kind") == "raises"
        s.crash += crash
        s.detected += o.detected
        s.exact += o.exact
        s.located += o.located
        s.named += o.named
        s.early += o.early and crash
        s.after_only += o.after_only
    return s


def _pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.0f}%)" if d else "-"


def _row(label: str, s: Score, baseline: bool = False) -> list[str]:
    return [label, _pct(s.detected, s.buggy), "-" if baseline else _pct(s.exact, s.buggy),
            _pct(s.located, s.buggy), _pct(s.named, s.buggy),
            "-" if baseline else _pct(s.early, s.crash), "-" if baseline else _pct(s.after_only, s.buggy),
            _pct(s.alarms, s.clean)]


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


HEADLINE = ["tool", "detected", "exact", "located", "named", "early (crash cases)", "after crash only",
            "false alarms (clean)"]


def headline(entries: list[dict[str, Any]], outcomes: list[Outcome]) -> list[str]:
    """The headline table: one row per tool that ran."""
    rows = [_row(TOOL_LABELS[t], score(entries, [o for o in outcomes if o.tool == t]), t != "graphguard")
            for t in TOOLS if any(o.tool == t for o in outcomes)]
    return _table(HEADLINE, rows)


def per_category(entries: list[dict[str, Any]], outcomes: list[Outcome]) -> list[str]:
    """graphguard per category (clean programs last); with a fix pass, its column too."""
    gg = [o for o in outcomes if o.tool == "graphguard"]
    fx = [o for o in outcomes if o.tool == "fix"]
    rows = []
    for cat in sorted({e["category"] for e in entries if not e.get("clean")}):
        mine = [e for e in entries if e["category"] == cat]
        s = score(mine, gg or fx)  # a fix-only run: the case counts from the fix outcomes
        row = [f"{cat} ({', '.join(verify.CATEGORIES.get(cat, ()))})", str(s.buggy)] + _row("", s)[1:7]
        if fx:
            f = score(mine, fx)
            row.append(_pct(f.patched, f.buggy))
        rows.append(row)
    s = score([e for e in entries if e.get("clean")], gg or fx)
    if s.clean:
        row = ["clean", str(s.clean), "", "", "", "", "", f"false alarms {_pct(s.alarms, s.clean)}"]
        if fx:
            f = score([e for e in entries if e.get("clean")], fx)
            row.append(f"changed {_pct(f.changed, f.clean)}")
        rows.append(row)
    header = ["category (codes)", "cases", "detected", "exact", "located", "named", "early", "after crash only"]
    return _table(header + (["verified patch"] if fx else []), rows)


def fix_summary(entries: list[dict[str, Any]], outcomes: list[Outcome]) -> list[str]:
    """The fix pass in a few lines: the share patched, clean programs changed, kept families."""
    fx = [o for o in outcomes if o.tool == "fix"]
    if not fx:
        return []
    s = score(entries, fx)
    fams: dict[str, int] = {}
    for o in fx:
        for p in o.patches:
            if not o.changed:
                fams[f"{p['code']} {p['family']}"] = fams.get(f"{p['code']} {p['family']}", 0) + 1
    out = [f"- buggy cases with a verified patch: {_pct(s.patched, s.buggy)}",
           f"- clean cases changed: {_pct(s.changed, s.clean)}"]
    if fams:
        out.append("- patches kept, by finding code and family: "
                   + ", ".join(f"{k} {n}" for k, n in sorted(fams.items())))
    return out


def _describe(o: Outcome) -> str:
    if o.status in ("timeout", "no-report"):
        return o.status + (f" ({o.error})" if o.error else "")
    if not o.findings:
        return "nothing"
    return "; ".join(f"{f['code']}{'' if f.get('before_crash', True) else ' (after the crash)'} `{f['name']}` at "
                     f"{', '.join(f['lines']) or '?'}" for f in o.findings)


def render_docs(entries: list[dict[str, Any]], outcomes: list[Outcome]) -> str:
    """docs/accuracy.md (deterministic: everything sorted, no timings or dates)."""
    import torch
    gg = {o.file: o for o in outcomes if o.tool == "graphguard"}
    buggy = sorted((e for e in entries if not e.get("clean")), key=lambda e: e["file"])
    clean = sorted((e for e in entries if e.get("clean")), key=lambda e: e["file"])
    kinds = sorted({e.get("source_kind", "?") for e in entries})
    by_kind = ", ".join(f"{k} {sum(e.get('source_kind') == k for e in entries)}" for k in kinds)
    lines = [
        "# Accuracy on real autograd bugs",
        "",
        "Generated by `make accuracy` (`benchmarks/accuracy.py`) from the realbugs benchmark "
        "(`benchmarks/realbugs/`); do not edit by hand.",
        f"{len(buggy)} buggy programs in {len({e['category'] for e in buggy})} categories and "
        f"{len(clean)} clean programs (sources: {by_kind}); torch {torch.__version__.split('+')[0]}.",
        "",
        *headline(entries, outcomes),
        "",
        "## graphguard per category",
        "",
        *per_category(entries, outcomes),
        "",
        "## Method",
        "",
        "The cases are small reproductions of autograd misuse that people reported in public (GitHub "
        "issues and pull requests, PyTorch forum threads, Q&A pages, blog posts, course notes), rewritten "
        "small but keeping the reporter's names, control flow and the misuse; plus clean, well-known "
        "training programs and correct near misses. `tests/test_realbugs.py` checks that each misbehaves "
        "under plain PyTorch as its manifest entry states (`benchmarks/realbugs/README.md`).",
        "",
        "Each case runs in its own process under each tool: graphguard as `graphguard run --mode collect "
        "--no-diagrams --json ...` (only the JSON report is read), plain PyTorch as `python case.py`, and "
        "`torch.autograd.set_detect_anomaly(True)` set by a wrapper before the script runs. Columns "
        "(percentages over the buggy cases):",
        "",
        "- **detected**: a finding of any severity whose code is one of the category's codes, made "
        "from the guard's own evidence (baselines: the program raises). A finding with `before_crash: "
        "false` is graphguard's account of an error PyTorch had already raised (GG903's, under the "
        "family's code): it counts in **after crash only**, not here nor in exact, located and named;",
        "- **exact**: such a finding with the category's primary code;",
        "- **located**: such a finding's location, subject creation site or a related location is the "
        "offender's line or one of the fix lines (baselines: a line of the printed traceback, including "
        "detect_anomaly's forward traceback, is);",
        "- **named**: such a finding's subject is named as the program names the offender; `self.fc` "
        "in a method and `model.fc` outside it count as the same name (baselines: the name appears in "
        "the error text);",
        "- **early** (over the cases that crash under plain PyTorch): such a finding was reported "
        "before PyTorch raised (`before_crash`); baselines never are;",
        "- **after crash only**: the category's codes came only in accounts given after PyTorch raised;",
        "- **false alarms** (over the clean programs): a finding of severity warning or error, or "
        "the program raises (or leaves no report) under graphguard, which it does not under plain "
        "PyTorch (baselines: the program raises).",
        "",
        "## Misses",
        "",
        "Buggy cases graphguard did not detect, locate or name, with what it reported instead.",
        "",
    ]
    misses = []
    for e in buggy:
        o = gg.get(e["file"])
        if o is None:
            continue
        lacks = [k for k in ("detected", "located", "named") if not getattr(o, k)]
        if lacks:
            off = e.get("offender") or {}
            misses.append(f"- `{e['file']}` ({e['category']}; offender `{off.get('name')}` line "
                          f"{off.get('line')}): not {', '.join(lacks)}; reported: {_describe(o)}")
    lines += misses or ["None."]
    fx = {o.file: o for o in outcomes if o.tool == "fix"}
    if fx:
        lines += ["", "## graphguard fix", "",
                  "`graphguard fix` on every case, each verification run cut to a few optimizer steps "
                  "(`benchmarks/accuracy.py --fix-steps`, `--fix-runs`): a buggy case counts as patched when a "
                  "patch proven by a guarded re-run removed a finding with one of the category's codes and "
                  "none of those was left without one; a clean case must get no patch at all.", "",
                  *fix_summary(entries, outcomes), "",
                  "Buggy cases without a verified patch:", ""]
        unpatched = [f"- `{e['file']}` ({e['category']}): " + (fx[e["file"]].status if fx[e["file"]].status != "ok"
                     else ("kept " + ", ".join(f"{p['code']} {p['family']}" for p in fx[e["file"]].patches)
                           if fx[e["file"]].patches else "no patch kept"))
                     for e in buggy if e["file"] in fx and not fx[e["file"]].patched]
        lines += unpatched or ["None."]
        changed = [f"- `{e['file']}`: " + ", ".join(f"{p['code']} {p['family']}" for p in fx[e["file"]].patches)
                   for e in clean if e["file"] in fx and fx[e["file"]].changed]
        if changed:
            lines += ["", "Clean cases fix changed:", "", *changed]
    lines += ["", "## False alarms", "",
              "Clean programs with a warning or error finding, or broken by graphguard.", ""]
    alarms = [f"- `{e['file']}` ({e.get('pattern')}): " + _alarm_text(gg[e["file"]])
              for e in clean if e["file"] in gg and gg[e["file"]].alarm]
    lines += alarms or ["None."]
    broken = sorted(f"- `{o.file}` under {TOOL_LABELS[o.tool]}: {o.status}" + (f" ({o.error})" if o.error else "")
                    for o in outcomes if o.status in ("timeout", "no-report"))
    if broken:
        lines += ["", "## Runs without a result", "", "Timed out, or graphguard wrote no report.", "", *broken]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------
# command line


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-j", "--jobs", type=int, default=2, help="runs in parallel (default 2)")
    ap.add_argument("--category", help="only these categories (comma-separated; 'clean' too)")
    ap.add_argument("--cases", nargs="+", help="only these case files (relative to cases/)")
    ap.add_argument("--no-baselines", action="store_true", help="run graphguard only")
    ap.add_argument("--json", type=Path, help="write every outcome there")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per run (default 60)")
    ap.add_argument("--no-docs", action="store_true", help="do not rewrite docs/accuracy.md")
    ap.add_argument("--no-fix", action="store_true", help="skip the `graphguard fix` pass")
    ap.add_argument("--only-fix", action="store_true", help="run the `graphguard fix` pass only")
    ap.add_argument("--fix-steps", type=int, default=3, help="optimizer steps per verification run (default 3)")
    ap.add_argument("--fix-runs", type=int, default=4, help="verification runs per case (default 4)")
    ap.add_argument("--fix-timeout", type=float, default=150.0,
                    help="seconds for the whole fix of one case (default 150)")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve:
        return _serve()

    entries = [e for e in verify.load_manifest()
               if isinstance(e, dict) and isinstance(e.get("file"), str) and (verify.CASES / e["file"]).is_file()]
    if args.category:
        cats = set(args.category.split(","))
        entries = [e for e in entries if e.get("category") in cats]
    if args.cases:
        wanted = {str(Path(c)) for c in args.cases}
        entries = [e for e in entries if e["file"] in wanted
                   or any(str(verify.CASES / e["file"]).endswith(w) for w in wanted)]
    entries.sort(key=lambda e: e["file"])
    if not entries:
        print("no cases selected")
        return 1
    tools: tuple[str, ...] = () if args.only_fix else ("graphguard",) if args.no_baselines else TOOLS
    if not args.no_fix:
        tools += ("fix",)
    # the fix jobs first: they are the longest, so the pool ends with short runs
    jobs = [(e, t) for t in sorted(tools, key=lambda t: t != "fix") for e in entries]
    t0 = time.perf_counter()
    done = 0

    def one(job: tuple[dict[str, Any], str]) -> Outcome:
        nonlocal done
        if job[1] == "fix":
            o = run_fix(job[0], args.fix_steps, args.fix_runs, args.fix_timeout)
        else:
            o = run_tool(job[0], job[1], args.timeout)
        done += 1
        if o.status in ("timeout", "no-report"):
            print(f"  {o.tool}: {o.file}: {o.status}", file=sys.stderr, flush=True)
        if done % 25 == 0:
            print(f"  {done}/{len(jobs)} runs, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        return o

    try:
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            outcomes = list(pool.map(one, jobs))
    finally:
        for server in _servers.values():
            server.close()
    wall = time.perf_counter() - t0
    print("\n".join(headline(entries, outcomes)))
    print()
    print("\n".join(per_category(entries, outcomes)))
    if "fix" in tools:
        print("\ngraphguard fix:")
        print("\n".join(fix_summary(entries, outcomes)))
    print(f"\n{len(entries)} cases, {len(jobs)} runs in {wall:.0f} s (-j {args.jobs})")
    if args.json:
        args.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=1) + "\n")
    full = not (args.category or args.cases or args.no_baselines or args.no_docs or args.only_fix)
    if full:
        DOCS.write_text(render_docs(entries, outcomes))
        print(f"wrote {DOCS.relative_to(ROOT)}")
    elif not args.no_docs:
        print("(a partial run: docs/accuracy.md not rewritten)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
