#!/usr/bin/env python3
"""How much of a chapter's main text is about procedure rather than ideas: a rough count, to track.

A chapter should state a result once, with what it means, and put how it was measured (seeds,
intervals, budgets, timings, controls) in a collapsed block or in its benchmark section. This script
counts the main text's sentences and flags those that name procedure, by the words in PROCEDURE.

What counts as main text: the chapter's prose (markdown cells), without code, display maths, tables,
figure captions, the contents of dropdowns (``:::{dropdown}`` or an admonition with ``:class: dropdown``),
and without the benchmark section (a heading with "benchmark" or "how this was measured" in it, to the
next heading of its level or higher). A sentence ends at ``.``, ``!`` or ``?`` followed by a space and a
capital letter or the end of a paragraph. It is a heuristic: a count to compare before and after, not a grade.

    python scripts/procedure_share.py book/word2vec.md [--show]
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

PROCEDURE = re.compile(
    r"\bseeds?\b|\bintervals?\b|bootstrap|confidence|\bbudgets?\b|\bCPU\b|\bcores?\b|wall[- ]clock|"
    r"\bseconds\b|\b\d+(\.\d+)? ?s\b|\bminutes?\b|\bfolds?\b|\bcontrols?\b|\bmeasured\b|\bhalv|"
    r"standard deviation|±|\\pm|\bt-test|significan|\bablation", re.I)
FENCE = re.compile(r"^(`{3,}|:{3,})(\{([\w-]+)\})?")


def main_text(text: str) -> str:
    """The chapter's prose that counts as main text (see the module docstring)."""
    if text.startswith("---"):
        text = text.split("---", 2)[2]
    out, stack, skip_level = [], [], None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        heading = re.match(r"^(#+) (.*)", line)
        if heading and not stack:
            level = len(heading.group(1))
            if skip_level is not None and level <= skip_level:
                skip_level = None
            if re.search(r"benchmark|how this was measured", heading.group(2), re.I):
                skip_level = level
            continue
        fence = FENCE.match(line)
        if fence:
            marker = fence.group(1)
            if stack and line.strip() == stack[-1][0]:
                stack.pop()
                continue
            if fence.group(2) or not stack or marker != stack[-1][0]:
                name = fence.group(3) or "code"
                options = "\n".join(lines[i + 1: i + 4])
                hidden = name in ("code-cell", "code", "math", "dropdown", "figure", "list-table") or (
                    ":class: dropdown" in options) or name == "code"
                stack.append((marker, hidden))
                continue
        if skip_level is not None or any(hidden for _, hidden in stack):
            continue
        if line.startswith(("|", "$$", "    ")) or line.startswith("+++"):
            continue
        out.append(line)
    prose = "\n".join(out)
    return re.sub(r"\$\$.*?\$\$", " ", prose, flags=re.S)


def sentences(prose: str) -> list[str]:
    out = []
    for para in re.split(r"\n\s*\n", prose):
        para = " ".join(para.split())
        out += [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z(])", para) if len(s.split()) >= 3]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("chapters", nargs="+", type=Path)
    ap.add_argument("--show", action="store_true", help="print the sentences flagged as procedure")
    args = ap.parse_args(argv)
    for path in args.chapters:
        all_ = sentences(main_text(path.read_text()))
        flagged = [s for s in all_ if PROCEDURE.search(s)]
        share = len(flagged) / max(1, len(all_))
        print(f"{path}: {len(flagged)} of {len(all_)} main-text sentences name procedure ({share:.1%})")
        if args.show:
            for s in flagged:
                print(f"  - {s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
