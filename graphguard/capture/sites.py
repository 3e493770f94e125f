"""Find the user's frames on the call stack, cheaply, without keeping frame objects alive."""
from __future__ import annotations

import sys
import traceback
import types
from typing import Iterator

from ..model import Frame, Site, SourceLoc
from .usercode import PACKAGE_DIR, is_user_file, on_roots_changed

__all__ = ["user_site", "user_loc", "user_frames", "user_stacklevel", "user_traceback", "is_internal_file",
           "is_internal_code", "loc_of", "MAX_FRAMES", "PACKAGE_DIR"]

# A site keeps at most this many user frames: enough to go from a helper function
# (`apply_ellipse_mask`) out to the line that named its result (`ref_image = ...`).
MAX_FRAMES = 4
# id(code) -> (code, internal?), for user_site and is_internal_code: a code object's hash is not
# cached (it hashes its constants and names again each time, ~1 us a frame, and user_site looks at
# every frame of the stack three times per iteration). The entry holds the code, so its id is not reused meanwhile.
_INTERNAL_BY_ID: dict[int, tuple[object, bool]] = {}


def is_internal_file(filename: str) -> bool:
    """Not the user's code: torch, graphguard, the standard library, site-packages (frameworks,
    test runners) and the other library roots of capture/usercode.py (`not is_user_file`)."""
    return not is_user_file(filename)


def is_internal_code(code: types.CodeType) -> bool:
    """is_internal_file for a code object, cached by the code's id (see _INTERNAL_BY_ID)."""
    entry = _INTERNAL_BY_ID.get(id(code))
    if entry is None:
        flag = is_internal_file(code.co_filename)
        _INTERNAL_BY_ID[id(code)] = (code, flag)
        return flag
    return entry[1]


# NOTE [one walk over user frames]
# Every look at the user's frames goes through `user_frames` (live frames, for names, holders,
# owners), `user_stacklevel` (warnings) or `user_traceback` (the CLI's tracebacks), all deciding
# "internal?" with the same cached test. `user_site` is that same walk unrolled, because it runs
# per op while recording (a generator costs ~50 ns a frame there).
def user_frames(start: types.FrameType | None, max_frames: int = 12,
                budget: int = 10_000) -> Iterator[types.FrameType]:
    """The live user frames from `start` outward, innermost first (drop them soon)."""
    f, n = start, 0
    while f is not None and n < max_frames and budget:
        budget -= 1
        if not is_internal_code(f.f_code):
            n += 1
            yield f
        f = f.f_back


def user_stacklevel(start: types.FrameType) -> int:
    """The warnings stacklevel, counted from `start` as level 2, of the first user frame."""
    level, f = 2, start
    while f is not None and is_internal_code(f.f_code):
        f = f.f_back
        level += 1
    return level


def user_traceback(e: BaseException) -> list[traceback.FrameSummary]:
    """The frames of an exception's traceback that are the user's."""
    return [fs for fs in traceback.extract_tb(e.__traceback__) if not is_internal_file(fs.filename)]


# (id(code), f_lasti, ...) of a site's user frames -> (the site, those code objects). The same few
# lines call backward, step and the ops at every iteration: a hit costs one dict lookup instead
# of building a Frame (and computing its line number from the line table) per user frame. The
# entry holds the code objects, so their ids are not reused while it lives.
_SITES: dict[tuple, tuple[Site, tuple]] = {}
MAX_SITES = 4096  # entries before the cache starts over (a program has a bounded number of them)
# both caches hold answers of is_user_file: they start over when its roots change (sys.path, the
# GRAPHGUARD_LIBRARY_PATHS / GRAPHGUARD_USER_PATHS variables)
on_roots_changed(_INTERNAL_BY_ID)
on_roots_changed(_SITES)
_SITE_BUDGET = 96  # frames examined at most: deep framework stacks must not make every op slow


def user_site(depth: int = 1, max_frames: int = MAX_FRAMES) -> Site:
    """The innermost user frames above the caller, innermost first (empty when none)."""
    try:
        start = sys._getframe(depth + 1)
    except ValueError:
        return ()
    by_id = _INTERNAL_BY_ID
    key: list[int] = []  # (id(code), f_lasti) of each user frame: the cache key
    f, left, budget = start, max_frames, _SITE_BUDGET
    while f is not None and budget:
        budget -= 1
        code = f.f_code
        entry = by_id.get(id(code))
        if entry is None:
            flag = is_internal_file(code.co_filename)
            by_id[id(code)] = (code, flag)
        else:
            flag = entry[1]
        if not flag:
            key += (id(code), f.f_lasti)
            left -= 1
            if not left:
                break
        # Internal frames are skipped, not a stop: a user's forward() is called from
        # nn.Module.__call__ (torch) from the user's training loop, and both user lines matter.
        f = f.f_back
    k = tuple(key)
    hit = _SITES.get(k)
    if hit is not None:
        return hit[0]
    # a new site (once per distinct line chain): the same walk again, for the frames themselves
    frames: list[types.FrameType] = []
    f, budget = start, _SITE_BUDGET
    while f is not None and budget and len(frames) < max_frames:
        budget -= 1
        if not is_internal_code(f.f_code):
            frames.append(f)
        f = f.f_back
    site = tuple(Frame(fr.f_code.co_filename, fr.f_lineno, fr.f_code.co_name) for fr in frames)
    if len(_SITES) >= MAX_SITES:
        _SITES.clear()
    _SITES[k] = (site, tuple(fr.f_code for fr in frames))
    return site


def loc_of(site: Site | None, index: int = 0) -> SourceLoc | None:
    """The SourceLoc of one frame of a site (innermost by default)."""
    if not site:
        return None
    return SourceLoc.from_frame(site[min(index, len(site) - 1)])


def user_loc(depth: int = 1) -> SourceLoc | None:
    """The innermost user line above the caller."""
    return loc_of(user_site(depth + 1, 1))
