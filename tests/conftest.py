"""Shared by every test folder: tests/ itself is importable (tests/chromium.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
