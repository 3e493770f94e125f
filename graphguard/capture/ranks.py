"""What each rank of a process group is doing, shared between the ranks (GG019).

A collective returns only when every rank of the group makes the same call: when one rank skips
a backward that the others make (a NaN check, one more batch in its shard, a branch on its own
data), the others wait in their all-reduce for ever, with nothing printed. From inside one rank
that wait looks like any other; what tells a hang from a slow step is what the *other* ranks are
doing. So each guarded rank keeps a small account of its collective calls (DDP's all-reduce in a
backward, `torch.distributed`'s own calls, DDP's buffer broadcast before a forward) and a
watchdog thread publishes it, as JSON under `graphguard/ranks/<rank>` in the process group's own
store (the TCPStore every launcher sets up; this works across nodes), whenever it changes.

When this rank has waited in one call longer than the timeout, the watchdog reads every rank's
account. Only a certain deadlock is reported: every rank waits in a collective (for at least half
the timeout) or has finished, and they are not all waiting in the same call. A rank that is still
computing (saving a checkpoint while the others wait at a barrier) makes it no deadlock, and a
slow all-reduce that every rank is in is none either.

Nothing here touches tensors: the accounts hold call kinds, counts and source lines.
"""
from __future__ import annotations

import functools
import json
import os
import socket
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterator

from ..events import RanksStalled
from ..model import Site
from .sites import user_site

__all__ = ["RankCall", "RankState", "RankTracker", "install_collective_hooks", "COLLECTIVES",
           "DEFAULT_HANG_TIMEOUT", "deadlocked"]

DEFAULT_HANG_TIMEOUT = 60.0  # seconds one collective may wait before the ranks are compared
_HISTORY = 16  # collective calls each rank keeps in its account
_PREFIX = "graphguard/ranks/"

# torch.distributed's blocking collectives, as user code calls them (`dist.barrier()`)
COLLECTIVES = ("all_reduce", "barrier", "broadcast", "all_gather", "all_gather_into_tensor", "reduce",
               "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter", "all_to_all",
               "all_to_all_single", "all_gather_object", "broadcast_object_list", "gather_object",
               "scatter_object_list", "monitored_barrier")


@dataclass
class RankCall:
    """One collective call of a rank: what it was, its user line, and how many came before it."""

    kind: str  # "backward" (DDP's all-reduce), "forward" (DDP's buffer broadcast), "barrier", ...
    file: str
    line: int
    function: str
    index: int  # the rank's collective calls before this one

    @classmethod
    def at(cls, kind: str, site: Site, index: int) -> "RankCall":
        frame = site[0] if site else None
        return cls(kind, frame.file if frame else "", frame.line if frame else 0,
                   frame.function if frame else "", index)


@dataclass
class RankState:
    """One rank's account, as the ranks exchange it."""

    rank: int
    world_size: int
    pid: int
    host: str
    calls: int = 0  # collective calls entered
    backwards: int = 0
    steps: int = 0
    last_backward: RankCall | None = None
    last_step: RankCall | None = None
    current: RankCall | None = None  # the collective call it waits in, if any
    since: float = 0.0  # time.time() when `current` began
    finished: bool = False  # the guard (or the process) has ended
    history: list[RankCall] = field(default_factory=list)
    stalled: bool = False  # its watchdog found the deadlock and reported it

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str | bytes) -> "RankState":
        d = json.loads(text)

        def call(v: Any) -> RankCall | None:
            return RankCall(**v) if isinstance(v, dict) else None

        return cls(d["rank"], d["world_size"], d["pid"], d.get("host", ""), d.get("calls", 0),
                   d.get("backwards", 0), d.get("steps", 0), call(d.get("last_backward")),
                   call(d.get("last_step")), call(d.get("current")), d.get("since", 0.0),
                   bool(d.get("finished")), [c for c in map(call, d.get("history", [])) if c],
                   bool(d.get("stalled")))

    def waited(self, now: float) -> float:
        return now - self.since if self.current is not None else 0.0


def deadlocked(states: list[RankState], world_size: int, now: float, patience: float) -> bool:
    """True when no rank can make progress: every rank's account is here, each one either has
    finished or waits in a collective since at least `patience` seconds, some rank waits, and
    they do not all wait in the same call (same kind, same position in their sequence)."""
    if len(states) < world_size or len({s.rank for s in states}) < world_size:
        return False
    waiting = [s for s in states if not s.finished]
    if not waiting or any(s.current is None or s.waited(now) < patience for s in waiting):
        return False
    if len(waiting) < len(states):
        return True  # a rank has finished: nobody will ever answer the others
    calls = {(s.current.kind, s.current.index) for s in waiting if s.current is not None}
    return len(calls) > 1


class RankTracker:
    """This process's account as one rank, and the watchdog that shares and judges it.

    `on_stalled(event)` is called from the watchdog thread, once, when a deadlock is certain
    (`deadlocked`); the guard decides what to do (report, end the process). The account starts
    once torch.distributed is initialized (nothing is done before); the watchdog, with two ranks
    or more and a timeout."""

    def __init__(self, on_stalled: Callable[[RanksStalled], None],
                 internal_error: Callable[[BaseException, str], None], timeout: float | None) -> None:
        self.on_stalled = on_stalled
        self.internal_error = internal_error
        self.timeout = timeout if timeout and timeout > 0 else None
        self.state: RankState | None = None
        self.single = False  # the account could not be set up: never look again
        self._site: Site = ()  # the user site of the current call (kept here, not published)
        self._version = 0
        self._store: Any = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._fired = False
        self._lock = threading.Lock()

    # ---- the main thread's side ---------------------------------------------------------------
    def wait_for_the_others(self) -> None:
        """Called by a rank that found the deadlock and reported it, before it ends its process:
        says so in the store, then waits (at most half the timeout and two ticks, the latest the
        other ranks' watchdogs reach the same verdict: `deadlocked` asks each to have waited half
        the timeout) until every rank has reported or finished. Ended sooner, its connections
        close, and a rank still short of the timeout fails in its collective ("Connection closed
        by peer") instead of reporting where it waits."""
        st = self.state
        if st is None or self.timeout is None:
            return
        with self._lock:
            st.stalled = True
        self._publish()
        tick = min(0.5, self.timeout / 4)
        end = time.time() + self.timeout / 2 + 2 * tick + 0.5
        while time.time() < end:
            states = self._read_all(st) if self._store is not None else None
            if states is not None and all(s.stalled or s.finished for s in states):
                return
            time.sleep(0.01)

    def ready(self) -> bool:
        """True once this rank's account is kept (torch.distributed initialized); the watchdog
        runs only with two ranks or more."""
        if self.state is not None:
            return True
        if self.single:
            return False
        try:
            import torch.distributed as dist

            if not (dist.is_available() and dist.is_initialized()):
                return False
            world = dist.get_world_size()
            self.state = RankState(dist.get_rank(), world, os.getpid(), socket.gethostname())
            if world < 2 or self.timeout is None:
                return True  # calls are counted (GG020 reads them); no watch
            self._store = dist.PrefixStore(_PREFIX, dist.distributed_c10d._get_default_store())
        except Exception as err:
            self.single = True  # never again: one GG901, the program goes on unwatched here
            self.state = None
            self.internal_error(err, "sharing this rank's collective calls")
            return False
        self._thread = threading.Thread(target=self._watch, name="graphguard-ranks", daemon=True)
        self._thread.start()
        return True

    @contextmanager
    def blocking(self, kind: str, site: Site) -> Iterator[None]:
        """Around one collective call of this rank (`kind` as RankCall has it)."""
        st = self.state
        if st is None:
            yield
            return
        call = RankCall.at(kind, site, st.calls)
        with self._lock:
            st.calls += 1
            st.current, st.since = call, time.time()
            st.history = (st.history + [call])[-_HISTORY:]
            self._site = site
            self._version += 1
        try:
            yield
        finally:
            with self._lock:
                st.current = None
                if kind == "backward":
                    st.backwards += 1
                    st.last_backward = call
                self._version += 1

    def note_step(self, site: Site) -> None:
        st = self.state
        if st is None:
            return
        with self._lock:
            st.steps += 1
            st.last_step = RankCall.at("step", site, st.calls)
            self._version += 1

    def close(self) -> None:
        """The guard ends: say so to the other ranks (they will not wait for this one), stop."""
        self._stop.set()
        st = self.state
        if st is None or self._fired:
            return  # a deadlocked rank ends where it waits: the others keep seeing it there
        with self._lock:
            st.finished, st.current = True, None
            self._version += 1
        self._publish()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)

    # ---- the watchdog thread -------------------------------------------------------------------
    def _watch(self) -> None:
        assert self.timeout is not None
        tick = min(0.5, self.timeout / 4)
        published = -1
        while not self._stop.wait(tick):
            try:
                if self._version != published:
                    published = self._version
                    self._publish()
                if not self._fired:
                    self._judge()
            except Exception as err:  # never out of the thread; one GG901 and the watch ends
                self.internal_error(err, "watching the ranks' collective calls")
                return

    def _publish(self) -> None:
        st = self.state
        if st is None or self._store is None:
            return
        with self._lock:
            text = st.to_json()
        try:
            self._store.set(str(st.rank), text)
        except Exception:
            self._store = None  # the store is gone (the group was destroyed): stop sharing

    def _judge(self) -> None:
        st = self.state
        assert st is not None and self.timeout is not None
        now = time.time()
        with self._lock:
            current, site = st.current, self._site
        if current is None or now - st.since < self.timeout or self._store is None:
            return
        states = self._read_all(st)
        if states is None or not deadlocked(states, st.world_size, now, self.timeout / 2):
            return
        self._fired = True
        me = next(s for s in states if s.rank == st.rank)
        self.on_stalled(RanksStalled(site, me, states, self.timeout, now - me.since))

    def _read_all(self, st: RankState) -> list[RankState] | None:
        out = []
        for k in range(st.world_size):
            if k == st.rank:
                with self._lock:
                    out.append(RankState.from_json(st.to_json()))
                continue
            try:
                if not self._store.check([str(k)]):  # never blocks, unlike get
                    return None
                out.append(RankState.from_json(self._store.get(str(k))))
            except Exception:
                return None
        return out


def install_collective_hooks(tracker: RankTracker, foreign: Callable[[], bool]) -> Callable[[], None]:
    """Wrap torch.distributed's blocking collectives so that `tracker` sees each call of the
    guard's thread (calls with async_op=True return at once and are not waits); returns the undo."""
    try:
        import torch.distributed as dist
        import torch.distributed.distributed_c10d as c10d
    except ImportError:  # pragma: no cover - a torch built without distributed
        return lambda: None
    if not dist.is_available():  # pragma: no cover
        return lambda: None
    undo: list[Callable[[], None]] = []
    for name in COLLECTIVES:
        orig = getattr(c10d, name, None)
        if orig is None:
            continue
        wrapped = _watched(orig, name, tracker, foreign)
        for owner in (dist, c10d):
            if getattr(owner, name, None) is orig:
                setattr(owner, name, wrapped)
                undo.append(functools.partial(_restore, owner, name, wrapped, orig))

    def restore_all() -> None:
        for u in reversed(undo):
            u()

    return restore_all


def _watched(orig: Callable[..., Any], name: str, tracker: RankTracker,
             foreign: Callable[[], bool]) -> Callable[..., Any]:
    @functools.wraps(orig)
    def collective(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("async_op") or foreign() or not tracker.ready():
            return orig(*args, **kwargs)
        with tracker.blocking(name, user_site(1)):
            return orig(*args, **kwargs)

    collective.__graphguard_original__ = orig  # type: ignore[attr-defined]
    return collective


def _restore(owner: Any, name: str, wrapped: Any, orig: Any) -> None:
    if getattr(owner, name, None) is wrapped:  # someone patched over us: leave theirs
        setattr(owner, name, orig)
