"""Candidate source patches for one finding, written with LibCST (formatting and comments kept).

Every candidate is built from the finding's data only: its code, its subject's name and creation
line, its location and its related places (cut-by, modified-at, saved-at, fix-at), and the
source's syntax tree at those lines. A candidate is a whole new text of one file; verify.py turns
it into line edits, runs it and decides.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import libcst as cst

from .families import (
    detach_source,
    detach_copy_sources,
    accumulate_detached,
    out_of_place,
    no_grad_update,
    zero_grad_before_backward,
    smooth_cut,
    register_parameter,
    register_container,
    layer_to_init,
    add_to_optimizer,
    reuse_graph,
    leaf_parameter,
    reduce_loss,
    enable_grad,
    keep_history,
    checkpoint_non_reentrant,
    copy_into_param,
    cut_carried_state,
    cut_growing_state,
    detach_records,
)
from .families.reduce_at import reduce_at_fix
from .families.swap_args import swap_loss_arguments
from .families.zero_grad_move import move_zero_grad_after_step
from .families.manual_zero import zero_after_manual_update
from .families.late_module import add_group_after_change
from .families.local_inplace import out_of_place_local
from .families.topk_gate import topk_gate
from .families.wanted_history import stack_wanted_copies
from .families.regraph import recompute_forward, recompute_after_step, reset_accumulator, cache_per_iteration
from .families.clone import clone_before_write, inplace_flag_off
from .families.soft_argmax import soft_argmax
from .families.forward_cut import forward_keeps_history
from .families.branch_loss import branch_loss
from .families.optimizer import (add_param_group, add_param_group_late, inline_layers_to_init, leave_out_unused,
                                 optimizer_after_model, trainable_only)
from .families.copies import stack_copies
from .families.roundtrip import keep_tensor_roundtrip
from .families.select import gate_selection
from .families.downstream import keep_history_downstream
from .families.containers import register_nested_container
from .families.after_backward import detach_after_backward
from .families.cached import uncache_call
from .families.inference_mode import no_grad_for_inference_mode
from .tree import Maker, Source, drop_rewraps, loc, subject_name

__all__ = ["Candidate", "FAMILIES", "RANK", "SILENT", "candidates_for", "subject_name"]


@dataclass(frozen=True)
class Candidate:
    code: str       # the finding's code
    family: str     # e.g. "detach-at-creation", "smooth-mask"
    file: str       # path relative to the program's root
    line: int       # the line the edit is about (in the original file)
    text: str       # the file's new text
    note: str       # one phrase: what the edit does
    also: tuple[tuple[str, str], ...] = ()  # other files the same patch changes: (file, new text)


FAMILIES: dict[str, list[Maker]] = {
    "GG001": [recompute_forward, reset_accumulator, detach_source, cache_per_iteration],
    "GG003": [recompute_forward, reuse_graph],
    "GG007": [leaf_parameter],
    "GG012": [reduce_loss, reduce_at_fix],
    "GG002": [swap_loss_arguments, detach_source],
    "GG004": [cut_carried_state, detach_source],  # cut_carried_state also yields detach_carried's writes
    "GG005": [recompute_after_step, clone_before_write, out_of_place, inplace_flag_off],
    "GG006": [no_grad_update],
    "GG008": [smooth_cut, soft_argmax, branch_loss, keep_history, enable_grad, forward_keeps_history, optimizer_after_model, trainable_only, leave_out_unused],
    "GG009": [smooth_cut, soft_argmax, branch_loss, keep_history, enable_grad],
    "GG013": [smooth_cut],
    "GG014": [enable_grad],
    "GG015": [checkpoint_non_reentrant],
    "GG016": [copy_into_param],
    "GG010": [move_zero_grad_after_step, zero_grad_before_backward],
    "GG011": [register_parameter, register_container, layer_to_init, add_to_optimizer, add_param_group, add_param_group_late,
              inline_layers_to_init],
    "GG101": [accumulate_detached, detach_records],
    "GG102": [cut_growing_state],
    "GG104": [detach_copy_sources],
}


# the order families are tried in, before size: summing two losses never changes what training computes;
# retain_graph=True is tried after every other candidate, whatever their size: it makes the
# error go away in every program, and keeps the whole graph alive until the next backward
RANK = {"sum-losses": -1, "retain-graph": 1,
        # a carried state cut where each iteration starts comes before detaching one of its writes
        # (inside a forward that runs per time step, that would cut the history within the
        # iteration too); with the crash's retain_graph=True dropped first: the cut makes it needless
        "detach-carried-state": -1, "reset-module-state": -1, "detach-module-state": -1,
        "detach-carried-state-no-retain": -2, "reset-module-state-no-retain": -2,
        "detach-module-state-no-retain": -2}

# the clear moved after the step keeps gradient accumulation, so it is tried before a second clear
# inserted before the backward; the swap the rule diagnosed comes before detaching the prediction
RANK.update({"zero-grad-after-step": -1, "swap-loss-arguments": -1})
# a hand-written update (no optimizer to clear): its tensors' gradients zeroed right after it
FAMILIES["GG010"].insert(0, zero_after_manual_update)
RANK.update({"zero-grad-after-update": -1})

# the loss built again before its second backward (only proposed when backward is called on the
# freed loss itself, whose detaching can only fail), an accumulator started again, and what reads a
# stepped parameter computed after the step: each is what the finding's fix-at asks for
RANK.update({"recompute-forward": -1, "reset-accumulator": -1, "recompute-after-step": -1,
             "move-after-step": -2})  # moved rather than copied when nothing reads it in between
# a loss's constant stand-in in a guarded branch computed as the other branch does: proposed only
# for that if/else shape, before the smaller edits that unwrap the constant itself
RANK.update({"branch-loss": -1})


# a copy of a list of tensors, a NumPy round trip or a hard boolean selection at the cut line: the
# value's history kept with the forward values unchanged, tried first (the smaller edits of
# keep-history leave a list or an array where the tensor was, and cannot run)
for _code in ("GG008", "GG009"):
    FAMILIES[_code][:0] = [stack_copies, keep_tensor_roundtrip, gate_selection]
    FAMILIES[_code].append(keep_history_downstream)  # .data / .detach() on another use of the cut value
RANK.update({"stack-copies": -1, "keep-tensor-roundtrip": -1, "gate-selection": -1})
# rows picked by top-k indices: a straight-through gate of their scores, forward unchanged
for _code in ("GG008", "GG009"):
    FAMILIES[_code].insert(3, topk_gate)
RANK.update({"topk-gate": -1})
# a copy of tensors with a history, itself made with requires_grad=True: the history was wanted
FAMILIES["GG104"].insert(0, stack_wanted_copies)
# a list of layers kept in a container (its own ModuleList too, where a plain ModuleList refuses
# it); a kept loss that is backwarded through its holder, detached after that backward (detaching
# where it is stored cuts the loss); a value returned by a cache, computed again with the cache off
# (a detach would cut the trained input). Each is proposed only where the simpler edit cannot work.
FAMILIES["GG011"].append(register_nested_container)
# a layer that replaced part of the model inside the training loop: given to the optimizer right
# after that change (proposed only when the loop makes one; adding it where the optimizer is built
# would add the layer it replaced)
FAMILIES["GG011"].insert(0, add_group_after_change)
RANK.update({"add-param-group-after-change": -1})
# an in-place write on a leaf the same call built (an embedding output a hook made require grad):
# written out of place before the no_grad wrap, which would cut the added term's gradient
FAMILIES["GG006"].insert(0, out_of_place_local)
RANK.update({"out-of-place-local": -1})
FAMILIES["GG101"].append(detach_after_backward)
FAMILIES["GG001"].insert(0, uncache_call)
FAMILIES["GG003"].insert(0, uncache_call)
RANK.update({"nested-modulelist": -1, "nested-moduledict": -1, "detach-after-backward": -1,
             "uncache-transform": -1, "uncache-function": -1,
             # the layers the finding says forward builds, moved to __init__ together
             "layers-to-init": -1})
# a gradient taken inside inference mode: the region the finding names run under no_grad instead,
# which the enable_grad() inside can turn back on (what the finding's fix-at asks for)
FAMILIES["GG014"].insert(0, no_grad_for_inference_mode)
RANK.update({"no-grad-for-inference-mode": -1})
SILENT = {"GG008", "GG009", "GG011", "GG013"}  # no error from PyTorch: gradients are checked after the patch


def _only(f: dict[str, Any], file: str) -> dict[str, Any]:
    """`f` with the places in other files blanked, so that line numbers are read in `file` only."""
    def keep(loc: Any) -> Any:
        return loc if isinstance(loc, dict) and loc.get("file") == file else None

    subject = dict(f.get("subject") or {})
    if subject:
        subject["created_at"] = keep(subject.get("created_at"))
    return dict(f, subject=subject or None, location=keep(f.get("location")),
                related=[dict(r, location=keep(r.get("location"))) for r in f.get("related") or []])


def _rewraps_elsewhere(f: dict[str, Any], file: str, read: Callable[[str], str | None]) -> list[tuple[str, str]]:
    """(file, its text without the re-wraps of the loss) for the finding's other files that re-wrap
    it: once the history is back, `loss.requires_grad = True` there would fail on a non-leaf (or
    `Variable(loss, requires_grad=True)` cut it again). The loss is the finding's subject, or (GG008
    names a parameter) what that file calls backward on."""
    name = subject_name(f)
    if f.get("code") not in ("GG008", "GG009") or not name:
        return []
    out = []
    for r in [f.get("subject") or {}, *(f.get("related") or [])]:
        other = loc(r.get("created_at") if "created_at" in r else r.get("location"))[0]
        text = read(other) if other and other != file else None
        if text is None or any(o == other for o, _ in out):
            continue
        try:
            dropped = drop_rewraps(text, name)
            if f.get("code") == "GG008":
                other_src = Source(dropped)
                for call in other_src.nodes(cst.Call):
                    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "backward":
                        dropped = drop_rewraps(dropped, other_src.code(call.func.value).strip())
        except cst.ParserSyntaxError:
            continue
        if dropped != text:
            out.append((other, dropped))
    return out


def candidates_for(f: dict[str, Any], read: Callable[[str], str | None]) -> list[Candidate]:
    """Every candidate for finding `f`; `read(file)` gives a program file's text (None: not ours)."""
    out: list[Candidate] = []
    files = [loc(f.get("location"))[0], loc((f.get("subject") or {}).get("created_at"))[0]]
    files += [loc(r.get("location"))[0] for r in f.get("related") or []]
    for file in [x for x in dict.fromkeys(files) if x]:
        text = read(file)
        if text is None:
            continue
        try:
            src = Source(text)
        except cst.ParserSyntaxError:
            continue
        mine = _only(f, file)
        for maker in FAMILIES.get(f.get("code", ""), []):
            try:
                for family, line, new, note in maker(src, mine, file):
                    variants = [new]
                    if f.get("code") in ("GG008", "GG009") and subject_name(f):
                        # the history is back: a `requires_grad = True` re-wrap of the loss would now fail
                        variants.append(drop_rewraps(new, subject_name(f) or ""))
                    for v in variants:
                        if v != text and not any(c.text == v and c.file == file for c in out):
                            out.append(Candidate(f["code"], family, file, line, v, note))
                    for other, dropped in _rewraps_elsewhere(f, file, read):
                        # the re-wrap sits in another file (a loss module's `requires_grad = True`)
                        out.append(Candidate(f["code"], family, file, line, new, note + f"; no re-wrap in {other}",
                                             also=((other, dropped),)))
            except Exception:  # one family failing on odd code must not stop the others
                continue
    return out
