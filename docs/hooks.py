"""mkdocs hook: the Sphinx roles of irsim's docstrings (``:func:`x```, ``:mod:`x```, ...),
which mkdocstrings renders as ``:func:<code>x</code>``, shown as plain code (``x``)."""

from __future__ import annotations

import re

_ROLE = re.compile(r":(?:func|mod|data|class|meth|attr|obj|exc|const):<code>~?([^<]*)</code>")


def on_page_content(html: str, **kwargs) -> str:
    return _ROLE.sub(r"<code>\1</code>", html)
