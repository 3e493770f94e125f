"""Shared analyses and builders the rules use: stale graphs, cuts, in-place wording, diagram snapshots."""
