"""The README's Python examples run as written (doctest)."""

from __future__ import annotations

import doctest
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_examples():
    text = README.read_text()
    assert ">>> res = irsim.discpower(" in text  # the "From Python" section is there
    result = doctest.testfile(str(README), module_relative=False, optionflags=(
        doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE), verbose=False, report=True)
    assert result.attempted > 0 and result.failed == 0
