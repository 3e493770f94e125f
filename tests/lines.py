"""Line numbers for tests that assert on lines: by a `# MARKER` comment, or by the only line
holding some text (tests name lines by what is on them, so editing a file never breaks them)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable


def marker_lines(path: str | Path) -> Callable[[str], int]:
    """`line_of(marker)` for the file at `path`: the line that ends with `# <marker>` (each
    marker is used once in the file)."""
    source = Path(path).resolve().read_text().splitlines()

    def line_of(marker: str) -> int:
        hits = [i for i, text in enumerate(source, 1) if text.rstrip().endswith(f"# {marker}")]
        assert len(hits) == 1, (marker, hits)
        return hits[0]

    return line_of


def line_containing(path: Path, text: str) -> int:
    """The 1-based number of the only line of `path` that contains `text`."""
    hits = [i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(hits) == 1, (path, text, hits)
    return hits[0]
