"""Names as the user writes them and creation lines looked up in the source (issue 11, item 1).

Assertions are on codes, names and line numbers only.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import torch

from graphguard.lookup.names import find_name, python_path, resolve
from graphguard.lookup.origins import origin_of, origin_of_name
from graphguard.model import Frame

ROOT = Path(__file__).resolve().parents[1]


def _line(path: Path, text: str) -> int:
    return next(i for i, s in enumerate(path.read_text().splitlines(), 1) if text in s)


def _package(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "model.py").write_text(textwrap.dedent("""\
        import torch
        from torch import nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
                self.head = nn.Linear(1, 1)
                self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
                self.scale = nn.Parameter(torch.ones(1))

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return self.head(self.fc(x).argmax(dim=1, keepdim=True).float()) * self.scale
        """))
    (tmp_path / "train.py").write_text(textwrap.dedent("""\
        import json, sys
        import torch
        from graphguard import GraphGuard
        from pkg.model import Net

        model = Net()
        extra = torch.nn.Linear(1, 1)
        opt = torch.optim.SGD(list(model.parameters()) + list(extra.parameters()), lr=0.1)
        x = torch.randn(8, 4)
        with GraphGuard(mode="collect") as g:
            for _ in range(2):
                opt.zero_grad()
                loss = extra(model(x)).sum()
                loss.backward()
                opt.step()
        out = [[f.code, f.subject.name, f.subject.created_at.file if f.subject.created_at else None,
                f.subject.created_at.line if f.subject.created_at else None] for f in g.findings]
        json.dump(out, sys.stdout)
        """))
    return tmp_path


def test_parameters_built_before_the_guard_in_another_module(tmp_path):
    import json
    d = _package(tmp_path)
    res = subprocess.run([sys.executable, "train.py"], cwd=d, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    got = {name: (code, Path(file).name if file else None, line) for code, name, file, line in json.loads(res.stdout)}
    model_py = d / "pkg" / "model.py"
    fc = _line(model_py, "self.fc = nn.Linear")
    layers = _line(model_py, "self.layers = nn.ModuleList")
    # every parameter of `model.fc` is cut by the same op: one finding for the layer
    assert got["model.fc"] == ("GG008", "model.py", fc)
    # the layers of a ModuleList, all cut together: one finding naming the list as written
    assert got["model.layers"] == ("GG008", "model.py", layers)
    assert not any(".0." in n or ".1." in n for n in got)


class Holder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())
        self.w = torch.nn.Parameter(torch.zeros(2))
        self.hidden = torch.zeros(2)

    def names(self):
        here = sys._getframe()
        return (resolve("self.hidden", [here]),
                origin_of_name("self.hidden", Frame(here.f_code.co_filename, here.f_lineno, "names"), self.hidden))


def test_attribute_of_self_and_its_assignment_line():
    h = Holder()
    hit, loc = h.names()
    assert hit is not None and hit.name == "self.hidden" and hit.value is h.hidden
    assert loc is not None and loc.line == _line(Path(__file__), "self.hidden = torch.zeros(2)")


def test_parameter_lines_in_the_users_own_module():
    holder = Holder()  # noqa: F841 (found through this frame)
    here = [sys._getframe()]
    me = Path(__file__)
    assert origin_of(holder.w, here).line == _line(me, "self.w = torch.nn.Parameter")
    assert origin_of(holder.enc[0].weight, here).line == _line(me, "self.enc = torch.nn.Sequential")
    assert origin_of(holder, here).line == _line(me, "holder = Holder()")
    hit = find_name(lambda v: v is holder.enc[0].weight, here)
    assert hit.name == "holder.enc[0].weight"


def test_plain_tensor_and_module_built_in_the_users_frame():
    here = [sys._getframe()]
    me = Path(__file__)
    layer = torch.nn.Linear(3, 3)
    t = torch.ones(3)
    t = t * 2
    assert origin_of(layer.weight, here).line == _line(me, "layer = torch.nn.Linear(3, 3)")
    fr = Frame(here[0].f_code.co_filename, here[0].f_lineno, "f")
    assert origin_of_name("t", fr, t).line == _line(me, "t = t * 2")


def test_tuple_elements_and_list_elements():
    here = [sys._getframe()]
    a, b = torch.zeros(1), torch.ones(1)
    state = (a * 1, b * 1)
    layers = [torch.nn.Linear(1, 1) for _ in range(3)]
    assert find_name(lambda v: v is state[1], here).name == "state[1]"
    assert resolve("state[0]", here).value is state[0]
    assert resolve("layers[2]", here).value is layers[2]
    assert resolve("layers[7]", here) is None


def test_parameters_of_modules_in_a_plain_list_are_named_through_the_list():
    # peer models kept in a plain Python list (deep mutual learning: self.models.append(model)):
    # a parameter is named by the list entry that holds its module
    here = [sys._getframe()]
    models = [torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1))
              for _ in range(2)]
    assert find_name(lambda v: v is models[1][2].weight, here).name == "models[1][2].weight"
    assert find_name(lambda v: v is models[0][0].bias, here).name == "models[0][0].bias"


def test_python_path():
    assert python_path("model", "layers.2.weight") == "model.layers[2].weight"
    assert python_path("model", "") == "model"
    assert python_path("", "0.bias") == "[0].bias"


def _run(script: str) -> list[dict]:
    import json
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "r.json"
        subprocess.run([str(ROOT / ".venv" / "bin" / "graphguard"), "run", "--mode", "collect", "--no-diagrams",
                        "--json", str(out), script], cwd=ROOT, capture_output=True, timeout=300)
        return json.loads(out.read_text())["findings"]


def test_every_error_of_the_ellipse_example_has_a_fix_at_line():
    for script, want in (("examples/ellipse/broken.py", {"GG001": 21, "GG002": 21, "GG008": 11, "GG009": 11}),
                         ("examples/ellipse/answer.py", {"GG009": 11})):
        errors = [f for f in _run(script) if f["severity"] == "error"]
        assert errors
        for f in errors:
            fix = [r for r in f["related"] if r["role"] == "fix-at"]
            assert fix and fix[0]["location"]["line"], (script, f["code"])
            if f["code"] in want:
                assert fix[0]["location"]["line"] == want[f["code"]], (script, f["code"])
        names = {f["code"]: f["subject"]["name"] for f in errors}
        if script.endswith("answer.py"):
            # the comparison mask is where the history is cut (the loss itself is only its victim)
            assert names["GG009"] == "mask"
        else:
            assert names["GG001"] == "ref_image" and names["GG008"] == "ellipsoid_axes"
            # the loss requires grad only through fresh images; the mask is what cut the axes off
            assert names["GG009"] == "mask"
            made = next(f for f in errors if f["code"] == "GG009")["subject"]["created_at"]
            assert made["line"] == 11


def _gg010_created_lines(fn) -> dict[str, int]:
    from graphguard import GraphGuard
    g = GraphGuard(mode="collect")
    with g:
        fn()
    return {f.subject.name: f.subject.created_at.line for f in g.findings
            if f.code == "GG010" and f.subject.created_at is not None}


def _manual_sgd(params, x):
    for _ in range(3):
        loss = sum((x * p).sum() for p in params) ** 2
        loss.backward()
        for p in params:
            p.data -= 0.01 * p.grad  # never zeroed


class _Fit:
    def __init__(self):
        self.scale = torch.full((4,), 0.5)
        self.scale.requires_grad_(True)

    def run(self):
        _manual_sgd([self.scale], torch.randn(4))


def test_a_leaf_made_trainable_by_requires_grad_is_dated_by_the_line_that_made_it():
    """`w = torch.tensor(...)` then `w.requires_grad_()`: the tensor was made on the first line; the
    second only switched gradients on. Same for an attribute set in `__init__`; a tensor made and
    switched on in one statement keeps that statement."""
    here = Path(__file__)

    def plain():
        offset = torch.tensor([0.1, -0.2, 0.3, 0.0])
        gain = torch.ones(4)
        offset.requires_grad_()
        both = torch.zeros(4).requires_grad_()
        _manual_sgd([offset, gain.requires_grad_(), both], torch.randn(4))

    lines = _gg010_created_lines(plain)
    assert lines["offset"] == _line(here, "offset = torch.tensor([0.1")
    assert lines["both"] == _line(here, "both = torch.zeros(4).requires_grad_()")
    assert _gg010_created_lines(lambda: _Fit().run())["self.scale"] == _line(here, "self.scale = torch.full(")


def test_library_cache_is_named_by_its_holder():
    """A tensor a library object computed and keeps for itself (a distribution's lazy logits) is
    named by that object as the code holds it; a property the user wrote, or an attribute the user
    set, keeps its own name."""
    import functools

    from torch.distributions import Bernoulli

    from graphguard.lookup.assigned import cache_owner, cached_attribute

    class Holder:
        def __init__(self, w):
            self.w = w * 1.0

        @functools.cached_property
        def feats(self):
            return self.w * 2

    p = torch.tensor(0.3, requires_grad=True)
    pi = Bernoulli(p)
    pi.log_prob(torch.tensor(1.0))  # computes pi's logits and keeps them
    h = Holder(p)
    h.feats
    assert cache_owner("pi.logits") == ("pi", "logits")
    assert cached_attribute("pi", pi.logits.grad_fn) == "logits"
    assert cache_owner("h.feats") is None
    assert cache_owner("h.w") is None
    assert cached_attribute("h", h.feats.grad_fn) is None
    assert cache_owner("p") is None


def test_stale_tensor_named_at_the_top_level_is_dated_by_that_line():
    """A stale tensor a user module made (its ops ran inside `forward`) and a script's top level
    named (`memory = encoder(src)`, read as a global by a function of the loop): GG001 dates it by
    that top-level line, where the name is assigned and the fix goes, not by the op in `forward`."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from casekit import load_case, run_guarded

    path = Path(__file__).parent / "cases" / "gg001_encoder_memory_built_before_loop.py"
    guard, err = run_guarded(load_case(path).buggy)
    assert err is not None
    (f,) = [f for f in guard.findings if f.code == "GG001"]
    made = _line(path, "    memory = encoder(src)")
    assert (f.subject.name, f.subject.created_at.line) == ("memory", made)
    assert [r.location.line for r in f.related if r.role == "fix-at"] == [made]
