"""Check that every realbugs case misbehaves (or stays clean) under plain PyTorch as its manifest says.

    python benchmarks/realbugs/verify.py                       # every manifest case
    python benchmarks/realbugs/verify.py cases/x/y.py ...      # some (paths, or relative to cases/)
    python benchmarks/realbugs/verify.py --update-manifest     # rewrite `verified` in the manifest files

Each case runs as `__main__` (runpy.run_path, the entry script's folder first on sys.path, cwd
unchanged) under an instrumented probe (see `Probe`): optimizer step pre-hooks record, per parameter,
whether its gradient is None / all zero at each step and its value at the first step; wrappers of
torch.autograd.backward / Tensor.backward / torch.autograd.grad count the graph nodes reachable from
the tensors passed in; the `torch.nn.functional` losses (which the `nn.*Loss` modules call) notice a
target / weight / pos_weight that requires grad. Then the stated symptom is checked (README.md).

Cases run in a few long-lived worker subprocesses (`--jobs`, default 2), one case at a time each,
with fresh globals; after a case the worker restores sys.modules, sys.path, sys.argv, torch's default
dtype and device, grad / anomaly / deterministic modes, thread count, optimizer and module global
hooks, and the probe's patches. A case that runs longer than `--timeout` seconds fails (a worker that
does not answer at all is killed and replaced).

The manifest checks (`check_manifest`) need no run: fields present and well typed, files exist,
lines in range, the offender line names the offender, no giveaway comments, known category, a URL.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import os
import queue
import re
import select
import subprocess
import sys
import threading
import time
import tokenize
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

__all__ = [
    "CATEGORIES", "CASES", "EFFECTS", "HERE", "SOURCE_KINDS",
    "CaseResult", "LineRef", "Probe", "Problem",
    "case_files", "check_manifest", "entry_passes", "load_manifest", "load_manifest_files",
    "main", "parse_line_ref", "update_manifest", "verify_cases",
]

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
MANIFEST = HERE / "manifest.json"
PARTS = HERE / "parts"

#: category -> graphguard codes that are right for it; the first is the primary code (README.md).
CATEGORIES: dict[str, tuple[str, ...]] = {
    "stale-graph": ("GG001", "GG003", "GG004", "GG102"),
    "double-backward": ("GG003", "GG001"),
    "carried-state": ("GG004", "GG001", "GG102", "GG101"),
    "retain-graph-growth": ("GG102", "GG001", "GG004"),
    "graph-leak": ("GG101", "GG004"),
    "non-detached-target": ("GG002",),
    "inplace-saved-tensor": ("GG005",),
    "leaf-inplace": ("GG006",),
    "non-leaf-parameter": ("GG007", "GG008"),
    "cut-path": ("GG008", "GG009"),
    "loss-without-grad": ("GG009", "GG008"),
    "lost-history": ("GG008", "GG009", "GG104"),
    "optimizer-not-reached": ("GG008", "GG011"),
    "zero-gradient": ("GG013", "GG008"),
    "unregistered-parameter": ("GG011",),
    "missing-zero-grad": ("GG010",),
    "non-scalar-loss": ("GG012",),
    "copy-construct-detach": ("GG104", "GG008", "GG009"),
    "no-grad-forward": ("GG014", "GG008", "GG009"),
    "checkpoint-no-grad-input": ("GG015", "GG008"),
    "param-data-assign": ("GG016", "GG008"),
}
SOURCE_KINDS = frozenset({"github-issue", "forum", "qa", "blog", "docs", "other"})
EFFECTS = frozenset({"grad-none", "grad-zero", "param-unchanged", "graph-grows",
                     "target-requires-grad", "expr"})
#: words a comment or docstring of a case must not contain (matched at the start of a word).
GIVEAWAY = re.compile(r"\b(expect|bug|fix|wrong|should|misuse)", re.IGNORECASE)
URL = re.compile(r"^https?://[^\s/]+\.[^\s]+$")
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: keyword arguments of a loss function that must not require grad.
LOSS_ARGS = ("target", "targets", "weight", "pos_weight")
GRAPH_NODE_CAP = 500_000


# --------------------------------------------------------------------------------------------------
# manifest


def load_manifest_files(root: Path = HERE) -> list[tuple[Path, list[dict[str, Any]]]]:
    """Every manifest file with its entries: `manifest.json` first, then `parts/*.json` (sorted).

    A missing manifest.json is an empty list (the parts are transitional)."""
    files = [root / "manifest.json"] + sorted((root / "parts").glob("*.json"))
    out: list[tuple[Path, list[dict[str, Any]]]] = []
    for f in files:
        if not f.is_file():
            continue
        data = json.loads(f.read_text(encoding="utf-8") or "[]")
        if not isinstance(data, list):
            raise ValueError(f"{f}: a manifest file holds a JSON list, not {type(data).__name__}")
        out.append((f, data))
    return out


def load_manifest(root: Path = HERE) -> list[dict[str, Any]]:
    """All manifest entries: manifest.json plus parts/*.json.

    An entry of a part replaces the manifest.json entry for the same `file` (the part is newer while
    both exist); entries are returned in file order, manifest.json first."""
    merged: dict[str, dict[str, Any]] = {}
    anonymous: list[dict[str, Any]] = []
    for _, entries in load_manifest_files(root):
        for e in entries:
            key = e.get("file") if isinstance(e, dict) else None
            if isinstance(key, str):
                merged[key] = e
            else:
                anonymous.append(e)
    return list(merged.values()) + anonymous


@dataclass(frozen=True)
class LineRef:
    """A line of a case: `path` is absolute, `line` 1-based."""
    path: Path
    line: int

    def text(self) -> str | None:
        """The source line, or None when the file or line does not exist."""
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError:
            return None
        return lines[self.line - 1] if 1 <= self.line <= len(lines) else None


def parse_line_ref(ref: Any, entry_file: str, cases: Path = CASES) -> LineRef | None:
    """`21` (a line of the entry's file) or `"pkg/model.py:14"` (path relative to cases/), else None."""
    if isinstance(ref, bool):
        return None
    if isinstance(ref, int):
        return LineRef(cases / entry_file, ref)
    if isinstance(ref, str):
        m = re.fullmatch(r"(.+\.py):(\d+)", ref.strip())
        if m:
            return LineRef(cases / m.group(1), int(m.group(2)))
        if ref.strip().isdigit():
            return LineRef(cases / entry_file, int(ref))
    return None


def case_files(entry_file: str, cases: Path = CASES) -> list[Path]:
    """The Python files of a case: the script, or every .py of its package folder."""
    path = cases / entry_file
    parts = Path(entry_file).parts
    if len(parts) > 2:  # <category>/<slug>/train.py: a package case
        folder = cases / parts[0] / parts[1]
        return sorted(folder.rglob("*.py"))
    return [path]


@dataclass(frozen=True)
class Problem:
    """A manifest problem of one entry (`file` as written in the entry, or a placeholder)."""
    file: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.message}"


def _giveaways(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of every comment or docstring of `path` with a giveaway word."""
    try:
        src = path.read_text(encoding="utf-8")
    except OSError:
        return
    try:
        for tok in tokenize.generate_tokens(io.StringIO(src).readline):
            if tok.type == tokenize.COMMENT and GIVEAWAY.search(tok.string):
                yield tok.start[0], tok.string.strip()
    except (tokenize.TokenError, SyntaxError):
        pass
    try:
        tree = ast.parse(src)
    except SyntaxError as e:
        yield e.lineno or 0, f"syntax error: {e.msg}"
        return
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc and GIVEAWAY.search(doc):
                line = node.body[0].lineno if node.body else 1
                yield line, f"docstring {doc.strip().splitlines()[0][:60]!r}"


def _check_entry(e: Any, cases: Path) -> list[str]:
    """Problems of one entry, as messages."""
    if not isinstance(e, dict):
        return [f"an entry is a JSON object, not {type(e).__name__}"]
    msgs: list[str] = []

    def typed(key: str, types: tuple[type, ...], nullable: bool = False) -> Any:
        if key not in e:
            msgs.append(f"missing field {key!r}")
            return None
        v = e[key]
        if v is None and nullable:
            return None
        if isinstance(v, bool) and bool not in types or not isinstance(v, types):
            msgs.append(f"{key!r} has type {type(v).__name__}")
            return None
        return v

    file = typed("file", (str,))
    url = typed("source_url", (str,))
    kind = typed("source_kind", (str,))
    category = typed("category", (str,))
    clean = typed("clean", (bool,))
    symptom = typed("symptom", (dict,))
    typed("verified", (bool,))
    typed("notes", (str,))
    if url is not None and not URL.match(url):
        msgs.append(f"source_url {url!r} does not look like a URL")
    if kind is not None and kind not in SOURCE_KINDS:
        msgs.append(f"source_kind {kind!r} not one of {sorted(SOURCE_KINDS)}")
    if category is not None and category not in CATEGORIES and category != "clean":
        msgs.append(f"unknown category {category!r}")
    if file is not None:
        path = cases / file
        if not path.is_file():
            msgs.append(f"no file cases/{file}")
        elif category is not None and Path(file).parts[0] != category:
            msgs.append(f"file is not under cases/{category}/")
        for f in case_files(file, cases) if path.is_file() else []:
            for line, text in _giveaways(f):
                msgs.append(f"giveaway comment at {f.relative_to(cases)}:{line}: {text}")
    if symptom is not None:
        sk = symptom.get("kind")
        if sk == "raises":
            for k in ("exception", "message"):
                if not isinstance(symptom.get(k), str) or not symptom.get(k):
                    msgs.append(f"symptom 'raises' needs a non-empty string {k!r}")
        elif sk == "silent":
            if symptom.get("effect") not in EFFECTS:
                msgs.append(f"symptom effect {symptom.get('effect')!r} not one of {sorted(EFFECTS)}")
            check = symptom.get("check")
            if check is None and symptom.get("effect") == "expr":
                msgs.append("symptom effect 'expr' needs a 'check'")
            if check is not None:
                if not isinstance(check, str):
                    msgs.append("symptom check is a string")
                else:
                    try:
                        compile(check, "<check>", "eval")
                    except SyntaxError as err:
                        msgs.append(f"symptom check does not compile: {err.msg}")
        elif sk != "clean":
            msgs.append(f"symptom kind {sk!r} not one of raises / silent / clean")
        if clean is True and sk != "clean":
            msgs.append("a clean entry has symptom kind 'clean'")
        if clean is False and sk == "clean":
            msgs.append("a buggy entry has symptom kind 'raises' or 'silent'")
    if clean is True:
        if category is not None and category != "clean":
            msgs.append("a clean entry has category 'clean'")
        if not isinstance(e.get("pattern"), str) or not e.get("pattern"):
            msgs.append("a clean entry needs a 'pattern'")
        for k in ("offender", "misuse_line", "fix_lines"):
            if e.get(k) is not None:
                msgs.append(f"a clean entry has {k!r} null")
    elif clean is False and file is not None:
        if category == "clean":
            msgs.append("a buggy entry cannot have category 'clean'")
        msgs.extend(_check_lines(e, file, cases))
    return msgs


def _check_lines(e: dict[str, Any], file: str, cases: Path) -> list[str]:
    """Offender / misuse / fix lines of a buggy entry: typed, in range, the offender line names it."""
    msgs: list[str] = []
    refs: list[tuple[str, Any]] = []
    off = e.get("offender")
    if not isinstance(off, dict) or not isinstance(off.get("name"), str) or not off.get("name"):
        msgs.append("offender is {'name': str, 'line': int | 'path:line'}")
        off = None
    else:
        refs.append(("offender.line", off.get("line")))
    refs.append(("misuse_line", e.get("misuse_line")))
    fixes = e.get("fix_lines")
    if not isinstance(fixes, list) or not fixes:
        msgs.append("fix_lines is a non-empty list of lines")
        fixes = []
    refs.extend((f"fix_lines[{i}]", v) for i, v in enumerate(fixes))
    folder = (cases / file).parent if len(Path(file).parts) > 2 else None
    for label, ref in refs:
        lr = parse_line_ref(ref, file, cases)
        if lr is None:
            msgs.append(f"{label} {ref!r} is not a line number or 'path:line'")
            continue
        if lr.path != cases / file and (folder is None or folder not in lr.path.parents):
            msgs.append(f"{label} {ref!r} is outside the case")
            continue
        text = lr.text()
        if text is None:
            msgs.append(f"{label} {ref!r} is out of range (or its file does not exist)")
            continue
        if label == "offender.line" and off is not None:
            parts = IDENT.findall(off["name"])
            if parts and not any(re.search(rf"\b{re.escape(p)}\b", text) for p in parts):
                msgs.append(f"offender line {ref!r} ({text.strip()!r}) does not mention "
                            f"{off['name']!r} (drifted line number?)")
    return msgs


def check_manifest(entries: Iterable[Any] | None = None, cases: Path = CASES,
                   files: Iterable[tuple[Path, list[Any]]] | None = None) -> list[Problem]:
    """Every manifest problem: per entry (`_check_entry`), plus a `file` listed twice.

    `files` (default: the manifest files on disk) is used for the duplicate check, which needs the
    entries before `load_manifest` merges them; `entries` defaults to `load_manifest()`."""
    entries = load_manifest() if entries is None else list(entries)
    problems: list[Problem] = []
    for e in entries:
        name = e.get("file") if isinstance(e, dict) and isinstance(e.get("file"), str) else "<entry>"
        problems.extend(Problem(name, m) for m in _check_entry(e, cases))
    seen: dict[str, Path] = {}
    for path, listed in load_manifest_files() if files is None else files:
        if path.name == "manifest.json":
            continue  # a part may replace a manifest.json entry while both exist
        for e in listed:
            f = e.get("file") if isinstance(e, dict) else None
            if isinstance(f, str):
                if f in seen:
                    problems.append(Problem(f, f"listed twice ({seen[f].name}, {path.name})"))
                seen[f] = path
    return problems


# --------------------------------------------------------------------------------------------------
# the probe (runs inside a worker)


@dataclass
class ParamRecord:
    """What the optimizer step pre-hooks saw of one parameter."""
    param: Any
    first: Any  # its value at the first step (a detached clone)
    grads: list[str] = field(default_factory=list)  # per step: "none" | "zero" | "nonzero"


class Probe:
    """The harness's record of one run; a case's `check` expression sees it as `probe`.

    Attributes: `steps` (optimizer steps), `backwards` (backward / autograd.grad calls),
    `graph_sizes` (graph nodes reachable from the tensors passed in, per backward call),
    `target_grad` (loss calls whose target / weight / pos_weight required grad: "mse_loss(target)"),
    `params` (id(parameter) -> ParamRecord)."""

    def __init__(self) -> None:
        self.steps = 0
        self.backwards = 0
        self.graph_sizes: list[int] = []
        self.target_grad: list[str] = []
        self.params: dict[int, ParamRecord] = {}
        self._undo: list[Callable[[], None]] = []
        self._depth = 0

    # -- recording
    def _on_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        import torch
        self.steps += 1
        with torch.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    rec = self.params.get(id(p))
                    if rec is None or rec.param is not p:
                        rec = self.params[id(p)] = ParamRecord(p, p.detach().clone())
                    g = p.grad
                    if g is None:
                        rec.grads.append("none")
                    elif g.is_sparse or not bool((g != 0).any()):
                        rec.grads.append("zero" if not g.is_sparse or g._nnz() == 0 else "nonzero")
                    else:
                        rec.grads.append("nonzero")

    @staticmethod
    def graph_size(roots: Iterable[Any]) -> int:
        """Distinct autograd nodes reachable from the grad_fns of `roots` (capped)."""
        seen: set[int] = set()
        stack = [t.grad_fn for t in roots if getattr(t, "grad_fn", None) is not None]
        while stack and len(seen) < GRAPH_NODE_CAP:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            stack.extend(n for n, _ in node.next_functions if n is not None)
        return len(seen)

    def _wrap_backward(self, orig: Callable[..., Any], roots_of: Callable[..., Any]) -> Callable[..., Any]:
        import torch
        probe = self

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if probe._depth == 0:
                try:
                    roots = roots_of(*args, **kwargs)
                    roots = [roots] if isinstance(roots, torch.Tensor) else list(roots or ())
                    size = probe.graph_size(r for r in roots if isinstance(r, torch.Tensor))
                except Exception:
                    size = 0
                probe.backwards += 1
                probe.graph_sizes.append(size)
            probe._depth += 1
            try:
                return orig(*args, **kwargs)
            finally:
                probe._depth -= 1

        wrapper.__wrapped__ = orig  # type: ignore[attr-defined]
        wrapper.__name__ = getattr(orig, "__name__", "backward")
        wrapper.__doc__ = getattr(orig, "__doc__", None)
        return wrapper

    def _wrap_loss(self, name: str, orig: Callable[..., Any]) -> Callable[..., Any]:
        import inspect
        import torch
        probe = self
        try:
            sig: inspect.Signature | None = inspect.signature(orig)
        except (TypeError, ValueError):
            sig = None

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                bound = sig.bind_partial(*args, **kwargs).arguments if sig else kwargs
                for k in LOSS_ARGS:
                    v = bound.get(k)
                    if isinstance(v, torch.Tensor) and v.requires_grad:
                        note = f"{name}({k})"
                        if note not in probe.target_grad:
                            probe.target_grad.append(note)
            except Exception:
                pass
            return orig(*args, **kwargs)

        wrapper.__wrapped__ = orig  # type: ignore[attr-defined]
        wrapper.__name__ = name
        wrapper.__doc__ = getattr(orig, "__doc__", None)
        return wrapper

    # -- installing
    def _patch(self, owner: Any, name: str, value: Any) -> None:
        had = name in vars(owner)
        old = vars(owner).get(name)
        setattr(owner, name, value)
        self._undo.append(lambda: setattr(owner, name, old) if had else delattr(owner, name))

    def install(self) -> None:
        """Register the step pre-hook and patch backward / grad / the functional losses."""
        import torch
        import torch.nn.functional as F
        from torch.optim.optimizer import register_optimizer_step_pre_hook
        handle = register_optimizer_step_pre_hook(self._on_step)
        self._undo.append(handle.remove)
        ag = torch.autograd
        self._patch(ag, "backward", self._wrap_backward(
            ag.backward, lambda tensors, *a, **k: tensors))
        self._patch(ag, "grad", self._wrap_backward(
            ag.grad, lambda outputs, *a, **k: outputs))
        self._patch(torch.Tensor, "backward", self._wrap_backward(
            torch.Tensor.backward, lambda self_, *a, **k: self_))
        for name in dir(F):
            fn = getattr(F, name)
            if callable(fn) and not isinstance(fn, type) and (
                    name.endswith("_loss") or name in ("cross_entropy", "binary_cross_entropy",
                                                       "binary_cross_entropy_with_logits", "kl_div")):
                self._patch(F, name, self._wrap_loss(name, fn))

    def uninstall(self) -> None:
        """Undo `install` (in reverse order)."""
        while self._undo:
            self._undo.pop()()

    # -- effects
    def effects(self, names: dict[int, str] | None = None) -> dict[str, list[str]]:
        """Which silent effects the run showed, each with the parameters (or calls) behind it."""
        import torch
        names = names or {}
        out: dict[str, list[str]] = {k: [] for k in sorted(EFFECTS - {"expr"})}
        for pid, rec in self.params.items():
            label = names.get(pid, f"<param {tuple(rec.param.shape)}>")
            if rec.grads and all(g == "none" for g in rec.grads):
                out["grad-none"].append(label)
            if rec.grads and all(g != "nonzero" for g in rec.grads) and "zero" in rec.grads:
                out["grad-zero"].append(label)
            with torch.no_grad():
                p = rec.param.detach()
                if p.shape == rec.first.shape and p.dtype == rec.first.dtype and torch.equal(p, rec.first):
                    out["param-unchanged"].append(label)
        s = self.graph_sizes
        if len(s) >= 3 and s[-3] < s[-2] < s[-1] and s[-1] >= 2 * s[0] and s[-1] > 0:
            out["graph-grows"].append(f"{s[0]} -> {s[-1]} nodes")
        out["target-requires-grad"] = list(self.target_grad)
        return {k: v for k, v in out.items() if v}


def _param_names(globs: dict[str, Any]) -> dict[int, str]:
    """id(tensor) -> a name the script uses for it (`model.fc.weight`, `w`)."""
    import torch
    names: dict[int, str] = {}
    for var, v in sorted(globs.items()):
        if var.startswith("__"):
            continue
        if isinstance(v, torch.nn.Module):
            try:
                for n, p in v.named_parameters(prefix=var, remove_duplicate=False):
                    names.setdefault(id(p), n)
            except Exception:
                pass
        elif isinstance(v, torch.Tensor):
            names.setdefault(id(v), var)
    return names


# --------------------------------------------------------------------------------------------------
# running one case (inside a worker)


class CaseTimeout(BaseException):
    """Raised in a case that ran out of time (a BaseException: `except Exception` does not catch it)."""


@dataclass
class CaseResult:
    """The outcome of one case."""
    file: str  # as in the manifest
    ok: bool
    reason: str  # "" when ok
    seconds: float = 0.0
    exception: dict[str, Any] | None = None  # {"type", "mro", "message", "frames": [[path, line]]}
    effects: dict[str, list[str]] = field(default_factory=dict)
    steps: int = 0
    backwards: int = 0
    graph_sizes: list[int] = field(default_factory=list)
    stderr_tail: str = ""


class _GlobalState:
    """Process-wide state a case may change, captured before it runs and restored after."""

    def __init__(self) -> None:
        import torch
        import torch.nn.modules.module as mm
        import torch.optim.optimizer as om
        self.modules = dict(sys.modules)
        self.path = list(sys.path)
        self.argv = list(sys.argv)
        self.cwd = os.getcwd()
        self.dtype = torch.get_default_dtype()
        self.device = torch.get_default_device()
        self.grad = torch.is_grad_enabled()
        self.anomaly = (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())
        self.deterministic = torch.are_deterministic_algorithms_enabled()
        self.threads = torch.get_num_threads()
        self.hook_dicts = [getattr(mm, n) for n in dir(mm) if n.startswith("_global_") and n.endswith("hooks")
                           and isinstance(getattr(mm, n), dict)]
        self.hook_dicts += [om._global_optimizer_pre_hooks, om._global_optimizer_post_hooks]
        self.hooks = [dict(d) for d in self.hook_dicts]
        self.saved_hooks = torch._C._autograd._top_saved_tensors_default_hooks(True)
        self.modes = torch._C._len_torch_function_stack()

    def restore(self) -> None:
        import torch
        for name in [n for n in sys.modules if n not in self.modules]:
            if _owned_by_case(sys.modules[name]):
                del sys.modules[name]
        for name, mod in self.modules.items():
            if sys.modules.get(name) is not mod and not name.startswith("__main__"):
                sys.modules[name] = mod
        sys.path[:] = self.path
        sys.argv[:] = self.argv
        if os.getcwd() != self.cwd:
            os.chdir(self.cwd)
        torch.set_default_dtype(self.dtype)
        torch.set_default_device(self.device if str(self.device) != "cpu" else None)
        torch.set_grad_enabled(self.grad)
        torch.set_anomaly_enabled(*self.anomaly)
        torch.use_deterministic_algorithms(self.deterministic)
        torch.set_num_threads(self.threads)
        for d, saved in zip(self.hook_dicts, self.hooks):
            d.clear()
            d.update(saved)
        while (torch._C._autograd._top_saved_tensors_default_hooks(True) != self.saved_hooks
               and torch._C._autograd._top_saved_tensors_default_hooks(True) is not None):
            torch._C._autograd._pop_saved_tensors_default_hooks()
        while torch._C._len_torch_function_stack() > self.modes:
            torch._C._pop_torch_function_stack()


def _owned_by_case(mod: Any) -> bool:
    """A module a case brought (its package's `model`, ...), not a library it imported lazily."""
    prefixes = (sys.prefix, sys.base_prefix, sys.exec_prefix)
    places = [getattr(mod, "__file__", None)] + list(getattr(mod, "__path__", None) or [])
    places = [os.path.realpath(p) for p in places if isinstance(p, str) and p]
    return any(not p.startswith(prefixes) for p in places)


def _exception_info(exc: BaseException, files: set[str]) -> dict[str, Any]:
    """Type, MRO names, message, and the traceback frames inside the case's files."""
    frames = [[fs.filename, fs.lineno] for fs in traceback.extract_tb(exc.__traceback__)
              if os.path.realpath(fs.filename) in files]
    mro = [c.__name__ for c in type(exc).__mro__] + [f"{c.__module__}.{c.__qualname__}" for c in type(exc).__mro__]
    return {"type": type(exc).__name__, "mro": mro, "message": str(exc)[:4000], "frames": frames}


def judge(symptom: dict[str, Any], exc: dict[str, Any] | None, effects: dict[str, list[str]],
          check: tuple[bool, str] | None) -> str:
    """Why the observed run does not match `symptom` ("" when it does)."""
    kind = symptom.get("kind")
    got = f"{exc['type']}: {exc['message'].splitlines()[0][:160] if exc['message'] else ''}" if exc else ""
    if kind == "raises":
        if exc is None:
            return f"expected {symptom.get('exception')} but the script ran without an exception"
        if symptom.get("exception") not in exc["mro"]:
            return f"expected {symptom.get('exception')}, got {got}"
        if not exc["message"].startswith(symptom.get("message", "")):
            return f"message does not start with {symptom.get('message')!r}: got {got}"
        return ""
    if exc is not None:
        return f"expected no exception, got {got}"
    if kind == "clean":
        return ""
    if kind != "silent":
        return f"unknown symptom kind {kind!r}"
    effect = symptom.get("effect")
    if effect != "expr" and effect not in effects:
        seen = ", ".join(f"{k} ({', '.join(v[:3])})" for k, v in sorted(effects.items())) or "none"
        return f"effect {effect} not observed (observed: {seen})"
    if check is not None and not check[0]:
        return f"check {symptom.get('check')!r} is {check[1]}"
    return ""


def run_case(file: str, symptom: dict[str, Any], timeout: float, cases: Path = CASES) -> CaseResult:
    """Run one case in this process (a worker) and judge it; restores global state afterwards."""
    import random
    import signal

    import torch
    path = (cases / file).resolve()
    files = {os.path.realpath(p) for p in case_files(file, cases)}
    state = _GlobalState()
    probe = Probe()
    out, err = io.StringIO(), io.StringIO()
    exc_info: dict[str, Any] | None = None
    globs: dict[str, Any] | None = None
    t0 = time.perf_counter()

    def on_alarm(signum: int, frame: Any) -> None:
        raise CaseTimeout(f"timed out after {timeout:g} s")

    old_handler = signal.signal(signal.SIGALRM, on_alarm)
    torch.manual_seed(0)
    random.seed(0)
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed(0)
    sys.path.insert(0, str(path.parent))
    sys.argv[:] = [str(path)]
    result: CaseResult
    try:
        probe.install()
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                import warnings
                with warnings.catch_warnings():
                    globs = runpy_run(str(path))
        except SystemExit as e:
            if e.code not in (None, 0):
                exc_info = _exception_info(e, files)
        except CaseTimeout as e:
            signal.setitimer(signal.ITIMER_REAL, 0)
            return CaseResult(file, False, str(e), time.perf_counter() - t0,
                              stderr_tail=err.getvalue()[-2000:])
        except BaseException as e:  # noqa: BLE001 - the case's own exception is the observation
            exc_info = _exception_info(e, files)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        probe.uninstall()
        effects = probe.effects(_param_names(globs) if globs else None)
        check: tuple[bool, str] | None = None
        expr = symptom.get("check")
        if symptom.get("kind") == "silent" and isinstance(expr, str) and exc_info is None:
            if globs is None:
                check = (False, "not evaluable (the script called sys.exit)")
            else:
                try:
                    with contextlib.redirect_stdout(io.StringIO()):
                        value = eval(expr, {**globs, "probe": probe})  # noqa: S307 - the manifest's own check
                    check = (bool(value), repr(value)[:80])
                except Exception as e:  # noqa: BLE001
                    check = (False, f"raising {type(e).__name__}: {e}"[:200])
        reason = judge(symptom, exc_info, effects, check)
        result = CaseResult(file, reason == "", reason, time.perf_counter() - t0, exc_info, effects,
                            probe.steps, probe.backwards, probe.graph_sizes[:50],
                            err.getvalue()[-2000:])
    finally:
        probe.uninstall()
        signal.signal(signal.SIGALRM, old_handler)
        globs = None
        state.restore()
    return result


def runpy_run(path: str) -> dict[str, Any]:
    """Run `path` as `__main__`, as `python path` does (cwd unchanged); return its final globals."""
    import runpy
    return runpy.run_path(path, run_name="__main__")


def _warm_up() -> None:
    """Train a tiny model once, so that torch's lazy imports (optimizers, dynamo checks) happen
    before the first case's clock starts, and stay loaded across cases."""
    import torch
    import torch.nn.functional as F
    import torch.utils.checkpoint  # noqa: F401
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())
    for opt_cls in (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW, torch.optim.RMSprop):
        opt = opt_cls(model.parameters(), lr=0.01)
        opt.zero_grad()
        F.mse_loss(model(torch.randn(3, 2)), torch.zeros(3, 2)).backward()
        opt.step()
    torch.autograd.grad(model(torch.randn(1, 2)).sum(), list(model.parameters()))


def _worker(cases: str) -> int:
    """Worker loop: one JSON request per stdin line, one JSON CaseResult per line on the original stdout."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # output a case writes below Python's sys.stdout goes nowhere
    import torch
    torch.set_num_threads(1)
    _warm_up()
    proto.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        try:
            res = run_case(req["file"], req["symptom"], req["timeout"], Path(cases))
        except BaseException as e:  # noqa: BLE001 - the harness must answer
            res = CaseResult(req["file"], False, f"harness error: {type(e).__name__}: {e}")
        proto.write(json.dumps(asdict(res), default=str) + "\n")
    return 0


# --------------------------------------------------------------------------------------------------
# the pool (parent side)


class _Worker:
    """One worker subprocess."""

    def __init__(self, cases: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", "--cases-dir", str(cases)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            cwd=os.getcwd(), env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"})
        self.buf = b""
        if self.read(120) is None:
            raise RuntimeError("a verify worker did not start")

    def read(self, timeout: float) -> dict[str, Any] | None:
        """The next JSON line, or None on timeout / exit."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return None
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def ask(self, req: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(req) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            return None
        return self.read(timeout)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            if self.proc.stdin:
                self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()


def verify_cases(entries: Iterable[dict[str, Any]], jobs: int = 2, timeout: float = 30.0,
                 cases: Path = CASES, on_result: Callable[[CaseResult], None] | None = None,
                 ) -> list[CaseResult]:
    """Run every entry's case in `jobs` worker subprocesses; results in the entries' order.

    An entry without a runnable file or symptom fails without running. `on_result` sees each result
    as it arrives (for progress output)."""
    entries = list(entries)
    results: dict[int, CaseResult] = {}
    todo: queue.Queue[tuple[int, dict[str, Any]]] = queue.Queue()
    lock = threading.Lock()

    def done(i: int, r: CaseResult) -> None:
        with lock:
            results[i] = r
            if on_result:
                on_result(r)

    for i, e in enumerate(entries):
        f, s = e.get("file"), e.get("symptom")
        if not isinstance(f, str) or not (cases / f).is_file():
            done(i, CaseResult(str(f), False, "no such case file"))
        elif not isinstance(s, dict):
            done(i, CaseResult(f, False, "no symptom"))
        else:
            todo.put((i, {"file": f, "symptom": s, "timeout": timeout}))

    def loop() -> None:
        w: _Worker | None = None
        try:
            while True:
                try:
                    i, req = todo.get_nowait()
                except queue.Empty:
                    return
                if w is None:
                    w = _Worker(cases)
                answer = w.ask(req, timeout + 30)
                if answer is None:
                    code = w.proc.poll()
                    w.kill()
                    w = None
                    why = (f"worker died (exit status {code})" if code is not None
                           else f"no answer after {timeout + 30:g} s (worker killed)")
                    done(i, CaseResult(req["file"], False, why, timeout + 30 if code is None else 0.0))
                else:
                    done(i, CaseResult(**answer))
        finally:
            if w is not None:
                w.close()

    threads = [threading.Thread(target=loop, daemon=True) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [results[i] for i in range(len(entries))]


# --------------------------------------------------------------------------------------------------
# command line


def entry_passes(result: CaseResult, problems: Iterable[Problem]) -> bool:
    """A case passes when it ran as stated and its manifest entry has no problem."""
    return result.ok and not any(p.file == result.file for p in problems)


def update_manifest(passing: dict[str, bool], root: Path = HERE) -> list[Path]:
    """Set `verified` of every listed entry (file -> passes) in manifest.json and parts/*.json;
    return the files that changed."""
    changed: list[Path] = []
    for path, entries in load_manifest_files(root):
        dirty = False
        for e in entries:
            if isinstance(e, dict) and e.get("file") in passing and e.get("verified") != passing[e["file"]]:
                e["verified"] = passing[e["file"]]
                dirty = True
        if dirty:
            path.write_text(json.dumps(entries, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            changed.append(path)
    return changed


def _select(entries: list[dict[str, Any]], args: list[str], cases: Path = CASES,
            ) -> tuple[list[dict[str, Any]], list[str]]:
    """The entries named by command-line paths (a case file, its folder, or a path under cases/)."""
    by_path = {(cases / e["file"]).resolve(): e for e in entries if isinstance(e.get("file"), str)}
    chosen: list[dict[str, Any]] = []
    unknown: list[str] = []
    for a in args:
        p = Path(a)
        cands = [p.resolve(), (cases / a).resolve()]
        hits = [e for c in cands for path, e in by_path.items() if path == c or c in path.parents]
        if not hits:
            unknown.append(a)
        for e in hits:
            if all(e is not x for x in chosen):
                chosen.append(e)
    return chosen, unknown


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="*", help="case files (default: every manifest case)")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per case")
    ap.add_argument("--update-manifest", action="store_true", help="rewrite `verified` in the manifest files")
    ap.add_argument("--json", type=Path, help="write the results there")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the stderr tail of failing cases")
    ap.add_argument("--root", type=Path, default=HERE,
                    help="a benchmark folder (cases/, manifest.json, parts/); default: this one")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--cases-dir", default=str(CASES), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return _worker(args.cases_dir)

    root = args.root.resolve()
    cases = root / "cases"
    entries = load_manifest(root)
    if args.cases:
        entries, unknown = _select(entries, args.cases, cases)
        for a in unknown:
            print(f"FAIL {a}: not in the manifest (manifest.json, parts/*.json)")
        if unknown and not entries:
            return 1
    else:
        unknown = []
    problems = check_manifest(entries, cases, load_manifest_files(root))
    t0 = time.perf_counter()
    width = max((len(str(e.get("file"))) for e in entries), default=20)

    def show(r: CaseResult) -> None:
        mine = [p.message for p in problems if p.file == r.file]
        if r.ok and not mine:
            print(f"OK   {r.file:{width}s}  {r.seconds:5.2f} s", flush=True)
        else:
            why = "; ".join(([r.reason] if r.reason else []) + [f"manifest: {m}" for m in mine])
            print(f"FAIL {r.file:{width}s}  {why}", flush=True)
            if args.verbose and r.stderr_tail.strip():
                print("     | " + r.stderr_tail.strip().replace("\n", "\n     | "))

    results = verify_cases(entries, jobs=args.jobs, timeout=args.timeout, cases=cases, on_result=show)
    for p in problems:
        if p.file not in {r.file for r in results}:
            print(f"FAIL {p}")
    passing = {r.file: entry_passes(r, problems) for r in results}
    n_ok = sum(passing.values())
    ran = sum(1 for r in results if r.ok)
    print(f"\n{n_ok}/{len(results)} cases pass ({ran} behave as stated, "
          f"{len({p.file for p in problems})} with manifest problems) in {time.perf_counter() - t0:.1f} s")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1, default=str) + "\n")
    if args.update_manifest:
        for f in update_manifest(passing, root):
            print(f"updated {f.relative_to(root)}")
    return 0 if n_ok == len(results) and not unknown and len(problems) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
