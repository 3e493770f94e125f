"""The one test of "is this the user's code" (graphguard/capture/usercode.py): a truth table of
files and classes, the GRAPHGUARD_LIBRARY_PATHS / GRAPHGUARD_USER_PATHS overrides, and a library
of the user's installs (a package outside the project, neither torch nor a known framework) whose
own lines are never the finding's: its `loss.backward()` calls and its layer's attributes are
reported at the user's lines that called and built it."""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import textwrap
import types
from pathlib import Path
from typing import Iterator

import pytest
import torch

import graphguard
from graphguard import GraphGuard
from graphguard.capture.sites import is_internal_code, user_site
from graphguard.capture.usercode import (LIBRARY_PATHS_ENV, USER_PATHS_ENV, is_user_class, is_user_file,
                                         is_user_object, library_roots)
from lines import marker_lines

LIBRARY = '''\
import torch
from torch import nn


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 4)
        self.temperature = torch.ones(1).requires_grad_()  # LIB-TEMPERATURE

    def forward(self, x):
        return self.fc(x) / self.temperature  # LIB-FORWARD


def fit_twice(model, x):
    loss = model(x).sum()
    loss.backward()
    loss.backward()  # LIB-SECOND-BACKWARD


class Tracker:
    def __init__(self):
        self.history = []

    def add(self, loss):
        self.history.append(loss)  # LIB-APPEND


def where():
    from graphguard.capture.sites import user_site
    return user_site(0)
'''

USER = '''\
import torch
import torch.nn.functional as F

import {lib} as lib


def twice():
    model = torch.nn.Linear(4, 1)
    lib.fit_twice(model, torch.randn(3, 4))  # USER-FIT


def unregistered():
    torch.manual_seed(0)
    model = lib.Scaled()  # USER-BUILD
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    for _ in range(3):
        x = torch.randn(20, 6)
        optimizer.zero_grad()
        F.cross_entropy(model(x), x[:, :4].argmax(1)).backward()  # USER-BACKWARD
        optimizer.step()


def site():
    return lib.where()  # USER-SITE


def leak():
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    tracker = lib.Tracker()
    for step in range(30):
        loss = model(torch.randn(3, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()  # USER-STEP
        tracker.add(loss)
'''


def _load(path: Path, name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(params=["env", "site-packages"])
def installed(request: pytest.FixtureRequest, tmp_path: Path,
              monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[types.ModuleType, types.ModuleType, Path, Path]]:
    """(library, user script, library file, user file): a package written outside the project and
    made a library either by GRAPHGUARD_LIBRARY_PATHS (a vendored copy) or by living under a
    directory named site-packages on sys.path (an ordinary install)."""
    name = f"gg_fakelib_{request.param.replace('-', '_')}"
    root = tmp_path / ("vendor" if request.param == "env" else "site-packages")
    (root / name).mkdir(parents=True)
    lib_file = root / name / "__init__.py"
    lib_file.write_text(LIBRARY)
    user_file = tmp_path / "project" / "train.py"
    user_file.parent.mkdir()
    user_file.write_text(USER.format(lib=name))
    monkeypatch.syspath_prepend(str(root))
    if request.param == "env":
        monkeypatch.setenv(LIBRARY_PATHS_ENV, str(root))
    lib = importlib.import_module(name)
    user = _load(user_file, f"{name}_train")
    try:
        yield lib, user, lib_file, user_file
    finally:
        sys.modules.pop(name, None)
        sys.modules.pop(f"{name}_train", None)


def _run(fn) -> GraphGuard:
    guard = GraphGuard(mode="collect")
    try:
        with guard:
            fn()
    except RuntimeError:  # the second backward fails under PyTorch itself: that is the bug
        pass
    return guard


# ---- a library's frames are not the user's ---------------------------------------------------------
def test_library_backward_twice_is_reported_at_the_users_call(installed) -> None:
    """Both backward calls run in the library: the finding is at the user's line calling it. (Both
    calls come from that one user line, so it reads as that line's graph run twice: GG001.)"""
    lib, user, lib_file, user_file = installed
    guard = _run(user.twice)
    at = marker_lines(user_file)
    found = [(f.code, Path(f.location.file).resolve(), f.location.line) for f in guard.findings]
    assert found == [("GG001", user_file.resolve(), at("USER-FIT"))]


def test_library_layer_attribute_is_placed_at_the_users_lines(installed) -> None:
    """An unregistered tensor a library layer keeps: found at the user's backward line, made at
    the user's line building the layer (origins skip the library's class), named by its holder."""
    lib, user, lib_file, user_file = installed
    guard = _run(user.unregistered)
    at = marker_lines(user_file)
    (f,) = [f for f in guard.findings if f.code == "GG011"]
    assert (Path(f.location.file).resolve(), f.location.line) == (user_file.resolve(), at("USER-BACKWARD"))
    assert f.subject.name == "model.temperature"
    assert f.subject.created_at is not None
    assert (Path(f.subject.created_at.file).resolve(), f.subject.created_at.line) == \
        (user_file.resolve(), at("USER-BUILD"))


def test_library_holder_is_named_from_the_users_frame(installed) -> None:
    """Losses kept by a library object the user holds: named by the user's variable, reported at
    the user's line, never inside the library's method that appends them."""
    lib, user, lib_file, user_file = installed
    guard = _run(user.leak)
    (f,) = [f for f in guard.findings if f.code == "GG101"]
    assert f.subject.name == "tracker.history"
    assert (Path(f.location.file).resolve(), f.location.line) == (user_file.resolve(),
                                                                  marker_lines(user_file)("USER-STEP"))


def test_user_site_skips_the_library_frame(installed) -> None:
    lib, user, lib_file, user_file = installed
    site = user.site()
    assert site and (Path(site[0].file).resolve(), site[0].line) == (user_file.resolve(),
                                                                     marker_lines(user_file)("USER-SITE"))
    assert all(Path(fr.file).resolve() != lib_file.resolve() for fr in site)
    assert is_internal_code(lib.fit_twice.__code__) and not is_internal_code(user.twice.__code__)


def test_library_classes_and_objects(installed) -> None:
    lib, user, lib_file, user_file = installed
    assert not is_user_class(lib.Scaled) and not is_user_object(lib.Tracker())
    assert not is_user_file(str(lib_file)) and is_user_file(str(user_file))


# ---- the truth table ------------------------------------------------------------------------------
def test_truth_table_of_files(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text("x = 1\n")
    assert not is_user_file(json.__file__)  # the standard library
    assert not is_user_file(os.__file__)
    assert not is_user_file(torch.nn.functional.__file__)
    assert not is_user_file(graphguard.__file__)  # graphguard, even from a checkout
    assert not is_user_file(pytest.__file__)  # test runners live in site-packages
    for name in ("_pytest", "pluggy", "typing_extensions", "torchviz", "lightning", "transformers"):
        mod = sys.modules.get(name)
        if getattr(mod, "__file__", None):
            assert not is_user_file(mod.__file__), name
    assert not is_user_file("<frozen runpy>")
    assert is_user_file(str(script))
    assert is_user_file("<string>")  # exec'd code
    assert is_user_file(__file__)  # tests/ of a project
    fake = tmp_path / "env" / "lib" / "site-packages" / "somelib" / "core.py"
    # a site-packages directory on sys.path is a library root; off sys.path, a path is just a path
    assert is_user_file(str(fake))
    sys.path.append(str(fake.parent.parent))
    try:
        assert not is_user_file(str(fake))
        assert os.path.realpath(fake.parent.parent) + os.sep in library_roots()
    finally:
        sys.path.remove(str(fake.parent.parent))
    assert is_user_file(str(fake))


def test_user_paths_override_a_library_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A project installed non-editable into site-packages is the user's when named so; the
    most specific root decides (a vendored library inside it stays a library)."""
    site_dir = tmp_path / "site-packages"
    mine = site_dir / "myproject" / "train.py"
    vendored = site_dir / "myproject" / "vendor" / "lib.py"
    other = site_dir / "otherlib" / "core.py"
    monkeypatch.syspath_prepend(str(site_dir))
    assert not is_user_file(str(mine)) and not is_user_file(str(other))
    monkeypatch.setenv(USER_PATHS_ENV, str(site_dir / "myproject"))
    monkeypatch.setenv(LIBRARY_PATHS_ENV, str(site_dir / "myproject" / "vendor"))
    assert is_user_file(str(mine))
    assert not is_user_file(str(vendored)) and not is_user_file(str(other))
    # graphguard stays internal whatever the user roots say
    monkeypatch.setenv(USER_PATHS_ENV, os.path.dirname(os.path.dirname(graphguard.__file__)))
    assert not is_user_file(graphguard.__file__)


def test_truth_table_of_classes() -> None:
    class Mine:
        def method(self) -> None:
            pass

    assert is_user_class(Mine) and is_user_object(Mine())
    assert not is_user_class(torch.nn.Linear) and not is_user_class(torch.optim.SGD)
    assert not is_user_class(json.JSONDecoder) and not is_user_class(int) and not is_user_class(dict)
    assert not is_user_class(GraphGuard)
    # exec'd code (a notebook cell, `python -c`): `__main__` without a file is the user's
    ns: dict = {"__name__": "__main__"}
    exec(textwrap.dedent("""
        class Cell:
            pass
    """), ns)
    assert is_user_class(ns["Cell"])


def test_roots_follow_an_import_after_the_first_lookup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A framework imported late (its site-packages entry added after frames were judged) is a
    library at once: the cached answers start over with the roots."""
    assert user_site(0)  # judge this stack first
    site_dir = tmp_path / "late" / "site-packages"
    (site_dir / "gg_late_framework").mkdir(parents=True)
    (site_dir / "gg_late_framework" / "__init__.py").write_text(
        "def run(fn):\n    return fn()\n")
    monkeypatch.syspath_prepend(str(site_dir))
    try:
        mod = importlib.import_module("gg_late_framework")
        assert is_internal_code(mod.run.__code__)
        site = mod.run(lambda: user_site(0))
        assert all("gg_late_framework" not in fr.file for fr in site)
    finally:
        sys.modules.pop("gg_late_framework", None)


# ---- statement_at (lookup/source.py): the one cached read of a statement -----------------------------
def test_statement_at_covers_the_whole_statement(tmp_path: Path) -> None:
    import ast

    from graphguard.lookup.source import statement_at
    src = tmp_path / "prog.py"
    src.write_text("loss = criterion(\n    out, y)  # SECOND\nfor x in loader:  # HEADER\n"
                   "    a = 1; b = 2  # TWO\nwith ctx: h.add_(1)  # ONE-LINE-WITH\n\n")
    at = marker_lines(src)
    first = statement_at(str(src), 1)
    assert isinstance(first, ast.Assign) and first.lineno == 1 and first.end_lineno == at("SECOND")
    assert statement_at(str(src), at("SECOND")) is first  # parsed once, the same node
    assert statement_at(str(src), at("HEADER")) is None
    two = statement_at(str(src), at("TWO"))
    assert isinstance(two, ast.Assign) and ast.unparse(two) == "a = 1"
    assert ast.unparse(statement_at(str(src), at("ONE-LINE-WITH"))) == "h.add_(1)"
    assert statement_at(str(src), 6) is None and statement_at(str(src), 99) is None
