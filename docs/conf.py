"""Sphinx configuration of the lab's documentation: Markdown pages (MyST) with the Furo theme.

Build: `sphinx-build -W --keep-going -n docs docs/_build` (tests/test_docs.py does, in strict mode:
a broken link, a missing page or a page left out of the table of contents fails).
"""

project = "tictactoe-lab"
author = "the lab"
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3  # links such as search.md#defaults-at-the-ceiling resolve to headings
myst_enable_extensions = ["colon_fence"]
html_theme = "furo"
html_title = "The lab"
suppress_warnings = ["misc.highlighting_failure"]  # shell and text blocks are not all valid lexer input
