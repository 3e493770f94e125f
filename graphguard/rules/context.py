"""What rules may ask of the guard: names, creation sites, recorded cuts. Rules never touch hooks."""
from __future__ import annotations

import ast
import linecache
from typing import TYPE_CHECKING, Any

import torch

from ..lookup.names import NameHit, find_name, find_objects, live_user_frames
from ..capture.graph import summarize
from ..capture.state import Stamp
from ..model import Frame, Site, SourceLoc, Subject

if TYPE_CHECKING:
    from ..guard import GraphGuard

__all__ = ["RuleContext", "assigned_name"]


def assigned_name(frame: Frame, func: str | None = None) -> str | None:
    """The variable a line assigns the result of `func(...)` to: `x = torch.zeros(...)` -> `x`.

    Only a name the user wrote on that line, for a call that is the whole right-hand side.
    """
    text = linecache.getline(frame.file, frame.line).strip()
    if not text:
        return None
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    if not tree.body or not isinstance(tree.body[0], (ast.Assign, ast.AnnAssign)):
        return None
    stmt = tree.body[0]
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    if len(targets) != 1 or not isinstance(stmt.value, ast.Call):
        return None
    if func is not None:
        callee = stmt.value.func
        cname = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", None)
        if cname != func:
            return None
    return ast.unparse(targets[0]) if isinstance(targets[0], (ast.Name, ast.Attribute)) else None


class RuleContext:
    """The read-only view of the guard that rules use."""

    def __init__(self, guard: "GraphGuard") -> None:
        self.guard = guard

    @property
    def rec(self) -> Any:
        return self.guard.rec

    @property
    def iteration(self) -> int:
        return self.guard.iteration

    # ---- places ---------------------------------------------------------------------------------
    @staticmethod
    def loc(site: Site | None, prefer: Frame | None = None) -> SourceLoc | None:
        """A SourceLoc for a site; the frame in the same function as `prefer` when there is one."""
        if not site:
            return None
        if prefer is not None:
            for fr in site:
                if fr.file == prefer.file and fr.function == prefer.function:
                    return SourceLoc.from_frame(fr)
        return SourceLoc.from_frame(site[0])

    # ---- names ----------------------------------------------------------------------------------
    @staticmethod
    def frames() -> list[Any]:
        return live_user_frames()

    def name_of(self, t: Any) -> NameHit | None:
        return find_name(lambda v: v is t)

    def name_of_node(self, node: Any) -> NameHit | None:
        return find_name(lambda v: isinstance(v, torch.Tensor) and v.grad_fn is node)

    def creation(self, t: torch.Tensor) -> tuple[Site, int] | None:
        """Where and in which iteration a tensor was made, when the guard saw it."""
        rec = self.rec.leaves.get(t)
        if rec is not None:
            return rec.site, rec.iteration
        gf = t.grad_fn
        if gf is not None:
            st = gf.metadata.get(self.guard._stamp_key)
            if isinstance(st, Stamp):
                return st.site, st.iteration
        return None

    def stamp(self, node: Any) -> Stamp | None:
        st = node.metadata.get(self.guard._stamp_key) if node is not None else None
        return st if isinstance(st, Stamp) else None

    def subject(self, t: Any, kind: str = "tensor", hit: NameHit | None = None,
                site: Site | None = None, iteration: int | None = None,
                fallback_func: str | None = None) -> Subject:
        """Describe a tensor: the user's name, its one-line summary, where it was made."""
        if hit is None and t is not None:
            hit = self.name_of(t)
        if site is None and isinstance(t, torch.Tensor):
            made = self.creation(t)
            if made is not None:
                site, iteration = made
        name = hit.name if hit else None
        if name is None and site and fallback_func:
            name = assigned_name(site[0], fallback_func)
        if kind == "tensor" and isinstance(t, torch.nn.Parameter):
            kind = "parameter"
        return Subject(name, kind, summarize(t) if t is not None else "",
                       self.loc(site, hit.frame if hit else None), iteration)

    def subject_of_node(self, node: Any, hit: NameHit | None = None) -> Subject:
        """Describe the tensor whose grad_fn is `node`: its user name (looked up unless given),
        and where and in which iteration the node was made."""
        if hit is None:
            hit = self.name_of_node(node)
        st = self.stamp(node)
        return self.subject(hit.value if hit else None, hit=hit, site=st.site if st else None,
                            iteration=st.iteration if st else None)

    def optimizers(self) -> list[tuple[str, Any]]:
        return find_objects(torch.optim.Optimizer)

    def is_optimized(self, t: Any) -> bool:
        return t in self.rec.optimized
