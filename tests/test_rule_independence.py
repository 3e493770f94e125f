"""Rules decide from recorded evidence, not from each other's findings or the source's spelling."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from graphguard.capture.gradmode import GradSwitch
from graphguard.capture.state import Cut
from graphguard.rules import ALL_RULES
from graphguard.rules.gg903_unexplained_autograd_error import UnexplainedAutogradError
from graphguard.rules.shared.nograd import switch_of_cuts

RULES = Path(__file__).resolve().parent.parent / "graphguard" / "rules"


def test_only_gg903_reads_other_rules_findings_and_it_runs_last() -> None:
    readers = []
    for path in RULES.rglob("*.py"):
        if path.name == "context.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "error_codes":
                readers.append(path.name)
    assert sorted(set(readers)) == ["gg903_unexplained_autograd_error.py"]
    assert ALL_RULES[-1] is UnexplainedAutogradError


def _switch(kind: str = "with", line: int = 10, user: bool = True, off: bool = True,
            file: str = "/nonexistent/train.py") -> GradSwitch:
    return GradSwitch(kind, "no_grad", off, file, line, "encode", user)


def _cut(index: int, switch: GradSwitch | None, no_grad: bool = True, checkpointed: bool = False) -> Cut:
    return Cut(index, "linear", (), 1, no_grad, (), frozenset(), switch, checkpointed)


# (cuts, the switch the decision returns: an index into the cuts, or None). The source file does
# not exist: the decision cannot have read it.
_TABLE = [
    ("one user block", [_cut(0, _switch())], 0),
    ("two cuts, same block", [_cut(0, _switch()), _cut(1, _switch())], 0),
    ("a decorator", [_cut(0, _switch("decorator"))], 0),
    ("two different blocks", [_cut(0, _switch(line=10)), _cut(1, _switch(line=20))], None),
    ("a framework's block", [_cut(0, _switch(user=False))], None),
    ("a plain call (global switch)", [_cut(0, _switch("call"))], None),
    ("no switch seen", [_cut(0, None)], None),
    ("one cut by an op with grad on", [_cut(0, _switch()), _cut(1, None, no_grad=False)], None),
    ("no cuts", [], None),
]


@pytest.mark.parametrize("cuts,expected", [(c, e) for _, c, e in _TABLE], ids=[n for n, _, _ in _TABLE])
def test_user_region_decision_truth_table(cuts: list[Cut], expected: int | None) -> None:
    got = switch_of_cuts(cuts)
    assert got == (cuts[expected].switch if expected is not None else None)


# The decisions moved off the source so far (issue 29): each reads capture data only. A call of a
# naming or source helper inside one of them (ctx.name_of, lookup/, linecache, ast) fails here.
DECISIONS = {
    "shared/nograd.py": ["switch_of_cuts"],
    "shared/accumulator.py": ["carried_loss"],
    # the stale/double/carried family's one classifier (issue 29, item 3)
    "shared/stale.py": ["decide", "gather", "classify"],
}
_DESCRIBERS = {"name_of", "subject", "subject_of_node", "frames", "creation", "name_of_cut_value",
               "fix_at", "loc", "parse", "getline", "unparse", "name_where_made", "target_lines",
               "find_name", "resolve", "origin_of", "region_for", "region_of", "statement_at"}


def _lookup_imports(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and "lookup" in node.module.split("."):
            names.update(a.asname or a.name for a in node.names)
    return names


@pytest.mark.parametrize("module,function", [(m, f) for m, fs in DECISIONS.items() for f in fs])
def test_decisions_read_capture_data_only(module: str, function: str) -> None:
    tree = ast.parse((RULES / module).read_text(encoding="utf-8"))
    banned = _DESCRIBERS | _lookup_imports(tree)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function)
    used = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            f = node.func
            used.add(f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", ""))
    assert not used & banned, f"{module}:{function} calls {sorted(used & banned)}"


# carried_loss: (analysis kind, built together, the member's mark retained, the member is the node
# the earlier backward started from) -> whether the earlier loss counts as carried into this one
_CARRIED = [
    ("freed", False, False, True, True),    # SAM's second pass: `loss += t` without `loss = 0`
    ("freed", False, False, False, False),  # two losses sharing a trunk: GG003's
    ("freed", True, False, True, False),    # built together before the first backward: GG003's
    ("freed", False, True, True, False),    # the earlier backward retained its graph
    ("retained", False, False, True, False),
    ("none", False, False, True, False),
]


@pytest.mark.parametrize("kind,together,retained,started,expected", _CARRIED)
def test_carried_loss_truth_table(kind, together, retained, started, expected) -> None:
    from types import SimpleNamespace

    from graphguard.capture.state import Mark
    from graphguard.rules.shared.accumulator import carried_loss
    from graphguard.rules.shared.stale import StaleAnalysis

    node = object()
    mark = Mark(0, 0, (), retained)
    a = StaleAnalysis(kind, {3}, built_together=together)
    event = SimpleNamespace(scan=SimpleNamespace(marks={3: mark}, nodes={3: node}))
    ctx = SimpleNamespace(started_backward=lambda n, m: started and n is node and m is mark)
    assert (carried_loss(event, a, ctx) == 3) is expected
