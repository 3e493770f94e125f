"""Capture: the hooks that watch torch and the records they keep (no judging, no wording)."""
