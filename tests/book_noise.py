"""What counts as noise on a rendered book page, for the notebook and built-book tests.

A page must not show where it was built (machine paths), a Python warning, or a
progress bar. The patterns are checked against executed cell outputs
(``tests/test_notebooks.py``) and against the built HTML (``tests/test_book_html.py``).
"""

from __future__ import annotations

import re

MACHINE_PATH = re.compile(r"(?<![\w.~])/(?:work|root|home|tmp|usr|opt)/[\w.\-/]+|site-packages|/\.venv/")
PYTHON_WARNING = re.compile(r"\b[A-Z]\w*Warning\b|^\s*warnings\.warn\(", re.MULTILINE)
PROGRESS_BAR = re.compile(r"\d+%\|[^|\n]*\||\d+/\d+ \[\d+:\d+<|\bit/s\]|█")

PATTERNS = {"machine path": MACHINE_PATH, "Python warning": PYTHON_WARNING, "progress bar": PROGRESS_BAR}


def find_noise(text: str) -> list[str]:
    """Each kind of noise found in ``text``, with the first offending snippet."""
    found = []
    for kind, pattern in PATTERNS.items():
        match = pattern.search(text)
        if match:
            start = max(0, match.start() - 60)
            found.append(f"{kind}: ...{text[start:match.end() + 60]!s}...")
    return found


def notebook_output_text(nb) -> str:
    """All text a reader would see from an executed notebook's outputs (streams, results, errors)."""
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                parts.append(out.get("text", ""))
            elif out.get("output_type") == "error":
                parts.append("\n".join(out.get("traceback", [])))
            else:
                data = out.get("data", {})
                parts.append(str(data.get("text/plain", "")))
                parts.append(str(data.get("text/html", "")))
    return "\n".join(parts)
