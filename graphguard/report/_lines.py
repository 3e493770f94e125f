"""Shared by the one-line formats (concise, github): where a finding is, as path, line, column."""
from __future__ import annotations

import linecache
import os
from typing import Any

__all__ = ["place", "one_line", "ordered"]


def _column(path: str, line: int) -> int:
    """1-based column of the first non-blank character of the line (1 when unreadable)."""
    try:
        text = linecache.getline(path if os.path.isabs(path) else os.path.abspath(path), line)
    except Exception:
        text = ""
    stripped = text.lstrip(" \t")
    return len(text) - len(stripped) + 1 if stripped.strip() else 1


def place(f: dict[str, Any]) -> tuple[str, int, int] | None:
    """(path, line, column) of the finding's location, else of its subject's creation line."""
    for loc in (f.get("location"), (f.get("subject") or {}).get("created_at")):
        if isinstance(loc, dict) and loc.get("file"):
            line = int(loc.get("line") or 1)
            return str(loc["file"]), line, _column(str(loc["file"]), line)
    return None


def one_line(text: Any) -> str:
    return " ".join(str(text or "").split())


def ordered(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """By path, line, column, code (findings without a place last, in report order)."""
    def key(item: tuple[int, dict[str, Any]]) -> tuple:
        i, f = item
        p = place(f)
        return (0, p[0], p[1], p[2], f.get("code", ""), i) if p else (1, "", 0, 0, "", i)

    return [f for _, f in sorted(enumerate(findings), key=key)]
