"""Words that speak to the book's builders, not its readers.

A page may not mention the tracker's issues, targets set for the project, to-do notes,
who asked for what, reviewers or findings, work sessions, or how the project is built
(continuous integration, its engineers). ``target`` alone stays allowed: "a target
(epsilon, delta)" is the reader's own budget. Used on the sources (fast) and on the built
HTML (``test_book_html.py``).
"""

from __future__ import annotations

import re

# Checked on every page, the API reference included (it renders the library's docstrings).
EVERYWHERE = {
    "a tracker issue": re.compile(r"(?<![-\w])issues?\b", re.I),
    "targets set for the project": re.compile(r"\btargets\b|\btargets? (?:was |were )?(?:met|missed)\b", re.I),
    "a to-do note": re.compile(r"\bTODO\b|\bFIXME\b"),
    "who asked for it": re.compile(r"\bwe were asked\b|\bwas asked to\b|\bthe brief\b", re.I),
    "a work session": re.compile(r"\b(?:this|previous|earlier|next|later|last|another|working) sessions?\b|\bsessions\b",
                                 re.I),
    "a findings report": re.compile(r"\bfindings\b(?! of the Association)|shared/findings", re.I),  # not the ACL venue
}
# Checked on the chapters and part pages (prose about the methods, not docstrings).
CHAPTERS = {
    **EVERYWHERE,
    "a reviewer": re.compile(r"\breviewers?\b(?! (?:dis)?liked)", re.I),
    "continuous integration": re.compile(r"(?<!% )\bCI\b|continuous integration", re.I),   # not "95% CI"
    "the people who build it": re.compile(r"\bengineers?\b|\bthe lead\b|\bcharter\b", re.I),
    "the book's own build budget": re.compile(r"\bbook's (?:time )?budget\b|\bin budget\b|\bearlier build\b", re.I),
}


def builder_talk(text: str, patterns: dict = CHAPTERS) -> list[str]:
    """Each builder-facing phrase in ``text``, as ``"what: '...context...'"``."""
    found = []
    for what, pattern in patterns.items():
        for m in pattern.finditer(text):
            context = text[max(0, m.start() - 40):m.end() + 40].replace("\n", " ")
            found.append(f"{what}: '{context}'")
    return found
