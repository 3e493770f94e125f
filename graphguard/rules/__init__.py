"""The rule catalog: one module per rule, registered in ALL_RULES (no import side effects)."""
from __future__ import annotations

from typing import Iterable

from ..errors import GraphGuardUsageError
from ..model.messages import Message, is_message_id, split_message_id
from .base import DOC_HEADINGS, Detection, Rule
from .gg001_stale_graph import StaleGraph
from .gg002_non_detached_target import NonDetachedTarget
from .gg003_double_backward import DoubleBackward
from .gg004_carried_state import CarriedState
from .gg005_inplace_saved_tensor import InplaceSavedTensor
from .gg006_leaf_inplace import LeafInplace
from .gg007_non_leaf_parameter import NonLeafParameter
from .gg008_param_without_grad import ParamWithoutGrad
from .gg009_loss_without_grad import LossWithoutGrad
from .gg103_needless_requires_grad import NeedlessRequiresGrad
from .gg104_copy_construct_detach import CopyConstructDetach
from .gg012_non_scalar_loss import NonScalarLoss
from .gg013_zero_gradient import ZeroGradient
from .gg010_missing_zero_grad import MissingZeroGrad
from .gg102_retain_graph_growth import RetainGraphGrowth
from .gg011_unregistered_parameter import UnregisteredParameter
from .gg101_graph_leak import GraphLeak
from .gg015_checkpoint_no_grad_input import CheckpointNoGradInput
from .gg016_param_data_assign import ParamDataAssign
from .gg014_no_grad_forward import NoGradForward
from .gg017_ddp_unused_parameter import DdpUnusedParameter
from .gg018_ddp_backward_twice import DdpBackwardTwice
from .gg019_ranks_diverged import RanksDiverged
from .gg020_no_sync_never_reduced import NoSyncNeverReduced
from .gg105_ddp_accumulation_without_no_sync import DdpAccumulationWithoutNoSync
from .gg903_unexplained_autograd_error import UnexplainedAutogradError
from .gg901_internal_error import InternalError
from .gg902_compiled_code import CompiledCode

__all__ = ["ALL_RULES", "Rule", "Detection", "rule_for_code", "check_codes", "selected", "instantiate",
           "superseded_by", "message_for_id", "DOC_HEADINGS"]

ALL_RULES: list[type[Rule]] = [
    StaleGraph,
    NonDetachedTarget,
    DoubleBackward,
    CarriedState,
    InplaceSavedTensor,
    LeafInplace,
    NonLeafParameter,
    ParamWithoutGrad,
    LossWithoutGrad,
    NeedlessRequiresGrad,
    CopyConstructDetach,
    InternalError,
    NonScalarLoss,
    ZeroGradient,
    MissingZeroGrad,
    RetainGraphGrowth,
    UnregisteredParameter,
    CompiledCode,
    GraphLeak,
    NoGradForward,
    CheckpointNoGradInput,
    ParamDataAssign,
    DdpUnusedParameter,
    DdpBackwardTwice,
    RanksDiverged,
    NoSyncNeverReduced,
    DdpAccumulationWithoutNoSync,
    # last: it speaks when no rule before it explained the error (docs/architecture.md)
    UnexplainedAutogradError,
]

_BY_CODE = {r.code: r for r in ALL_RULES}


def rule_for_code(code: str) -> type[Rule]:
    """The rule class for a code such as ``GG001`` (GraphGuardUsageError when unknown)."""
    try:
        return _BY_CODE[code.upper()]
    except KeyError:
        raise GraphGuardUsageError(f"unknown rule code {code!r} (see `graphguard rules`)") from None


def message_for_id(message_id: str) -> Message:
    """The declared message `GG008.never-called` (GraphGuardUsageError when unknown)."""
    code, name = split_message_id(message_id)
    rule = rule_for_code(code)
    for m in rule.messages:
        if m.name == name:
            return m
    known = ", ".join(m.id for m in rule.messages) or "none"
    raise GraphGuardUsageError(f"unknown message {message_id!r} (messages of {code}: {known}; "
                               f"see `graphguard explain {code}`)")


def check_codes(prefixes: Iterable[str]) -> None:
    """Reject code prefixes and message ids that match no rule (a typo must not silently select
    nothing)."""
    for p in prefixes:
        if is_message_id(p):
            message_for_id(p)
        elif not any(code.startswith(p.upper()) for code in _BY_CODE):
            raise GraphGuardUsageError(f"unknown rule code {p!r} (see `graphguard rules`)")


def selected(code: str, select: Iterable[str], ignore: Iterable[str]) -> bool:
    """Whether the rule `code` runs: a code prefix or one of its message ids in `select` (or no
    selection), and no code prefix of it in `ignore` (an ignored message id mutes that message
    only: `instantiate`)."""
    sel = [s.upper() for s in select]
    if sel and not any(code.startswith(s) if not is_message_id(s) else split_message_id(s)[0] == code
                       for s in sel):
        return False
    return not any(code.startswith(i.upper()) for i in ignore if not is_message_id(i))


def _muted(rule: type[Rule], select: Iterable[str], ignore: Iterable[str]) -> set[str]:
    """The names of `rule`'s messages left out: ignored by id, or not among the ids selected
    when the selection names this code's messages one by one (and not the code itself)."""
    names = {m.name for m in rule.messages}
    muted = {n for c, n in (split_message_id(i) for i in ignore if is_message_id(i)) if c == rule.code}
    chosen = {n for c, n in (split_message_id(s) for s in select if is_message_id(s)) if c == rule.code}
    whole = any(rule.code.startswith(s.upper()) for s in select if not is_message_id(s))
    if chosen and not whole:
        muted |= names - chosen
    return muted


def instantiate(select: Iterable[str] = (), ignore: Iterable[str] = (),
                rules: Iterable[type[Rule]] = ALL_RULES) -> list[Rule]:
    """The rule instances of one guard: the selected rules, each with its muted messages."""
    select, ignore = list(select), list(ignore)
    out = []
    for cls in rules:
        if selected(cls.code, select, ignore):
            rule = cls()
            rule.muted = frozenset(_muted(cls, select, ignore))
            out.append(rule)
    return out


def superseded_by(rules: Iterable[type[Rule]] = ALL_RULES) -> dict[str, frozenset[str]]:
    """Rule code -> the codes of the rules that declare they supersede it (`Rule.supersedes`)."""
    out: dict[str, set[str]] = {}
    for r in rules:
        for code in r.supersedes:
            out.setdefault(code, set()).add(r.code)
    return {code: frozenset(by) for code, by in out.items()}
