"""Run annotated case scripts and compare findings with their `# expect:` annotations.

A case file defines `buggy()` (misuse; lines annotated `# expect: GG001 name`) and `clean()` (the
"don't trigger" section: no finding allowed). Its header says how plain PyTorch misbehaves:
`# plain-torch: raises <regex>` or `# plain-torch: runs` (the file then asserts the silent damage
itself, e.g. `assert w.grad is None`). Names are the variable the finding names, `-` for none.
"""
from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from graphguard import GraphGuard

CASES = Path(__file__).parent / "cases"
_EXPECT = re.compile(r"#\s*expect:\s*(.+)$")
_PLAIN = re.compile(r"#\s*plain-torch:\s*(raises|runs)\s*(.*)$")


@dataclass(frozen=True)
class Expected:
    line: int
    code: str
    name: str | None


def load_case(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"gg_case_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def expectations(path: Path) -> set[Expected]:
    out = set()
    for i, line in enumerate(path.read_text().splitlines(), 1):
        m = _EXPECT.search(line)
        if not m:
            continue
        for item in m.group(1).split(","):
            parts = item.split()
            if not parts:
                continue
            name = parts[1] if len(parts) > 1 else None
            out.add(Expected(i, parts[0], None if name == "-" else name))
    return out


def plain_behaviour(path: Path) -> tuple[str, str]:
    for line in path.read_text().splitlines()[:5]:
        m = _PLAIN.search(line)
        if m:
            return m.group(1), m.group(2).strip().strip('"')
    raise AssertionError(f"{path.name}: missing '# plain-torch: raises|runs' header")


def run_guarded(fn, **kw) -> tuple[GraphGuard, BaseException | None]:
    guard = GraphGuard(mode="collect", **kw)
    err = None
    try:
        with guard:
            fn()
    except Exception as e:  # the buggy section may crash under PyTorch: that is the point
        err = e
    return guard, err


def found(guard: GraphGuard, path: Path) -> set[Expected]:
    out = set()
    for f in guard.findings:
        assert f.location is not None, f"{f.code} has no location"
        assert Path(f.location.file).resolve() == path.resolve(), (
            f"{f.code} points outside the case file: {f.location.file}:{f.location.line}")
        out.add(Expected(f.location.line, f.code, f.subject.name))
    return out
