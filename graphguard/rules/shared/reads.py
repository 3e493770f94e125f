"""Who reads a `.grad`: the user's own code, or torch internals (an optimizer, clip_grad_norm_)."""
from __future__ import annotations

import os
import sys

from ...capture.usercode import PACKAGE_DIR, is_user_file

__all__ = ["read_by_user"]

_GG_DIR = PACKAGE_DIR + os.sep


def read_by_user() -> bool:
    """Whether the `.grad` read being dispatched comes from the user's own code (not from
    clip_grad_norm_, an optimizer's zero_grad or other torch internals reading every parameter)."""
    f = sys._getframe(1)
    # graphguard's own frames (the dispatch) are stepped over; the first frame past them decides
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_GG_DIR):
        f = f.f_back
    return f is not None and is_user_file(f.f_code.co_filename)
