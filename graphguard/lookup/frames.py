"""The user's frames, for the layers above capture (NOTE [one walk over user frames], capture/sites.py)."""
from __future__ import annotations

from ..capture.sites import user_frames, user_stacklevel, user_traceback
from .names import live_user_frames

__all__ = ["live_user_frames", "user_frames", "user_stacklevel", "user_traceback"]
