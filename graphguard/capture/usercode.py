"""The one test of "is this the user's code": a file, a class, an object.

Everything graphguard reports points at the user's lines and names the user's objects, so every
question "is this frame / class / object the user's?" is answered here, from one list of roots:

- library roots: every site-packages / dist-packages directory (`site.getsitepackages()`,
  `site.getusersitepackages()`, each `sys.path` entry so named), the standard library (sysconfig's
  stdlib and platstdlib), the scripts directory (console-script launchers such as `graphguard`),
  torch's and graphguard's own package directories (graphguard stays internal when run from a
  checkout), frozen modules (`<frozen runpy>`), and `GRAPHGUARD_LIBRARY_PATHS`;
- user roots: `GRAPHGUARD_USER_PATHS` (a project installed non-editable into site-packages).

The longest root containing a file decides; a file under no root is the user's (their project, a
script in a tmp dir, exec'd `<string>` code, a notebook cell, test fixtures). Training frameworks
(lightning, transformers, accelerate, IPython, timm, ...) live in site-packages, so one imported
after the first lookup is a library without any list of names; only graphguard and torch are
named, since either may run from a checkout.
"""
from __future__ import annotations

import itertools
import os
import site
import sys
import sysconfig
import types
from typing import Any, MutableMapping

import torch

__all__ = ["is_user_file", "is_user_class", "is_user_object", "library_roots", "user_roots",
           "on_roots_changed", "PACKAGE_DIR", "LIBRARY_PATHS_ENV", "USER_PATHS_ENV"]

# graphguard's own directory (capture/ is one level below it)
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBRARY_PATHS_ENV = "GRAPHGUARD_LIBRARY_PATHS"  # os.pathsep-separated extra library roots
USER_PATHS_ENV = "GRAPHGUARD_USER_PATHS"  # os.pathsep-separated roots that are the user's
_LIBRARY_DIR_NAMES = ("site-packages", "dist-packages")

# The state the roots were computed from: when sys.path or either variable changes, the roots and
# every cache of answers (here and those registered by on_roots_changed) start over.
_PATH: list[str] | None = None
_ENV: tuple[str | None, str | None] = (None, None)
# (root + os.sep, is the user's) longest first, graphguard's own directory ahead of all
_ROOTS: tuple[tuple[str, bool], ...] = ()
_FILES: dict[str, bool] = {}  # filename as given -> the user's?
_DEPENDENTS: list[MutableMapping[Any, Any]] = [_FILES]


def _split(value: str | None) -> list[str]:
    return [p for p in (value or "").split(os.pathsep) if p]


def _real(path: str) -> str:
    return os.path.realpath(path).rstrip(os.sep) + os.sep


def _library_dirs() -> list[str]:
    dirs: list[str] = []
    try:
        dirs += site.getsitepackages()
    except AttributeError:  # an old virtualenv's site.py has none
        pass
    try:
        dirs.append(site.getusersitepackages())
    except AttributeError:
        pass
    paths = sysconfig.get_paths()
    # "scripts": console-script launchers (the `graphguard` command itself), not user code
    dirs += [p for p in (paths.get("stdlib"), paths.get("platstdlib"), paths.get("purelib"),
                         paths.get("platlib"), paths.get("scripts")) if p]
    for entry in sys.path:
        if not isinstance(entry, str):  # sys.path may hold other objects (a Path a program appended)
            continue
        if entry and os.path.basename(entry.rstrip(os.sep)) in _LIBRARY_DIR_NAMES:
            dirs.append(entry)
        elif entry.endswith(".zip") and os.path.basename(entry).startswith("python"):
            dirs.append(entry)  # the zipped standard library (`python311.zip`)
    dirs.append(os.path.dirname(torch.__file__))
    return dirs


def _refresh() -> None:
    """Recompute the roots from sys.path and the environment, and drop every cached answer."""
    global _PATH, _ENV, _ROOTS
    env = (os.environ.get(LIBRARY_PATHS_ENV), os.environ.get(USER_PATHS_ENV))
    roots: dict[str, bool] = {}
    for d in _library_dirs() + _split(env[0]):
        roots[_real(d)] = False
    for d in _split(env[1]):
        roots[_real(d)] = True
    ordered = sorted(roots.items(), key=lambda kv: -len(kv[0]))
    _ROOTS = ((_real(PACKAGE_DIR), False), *ordered)
    _PATH, _ENV = list(sys.path), env
    for cache in _DEPENDENTS:
        cache.clear()


def _stale() -> bool:
    return sys.path != _PATH or (os.environ.get(LIBRARY_PATHS_ENV), os.environ.get(USER_PATHS_ENV)) != _ENV


def on_roots_changed(cache: MutableMapping[Any, Any]) -> None:
    """Register a cache of answers derived from is_user_file: it is cleared with the roots."""
    _DEPENDENTS.append(cache)


def library_roots() -> list[str]:
    """The library roots in force (real paths, each ending in os.sep), longest first."""
    if _stale():
        _refresh()
    return [r for r, user in _ROOTS if not user]


def user_roots() -> list[str]:
    """The roots GRAPHGUARD_USER_PATHS names as the user's (real paths ending in os.sep)."""
    if _stale():
        _refresh()
    return [r for r, user in _ROOTS if user]


def _decide(filename: str) -> bool:
    if filename.startswith("<"):
        # <frozen runpy> is the interpreter's; <string> from exec, <stdin>, <ipython-input-..>,
        # <eval_with_key> (fx) are code the user's program made
        return not filename.startswith("<frozen")
    path = os.path.realpath(filename)
    for root, user in _ROOTS:
        if path.startswith(root):
            return user
    return True


def is_user_file(filename: str) -> bool:
    """Whether code in `filename` is the user's: under no library root (site-packages, the
    standard library, scripts, torch, graphguard, frozen modules, GRAPHGUARD_LIBRARY_PATHS), or
    under a GRAPHGUARD_USER_PATHS root more specific than any library root holding it."""
    if _stale():
        _refresh()
    hit = _FILES.get(filename)
    if hit is None:
        hit = _FILES[filename] = _decide(filename)
    return hit


def is_user_class(cls: type) -> bool:
    """Whether a class was written by the user: the file of its module (`sys.modules[cls.__module__]`)
    is the user's. A class of `__main__` (swapped by runpy while a script runs, fileless in exec'd
    code or a notebook) or of a module with no file is judged by the file of one of its functions;
    a class of `__main__` without any is the user's."""
    name = getattr(cls, "__module__", None) or ""
    if name in ("builtins", "__builtin__"):
        return False
    mod = sys.modules.get(name)
    file = getattr(mod, "__file__", None)
    if file and name != "__main__":
        return is_user_file(file)
    for attr in itertools.islice(vars(cls).values(), 32):
        attr = getattr(attr, "__func__", attr)  # classmethod, staticmethod
        code = getattr(attr, "__code__", None)
        if isinstance(code, types.CodeType):
            return is_user_file(code.co_filename)
    if name == "__main__":
        # the program's main module, whatever file sys.modules holds for it now (a launcher's
        # such as pytest's or graphguard's own once runpy restored it): classes there are the user's
        return True
    # no file and no function: a built-in (C) module's class, or one a library made up at run time
    return False


def is_user_object(value: Any) -> bool:
    """Whether `value` is an instance of a class the user wrote (is_user_class of its type)."""
    return is_user_class(type(value))
