"""The variable a line of the user's code assigns, as written there (`self.hidden`, `h`, `self.v`).

For wording only: a rule that already decided to report a tensor made at some line names it by
the target of the assignment on that line (or on the caller's line, when the line is a `return`
inside a helper). Never decides whether to report.
"""
from __future__ import annotations

import ast
import linecache
import re
import types
from typing import Any, Iterable

import torch

from ..capture.sites import is_internal_file
from ..capture.usercode import is_user_class
from ..model import Frame
from .names import find_names, live_user_frames, resolve
from .source import enclosing_scope

__all__ = ["assigned_target", "written_name", "name_where_made", "kept_attribute", "stored_into", "stored_entry",
           "split_source", "stored_by_method", "cache_owner",
           "cached_attribute"]

_TREES: dict[str, tuple[int, ast.Module | None]] = {}


def _tree(file: str) -> ast.Module | None:
    lines = linecache.getlines(file)
    if not lines:
        return None
    key = len(lines)
    hit = _TREES.get(file)
    if hit is not None and hit[0] == key:
        return hit[1]
    try:
        tree: ast.Module | None = ast.parse("".join(lines))
    except (SyntaxError, ValueError):
        tree = None
    _TREES[file] = (key, tree)
    return tree


def _statement(file: str, line: int) -> ast.stmt | None:
    """The innermost simple statement spanning `line`."""
    tree = _tree(file)
    if tree is None:
        return None
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If,
                                     ast.For, ast.While, ast.With, ast.Try, ast.AsyncFor,
                                     ast.AsyncWith)):
                if best is None or node.lineno >= best.lineno:
                    best = node
    return best


def _flat(targets: Iterable[ast.AST]) -> list[ast.AST]:
    out: list[ast.AST] = []
    for t in targets:
        if isinstance(t, (ast.Tuple, ast.List)):
            out.extend(_flat(t.elts))
        elif isinstance(t, ast.Starred):
            out.extend(_flat([t.value]))
        elif isinstance(t, (ast.Name, ast.Attribute, ast.Subscript)):
            out.append(t)
    return out


def assigned_target(site: Iterable[Frame], max_frames: int = 3,
                    call: str | None = None) -> tuple[str, Frame] | None:
    """The target the statement at the innermost frame of `site` assigns, and that frame; through
    `return` lines of helpers to their caller's assignment. With several targets
    (`out, self.hidden = self.lstm(x, self.hidden)`), the one the right-hand side also reads (the
    carried one); None when that does not single one out. `call` (the function the frame is
    calling, `tensor`) tells apart the elements of a tuple assignment on one line."""
    for n, fr in enumerate(site):
        if n >= max_frames:
            break
        stmt = _statement(fr.file, fr.line)
        if stmt is None:
            return None
        if isinstance(stmt, ast.Return):
            continue
        if isinstance(stmt, ast.Assign):
            targets, value = _flat(stmt.targets), stmt.value
        elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) and stmt.value is not None:
            targets, value = _flat([stmt.target]), stmt.value
        else:
            return None
        if not targets:
            return None
        texts = [ast.unparse(t) for t in targets]
        if len(texts) == 1:
            return texts[0], fr
        paired = _paired_target(stmt, fr.line, call if n == 0 else None) \
            if isinstance(stmt, ast.Assign) else None
        if paired is not None:
            # `(loss, state_dict), bal_loss = (output, torch.tensor(...).mean())`: the target
            # whose own element of the right-hand tuple holds the call made on this line
            return paired, fr
        read = {ast.unparse(x) for x in ast.walk(value) if isinstance(x, (ast.Name, ast.Attribute,
                                                                          ast.Subscript))}
        carried = [t for t in texts if t in read]
        if len(carried) == 1:
            return carried[0], fr
        return None
    return None


def _paired_target(stmt: ast.Assign, line: int, call: str | None = None) -> str | None:
    """For a tuple assignment whose value is a tuple (or list) of the same shape, the one target
    paired with the element of the value that spans `line` (and, when several do, the one that
    calls `call`); None when the shapes differ or no single plain target is paired with it."""
    if len(stmt.targets) != 1:
        return None
    target, value = stmt.targets[0], stmt.value
    while isinstance(target, (ast.Tuple, ast.List)):
        if not isinstance(value, (ast.Tuple, ast.List)) or len(value.elts) != len(target.elts):
            return None
        hold = [(t, v) for t, v in zip(target.elts, value.elts)
                if v.lineno <= line <= (v.end_lineno or v.lineno)]
        if len(hold) > 1 and call:
            hold = [(t, v) for t, v in hold if _calls(v, call)]
        if len(hold) != 1:
            return None
        target, value = hold[0]
    if isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)):
        return ast.unparse(target)
    return None


def _calls(expr: ast.AST, func: str) -> bool:
    """Whether `expr` calls a function named `func` (`torch.tensor(...)`, `tensor(...)`)."""
    func = func.rsplit(".", 1)[-1]
    for node in ast.walk(expr):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name == func:
                return True
    return False


def written_name(site: Iterable[Frame] | None, hit_name: str | None = None,
                 hit_frame: Frame | None = None) -> tuple[str, Frame] | None:
    """The name a tensor made at `site` has as the user wrote it: the assignment target in the
    frame where the live name `hit_name` lives, when that line assigns it (the training loop's
    `prediction, h_state = rnn(x, h_state)`); else the innermost assignment (`self.hidden = ...`
    inside `forward`)."""
    if not site:
        return None
    site = list(site)
    if hit_name and hit_frame is not None:
        for k, fr in enumerate(site):
            if fr.file == hit_frame.file and fr.function == hit_frame.function:
                w = assigned_target(site[k:], max_frames=1)
                if w and (hit_name == w[0] or hit_name.startswith((w[0] + "[", w[0] + "."))):
                    return w
                break
    return assigned_target(site)


def name_where_made(node: Any, site: Iterable[Frame] | None) -> tuple[str, Frame | None] | None:
    """The user's name for the tensor whose grad_fn is `node`, as written where it was made: a
    live name in a frame of its creation `site` (the caller's `phiGFake`, not the helper's
    parameter `phiReal` that holds the same tensor), else the assignment at the creation line
    (`fake_img = self.generator(z)`, whose frame is gone), else any live name."""
    site = list(site or ())
    split = split_source(site[0]) if site else None
    if split is not None:
        # `mu, log_var = torch.chunk(head_out, 2, dim=1)`: the node is the chunk, shared by
        # every piece; the tensor chunked names it, not the one piece a frame still holds
        return split, site[0]
    hits = find_names(lambda v: isinstance(v, torch.Tensor) and v.grad_fn is node)
    for fr in site:
        for h in hits:
            # a module's top level keeps its names as globals: `out, hidden = encoder(x)` run at
            # the top of a script names the tensor there, as a local does in a function
            own = h.scope == "local" or h.scope == "global" and fr.function == "<module>"
            if h.frame.file == fr.file and h.frame.function == fr.function and own:
                return h.name, fr
    w = assigned_target(site) if site else None
    if w is not None:
        held = _held_by_call(w, node, hits)
        if held is not None:
            return held, None
        return w
    entry = stored_entry(node, site, hits)
    if entry is not None:
        return entry, None
    return (hits[0].name, None) if hits else None


MAX_FROM = 16  # graph nodes walked from an assigned target down to the node it may be built from


def _held_by_call(target: tuple[str, Frame], node: Any, hits: list) -> str | None:
    """The live name of a node made inside a library call at a creation line whose target is not
    that tensor: `l1 = 2 * pi.log_prob(v)` (a distribution computes its logits there and keeps
    them as `pi.logits`; `l1` is a product of them), `dist = Categorical(probs=p)` (the
    normalized `dist.probs`; `dist` is no tensor). A value the library computed and keeps for
    itself is named by the object holding it, as the user's code names it (`pi`, `dist`:
    `cache_owner`). None when the target may be the tensor."""
    if not hits:
        return None
    name, fr = target
    hit = resolve(name)
    if hit is None or hit.frame.file != fr.file or hit.frame.function != fr.function:
        return None
    value = hit.value
    if isinstance(value, torch.Tensor):
        if not _computed_from(value, node):
            return None
        held = [h for h in hits if h.scope == "attribute"] or hits
        return _by_owner(held[0].name)
    owned = [h for h in hits if h.name.startswith(name + ".")]
    return _by_owner(owned[0].name) if owned else None


def _by_owner(name: str) -> str:
    owner = cache_owner(name)
    return owner[0] if owner is not None else name


def cache_owner(name: str | None) -> tuple[str, str] | None:
    """(`pi`, `logits`) for the live name `pi.logits` when that attribute is a value a library
    class computes itself and keeps on its instance, not one the user's code names: a Bernoulli
    made from probabilities computes its logits inside the first `log_prob` (torch.distributions'
    `lazy_property`) and keeps them, so the user knows that tensor only as part of `pi`, the object
    their code holds. The attribute is a non-data descriptor of the object's class (a lazy or cached
    property, shadowed by the value in the instance's `__dict__`), and the class defining it lives
    in a library (torch, the standard library, site-packages), not in the user's files (a property
    the user wrote has the name they gave it). None otherwise. Wording only."""
    if not name:
        return None
    m = re.fullmatch(r"(.+)\.(\w+)", name)
    if m is None:
        return None
    owner, attr = m.groups()
    hit = resolve(owner)
    if hit is None:
        return None
    obj = hit.value
    if isinstance(obj, (torch.Tensor, torch.nn.Module)):
        return None
    d = getattr(obj, "__dict__", None)
    if not isinstance(d, dict) or attr not in d:
        return None
    for klass in type(obj).__mro__:
        desc = vars(klass).get(attr)
        if desc is None:
            continue
        kind = type(desc)
        if isinstance(desc, (types.FunctionType, staticmethod, classmethod, property)) \
                or not hasattr(kind, "__get__") or hasattr(kind, "__set__") or hasattr(kind, "__delete__"):
            return None  # a method, a data descriptor, a plain class attribute: not a cache
        return (owner, attr) if not is_user_class(klass) else None
    return None


def cached_attribute(owner: str | None, node: Any) -> str | None:
    """The attribute (`logits`) under which the object the user holds as `owner` (`pi`) keeps the
    tensor whose grad_fn is `node`, when that attribute is a library's cache (`cache_owner`); None
    when `owner` holds no such cache (a tensor, a module, a user's object). Wording only."""
    if not owner:
        return None
    hit = resolve(owner)
    d = getattr(hit.value, "__dict__", None) if hit is not None else None
    if not isinstance(d, dict) or isinstance(hit.value, (torch.Tensor, torch.nn.Module)):
        return None
    for attr, v in list(d.items()):
        if isinstance(v, torch.Tensor) and v.grad_fn is node and cache_owner(f"{owner}.{attr}") is not None:
            return attr
    return None


def _computed_from(t: torch.Tensor, node: Any) -> bool:
    """Whether `t` (what a creation line's target holds now) is another tensor whose graph
    reaches `node` within a few ops: the node is then an intermediate of that line."""
    start = t.grad_fn
    if start is None or start is node:
        return False
    seen, frontier = {id(start)}, [start]
    while frontier and len(seen) <= MAX_FROM:
        nxt = []
        for fn in frontier:
            for child, _ in getattr(fn, "next_functions", ()) or ():
                if child is node:
                    return True
                if child is not None and id(child) not in seen:
                    seen.add(id(child))
                    nxt.append(child)
        frontier = nxt
    return False


def stored_entry(node: Any, site: Iterable[Frame] | None, hits: list | None = None) -> str | None:
    """The live name of the tensor whose grad_fn is `node` as an entry of the container its
    creation line stores it in: `policy.saved_actions[3]` for a tensor made at
    `policy.saved_actions.append(m.log_prob(action))`, over a later local that also holds it (a
    sampled batch, `experiences[0][0]`). None when the line stores it nowhere, or no live name
    goes through that container."""
    site = list(site or ())
    stored = stored_into(site[0]) if site else None
    if stored is None:
        return None
    if hits is None:
        hits = find_names(lambda v: isinstance(v, torch.Tensor) and v.grad_fn is node)
    for h in hits:
        if _names_entry_of(h.name, stored):
            return h.name
    return None


_STORE_METHODS = ("append", "appendleft", "insert", "extend", "add")
_SPLITS = ("split", "chunk", "unbind", "tensor_split", "split_with_sizes", "hsplit", "vsplit")


def split_source(fr: Frame) -> str | None:
    """The tensor a tuple assignment at `fr` splits, as written there: `state_action_value` of
    `actor_q, current_q = state_action_value.split(n, dim=1)` (or `torch.split(x, n)`). Its
    pieces are the outputs of one node, made at that line; that node is the tensor split, the
    only name that fits every piece."""
    stmt = _statement(fr.file, fr.line)
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], (ast.Tuple, ast.List)) and isinstance(stmt.value, ast.Call)):
        return None
    f = stmt.value.func
    if not (isinstance(f, ast.Attribute) and f.attr in _SPLITS):
        return None
    split = f.value
    if isinstance(split, ast.Name) and split.id == "torch":
        split = stmt.value.args[0] if stmt.value.args else None
    # a tensor made before this line (`head_out.chunk(2)`), not a call whose own node this is
    return ast.unparse(split) if isinstance(split, (ast.Name, ast.Attribute, ast.Subscript)) else None


def stored_into(fr: Frame) -> str | None:
    """The container the statement at `fr` stores a value it computes in, as written there:
    `policy.saved_actions` of `policy.saved_actions.append(m.log_prob(action))`, `self.cache`
    of `self.cache[key] = f(x)`; None for any other statement."""
    stmt = _statement(fr.file, fr.line)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        f = stmt.value.func
        if isinstance(f, ast.Attribute) and f.attr in _STORE_METHODS and stmt.value.args:
            return ast.unparse(f.value)
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Subscript):
        return ast.unparse(stmt.targets[0].value)
    return None


def _names_entry_of(name: str, container: str) -> bool:
    """Whether the live name `name` is an entry of `container` as written in the creation frame
    (`self.saved_actions` there is `policy.saved_actions` from the training loop)."""
    if name.startswith(container + "["):
        return True
    head, _, rest = container.partition(".")
    return head == "self" and bool(rest) and ("." + rest + "[") in name


def kept_attribute(site: Iterable[Frame] | None, holder: str | None,
                   made: tuple[str, Frame | None] | None) -> tuple[str, Frame] | None:
    """The attribute that keeps a tensor alive, as the statement storing it writes it, when the
    name the tensor got where it was made is a local of a call that has returned: `kvectors` in
    `_compute_kvectors`, now held only by `calculator._cached_kvectors`, is named
    `self._cached_kvectors` at `self._cached_kvectors = kvectors`. A finished call's local cannot
    carry a tensor from one iteration into the next; the attribute a function of the creation
    `site` stores it in does. `holder` is the live name found for it (an attribute path); `made`
    the creation name and its frame. None when the creation name is still the one to use."""
    site = list(site or ())
    if not site or not holder or made is None or made[1] is None:
        return None
    name, where = made
    m = re.fullmatch(r".+\.(\w+)", holder)
    if m is None or not name.isidentifier():
        return None
    attr = m.group(1)
    frames = live_user_frames()
    try:
        if any(f.f_code.co_filename == where.file and f.f_code.co_name == where.function for f in frames):
            return None  # the creation frame is still running: its local is a live name
    finally:
        del frames
    for fr in site:
        scope = enclosing_scope(fr.file, fr.line)
        if scope is None or isinstance(scope, ast.Module):
            continue  # a method or function of the site stores it, not module-level code
        for node in ast.walk(scope):
            if not isinstance(node, ast.Assign) or isinstance(node.value, ast.Constant):
                continue  # `self.cache = None` resets it
            for t in _flat(node.targets):
                if isinstance(t, ast.Attribute) and t.attr == attr:
                    return ast.unparse(t), Frame(fr.file, node.lineno, fr.function)
    return None


def stored_by_method(site: Iterable[Frame] | None, holder: str | None) -> tuple[str, Frame] | None:
    """The attribute a method of the holding object stores a tensor in, as that method writes it,
    when the line that made the tensor hands it to the method: `state.update_state(h.unsqueeze(0),
    feed)`, whose body writes `self.hidden = (rnnstate,)`, keeps it as `dec_state.hidden[0]` (the
    live `holder` name). The making line assigns nothing; the method's assignment is where the
    state is stored again at each call. None when the line calls no method of the holder's class
    that assigns that attribute (`out, self.hidden = self.lstm(x, self.hidden)`: `lstm` is a
    submodule, and the line's own target names it)."""
    site = list(site or ())
    if not site or not holder:
        return None
    m = re.fullmatch(r"(.+)\.(\w+)((?:\[[^\[\]]+\])*)", holder)
    if m is None:
        return None
    owner, attr = m.group(1), m.group(2)
    stmt = _statement(site[0].file, site[0].line)
    if stmt is None:
        return None
    methods = [n.func.attr for n in ast.walk(stmt)
               if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
    if not methods:
        return None
    hit = resolve(owner)
    if hit is None or hit.value is None or isinstance(hit.value, torch.Tensor):
        return None
    try:
        mro = type(hit.value).__mro__
    finally:
        hit = None  # (drop the object)
    for name in methods:
        for klass in mro:
            fn = klass.__dict__.get(name)
            code = getattr(fn, "__code__", None)
            if code is None:
                continue
            if is_internal_file(code.co_filename):
                break  # a library's method (`nn.Module.register_buffer`): not the user's store
            found = _self_assignment(code, attr)
            if found is not None:
                return found
            break  # the method the call runs (the first class of the MRO defining it)
    return None


def _self_assignment(code: Any, attr: str) -> tuple[str, Frame] | None:
    """`self.<attr> = ...` in the function of `code` (its first one by line), as written there."""
    tree = _tree(code.co_filename)
    fn = None
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == code.co_name and (
                node.lineno == code.co_firstlineno
                or any(d.lineno == code.co_firstlineno for d in node.decorator_list)):
            fn = node
            break
    if fn is None or not fn.args.args:
        return None
    me = fn.args.args[0].arg
    best: tuple[int, str] | None = None
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            targets = _flat(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            targets = _flat([node.target])
        else:
            continue
        for t in targets:
            if isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name) \
                    and t.value.id == me and (best is None or node.lineno < best[0]):
                best = (node.lineno, ast.unparse(t))
    if best is None:
        return None
    return best[1], Frame(code.co_filename, best[0], fn.name)
