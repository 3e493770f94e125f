"""`graphguard run` follows the processes the program starts.

multiprocessing's spawn and forkserver start methods (and `torch.multiprocessing.spawn` /
`start_processes`, built on them) start a fresh interpreter that knows nothing of the parent's
guard. The way coverage.py measures such processes: the parent adds one object to the
*preparation data* every spawned or forkserver child unpickles before anything else
(`multiprocessing.spawn._main`: preparation data, `prepare()`, then the process object). Unpickling
that object imports this module in the child and installs two patches there:

- `multiprocessing.spawn.get_preparation_data` adds the same object for the child's own children;
- `BaseProcess._bootstrap` wraps the process's `run()` in a `GraphGuard` of the run's options, and
  writes that guard's partial report (`<run dir>/<pid>.json`) when `run()` returns or raises (a
  forkserver child leaves with `os._exit`, so atexit is too late), or when SIGTERM arrives
  (torch's `ProcessContext.join` terminates the other workers as soon as one fails).

The fork start method needs no stowaway: a forked child inherits the parent's patched
`_bootstrap`, and gets its own guard and report the same way (the guards it inherited are dormant
there, `guard.py`'s at-fork hook). DataLoader workers (their target is torch's worker loop), and
processes in which torch was never imported, are left alone: no guard, no report.

The parent reads the partial reports when the program ends and merges them into the run's report
(`report.json_report.merge_processes`).
"""
from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import signal
import sys
import threading
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

__all__ = ["FollowSettings", "follow", "read_partial_reports", "PARTIAL_SUFFIX", "ENV_FOLLOW",
           "settings_from_env", "guard_this_process"]

PARTIAL_SUFFIX = ".json"
# the key of the preparation data our object rides under (multiprocessing ignores keys it does not know)
_KEY = "graphguard"
# NOTE [following every Python process]: spawn and forkserver children get the stowaway above;
# any other Python process the run starts (torchrun's and `accelerate launch`'s workers are
# `subprocess` children, srun's tasks are separate interpreters) inherits the environment, and
# graphguard's startup hook (graphguard/_startup.py, a .pth file in site-packages) reads the
# run's settings from this variable, as coverage.py's process-start hook reads its own.
ENV_FOLLOW = "GRAPHGUARD_FOLLOW"


@dataclass(frozen=True)
class FollowSettings:
    """What a followed process needs to guard itself like the parent: the run's options, and where
    its partial report goes. Paths are absolute (a child may change directory before it ends)."""

    run_dir: str  # <pid>.json of every followed process
    target: str | None  # the run's script or module, the `run.target` of each partial report
    mode: str = "raise"
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    record_iterations: int | None = 2
    max_steps: int | None = None
    hang_timeout: float | None = 60.0  # GraphGuard's default (capture/ranks.py DEFAULT_HANG_TIMEOUT)
    diagrams: bool = True  # each process's diagrams go to <run_dir>/<pid>/graphs/
    parent_pid: int = field(default_factory=os.getpid)


# This process's settings: set in the parent by follow(), in a child when the stowaway arrives.
_SETTINGS: FollowSettings | None = None
_PATCHED: dict[str, Any] = {}  # name -> the original we replaced, to undo in the parent


class _Stowaway:
    """The object in the preparation data. Unpickled in the child before its process object:
    `_arrive` installs the patches there."""

    def __init__(self, settings: FollowSettings) -> None:
        self.settings = settings

    def __reduce__(self) -> tuple[Any, ...]:
        return (_arrive, (asdict(self.settings),))


def _arrive(state: dict[str, Any]) -> _Stowaway:
    """Run in a spawned or forkserver child while it unpickles its preparation data."""
    state = dict(state, select=tuple(state.get("select", ())), ignore=tuple(state.get("ignore", ())))
    settings = FollowSettings(**state)
    try:
        _install(settings)
    except Exception:  # never stop the user's process for graphguard's sake: it runs unguarded
        pass
    return _Stowaway(settings)


def follow(settings: FollowSettings) -> Callable[[], None]:
    """Follow the processes started from now on (the parent's side of `graphguard run`): clears
    old partial reports (and their diagrams) from `settings.run_dir`; returns the undo."""
    # made by the first followed process that writes: a run without any leaves no folder
    for name in os.listdir(settings.run_dir) if os.path.isdir(settings.run_dir) else ():
        # a previous run's processes are not this run's
        path = os.path.join(settings.run_dir, name)
        stem = name.split(".")[0]
        if not stem.isdigit():  # only what followed processes write: <pid>.json, <pid>/graphs
            continue
        try:
            if os.path.isdir(path):
                shutil.rmtree(path)
            else:
                os.remove(path)
        except OSError:
            pass
    _install(settings)
    unexport = _export(settings)

    def undo() -> None:
        _uninstall()
        unexport()

    return undo


def _export(settings: FollowSettings) -> Callable[[], None]:
    """Put the settings where every child process's startup hook reads them; returns the undo."""
    before = os.environ.get(ENV_FOLLOW)
    os.environ[ENV_FOLLOW] = json.dumps(asdict(settings))

    def restore() -> None:
        if before is None:
            os.environ.pop(ENV_FOLLOW, None)
        else:
            os.environ[ENV_FOLLOW] = before

    return restore


def settings_from_env() -> FollowSettings | None:
    """The run's settings a parent exported (`GRAPHGUARD_FOLLOW`), or None (none, or unreadable)."""
    text = os.environ.get(ENV_FOLLOW)
    if not text:
        return None
    try:
        state = json.loads(text)
        state = dict(state, select=tuple(state.get("select", ())), ignore=tuple(state.get("ignore", ())))
        return FollowSettings(**state)
    except (ValueError, TypeError):
        return None


def _root_settings() -> FollowSettings:
    """`GRAPHGUARD=1` with no run above this process: it is the run, with options from the
    environment (graphguard/_startup.py lists them)."""
    report_dir = os.path.abspath(os.environ.get("GRAPHGUARD_REPORT_DIR", "graphguard-report"))
    mode = os.environ.get("GRAPHGUARD_MODE", "raise")
    if mode not in ("raise", "warn", "collect"):
        sys.stderr.write(f"graphguard: GRAPHGUARD_MODE={mode!r} is not raise, warn or collect; using raise\n")
        mode = "raise"

    def codes(var: str) -> tuple[str, ...]:
        return tuple(c.strip() for c in os.environ.get(var, "").split(",") if c.strip())

    argv = list(getattr(sys, "orig_argv", None) or sys.argv)
    return FollowSettings(run_dir=os.path.join(report_dir, "processes"), target=" ".join(argv[1:]) or None,
                          mode=mode, select=codes("GRAPHGUARD_SELECT"), ignore=codes("GRAPHGUARD_IGNORE"),
                          hang_timeout=hang_timeout_from_env(60.0),
                          diagrams=os.environ.get("GRAPHGUARD_DIAGRAMS", "1") != "0")


def hang_timeout_from_env(default: float | None) -> float | None:
    """`GRAPHGUARD_HANG_TIMEOUT` (seconds; 0 turns GG019's watch off), or `default` when unset
    or not a number (said once on stderr)."""
    text = os.environ.get("GRAPHGUARD_HANG_TIMEOUT", "").strip()
    if not text:
        return default
    try:
        value = float(text)
        if value < 0 or value != value:
            raise ValueError
    except ValueError:
        sys.stderr.write(f"graphguard: GRAPHGUARD_HANG_TIMEOUT={text!r} is not a number of seconds; "
                         f"using {default}\n")
        return default
    return value or None


def guard_this_process() -> None:
    """Guard the rest of this process (the startup hook calls it once torch is imported): a guard
    of the run's options is entered now and left at exit, when this process writes its partial
    report for the run, or, as the run itself (`GRAPHGUARD=1`, nobody above), merges every
    process's report, writes it and prints the findings."""
    from .guard import GraphGuard
    from .errors import GraphMisuseError  # noqa: F401 - loaded before any finding is raised

    settings = settings_from_env()
    root = settings is None or settings.parent_pid == os.getpid()
    if settings is None:
        settings = _root_settings()
        follow(settings)  # clears old reports, follows spawned children, exports the settings
    else:
        _install(settings)  # this process's own spawned children are the run's too
    guard = GraphGuard(mode=settings.mode, select=settings.select, ignore=settings.ignore,
                       record_iterations=settings.record_iterations, max_steps=settings.max_steps,
                       hang_timeout=settings.hang_timeout)
    guard.__enter__()
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] else "python"
    ident = _Identity(os.getpid(), _rank_from_env(), os.path.basename(argv0), None)
    seen: dict[str, BaseException | None] = {"exc": None}
    done = threading.Event()
    hook_before = sys.excepthook

    def excepthook(kind: Any, value: Any, tb: Any) -> None:
        seen["exc"] = value  # the program's uncaught exception, for the report's status
        hook_before(kind, value, tb)

    sys.excepthook = excepthook

    def finish(status: str | None = None) -> None:
        if done.is_set():
            return
        done.set()
        exc = seen["exc"]
        status = status or ("raised" if exc is not None else "ok")
        try:
            guard.__exit__(type(exc) if exc is not None else None, exc, None)
        except Exception:
            pass
        if root:
            report_followed_run(guard, settings, status, exc)
        elif guard.findings or guard.backward_calls or guard.steps:
            # a process that never trained (a launcher, a helper) adds nothing to the run's report
            _write_partial(guard, settings, ident, status, exc)

    _on_sigterm(lambda: finish("terminated"))
    guard.at_hang(lambda: finish("hung"))  # GG019: the process ends without atexit
    atexit.register(finish)


def _install(settings: FollowSettings) -> None:
    global _SETTINGS
    _SETTINGS = settings
    import multiprocessing.process
    import multiprocessing.spawn

    if "get_preparation_data" not in _PATCHED:
        orig = multiprocessing.spawn.get_preparation_data
        _PATCHED["get_preparation_data"] = orig
        multiprocessing.spawn.get_preparation_data = _with_stowaway(orig)
    if "_bootstrap" not in _PATCHED:
        orig_boot = multiprocessing.process.BaseProcess._bootstrap
        _PATCHED["_bootstrap"] = orig_boot
        multiprocessing.process.BaseProcess._bootstrap = _guarded_bootstrap(orig_boot)  # type: ignore[method-assign]


def _uninstall() -> None:
    global _SETTINGS
    import multiprocessing.process
    import multiprocessing.spawn

    _SETTINGS = None
    if "get_preparation_data" in _PATCHED:
        multiprocessing.spawn.get_preparation_data = _PATCHED.pop("get_preparation_data")
    if "_bootstrap" in _PATCHED:
        multiprocessing.process.BaseProcess._bootstrap = _PATCHED.pop("_bootstrap")  # type: ignore[method-assign]


def _with_stowaway(orig: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    @functools.wraps(orig)
    def get_preparation_data(name: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        data = orig(name, *args, **kwargs)
        if _SETTINGS is not None:
            data[_KEY] = _Stowaway(_SETTINGS)
        return data

    return get_preparation_data


def _guarded_bootstrap(orig: Callable[..., int]) -> Callable[..., int]:
    @functools.wraps(orig)
    def _bootstrap(self: Any, *args: Any, **kwargs: Any) -> int:
        settings = _SETTINGS
        try:
            if settings is not None and os.getpid() != settings.parent_pid and _worth_guarding(self):
                run = self.run  # bound: a subclass's own run() too
                self.run = functools.partial(_guarded_run, run, self, settings)
        except Exception:
            pass
        return orig(self, *args, **kwargs)

    return _bootstrap


def _worth_guarding(proc: Any) -> bool:
    """Not a DataLoader worker (dormant, as in-process: a finding there would kill the worker and
    its report is never read) nor a Manager's server, and torch is loaded (nothing to watch otherwise; importing torch
    for the guard alone would cost a process seconds)."""
    if "torch" not in sys.modules:
        return False
    target = getattr(proc, "_target", None)
    module = getattr(target, "__module__", None) or ""
    # a Manager's server process runs multiprocessing's own code, never the user's training
    return not module.startswith(("torch.utils.data", "multiprocessing.managers"))


@dataclass
class _Identity:
    """Who a followed process is, for its report's `process` block."""

    pid: int
    rank: int | str | None
    name: str
    function: str | None


class _Caught:
    """Wraps torch spawn's `fn` to see the worker's own exception: torch's `_wrap` catches it,
    writes the traceback for the parent and exits with status 1, so run() only sees SystemExit."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.exc: BaseException | None = None
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self.fn(*args, **kwargs)
        except BaseException as e:
            self.exc = e
            raise


def _torch_spawn_args(proc: Any) -> tuple[Any, ...] | None:
    """The arguments `(fn, index, args, error_file)` when the process runs torch's spawn wrapper."""
    target = getattr(proc, "_target", None)
    args = getattr(proc, "_args", None)
    if getattr(target, "__module__", None) == "torch.multiprocessing.spawn" \
            and getattr(target, "__name__", None) == "_wrap" and isinstance(args, tuple) and len(args) >= 2:
        return args
    return None


def _rank_from_env() -> int | str | None:
    for var in ("RANK", "LOCAL_RANK"):
        value = os.environ.get(var)
        if value is not None:
            return int(value) if value.strip().isdigit() else value
    return None


def _function_name(fn: Any) -> str | None:
    if fn is None:
        return None
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return f"{getattr(fn, '__module__', '?')}.{name}" if name else None


def _guarded_run(run: Callable[[], None], proc: Any, settings: FollowSettings) -> None:
    """`proc.run()` inside a guard of the run's options; the partial report is written however it ends."""
    try:
        from .guard import GraphGuard
        from .errors import GraphMisuseError  # noqa: F401 - loaded before any finding is raised

        guard = GraphGuard(mode=settings.mode, select=settings.select, ignore=settings.ignore,
                           record_iterations=settings.record_iterations, max_steps=settings.max_steps,
                           hang_timeout=settings.hang_timeout)
    except Exception:  # graphguard cannot guard here: the process runs as without it
        run()
        return
    spawn_args = _torch_spawn_args(proc)
    caught = None
    if spawn_args is not None:
        caught = _Caught(spawn_args[0])
        proc._args = (caught, *spawn_args[1:])
        rank: int | str | None = spawn_args[1]
        function = _function_name(spawn_args[0])
    else:
        rank = None
        function = _function_name(getattr(proc, "_target", None)) or _function_name(run)
    ident = _Identity(os.getpid(), rank, str(getattr(proc, "name", "")), function)
    done = threading.Event()

    def write(status: str, exc: BaseException | None) -> None:
        if not done.is_set():
            done.set()
            _write_partial(guard, settings, ident, status, exc)

    restore = _on_sigterm(lambda: write("terminated", None))
    guard.at_hang(lambda: write("hung", None))
    status, exc = "ok", None
    try:
        with guard:
            run()
    except SystemExit as e:
        status = "exited"
        code = e.code
        failed = code not in (None, 0)
        exc = (caught.exc if caught is not None and caught.exc is not None else e) if failed else None
        if failed and caught is not None and caught.exc is not None:
            status = "raised"
        raise
    except BaseException as e:
        status, exc = "raised", e
        raise
    finally:
        if caught is not None and caught.exc is not None and status == "ok":
            status, exc = "raised", caught.exc  # a KeyboardInterrupt torch's wrapper swallowed
        restore()
        write(status, exc)


def _on_sigterm(handler: Callable[[], None]) -> Callable[[], None]:
    """Write the report on SIGTERM, then die of it as before; only where nobody else handles it."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    try:
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return lambda: None

        def on_term(signum: int, frame: Any) -> None:
            try:
                handler()
            finally:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGTERM)

        signal.signal(signal.SIGTERM, on_term)
    except (ValueError, OSError, AttributeError):
        return lambda: None

    def restore() -> None:
        try:
            if signal.getsignal(signal.SIGTERM) is on_term:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
        except (ValueError, OSError):
            pass

    return restore


def _write_partial(guard: Any, settings: FollowSettings, ident: _Identity, status: str,
                   exc: BaseException | None) -> None:
    """`<run_dir>/<pid>.json`: the guard's report plus a `process` block. Written first without
    diagrams (the parent may stop the process any moment), then again with them."""
    path = os.path.join(settings.run_dir, f"{ident.pid}{PARTIAL_SUFFIX}")
    if ident.rank is None:  # read late: the program may set RANK itself
        ident.rank = _rank_from_env()

    def dump() -> None:
        os.makedirs(settings.run_dir, exist_ok=True)
        try:
            report = guard.report(target=settings.target, status=status, exception=exc)
        except Exception:  # a finding that cannot be serialized: the run block still goes out
            keep, guard.findings = guard.findings, []
            try:
                report = guard.report(target=settings.target, status=status, exception=exc)
            finally:
                guard.findings = keep
        report["process"] = asdict(ident)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2)
        os.replace(tmp, path)  # the parent never reads half a file

    try:
        dump()
        if settings.diagrams and any(getattr(f, "graph", None) is not None for f in guard.findings):
            from .report.diagrams import write_diagrams

            write_diagrams(guard.findings, os.path.join(settings.run_dir, str(ident.pid)), quiet=True)
            dump()
    except Exception as err:  # the user's process must end as it would have
        try:
            sys.stderr.write(f"graphguard: process {ident.pid}: report not written "
                             f"({type(err).__name__}: {err})\n")
        except Exception:
            pass


def read_partial_reports(run_dir: str) -> list[dict[str, Any]]:
    """The partial reports the followed processes wrote, in pid order; unreadable ones skipped
    (a process killed while writing leaves only its temporary file)."""
    out = []
    try:
        names = sorted(n for n in os.listdir(run_dir) if n.endswith(PARTIAL_SUFFIX))
    except OSError:
        return []
    for name in names:
        try:
            with open(os.path.join(run_dir, name), encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("process"), dict) \
                and isinstance(data.get("findings"), list):
            out.append(data)
    return out


def report_followed_run(guard: Any, settings: Any, status: str, exc: BaseException | None) -> None:
    """The end of a run started by `GRAPHGUARD=1` rather than by `graphguard run` (graphguard/
    _startup.py): this process's report merged with its children's, written to
    `<report dir>/graphguard.json`, and the findings printed as `graphguard run` prints them."""
    from .report.text import render_findings, render_summary_line

    report_dir = os.path.dirname(settings.run_dir)
    parts = read_partial_reports(settings.run_dir)
    report = build_report(guard, settings.target or "python", status, exc, quiet=True)
    if report is not None:
        from .report.json_report import merge_processes

        report = merge_processes(report, parts, os.getpid(), None)
        path = os.environ.get("GRAPHGUARD_JSON") or os.path.join(report_dir, "graphguard.json")
        dump_json(report, path)
    try:
        own, theirs = guard.findings, process_findings(parts)
        everything = own + [f for _, fs in theirs for f in fs]
        if own:
            sys.stderr.write(render_findings(own))
        for proc, fs in theirs:
            if fs:
                sys.stderr.write(f"\n{process_label(proc)}" + render_findings(fs))
        followed = f" ({len(parts) + 1} processes)" if parts else ""
        where = f"; report {os.path.relpath(path)}" if report is not None else ""
        sys.stderr.write(f"{render_summary_line(everything)}{followed}{where}\n")
    except Exception as err:  # a wording bug must not hide the result
        sys.stderr.write(f"graphguard: error: cannot word the findings ({type(err).__name__}: {err})\n")

def process_findings(parts: list[dict[str, Any]]) -> list[tuple[dict[str, Any], list[Any]]]:
    """Each followed process (its `process` block) with its findings read back as Finding objects."""
    from .model import Finding

    out = []
    for p in parts:
        fs = []
        for d in p["findings"]:
            try:
                fs.append(Finding.from_dict(d))
            except Exception:  # a damaged entry: the others still count
                pass
        out.append((p["process"], fs))
    return out

def process_label(proc: dict[str, Any]) -> str:
    """`[rank 0, pid 4242, __mp_main__.train]`: whose findings follow."""
    bits = [f"rank {proc['rank']}"] if proc.get("rank") is not None else []
    bits.append(f"pid {proc.get('pid')}")
    if proc.get("function"):
        bits.append(str(proc["function"]))
    return f"[{', '.join(bits)}]"

def dump_json(report: dict[str, Any], path: str) -> None:
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2)
    except OSError as err:  # checked before the run; a full disk now must not hide the result
        print(f"graphguard: error: cannot write {path}: {err.strerror or err}", file=sys.stderr)

def build_report(guard: Any, target: str, status: str, exc: BaseException | None,
                  quiet: bool = False) -> dict[str, Any] | None:
    """The JSON report; if a finding cannot be serialized (a graphguard bug), the report without
    it, and one line saying so: the run's result must still be written."""
    try:
        return guard.report(target=target, status=status, exception=exc)
    except Exception as err:
        if not quiet:
            print(f"graphguard: error: some findings left out of the report ({type(err).__name__}: "
                  f"{err})", file=sys.stderr)
    everything = guard.findings
    try:
        keep = []
        for f in everything:
            try:
                f.to_dict()
                keep.append(f)
            except Exception:
                pass
        guard.findings = keep
        return guard.report(target=target, status=status, exception=exc)
    except Exception:
        return None
    finally:
        guard.findings = everything
