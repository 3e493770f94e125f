"""Bad input to the command line gets one clear line on stderr and exit status 2 (or the script's own
status), never a graphguard traceback; the JSON report is still written when the script ran.

Most cases call `graphguard.cli.main` in this process (each new interpreter spends ~3 s importing
torch); the end-to-end tests run `python -m graphguard` as a subprocess.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from graphguard.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

EXIT3 = "import sys\nprint('training...')\nsys.exit(3)\n"
STALE = """\
import torch
w = torch.randn(3, requires_grad=True)
shared = w.exp()
shared.sum().backward()
shared.sum().backward()  # {payload}
"""
PAYLOAD = "<script>alert('gg')</script><img src=x onerror=alert(1)>"


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    """Run the CLI in-process: (exit status, stdout, stderr). argparse errors exit via SystemExit."""
    try:
        rc = main(list(argv))
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 1
    out, err = capsys.readouterr()
    return rc, out, err


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("graphguard: error: "), err
    return lines[0]


def write(path: str, text: str) -> str:
    Path(path).write_text(text)
    return path


# ---- run ---------------------------------------------------------------------------------------

def test_missing_script(capsys: pytest.CaptureFixture) -> None:
    rc, _, err = cli(capsys, "run", "--json", "r.json", "nope.py")
    assert rc == 2 and "nope.py" in one_error_line(err)
    assert not Path("r.json").exists()


def test_directory_as_script(capsys: pytest.CaptureFixture, in_tmp: Path) -> None:
    rc, _, err = cli(capsys, "run", str(in_tmp))
    assert rc == 2 and one_error_line(err)


def test_no_script_at_all(capsys: pytest.CaptureFixture) -> None:
    rc, _, err = cli(capsys, "run")
    assert rc == 2 and one_error_line(err)


def test_syntax_error_is_one_line_naming_file_and_line(capsys: pytest.CaptureFixture) -> None:
    write("broken.py", "import torch\n\nx = (1,\n")
    rc, _, err = cli(capsys, "run", "--json", "r.json", "broken.py")
    line = one_error_line(err)
    assert rc == 2 and "broken.py:3" in line and "Traceback" not in err
    assert not Path("r.json").exists()  # nothing ran: no report


def test_null_bytes_in_script(capsys: pytest.CaptureFixture) -> None:
    Path("binary.py").write_bytes(b"x = 1\x00\n")
    rc, _, err = cli(capsys, "run", "binary.py")
    assert rc == 2 and "binary.py" in one_error_line(err)


def test_script_exit_status_is_kept_and_json_written(capsys: pytest.CaptureFixture) -> None:
    write("train.py", EXIT3)
    rc, out, err = cli(capsys, "run", "--json", "out/r.json", "--no-diagrams", "train.py")
    assert rc == 3 and "training..." in out
    assert "Traceback" not in err and "graphguard: error" not in err
    report = json.loads(Path("out/r.json").read_text())
    assert report["run"]["status"] == "exited"
    assert report["run"]["exception"]["type"] == "SystemExit"


def test_script_exit_message_is_printed(capsys: pytest.CaptureFixture) -> None:
    write("train.py", "import sys\nsys.exit('config file missing')\n")
    rc, _, err = cli(capsys, "run", "--json", "r.json", "--no-diagrams", "train.py")
    assert rc == 1 and "config file missing" in err
    assert json.loads(Path("r.json").read_text())["run"]["status"] == "exited"


def test_script_exit_zero(capsys: pytest.CaptureFixture) -> None:
    write("train.py", "import sys\nsys.exit(0)\n")
    rc, _, _ = cli(capsys, "run", "--json", "r.json", "--no-diagrams", "train.py")
    assert rc == 0
    assert json.loads(Path("r.json").read_text())["run"]["exception"] is None


def test_script_raising_keeps_its_traceback_and_status_1(capsys: pytest.CaptureFixture) -> None:
    write("train.py", "def load():\n    raise FileNotFoundError('data.csv')\n\nload()\n")
    rc, _, err = cli(capsys, "run", "--json", "r.json", "--no-diagrams", "train.py")
    assert rc == 1 and "Traceback" in err and "FileNotFoundError: data.csv" in err
    assert 'train.py", line 2' in err and "graphguard/" not in err  # only the user's frames
    report = json.loads(Path("r.json").read_text())
    assert report["run"]["status"] == "raised"
    assert report["run"]["exception"] == {"type": "FileNotFoundError", "message": "data.csv"}


def test_keyboard_interrupt_in_script(capsys: pytest.CaptureFixture) -> None:
    write("train.py", "raise KeyboardInterrupt\n")
    rc, _, err = cli(capsys, "run", "--json", "r.json", "--no-diagrams", "train.py")
    assert rc == 130 and "graphguard: error" not in err
    assert json.loads(Path("r.json").read_text())["run"]["exception"]["type"] == "KeyboardInterrupt"


def test_script_missing_an_import_is_the_users_error(capsys: pytest.CaptureFixture) -> None:
    write("train.py", "import not_a_module_anywhere\n")
    rc, _, err = cli(capsys, "run", "--json", "r.json", "--no-diagrams", "train.py")
    assert rc == 1 and "ModuleNotFoundError" in err and "graphguard: error" not in err
    assert Path("r.json").exists()


@pytest.mark.parametrize("option", ["--select", "--ignore"])
def test_unknown_rule_code_in_selection(capsys: pytest.CaptureFixture, option: str) -> None:
    write("train.py", "open('ran', 'w').close()\n")
    rc, _, err = cli(capsys, "run", option, "GG001,GG999", "train.py")
    assert rc == 2 and "GG999" in one_error_line(err)
    assert not Path("ran").exists()  # refused before running anything


def test_unwritable_json_path_refused_before_running(capsys: pytest.CaptureFixture) -> None:
    write("train.py", "open('ran', 'w').close()\n")
    Path("blocker").write_text("a file, not a folder")
    rc, _, err = cli(capsys, "run", "--json", "blocker/r.json", "train.py")
    assert rc == 2 and "blocker/r.json" in one_error_line(err)
    assert not Path("ran").exists()
    Path("adir").mkdir()
    rc, _, err = cli(capsys, "run", "--json", "adir", "train.py")
    assert rc == 2 and one_error_line(err)


def test_negative_record_iterations(capsys: pytest.CaptureFixture) -> None:
    write("train.py", EXIT3)
    rc, _, err = cli(capsys, "run", "--record-iterations", "-1", "train.py")
    assert rc == 2 and "--record-iterations" in err and "Traceback" not in err


def test_unknown_module(capsys: pytest.CaptureFixture) -> None:
    rc, _, err = cli(capsys, "run", "-m", "no_such_pkg_gg.train")
    assert rc == 2 and "no_such_pkg_gg.train" in one_error_line(err)


def test_module_with_syntax_error(capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch,
                                  in_tmp: Path) -> None:
    write("gg_broken_mod.py", "def f(:\n")
    monkeypatch.syspath_prepend(str(in_tmp))
    rc, _, err = cli(capsys, "run", "-m", "gg_broken_mod")
    assert rc == 2 and "gg_broken_mod" in one_error_line(err)


# ---- explain, rules -----------------------------------------------------------------------------

def test_explain_unknown_code(capsys: pytest.CaptureFixture) -> None:
    rc, out, err = cli(capsys, "explain", "GG999")
    assert rc == 2 and "GG999" in one_error_line(err) and out == ""


def test_explain_known_code_any_case(capsys: pytest.CaptureFixture) -> None:
    rc, out, err = cli(capsys, "explain", "gg001")
    assert rc == 0 and "GG001" in out and err == ""


def test_unknown_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture) -> None:
    rc, _, err = cli(capsys, "frobnicate")
    assert rc == 2 and "invalid choice" in err and "Traceback" not in err


# ---- report -------------------------------------------------------------------------------------

def _valid_report(capsys: pytest.CaptureFixture) -> dict[str, Any]:
    write("stale.py", STALE.format(payload="second backward"))
    cli(capsys, "run", "--mode", "collect", "--json", "r.json", "--no-diagrams", "stale.py")
    return json.loads(Path("r.json").read_text())


@pytest.mark.parametrize("name,content", [
    ("notjson.txt", "this is not json\n"),
    ("other.json", '{"name": "some other tool", "results": []}'),
    ("list.json", "[1, 2, 3]"),
    ("empty.json", ""),
    ("binary.json", "\udcff"),
])
def test_report_that_is_not_ours(capsys: pytest.CaptureFixture, name: str, content: str) -> None:
    Path(name).write_bytes(content.encode("utf-8", "surrogateescape"))
    for fmt in ("text", "html", "sarif", "json"):
        rc, out, err = cli(capsys, "report", name, "--format", fmt)
        assert rc == 2 and name in one_error_line(err) and out == ""


def test_report_missing_file(capsys: pytest.CaptureFixture) -> None:
    rc, _, err = cli(capsys, "report", "nowhere.json")
    assert rc == 2 and "nowhere.json" in one_error_line(err)


def test_report_of_another_schema_version(capsys: pytest.CaptureFixture) -> None:
    data = _valid_report(capsys)
    data["schema_version"] = 99
    write("future.json", json.dumps(data))
    rc, _, err = cli(capsys, "report", "future.json")
    assert rc == 2 and "99" in one_error_line(err)


@pytest.mark.parametrize("damage", ["finding-without-code", "findings-not-a-list", "subject-a-string"])
def test_report_ours_but_damaged(capsys: pytest.CaptureFixture, damage: str) -> None:
    data = _valid_report(capsys)
    assert data["findings"]
    if damage == "finding-without-code":
        del data["findings"][0]["code"]
    elif damage == "findings-not-a-list":
        data["findings"] = 42
    else:
        data["findings"][0]["subject"] = "x"
    write("damaged.json", json.dumps(data))
    for fmt in ("text", "html", "sarif"):
        rc, out, err = cli(capsys, "report", "damaged.json", "--format", fmt)
        assert rc == 2 and "damaged.json" in one_error_line(err), fmt


def test_report_rerenders_in_every_format(capsys: pytest.CaptureFixture) -> None:
    _valid_report(capsys)
    for fmt in ("text", "json", "sarif", "html"):
        rc, out, err = cli(capsys, "report", "r.json", "--format", fmt)
        assert rc == 0 and out and err == "", fmt


def test_report_output_unwritable(capsys: pytest.CaptureFixture) -> None:
    _valid_report(capsys)
    Path("blocker").write_text("")
    rc, _, err = cli(capsys, "report", "r.json", "-o", "blocker/out.txt")
    assert rc == 2 and "blocker/out.txt" in one_error_line(err)


# ---- HTML escaping -------------------------------------------------------------------------------

def test_user_text_is_escaped_in_the_html_report(capsys: pytest.CaptureFixture) -> None:
    """The user's source lines, messages and paths reach the HTML page only escaped."""
    pytest.importorskip("graphguard.report.html")
    # its own file name: linecache keeps the lines of a relative path seen in another test
    write("escape_me.py", STALE.format(payload=PAYLOAD))
    rc, _, _ = cli(capsys, "run", "--mode", "collect", "--json", "r.json", "--report-dir", "rep",
                   "escape_me.py")
    assert rc == 1
    report = json.loads(Path("r.json").read_text())
    assert any(PAYLOAD in (f["location"] or {}).get("code", "") for f in report["findings"])
    page = Path("rep/index.html").read_text()
    assert "&lt;script&gt;alert(" in page
    assert "<script>alert(" not in page and "<img src=x" not in page

    # A crafted report: every text field carries markup.
    for f in report["findings"]:
        f["message"] = f["fix"] = PAYLOAD
        f["subject"]["name"] = f["subject"]["summary"] = PAYLOAD
        f["location"]["file"] = f["location"]["function"] = PAYLOAD
    report["run"]["target"] = PAYLOAD
    report["run"]["exception"] = {"type": PAYLOAD, "message": PAYLOAD}
    write("crafted.json", json.dumps(report))
    rc, out, err = cli(capsys, "report", "crafted.json", "--format", "html")
    assert rc == 0 and "<script>alert(" not in out and "<img src=x" not in out and "&lt;img" in out


# ---- end to end, in a fresh interpreter ------------------------------------------------------------

def _python_m(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graphguard", *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_subprocess_exit_status_and_json(in_tmp: Path) -> None:
    write("train.py", EXIT3)
    p = _python_m("run", "--json", "r.json", "--no-diagrams", "train.py", cwd=in_tmp)
    assert p.returncode == 3 and "training..." in p.stdout and "Traceback" not in p.stderr
    assert json.loads(Path("r.json").read_text())["run"]["status"] == "exited"


@pytest.mark.slow
def test_subprocess_bad_inputs(in_tmp: Path) -> None:
    """One interpreter per bad input, the way a user meets them (one process each)."""
    write("broken.py", "x = (\n")
    write("notjson.txt", "nope")
    for argv, needle in [(("run", "missing.py"), "missing.py"),
                         (("run", "broken.py"), "broken.py:1"),
                         (("explain", "GG999"), "GG999"),
                         (("report", "notjson.txt"), "notjson.txt")]:
        p = _python_m(*argv, cwd=in_tmp)
        assert p.returncode == 2, (argv, p.stderr)
        assert needle in one_error_line(p.stderr), argv


# ---- fix: the program's folder is copied for every verification run ------------------------------
def test_fix_refuses_a_folder_too_large_to_copy(capsys: pytest.CaptureFixture, in_tmp: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from graphguard.fix import verify

    monkeypatch.setattr(verify, "MAX_COPY_FILES", 20)
    for i in range(25):
        (in_tmp / f"data_{i}.txt").write_text("x")
    write("train.py", STALE.format(payload=""))
    rc, _, err = cli(capsys, "fix", "train.py")
    assert rc == 2
    line = one_error_line(err)
    assert str(in_tmp) in line and "20" in line


def test_fix_copy_leaves_out_scratch_folders(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a script saved in the temp directory itself: the scratch copy is made there too, and copying
    # the folder into itself recursed until the path was too long
    import tempfile

    from graphguard.fix import verify

    monkeypatch.setattr(tempfile, "tempdir", str(in_tmp))
    write("train.py", STALE.format(payload=""))
    prog = verify.Program(str(in_tmp), ".", "train.py", None, [], 2, 120.0)
    result = verify.run(prog, {})
    assert result.ok
    assert "GG003" in [f.get("code") for f in result.findings]
    assert verify.copy_too_large(str(in_tmp)) is None
