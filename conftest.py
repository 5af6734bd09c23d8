"""Root pytest configuration.

The README installs irsim non-editable (``pip install '.[test]'``) and runs ``pytest`` from
the repository, whose ``irsim/`` tree is also collected for doctests. The tests import the
installed package first; this lets the doctests of the source files run against those same
(installed) modules instead of failing on the path mismatch.
"""

import os

os.environ.setdefault("PY_IGNORE_IMPORTMISMATCH", "1")
