"""GG902 compiled-code: part of a backward's graph was made by torch.compile'd code, which
graphguard cannot look inside."""
from __future__ import annotations

from typing import Iterator

from ..events import BackwardCall
from ..model import Finding, Message
from .base import Detection, Rule, display
from .context import Evidence, RuleContext

__all__ = ["CompiledCode"]

# The node AOTAutograd puts in the graph for a whole compiled region (every backend that compiles
# through AOTAutograd: inductor, aot_eager). backend="eager" replays ordinary ops: nothing hidden.
_COMPILED_NODE = "CompiledFunctionBackward"


class CompiledCode(Rule):
    """## What it does
    Before a backward, notices when its graph goes through code compiled by `torch.compile` (a
    `CompiledFunctionBackward` node), and says once per guard what that means for the checks.

    ## Why is this bad?
    It is not a mistake. graphguard watches torch calls as Python makes them; inside a
    compiled region there are none: its ops, their lines, the cuts, in-place changes and loss
    calls made there are not seen. Checks at `backward()` and `optimizer.step()` (stale
    graphs, parameters without gradients, missing `zero_grad`) still work around it, but a
    finding can only point at the compiled call, not at the line inside it.

    ## Example
    ```python
    cmodel = torch.compile(model)
    pred = cmodel(x)            # the ops inside model.forward are compiled
    F.mse_loss(pred, y).backward()
    ```

    ## Use instead
    ```python
    # to check the compiled part too, run a few iterations uncompiled under graphguard:
    cmodel = model              # or torch.compile(model, backend="eager")
    ```

    ## Known problems
    Only compiled regions that reach a backward are noticed; compiled inference is not reported.
    The guard steps aside while torch.compile traces, so switching to its light mode after
    `record_iterations` changes the function-mode stack and costs one recompilation.
    """

    code = "GG902"
    slug = "compiled-code"
    severity = "info"
    summary = "part of the graph comes from torch.compile'd code, whose ops graphguard cannot see"
    messages = (
        Message("compiled-region", "info",
                "{name} comes from torch.compile'd code: graphguard checks backward and optimizer "
                "steps around it, but not the ops inside (their lines, cuts, in-place changes, loss "
                "calls). {fix}",
                "a backward's graph goes through a torch.compile'd region (CompiledFunctionBackward), "
                "whose ops are not seen"),
    )
    events = (BackwardCall,)
    # quiet: the same node types were judged before
    quiet_skip = (BackwardCall,)

    def __init__(self) -> None:
        self.reported = False  # once per guard: the point is made by the first one

    def detect(self, event: BackwardCall, ev: Evidence) -> Iterator[Detection]:
        if self.reported or event.scan is None:
            return
        node = next((n for n in event.scan.nodes if type(n).__name__ == _COMPILED_NODE), None)
        if node is None:
            return
        self.reported = True
        yield Detection("compiled-region", node)

    def describe(self, d: Detection, event: BackwardCall, ctx: RuleContext) -> Finding:
        hit = ctx.name_of_node(d.subject)
        subject = ctx.subject(hit.value if hit else None, hit=hit)
        fix = ("To check the compiled part too, run a few iterations without torch.compile "
               "(or with backend=\"eager\") under graphguard.")
        return self.finding(ctx, subject, ctx.loc(event.site), fix,
                            {"fix": fix, "name": display(subject.name, "A tensor of this backward")},
                            message="compiled-region")
