"""The store is the application's bottom: its modules import the domain and each other, never an
application module above them (the guard SQL of remembered callers lives in store/ for that)."""

from __future__ import annotations

import ast
from pathlib import Path

STORE = Path(__file__).resolve().parents[2] / "application" / "store"


def imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    return found | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}


def test_the_store_imports_no_application_module_above_it():
    upward = {
        f"{path.name}: {name}"
        for path in STORE.rglob("*.py")
        for name in imported(path)
        if name.split(".")[0] == "application" and not name.startswith("application.store")
    }
    assert upward == set()
