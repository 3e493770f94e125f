"""pytest plugin (loaded through the pytest11 entry point): `pytest --graphguard`."""
from __future__ import annotations

import pytest

__all__: list[str] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("graphguard")
    group.addoption("--graphguard", action="store_true", default=False,
                    help="run every test inside a GraphGuard")
