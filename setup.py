"""Ships graphguard-startup.pth beside the package in site-packages (graphguard/_startup.py): the
process-start hook that lets `graphguard run` and `GRAPHGUARD=1` follow every Python process a
launcher starts. Everything else is in pyproject.toml."""
import os

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
PTH = "graphguard-startup.pth"


class build_py_with_pth(build_py):
    """A regular wheel: the .pth goes to the wheel's root, which is site-packages."""

    def run(self):
        super().run()
        self.copy_file(os.path.join(HERE, PTH), os.path.join(self.build_lib, PTH), preserve_mode=0)

    def get_outputs(self, *args, **kwargs):
        return super().get_outputs(*args, **kwargs) + [os.path.join(self.build_lib, PTH)]


class _AlsoThePth:
    """An editable wheel's strategy, plus the .pth (editable wheels take no build_py output)."""

    def __init__(self, inner):
        self.inner = inner

    def __enter__(self):
        self.inner.__enter__()
        return self

    def __exit__(self, *exc):
        return self.inner.__exit__(*exc)

    def __call__(self, wheel, files, mapping):
        self.inner(wheel, files, mapping)
        with open(os.path.join(HERE, PTH), "rb") as fh:
            wheel.writestr(PTH, fh.read())


class editable_wheel_with_pth(editable_wheel):
    def _select_strategy(self, *args, **kwargs):
        return _AlsoThePth(super()._select_strategy(*args, **kwargs))


setup(cmdclass={"build_py": build_py_with_pth, "editable_wheel": editable_wheel_with_pth})
