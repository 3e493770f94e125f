"""The guard's installers: each a context manager that installs one group of hooks and removes
it on exit, entered on the guard's `Undos` (an ExitStack) so that every hook is removed, also when
the guarded body raises or an installation fails halfway.

This layer sits between capture and the guard: it builds wrappers around capture's recorder and
reports through the callables the guard hands it; it never imports the guard, the engine or rules.
"""
from __future__ import annotations

from .dynamo import hidden_from_dynamo, keep_dynamo_out, skips_added
from .hooks import backward_wrappers, grad_mode_switches, kept_watch, rank_hooks, warnings_at_user_line
from .mode import function_mode, step_aside, step_back_in
from .modules import module_hooks
from .optimizer import OptimizerWatch, optimizer_hooks
from .saved import SavedHooks, saved_tensor_hooks
from .undo import Undos

__all__ = ["OptimizerWatch", "SavedHooks", "Undos", "backward_wrappers", "function_mode",
           "grad_mode_switches", "hidden_from_dynamo", "keep_dynamo_out", "kept_watch", "module_hooks",
           "optimizer_hooks", "rank_hooks", "saved_tensor_hooks", "skips_added", "step_aside",
           "step_back_in", "warnings_at_user_line"]
