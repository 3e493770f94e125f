"""The command line: `graphguard run|rules|explain|report` (REPORT.md)."""
from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
from typing import Any, Callable, Sequence

from ._version import __version__
from .errors import GraphGuardUsageError
from .model import SEVERITIES, severity_rank

__all__ = ["main"]

# --fail-on choices, worst first; "never" ranks above every severity
_FAIL_LEVELS = {s: severity_rank(s) for s in reversed(SEVERITIES)} | {"never": len(SEVERITIES)}


def _codes(text: str | None) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()] if text else []


def _count(text: str) -> int:
    n = int(text)
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {n}")
    return n


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, not {text!r}") from None
    if value < 0 or value != value:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text}")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="graphguard", description="Find autograd graph misuse in PyTorch code.")
    p.add_argument("--version", action="version", version=f"graphguard {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a script (or -m module) inside a GraphGuard")
    run.add_argument("-m", dest="module", metavar="MODULE", help="run a module as __main__")
    run.add_argument("--json", metavar="PATH", help="write the JSON report there")
    run.add_argument("--report-dir", default="graphguard-report", help="HTML report and diagrams")
    run.add_argument("--mode", choices=("raise", "warn", "collect"), default="raise")
    run.add_argument("--select", help="code prefixes to run, comma-separated (GG0,GG101)")
    run.add_argument("--ignore", help="code prefixes to skip, comma-separated")
    run.add_argument("--fail-on", choices=tuple(_FAIL_LEVELS), default="error",
                     help="lowest severity that makes the exit status 1 (default: error)")
    run.add_argument("--no-diagrams", action="store_true", help="skip DOT/SVG diagrams")
    run.add_argument("--format", choices=("text", "concise", "github"), default="text",
                     help="the findings printed at the end (stderr): text, concise "
                          "(path:line:col: GG001 message) or github (workflow commands)")
    run.add_argument("--record-iterations", type=_count, default=2,
                     help="iterations recorded in full before the light mode (default 2)")
    run.add_argument("--max-steps", type=_count, default=None, metavar="N",
                     help="stop the program cleanly after N optimizer steps")
    run.add_argument("--hang-timeout", type=_seconds, default=None, metavar="S",
                     help="under torch.distributed: seconds a collective may wait before the ranks "
                          "are compared; a deadlock is reported (GG019) and ends the run "
                          "(default 60, or GRAPHGUARD_HANG_TIMEOUT; 0: off)")
    run.add_argument("script", nargs="?", help="the script to run")
    run.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    fx = sub.add_parser("fix", help="propose patches for a script's findings, each verified by a guarded re-run")
    fx.add_argument("-m", dest="module", metavar="MODULE", help="fix a module run as __main__")
    fx.add_argument("--max-steps", type=_count, default=5, metavar="N",
                    help="optimizer steps each verification run is cut to (default 5)")
    fx.add_argument("--timeout", type=float, default=300.0, metavar="S", help="seconds per run (default 300)")
    fx.add_argument("--max-runs", type=_count, default=None, metavar="N",
                    help="verification runs allowed in all (default: no limit); candidates left untried are listed as rejected")
    fx.add_argument("--apply", action="store_true", help="write the verified patches to the files")
    fx.add_argument("--json", nargs="?", const="-", metavar="PATH",
                    help="the result as JSON (to PATH, or instead of the text on stdout)")
    fx.add_argument("script", nargs="?", help="the script to fix")
    fx.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    sub.add_parser("rules", help="list the rules")
    ex = sub.add_parser("explain", help="print a rule's documentation")
    ex.add_argument("code")
    rep = sub.add_parser("report", help="re-render a saved JSON report")
    rep.add_argument("report")
    rep.add_argument("--format", choices=("text", "html", "sarif", "json", "concise", "github"),
                     default="text")
    rep.add_argument("-o", "--output", help="write there instead of stdout")
    return p


def _split_module(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """`run`/`fix` with `-m MODULE`: everything after the module belongs to it, as with
    `python -m` (`graphguard run -m torch.distributed.run --nproc_per_node 2 train.py`), so
    argparse never reads the module's options as graphguard's. Returns graphguard's own
    arguments and the module's (None without -m)."""
    if not argv or argv[0] not in ("run", "fix"):
        return argv, None
    for i, tok in enumerate(argv[1:], 1):
        if tok == "--":
            return argv, None
        if tok == "-m" and i + 1 < len(argv):
            return argv[:i + 2], argv[i + 2:]
        if tok.startswith("-m") and len(tok) > 2 and not tok.startswith("--"):
            return argv[:i + 1], argv[i + 1:]  # `-mpkg.train`
        if not tok.startswith("-"):
            # a script (or an option's value: options that take one are spelled --opt=value
            # or come before -m in the usual order) ends graphguard's own arguments
            prev = argv[i - 1]
            if prev in _VALUED:
                continue
            return argv, None
    return argv, None


# graphguard's own options of `run`/`fix` that take a value (the token after them is not a script)
_VALUED = frozenset({"--json", "--report-dir", "--mode", "--select", "--ignore", "--fail-on", "--format",
                     "--record-iterations", "--max-steps", "--timeout", "--max-runs", "--hang-timeout"})


def main(argv: Sequence[str] | None = None) -> int:
    own, module_args = _split_module(list(sys.argv[1:] if argv is None else argv))
    args = _parser().parse_args(own)
    if module_args is not None:
        args.args = module_args
    try:
        if args.command == "rules":
            return _cmd_rules()
        if args.command == "explain":
            return _cmd_explain(args.code)
        if args.command == "report":
            return _cmd_report(args)
        if args.command == "fix":
            return _cmd_fix(args)
        return _cmd_run(args)
    except GraphGuardUsageError as err:
        print(f"graphguard: error: {err}", file=sys.stderr)
        return 2


def _cmd_fix(args: Any) -> int:
    from .fix import FixUsageError, Options, fix

    script_args = list(args.args or [])
    if args.module and args.script:  # `-m pkg.mod a b`: argparse put `a` in script
        script_args.insert(0, args.script)
    if args.json and args.json != "-":
        _check_writable(args.json)
    opts = Options(None if args.module else args.script, args.module, script_args, max_steps=args.max_steps,
                   timeout=args.timeout, apply=args.apply, json_path=args.json,
                   max_runs=args.max_runs)
    try:
        return fix(opts)
    except FixUsageError as err:
        raise GraphGuardUsageError(str(err)) from None


def _cmd_rules() -> int:
    from .rules import ALL_RULES

    for r in sorted(ALL_RULES, key=lambda r: r.code):
        print(f"{r.code}  {r.slug:<24} {r.severity:<8} {r.summary}")
    return 0


def _cmd_explain(code: str) -> int:
    from .docs import rule_doc
    from .model.messages import is_message_id
    from .rules import message_for_id, rule_for_code

    if is_message_id(code):  # `graphguard explain GG008.never-called`: that message, then its rule
        m = message_for_id(code)
        print(f"{m.id} ({m.severity}): {m.summary}\n")
        code = m.code
    print(rule_doc(rule_for_code(code)))
    return 0


def _catalog() -> list[Any]:
    """The rules as SARIF lists them (report/ renders data; the catalog comes from here)."""
    from .report.sarif import RuleInfo
    from .rules import ALL_RULES

    return [RuleInfo(r.code, r.slug, r.summary) for r in ALL_RULES]


def _cmd_report(args: Any) -> int:
    from .report.json_report import load_report
    from .report.render import render_saved

    data = load_report(args.report)
    _check_findings(data, args.report)
    try:
        text = render_saved(data, args.format, _catalog())
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
        # load_report checks the envelope; a finding without its fields fails here
        raise GraphGuardUsageError(f"{args.report} is not a valid graphguard report "
                                   f"({type(err).__name__}: {err})") from None
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as err:
            raise GraphGuardUsageError(f"cannot write {args.output}: {err.strerror or err}") from None
    else:
        sys.stdout.write(text)
    return 0


def _check_findings(data: dict[str, Any], path: str) -> None:
    """load_report checks the envelope; this checks each finding's shape, so that every format
    refuses a damaged report alike (the HTML and SARIF renderers would tolerate gaps)."""
    findings = data.get("findings")
    ok = isinstance(findings, list) and all(
        isinstance(f, dict) and isinstance(f.get("code"), str)
        and all(isinstance(f.get(k), (dict, type(None))) for k in ("subject", "location"))
        and isinstance(f.get("related", []), list)
        for f in findings)
    if not ok:
        raise GraphGuardUsageError(f"{path} is not a valid graphguard report (damaged findings)")


def _cmd_run(args: Any) -> int:
    from .guard import GraphGuard
    from .report.text import render_summary_line

    target, script_args = _run_target(args)
    if args.hang_timeout is None:
        from .processes import hang_timeout_from_env

        args.hang_timeout = hang_timeout_from_env(60.0)
    guard = GraphGuard(mode=args.mode, select=_codes(args.select), ignore=_codes(args.ignore),
                       record_iterations=args.record_iterations, max_steps=args.max_steps,
                       hang_timeout=args.hang_timeout or None)
    unfollow, run_dir = _follow_processes(args, target)
    # GG019 ends a deadlocked rank from the guard's watchdog thread: write what we have first
    guard.at_hang(lambda: _write_outputs(guard, args, target, "hung", None, _partial_reports(run_dir)))
    status, exc, script_rc, pending_tb = _run_guarded(args, guard, target, script_args, unfollow)
    parts = _partial_reports(run_dir)
    if pending_tb is not None:
        _print_user_traceback(pending_tb, parts)
    _write_outputs(guard, args, target, status, exc, parts)
    findings = guard.findings
    theirs = _process_findings(parts)
    everything = findings + [f for _, fs in theirs for f in fs]
    _show_findings(args, target, findings, parts, theirs, everything)
    rank = _rank()  # ranks write to one terminal: say whose summary this is
    followed = f" ({len(parts) + 1} processes)" if parts else ""
    sys.stderr.write((f"[rank {rank}] " if rank is not None else "") + render_summary_line(everything)
                     + followed + "\n")
    if script_rc:
        return script_rc
    level = _FAIL_LEVELS[args.fail_on]
    return 1 if any(severity_rank(f.severity) >= level for f in everything) else 0


def _run_target(args: Any) -> tuple[str, list[str]]:
    """`graphguard run`'s target (the script or module) and the arguments it is run with,
    checked before anything runs."""
    if args.module is None and not args.script:
        raise GraphGuardUsageError("run needs a script (graphguard run train.py) or -m module")
    if args.module is None and not os.path.isfile(args.script):
        raise GraphGuardUsageError(f"no such script: {args.script}")
    if args.module is None:
        _check_script(args.script)
    if args.json:
        _check_writable(args.json)
    target = args.module or args.script
    script_args = list(args.args or [])
    if args.module and args.script:  # `-m pkg.mod a b`: argparse put `a` in script
        script_args.insert(0, args.script)
    return target, script_args


def _run_guarded(args: Any, guard: Any, target: str, script_args: list[str],
                 unfollow: Callable[[], None] | None) -> tuple[str, BaseException | None, int,
                                                                BaseException | None]:
    """Run the target inside `guard` as `__main__`, with its own argv (and its folder first on
    sys.path); returns the run's status, its exception, the script's exit status and the user's
    exception whose traceback is printed once the workers' reports are read."""
    status, exc, script_rc = "ok", None, 0
    pending_tb: BaseException | None = None
    old_argv = sys.argv[:]
    sys.argv = [target, *script_args]
    if args.module is None:
        sys.path.insert(0, os.path.dirname(os.path.abspath(args.script)))
    try:
        with guard:
            if args.module:
                runpy.run_module(args.module, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(args.script, run_name="__main__")
    except SystemExit as e:
        code = e.code
        script_rc = code if isinstance(code, int) else (0 if code is None else 1)
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)  # as Python does for sys.exit("message")
        status = "exited"
        exc = e if script_rc else None
    except KeyboardInterrupt as e:
        status, exc, script_rc = "raised", e, 130
    except BaseException as e:  # the user's error: report it, keep its traceback visible
        if args.module and isinstance(e, (ImportError, SyntaxError)) and not _user_frames(e):
            # runpy could not find or compile the module: nothing of the user's ran
            raise GraphGuardUsageError(f"cannot run module {args.module}: {e}") from None
        status, exc, script_rc = "raised", e, 1
        from .errors import GraphMisuseError

        if not isinstance(e, GraphMisuseError):
            pending_tb = e
    finally:
        sys.argv = old_argv
        if args.module is None and sys.path and sys.path[0] == os.path.dirname(os.path.abspath(args.script)):
            sys.path.pop(0)
        if unfollow is not None:
            unfollow()
    return status, exc, script_rc, pending_tb


def _show_findings(args: Any, target: str, findings: list, parts: list[dict],
                   theirs: list, everything: list) -> None:
    """The findings on stderr: this process's, then each followed process's under its label."""
    from .report.text import render_findings

    try:
        if getattr(args, "format", "text") != "text":
            from .report.render import render_saved

            dicts = [f.to_dict() for f in findings]
            dicts += [dict(d, process=p["process"].get("pid"), rank=p["process"].get("rank"))
                      for p in parts for d in p["findings"]]
            sys.stderr.write(render_saved({"run": {"target": target}, "findings": dicts}, args.format))
        elif theirs and not findings and all(not fs for _, fs in theirs):
            sys.stderr.write(render_findings([]))
        else:
            if findings or not theirs:
                sys.stderr.write(render_findings(findings))
            for proc, fs in theirs:
                if fs:
                    sys.stderr.write(f"\n{_process_label(proc)}" + render_findings(fs))
    except Exception as err:  # a wording bug must not hide the result
        sys.stderr.write(f"graphguard: error: cannot word the findings ({type(err).__name__}: {err}); "
                         f"codes: {', '.join(f.code for f in everything)}\n")


def _check_script(path: str) -> None:
    """A script Python could not even start gets one line, not a traceback (compiled once here;
    runpy compiles it again, a few milliseconds)."""
    try:
        with open(path, "rb") as fh:
            compile(fh.read(), path, "exec", dont_inherit=True)
    except SyntaxError as err:
        raise GraphGuardUsageError(f"{path}:{err.lineno}: syntax error: {err.msg}") from None
    except (OSError, ValueError) as err:  # unreadable, or null bytes (ValueError before 3.12)
        raise GraphGuardUsageError(f"cannot read {path}: {err}") from None


def _check_writable(path: str) -> None:
    """Fail before the run, not after hours of training, when the report cannot be written."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as err:
        raise GraphGuardUsageError(f"cannot write {path}: {err.strerror or err}") from None
    if os.path.isdir(path) or not os.access(folder, os.W_OK):
        raise GraphGuardUsageError(f"cannot write {path}: "
                                   f"{'is a directory' if os.path.isdir(path) else 'permission denied'}")


def _user_frames(e: BaseException) -> list[Any]:
    from .lookup.frames import user_traceback

    return user_traceback(e)


def _follow_processes(args: Any, target: str) -> tuple[Any, str | None]:
    """Follow the processes the program starts (graphguard/processes.py): the undo and the
    directory their partial reports go to (`<report-dir>/processes/`), or (None, None) when
    following cannot be set up (the program then runs as before, its processes unguarded)."""
    from .processes import FollowSettings, follow

    run_dir = os.path.abspath(os.path.join(_per_rank(args.report_dir, _rank(), is_dir=True), "processes"))
    settings = FollowSettings(run_dir=run_dir, target=os.path.abspath(args.script) if args.script
                              and not args.module else target, mode=args.mode,
                              select=tuple(_codes(args.select)), ignore=tuple(_codes(args.ignore)),
                              record_iterations=args.record_iterations, max_steps=args.max_steps,
                              hang_timeout=args.hang_timeout or None, diagrams=not args.no_diagrams)
    try:
        return follow(settings), run_dir
    except Exception as err:
        print(f"graphguard: started processes will not be guarded ({type(err).__name__}: {err})",
              file=sys.stderr)
        return None, None


from .processes import build_report as _build_report, dump_json as _dump_json  # noqa: E402
from .processes import process_findings as _process_findings, process_label as _process_label  # noqa: E402


def _partial_reports(run_dir: str | None) -> list[dict[str, Any]]:
    from .processes import read_partial_reports

    return read_partial_reports(run_dir) if run_dir else []






def _print_user_traceback(e: BaseException, parts: list[dict[str, Any]] | None = None) -> None:
    """The script's traceback, without the frames of graphguard, torch and runpy. When a worker
    stopped at a finding (torch's ProcessRaisedException carries its traceback as text), one line:
    the finding itself is printed below."""
    import traceback

    pid = getattr(e, "error_pid", None)
    for p in parts or ():
        exc = (p.get("run") or {}).get("exception") or {}
        if pid is not None and p["process"].get("pid") == pid and exc.get("type") == "GraphMisuseError":
            sys.stderr.write(f"graphguard: {type(e).__name__}: {_process_label(p['process'])} stopped "
                             f"at a finding (below)\n")
            return
    frames = _user_frames(e)
    sys.stderr.write("Traceback (most recent call last, graphguard and torch frames hidden):\n")
    sys.stderr.write("".join(traceback.format_list(frames)))
    last = "".join(traceback.format_exception_only(type(e), e))
    if pid is not None:  # a worker's traceback, as text: without graphguard's frames
        last = _without_own_frames(last)
    sys.stderr.write(last)


def _without_own_frames(text: str) -> str:
    """A formatted traceback without the frames in graphguard's package (each frame is its
    `  File "...", line N` line and the more indented lines below it)."""
    own = os.path.dirname(os.path.abspath(__file__)) + os.sep
    out, skipping = [], False
    for line in text.splitlines(keepends=True):
        if line.startswith('  File "'):
            skipping = line[len('  File "'):].startswith(own)
        elif skipping and not line.startswith("    "):
            skipping = False
        if not skipping:
            out.append(line)
    return "".join(out)


def _rank() -> str | None:
    """This process's rank when it is one of several launched together (torchrun sets RANK and
    WORLD_SIZE), else None."""
    rank, world = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    try:
        return rank if rank is not None and world is not None and int(world) > 1 else None
    except ValueError:
        return None


def _per_rank(path: str, rank: str | None, is_dir: bool = False) -> str:
    """Give each rank its own output, or the ranks overwrite one another: `r.json` becomes
    `r.rank0.json`, a report directory gets a `rank0/` subdirectory."""
    if rank is None:
        return path
    if is_dir:
        return os.path.join(path, f"rank{rank}")
    stem, ext = os.path.splitext(path)
    return f"{stem}.rank{rank}{ext}"






def _write_outputs(guard: Any, args: Any, target: str, status: str, exc: BaseException | None,
                   parts: list[dict[str, Any]] | None = None) -> None:
    """JSON, HTML and diagrams; a failure here is reported, never raised over the user's result.
    `parts`: the partial reports of the processes the program started, merged in."""
    rank = _rank()

    def merged(report: dict[str, Any] | None) -> dict[str, Any] | None:
        if report is None or not parts:
            return report
        from .report.json_report import merge_processes

        return merge_processes(report, parts, os.getpid(), int(rank) if rank is not None and rank.isdigit() else rank)

    report_dir = _per_rank(args.report_dir, rank, is_dir=True)
    json_path = _per_rank(args.json, rank) if args.json else None
    if json_path and not args.no_diagrams:
        # JSON first, without diagram paths: rendering may take seconds, and a launcher stops
        # the other ranks as soon as one fails (torchrun: SIGTERM within 0.1 s).
        early = merged(_build_report(guard, target, status, exc, quiet=True))
        if early is not None:
            _dump_json(early, json_path)
    try:
        if not args.no_diagrams:
            from .report.diagrams import write_diagrams

            write_diagrams(guard.findings, report_dir)
    except ImportError:
        pass
    except Exception as err:  # diagrams are a bonus: never fail the run for them
        print(f"graphguard: diagrams skipped ({type(err).__name__}: {err})", file=sys.stderr)
    report = merged(_build_report(guard, target, status, exc))
    if report is None:
        return
    if json_path:
        _dump_json(report, json_path)
    try:
        from .report.html import write_html

        path = write_html(report, report_dir)
        if path:
            print(f"graphguard: report {path}", file=sys.stderr)
    except ImportError:
        pass
    except Exception as err:
        print(f"graphguard: HTML report skipped ({type(err).__name__}: {err})", file=sys.stderr)




if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
