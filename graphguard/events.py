"""Events the capture layer hands to the rules, and the sink and clock it is given to report them."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

from .model import Site

__all__ = ["Event", "ParamGroupAdded", "LossCall", "ProductOp", "BackwardCall", "BackwardDone", "StepCall", "StepDone",
           "InplaceOp", "CopyConstruct", "GradRead", "GuardExit", "Sink", "Clock",
           "DataAssign", "CheckpointCall", "AutogradError", "EmptyOptimizer", "DdpForward", "RanksStalled"]


class Sink(NamedTuple):
    """What capture reports to, handed to it when it is built (coverage.py's collector gives its
    tracer its callbacks the same way): capture never imports or calls the guard."""

    dispatch: Callable[["Event"], None]  # judge an event now (may raise GraphMisuseError)
    internal_error: Callable[[BaseException, str], None]  # a graphguard failure: GG901, go on
    # a backward call seen by the mode (`Tensor.backward`): (func, args, kwargs) -> its result
    on_backward: Callable[[Any, tuple, dict], Any]


class Clock:
    """The run's time as capture stamps it: written by the guard, read per op by the recorder."""

    __slots__ = ("iteration", "backward_calls")

    def __init__(self) -> None:
        self.iteration = 0  # iterations ended so far
        self.backward_calls = 0  # backward calls started so far (a Stamp's epoch)


@dataclass
class Event:
    """Base: every event knows the user site where it happened."""

    site: Site  # user frames, innermost first


@dataclass
class LossCall(Event):
    """A loss function was called with (input, target)."""

    func: str  # `mse_loss`
    input: Any  # the prediction tensor
    target: Any  # the target tensor
    # (argument name, tensor) for the loss's `weight=` / `pos_weight=` when given (GG002)
    weights: list = field(default_factory=list)
    # a product the user wrote, probability (target) times log-probability (input), rather than
    # a loss function's call (NOTE [hand-written soft targets] in rules/shared/softtarget.py);
    # GG002 makes these itself from a ProductOp, the recorder never does
    written: bool = False
    # for a KL written out (`p * (log p - log q)`): the node of the prediction's side (q's) inside
    # `input`, whose leaves are the prediction's; None when `input` is the prediction itself
    input_node: Any = None


@dataclass
class ProductOp(Event):
    """A product, contraction or xlogy (capture.ops.WRITTEN_OPS) of two tensors that both carry
    history is about to run. Only the call's facts: whether it is a cross-entropy or KL written
    out by hand is GG002's to tell, from the factors' graph nodes (rules/shared/softtarget.py).
    The factors are held for the dispatch only, as a LossCall holds its arguments."""

    op: str  # `mul`, `__matmul__`, `einsum`, `xlogy`, ...
    a: Any  # the first factor (einsum's first operand, xlogy's x)
    b: Any  # the second
    equation: str | None = None  # einsum's equation
    dims: Any = None  # tensordot's `dims` when given


@dataclass
class BackwardCall(Event):
    """`backward()` / `autograd.backward` / `autograd.grad` is about to run (nothing touched yet)."""

    api: str  # "backward" | "grad"
    roots: list[Any]  # the tensors backward starts from
    gradients: list[Any]  # grad_tensors / grad_outputs (None entries when not given)
    retain_graph: bool
    create_graph: bool
    inputs: list[Any]  # `inputs=` of backward, or the inputs of autograd.grad
    scan: Any  # capture.scan.GraphScan of the graph reachable from the roots
    index: int  # 0-based count of backward calls in this guard
    iteration: int = 0  # the guard's iteration when the call was made


@dataclass
class BackwardDone(Event):
    """A backward finished without raising."""

    call: BackwardCall


@dataclass
class StepCall(Event):
    """`optimizer.step()` is about to run."""

    optimizer: Any
    closure: bool = False  # step(closure): the gradients are computed inside the step


@dataclass
class StepDone(Event):
    """`optimizer.step()` (or `guard.step()`) ended an iteration."""

    optimizer: Any  # None for guard.step()


@dataclass
class InplaceOp(Event):
    """An in-place op (`add_`, `x[i] = v`, `relu(inplace=True)`, `out=`) is about to modify `target`."""

    func: str
    target: Any
    grad_enabled: bool


@dataclass
class CopyConstruct(Event):
    """`torch.tensor(data)` and friends, with the tensors found in `data` that require grad."""

    func: str
    sources: list[Any]
    requires_grad: bool  # the result was asked to require grad


@dataclass
class GradRead(Event):
    """The user read `t.grad`."""

    tensor: Any


@dataclass
class GuardExit(Event):
    """The guard is closing (normally or because the body raised)."""

    exc: BaseException | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class ParamGroupAdded(Event):
    """An optimizer is being given parameters (its constructor, or add_param_group)."""

    optimizer: Any
    params: list[Any]


@dataclass
class EmptyOptimizer(Event):
    """An optimizer is being constructed with an empty parameter list (PyTorch raises "optimizer
    got an empty parameter list" right after): GG011 says which model had no parameters."""

    optimizer: Any  # the optimizer being built (not usable yet)


@dataclass
class DataAssign(Event):
    """`t.data = value` is about to replace the data of `target` (GG016)."""

    target: Any
    value: Any
    grad_enabled: bool


@dataclass
class CheckpointCall(Event):
    """A reentrant `torch.utils.checkpoint.checkpoint(...)` returned (GG015)."""

    function: Any  # the checkpointed function or module
    inputs: list[Any]  # its tensor arguments
    outputs: list[Any]  # the tensors it returned
    used: list[Any]  # requires-grad tensors that ops inside the call read
    grad_enabled: bool  # autograd was on where checkpoint() was called


@dataclass
class AutogradError(Event):
    """PyTorch raised inside a guarded op or backward (GG014, GG903): judged after the fact,
    before the exception leaves the guard."""

    where: str  # "op" | "backward"
    op: str  # the torch function's name, or "backward" / "grad"
    error: BaseException
    tensors: list[Any]  # the op's tensor arguments (op), or the backward's roots
    call: Any = None  # the BackwardCall (backward)
    reported: int = 0  # error findings the rules made for this call before it ran


@dataclass
class DdpForward(Event):
    """A DistributedDataParallel module's forward is about to run (GG017): `window` is what its
    reducer was told to expect at the previous forward (capture.ddp.DdpWindow; `sync` False for
    a forward inside `no_sync()`), None when there was none (no forward yet, or grad off)."""

    module: Any
    window: Any


@dataclass
class RanksStalled(Event):
    """This rank has waited in a collective past the hang timeout, and every rank's account
    (capture.ranks.RankState) says none of them can go on (GG019). `site` is this rank's call."""

    me: Any  # this rank's RankState
    ranks: list  # every rank's RankState, by rank
    timeout: float  # the hang timeout
    waited: float  # seconds this rank had waited in its call when the accounts were read

