"""The pre-backward graph scan (capture/scan.py) on its own: the walk limit, the sparse reads of
light mode (NOTE [sparse reads]) and the saved-value check read per node type in one call.
Each test builds a real graph and checks what the scan says about it against what the graph is."""
from __future__ import annotations

import torch

from graphguard.capture.marks import sequence_now
from graphguard.capture.saved import SavedCheck
from graphguard.capture.scan import scan_graph
from graphguard.capture.state import Mark

STAMP, MARK = "gg_test_stamp", "gg_test_mark"


def chain(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    w = torch.randn(3, requires_grad=True)
    x = w
    for _ in range(n):
        x = x * 1.01
    return w, x.sum()


def test_limit_stops_the_walk_and_every_kept_node_is_read() -> None:
    _, loss = chain(100)
    scan = scan_graph([loss], STAMP, MARK, 10)
    assert scan.truncated
    assert len(scan.nodes) == len(scan.walk.parent) == 10
    # recording scan: every kept node read, dense lists cover exactly the kept nodes
    assert scan.read == list(range(10))
    assert len(scan.marks) == len(scan.stamps) == len(scan.metadata) == 10
    assert not scan.has_fresh and scan.fresh == []


def test_no_truncation_below_the_limit() -> None:
    _, loss = chain(5)
    scan = scan_graph([loss], STAMP, MARK, 10)
    assert not scan.truncated
    # SumBackward, 5 MulBackward, the leaf's AccumulateGrad
    assert len(scan.nodes) == 7
    assert scan.leaf_index == {6} and len(scan.leaves) == 1


def test_light_scan_reads_only_old_nodes_and_leaves() -> None:
    w = torch.randn(3, requires_grad=True)
    old = w * 2  # made "before the last backward"
    old_node = old.grad_fn
    old_node.metadata[MARK] = Mark(0, 0, (), True)  # as a retained backward would have left it
    fresh_from = sequence_now()
    loss = (old.exp() + 1).sum()  # three fresh nodes on top of the old one
    scan = scan_graph([loss], STAMP, MARK, 1000, fresh_from=fresh_from)
    kinds = [type(n).__name__ for n in scan.nodes]
    at = {k: i for i, k in enumerate(kinds)}
    old_i, leaf_i = at["MulBackward0"], at["AccumulateGrad"]
    assert sorted(scan.read) == sorted([old_i, leaf_i])
    assert sorted(scan.fresh) == sorted(i for i in range(len(kinds)) if i not in (old_i, leaf_i))
    assert scan.has_fresh
    # the dense lists: the old node's mark where it is, None for every fresh node
    assert scan.marks[old_i] is not None and scan.marks[old_i].retained
    assert all(scan.marks[i] is None and scan.metadata[i] is None for i in scan.fresh)
    assert scan.marked_index == [old_i]
    seqs = [scan.nodes[i]._sequence_nr() for i in scan.fresh]
    assert (scan.fresh_lo, scan.fresh_hi) == (min(seqs), max(seqs))
    # a retained graph's fresh nodes join the read ones (exact marks on each of them)
    scan.read_fresh()
    assert not scan.has_fresh and all(scan.metadata[i] is not None for i in range(len(kinds)))


class _Adopted:
    def __init__(self) -> None:
        self.versions: list[int] = []

    def adopt(self, t: torch.Tensor, version: int) -> object:
        self.versions.append(version)
        return object()

    @staticmethod
    def unpack(p: object) -> torch.Tensor:  # never called here
        raise AssertionError


def _mul_twice() -> torch.Tensor:
    w = torch.randn(3, requires_grad=True)
    a = torch.randn(3)
    b = torch.randn(3)
    y = (w * a) * b  # the inner MulBackward0 saves `a` as other; the outer one saves `b`
    b.add_(1)  # only the outer node's `other` changed
    return y.sum()


def test_modified_saved_value_is_found_per_attribute() -> None:
    got = _Adopted()
    check = SavedCheck(got.unpack, got.adopt)
    scan_graph([_mul_twice()], STAMP, MARK, 1000, fresh_from=0, saved=check)
    assert check.adopted == 1 and got.versions == [0]
    assert check.freed_at == -1
    # plain PyTorch agrees that such a graph cannot run
    try:
        _mul_twice().backward()
    except RuntimeError as err:
        assert "modified by an inplace operation" in str(err)
    else:
        raise AssertionError("PyTorch ran a graph whose saved tensor was changed")


def test_clean_graph_reads_clean() -> None:
    w = torch.randn(3, requires_grad=True)
    y = (w * torch.randn(3)).sigmoid() * w
    got = _Adopted()
    check = SavedCheck(got.unpack, got.adopt)
    scan = scan_graph([y.sum()], STAMP, MARK, 1000, fresh_from=0, saved=check)
    assert check.adopted == 0 and check.freed == 0 and not check.stopped
    assert len(scan.read) == 1  # the leaf only
    y.sum().backward()


def test_freed_graph_is_found_by_the_saved_read() -> None:
    w = torch.randn(3, requires_grad=True)
    y = (w * w).sum()
    y.backward()  # frees MulBackward0's saved tensors
    check = SavedCheck(_Adopted.unpack, _Adopted().adopt)
    scan = scan_graph([y], STAMP, MARK, 1000, fresh_from=0, saved=check)
    assert check.freed_at == [type(n).__name__ for n in scan.nodes].index("MulBackward0")


def _diamonds() -> list[torch.Tensor]:
    """Two losses over shared and repeated parts: nodes reached from several parents."""
    torch.manual_seed(0)
    w = torch.randn(4, 4, requires_grad=True)
    b = torch.randn(4, requires_grad=True)
    x = torch.randn(3, 4)
    h = torch.tanh(x @ w + b)
    g = h * h.sigmoid() + h.exp()
    side = (h[:, :2] * 2).sum()
    return [(g @ w).sum() + side, (h - b).pow(2).mean()]


def test_the_scan_parents_built_on_demand_are_those_of_a_breadth_first_walk() -> None:
    from graphguard.capture.graph import walk

    roots = _diamonds()
    fns = [r.grad_fn for r in roots]
    for limit in (3, 7, 1000):
        scan = scan_graph(roots, STAMP, MARK, limit)
        eager = walk(fns, limit)
        assert scan.nodes == eager.nodes
        assert scan.walk.parent == eager.parent
        assert scan.truncated == eager.truncated


class _Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v):
        return v * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_leaves_fed_to_a_custom_function_are_its_inputs_only() -> None:
    fed = torch.randn(3, requires_grad=True)
    other = torch.randn(3, requires_grad=True)
    loss = (_Twice.apply(fed) * other).sum()
    scan = scan_graph([loss], STAMP, MARK, 1000)
    assert [id(t) for t in scan.function_inputs] == [id(fed)]
    assert {id(t) for t in scan.leaves} == {id(fed), id(other)}
