"""The layering of docs/architecture.md, checked on graphguard's own imports (parsed with ast)."""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "graphguard"
DOC = PACKAGE.parent / "docs" / "architecture.md"


@dataclass(frozen=True)
class Edge:
    src: str  # importing module, dotted
    dst: str  # imported module, dotted (a `from pkg import mod` counts as pkg.mod when mod is one)
    names: tuple[str, ...]  # names imported from dst
    line: int
    type_checking: bool  # under `if TYPE_CHECKING:`
    local: bool  # inside a function (made at call time)


def _modules() -> dict[str, Path]:
    out = {}
    for p in PACKAGE.rglob("*.py"):
        parts = list(p.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _edges_of(mod: str, path: Path) -> list[Edge]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out: list[Edge] = []

    def visit(node: ast.AST, tc: bool, local: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for c in child.body:
                    visit_one(c, True, local)
                for c in child.orelse:
                    visit_one(c, tc, local)
                continue
            visit_one(child, tc, local)

    def visit_one(node: ast.AST, tc: bool, local: bool) -> None:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "graphguard":
                return
            plain = []
            for a in node.names:
                sub = f"{target}.{a.name}"
                if sub in MODULES:  # `from . import guard`: the module itself
                    out.append(Edge(mod, sub, (), node.lineno, tc, local))
                else:
                    plain.append(a.name)
            if plain or not node.names:
                out.append(Edge(mod, target, tuple(plain), node.lineno, tc, local))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "graphguard":
                    out.append(Edge(mod, a.name, (), node.lineno, tc, local))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            visit(node, tc, True)
        else:
            visit(node, tc, local)

    visit(tree, False, False)
    return out


EDGES = [e for m, p in sorted(MODULES.items()) for e in _edges_of(m, p)]


# ---- the layer table, read from docs/architecture.md -------------------------------------------
def _doc_table() -> tuple[dict[str, str], dict[str, set[str]], set[tuple[str, str]]]:
    """From the doc: module patterns -> layer, layer -> layers it may import, and the allowed
    call-time exceptions (module, module)."""
    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"<!-- layers -->\n(.*?)<!-- /layers -->", text, re.S)
    assert block, "docs/architecture.md lost its layer table (<!-- layers --> ... <!-- /layers -->)"
    patterns: dict[str, str] = {}
    allowed: dict[str, set[str]] = {}
    for row in block.group(1).splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("layer", "") or set(cells[0]) <= {"-"}:
            continue
        layer, mods, may = cells
        for m in mods.split(","):
            patterns[m.strip().strip("`")] = layer
        allowed[layer] = {x.strip() for x in may.split(",") if x.strip() and x.strip() != "-"}
    exc = re.search(r"<!-- exceptions -->\n(.*?)<!-- /exceptions -->", text, re.S)
    exceptions = set()
    for line in (exc.group(1).splitlines() if exc else []):
        m = re.match(r"\s*-\s*`([\w.]+)`\s*->\s*`([\w.]+)`", line)
        if m:
            exceptions.add((m.group(1), m.group(2)))
    return patterns, allowed, exceptions


PATTERNS, ALLOWED, EXCEPTIONS = _doc_table()


def layer_of(mod: str) -> str:
    """The layer of a module: the longest pattern of the table that names it or its package."""
    best = ""
    for pat in PATTERNS:
        # the root pattern `graphguard` names the package's __init__ only
        if (mod == pat or (pat != "graphguard" and mod.startswith(pat + "."))) and len(pat) > len(best):
            best = pat
    assert best, f"{mod} is in no layer of docs/architecture.md: add it to the table"
    return PATTERNS[best]


def _excepted(e: Edge) -> bool:
    return e.local and any(e.src == a and (e.dst == b or e.dst.startswith(b + ".")) for a, b in EXCEPTIONS)


def test_every_module_has_a_layer() -> None:
    for mod in MODULES:
        layer_of(mod)
    assert set(ALLOWED) == set(PATTERNS.values())
    for layer, may in ALLOWED.items():
        assert may <= set(ALLOWED), f"{layer} may import an unknown layer: {may - set(ALLOWED)}"


def test_no_edge_the_doc_forbids() -> None:
    bad = []
    for e in EDGES:
        a, b = layer_of(e.src), layer_of(e.dst)
        if a != b and b not in ALLOWED[a] and not _excepted(e):
            bad.append(f"{e.src}:{e.line} ({a}) imports {e.dst} ({b})"
                       + (" under TYPE_CHECKING" if e.type_checking else ""))
    assert not bad, "imports docs/architecture.md forbids:\n" + "\n".join(bad)


def _modules_under(prefix: str) -> list[str]:
    return [m for m in MODULES if m == prefix or m.startswith(prefix + ".")]


@pytest.mark.parametrize("src, forbidden", [
    ("graphguard.capture", ["graphguard.guard", "graphguard.engine", "graphguard.rules",
                            "graphguard.report", "graphguard.cli", "graphguard.pytest_plugin",
                            "graphguard.lookup", "graphguard"]),
    ("graphguard.report", ["graphguard.capture", "graphguard.rules", "graphguard.guard",
                           "graphguard.engine", "graphguard.lookup", "graphguard"]),
    ("graphguard.fix", ["graphguard.guard", "graphguard.engine", "graphguard.rules", "graphguard.capture",
                        "graphguard.lookup", "graphguard.cli", "graphguard.pytest_plugin", "graphguard"]),
    ("graphguard.model", ["graphguard.capture", "graphguard.rules", "graphguard.guard",
                          "graphguard.engine", "graphguard.events", "graphguard.lookup", "graphguard"]),
])
def test_lower_layers_know_nothing_above(src: str, forbidden: list[str]) -> None:
    """Not even under TYPE_CHECKING, not even inside a function."""
    assert _modules_under(src)
    bad = []
    for e in EDGES:
        if not (e.src == src or e.src.startswith(src + ".")):
            continue
        for f in forbidden:
            hit = e.dst == f if f == "graphguard" else (e.dst == f or e.dst.startswith(f + "."))
            if hit:
                bad.append(f"{e.src}:{e.line} imports {e.dst}")
    assert not bad, "\n".join(bad)


def test_no_private_names_across_modules() -> None:
    bad = [f"{e.src}:{e.line} imports {n} from {e.dst}" for e in EDGES
           for n in e.names if n.startswith("_") and not n.startswith("__") and e.src != e.dst]
    bad += [f"{e.src}:{e.line} imports private module {e.dst}" for e in EDGES
            if any(p.startswith("_") and not p.startswith("__") and p != "_version"
                   for p in e.dst.split(".")) and e.dst.rpartition(".")[0] != e.src.rpartition(".")[0]]
    assert not bad, "\n".join(bad)


def test_no_import_cycle() -> None:
    """Over every import made at run time (module level or inside a function; TYPE_CHECKING
    imports are never made), only the documented call-time exceptions left out."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for e in EDGES:
        if e.type_checking or _excepted(e):
            continue
        dst = e.dst if e.dst in MODULES else e.dst.rpartition(".")[0]
        if dst in MODULES and dst != e.src:
            graph[e.src].add(dst)
        # importing a submodule runs its package's __init__ first
        parent = dst.rpartition(".")[0]
        while parent and parent in MODULES:
            if not e.src.startswith(parent + ".") and parent != e.src:
                graph[e.src].add(parent)
            parent = parent.rpartition(".")[0]
    state: dict[str, int] = {}
    stack: list[str] = []

    def dfs(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = dfs(n)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            cycle = dfs(m)
            assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_checker_sees_imports() -> None:
    """The parser itself: relative, TYPE_CHECKING and function-local imports are all found."""
    assert any(e.src == "graphguard.guard" and e.dst.startswith("graphguard.capture") for e in EDGES)
    assert any(e.local for e in EDGES)
    assert layer_of("graphguard.capture.recorder") == "capture"


def test_rules_ask_the_context_only() -> None:
    """Rules never reach through the context to the recorder or the guard, nor read or write
    another module's private attributes (`x._name` on anything but self/cls)."""
    bad = []
    for mod, path in MODULES.items():
        if not mod.startswith("graphguard.rules."):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Attribute):
                continue
            base = node.value.id if isinstance(node.value, ast.Name) else None
            if base == "ctx" and node.attr in ("rec", "guard", "_rec", "_clock", "_findings"):
                bad.append(f"{mod}:{node.lineno} ctx.{node.attr}")
            if base == "ctx" and node.attr.startswith("_") and mod != "graphguard.rules.context":
                bad.append(f"{mod}:{node.lineno} ctx.{node.attr}")
    assert not bad, "\n".join(bad)


# ---- detect from capture data, describe from the source (issue 29) ------------------------------
# A rule decides in `detect(event, ev)` from capture data only (`Evidence`), and names and words
# in `describe`. The checker follows, from every rule's `detect`, each function, method or class
# of graphguard.rules that it refers to (transitively, across rules/shared), and fails on any use
# of graphguard.lookup, of the source readers (ast, linecache, inspect, tokenize), or of a
# describe-only question asked of the context (`ctx.name_of`, `ev.loc`, ...).
SOURCE_READERS = {"ast", "linecache", "inspect", "tokenize"}


def _describe_only() -> set[str]:
    from graphguard.rules.context import Evidence, RuleContext

    return {n for n in vars(RuleContext) if not n.startswith("__")} - set(dir(Evidence))


@dataclass
class _Unit:
    """One parsed module of graphguard.rules: its functions, classes and imported names."""

    mod: str
    functions: dict[str, ast.AST]
    classes: dict[str, ast.ClassDef]
    imported: dict[str, tuple[str, str | None]]  # local name -> (module, name in it or None)


def _units() -> dict[str, _Unit]:
    out = {}
    for mod, path in MODULES.items():
        if not mod.startswith("graphguard.rules"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        functions, classes, imported = {}, {}, {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = package.split(".")
                    pkg = pkg[:len(pkg) - node.level + 1]
                    base = ".".join(pkg + ([base] if base else []))
                for a in node.names:
                    full = f"{base}.{a.name}"
                    imported[a.asname or a.name] = (full, None) if full in MODULES else (base, a.name)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    imported[a.asname or a.name.split(".")[0]] = (a.name, None)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                classes[node.name] = node
        out[mod] = _Unit(mod, functions, classes, imported)
    return out


def _detect_violations(units: dict[str, _Unit], start_mod: str, cls: ast.ClassDef) -> list[str]:
    describe_only = _describe_only()
    bad: list[str] = []
    seen: set[tuple[str, int]] = set()
    todo: list[tuple[str, ast.AST, ast.ClassDef | None]] = []
    detect = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "detect"), None)
    if detect is None:
        return [f"{start_mod}.{cls.name} has no detect()"]
    todo.append((start_mod, detect, cls))

    def target(unit: _Unit, name: str) -> tuple[str, ast.AST] | None:
        """Where a name used in `unit` is defined inside graphguard.rules (function or class)."""
        if name in unit.functions:
            return unit.mod, unit.functions[name]
        if name in unit.classes:
            return unit.mod, unit.classes[name]
        if name in unit.imported:
            src, attr = unit.imported[name]
            if attr is not None and src in units:
                other = units[src]
                if attr in other.functions:
                    return src, other.functions[attr]
                if attr in other.classes:
                    return src, other.classes[attr]
        return None

    while todo:
        mod, fn, owner = todo.pop()
        if (mod, id(fn)) in seen:
            continue
        seen.add((mod, id(fn)))
        unit = units[mod]
        if isinstance(fn, ast.ClassDef):  # a helper class used by detect: all of its methods
            if fn is not owner and any(ast.unparse(b) == "Rule" for b in fn.bases):
                continue  # another rule referred to (its code, its slug): checked on its own
            todo += [(mod, m, fn) for m in fn.body if isinstance(m, ast.FunctionDef)]
            continue
        params = {a.arg for a in fn.args.args + fn.args.kwonlyargs} & {"ctx", "ev"}
        params |= {a.arg for a in fn.args.args + fn.args.kwonlyargs
                   if a.annotation is not None and re.search(r"\b(Evidence|RuleContext)\b",
                                                             ast.unparse(a.annotation))}
        where = f"{mod}:{getattr(fn, 'lineno', 0)} {getattr(fn, 'name', '?')}"
        for node in ast.walk(fn):
            if isinstance(node, ast.Name):
                src = unit.imported.get(node.id)
                if src is not None and (src[0].startswith("graphguard.lookup")
                                        or src[0].split(".")[0] in SOURCE_READERS):
                    bad.append(f"{where}: uses {node.id} from {src[0]}")
                found = target(unit, node.id)
                if found is not None:
                    todo.append((found[0], found[1], None))
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                base = node.value.id
                if base in params and node.attr in describe_only:
                    bad.append(f"{where}: asks {base}.{node.attr} (describe only)")
                elif base in ("self", "cls") and owner is not None:
                    method = next((m for m in owner.body if isinstance(m, ast.FunctionDef)
                                   and m.name == node.attr), None)
                    if method is not None:
                        todo.append((mod, method, owner))
                elif base in unit.imported and unit.imported[base][1] is None:
                    other = units.get(unit.imported[base][0])
                    if other is not None:
                        found = target(other, node.attr)
                        if found is not None:
                            todo.append((found[0], found[1], None))
    return bad


def _rule_classes() -> list[tuple[str, ast.ClassDef]]:
    units = _units()
    out = []
    for mod, unit in sorted(units.items()):
        if re.fullmatch(r"graphguard\.rules\.gg\d{3}_\w+", mod):
            for c in unit.classes.values():
                if any(ast.unparse(b) == "Rule" for b in c.bases):
                    out.append((mod, c))
    return out


# rules still judged by one `check` (issue 29: to be split); nothing may be added here
NOT_YET_SPLIT: set[str] = {
}


@pytest.mark.parametrize("mod,cls", _rule_classes(), ids=lambda v: v if isinstance(v, str) else v.name)
def test_rule_detects_from_capture_data_only(mod: str, cls: ast.ClassDef) -> None:
    """A rule's `detect` (and all it calls in graphguard.rules) uses no lookup/, no source reader
    and no describe-only question of the context; `describe` is where naming happens."""
    code = re.search(r"gg\d{3}", mod).group(0).upper()
    if code in NOT_YET_SPLIT:
        pytest.xfail(f"{code} not split into detect/describe yet")
    methods = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    assert "check" not in methods, f"{code} overrides check(): write detect() and describe()"
    assert {"detect", "describe"} <= methods, f"{code} lacks detect() or describe()"
    assert not _detect_violations(_units(), mod, cls), "\n".join(_detect_violations(_units(), mod, cls))


def test_the_detect_checker_sees_a_lookup() -> None:
    """The checker itself, on a rule written wrongly: a name looked up inside detect's helper."""
    src = ("from ..lookup.names import find_name\nfrom .base import Rule\n"
           "def helper(ev, t):\n    return find_name(lambda v: v is t)\n"
           "class Bad(Rule):\n    def detect(self, event, ev):\n        helper(ev, 1)\n"
           "        return ev.name_of(event)\n    def describe(self, d, event, ctx):\n        return None\n")
    tree = ast.parse(src)
    unit = _Unit("graphguard.rules.gg999_bad", {"helper": tree.body[2]}, {"Bad": tree.body[3]},
                 {"find_name": ("graphguard.lookup.names", "find_name"), "Rule": ("graphguard.rules.base", "Rule")})
    units = dict(_units(), **{unit.mod: unit})
    bad = _detect_violations(units, unit.mod, tree.body[3])
    assert any("find_name" in b for b in bad) and any("ev.name_of" in b for b in bad)


# ---- sizes (issue 31): the guard wires small installers; no function grows past a screen -------
GUARD_MAX_LINES = 700
FUNCTION_MAX_LINES = 60
SIZED = ["guard.py", "cli.py", "fix/command.py"]


def _long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{path.relative_to(PACKAGE.parent)}:{n.lineno} {n.name} ({n.end_lineno - n.lineno + 1} lines)"
            for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.end_lineno - n.lineno + 1 > FUNCTION_MAX_LINES]


def test_guard_stays_small() -> None:
    """guard.py wires the installers of graphguard/install/ and the backward check; the hooks
    themselves live there."""
    lines = len((PACKAGE / "guard.py").read_text(encoding="utf-8").splitlines())
    assert lines < GUARD_MAX_LINES, f"graphguard/guard.py has {lines} lines (fewer than {GUARD_MAX_LINES} wanted)"


def test_no_long_functions() -> None:
    """No function (or method, or nested function) of guard.py, cli.py, fix/command.py is over
    FUNCTION_MAX_LINES lines, decorators not counted (ast: end_lineno - lineno + 1)."""
    bad = [line for rel in SIZED for line in _long_functions(PACKAGE / rel)]
    assert not bad, "functions over 60 lines:\n" + "\n".join(bad)
