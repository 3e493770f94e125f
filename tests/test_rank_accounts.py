"""GG019's judgement of the ranks' accounts (capture/ranks.py), as a truth table: only a certain
deadlock is one. The multi-process behaviour is tested in tests/test_ddp_ranks.py."""
from __future__ import annotations

import pytest

from graphguard.capture.ranks import RankCall, RankState, deadlocked

NOW = 1000.0


def call(kind: str, index: int, line: int = 10) -> RankCall:
    return RankCall(kind, "train.py", line, "main", index)


def rank(r: int, current: RankCall | None = None, waited: float = 0.0, finished: bool = False) -> RankState:
    st = RankState(r, 2, 100 + r, "host")
    st.current, st.since, st.finished = current, NOW - waited, finished
    return st


@pytest.mark.parametrize("states, expected", [
    # one waits in its 4th call (a backward), the other in a barrier as its 4th: deadlock
    ([rank(0, call("backward", 3), 10), rank(1, call("barrier", 3, 20), 9)], True),
    # one backward ahead: positions differ
    ([rank(0, call("backward", 4), 10), rank(1, call("backward", 3), 9)], True),
    # the other rank has finished: nobody will answer
    ([rank(0, call("backward", 3), 10), rank(1, None, finished=True)], True),
    # both in the same call: a slow collective, not a divergence
    ([rank(0, call("backward", 3), 10), rank(1, call("backward", 3), 9)], False),
    # the other rank computes (no call): it may still come
    ([rank(0, call("barrier", 3), 10), rank(1, None)], False),
    # the other rank entered its call only just now (under half the timeout): wait longer
    ([rank(0, call("barrier", 3), 10), rank(1, call("backward", 3), 1)], False),
    # a rank's account is missing
    ([rank(0, call("barrier", 3), 10)], False),
    # every rank finished: nothing waits
    ([rank(0, None, finished=True), rank(1, None, finished=True)], False),
])
def test_deadlocked_truth_table(states, expected):
    assert deadlocked(states, 2, NOW, patience=5.0) is expected


def test_accounts_round_trip_through_json():
    st = rank(1, call("all_reduce", 7, 33), 4)
    st.last_backward, st.history = call("backward", 6, 30), [call("backward", 6, 30), call("all_reduce", 7, 33)]
    back = RankState.from_json(st.to_json())
    assert back == st
