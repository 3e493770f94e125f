"""Plain data shared by every layer: places, subjects, findings, diagram snapshots (no torch)."""
from __future__ import annotations

from .findings import (SEVERITIES, Finding, Frame, Related, Role, RunRecord, Site, SourceLoc, Subject,
                       count_severities, relpath, severity_rank)
from .messages import Message
from .snapshot import GraphSnapshot, SnapNode

__all__ = ["Frame", "Site", "SourceLoc", "Subject", "Related", "Role", "Message", "Finding", "RunRecord", "SEVERITIES",
           "severity_rank", "count_severities", "relpath", "GraphSnapshot", "SnapNode"]
