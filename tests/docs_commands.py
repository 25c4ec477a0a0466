"""The shell commands of a docs page's section, as argument lists a test can run (`unmask ...` lines)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs"


def section(page: str, heading: str) -> str:
    """The text of ``## heading`` on ``docs/page`` up to the next heading of that level."""
    text = (DOCS / page).read_text(encoding="utf-8")
    start = text.index(f"## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : None if end < 0 else end]


def commands(text: str, env: dict[str, str]) -> list[list[str]]:
    """Every ``unmask`` command of the ```bash blocks of ``text``: continuations joined, ``VAR=value`` lines
    applied (``env`` wins: the test's model and files), ``$VAR`` expanded, the leading ``unmask`` dropped."""
    values = dict(env)
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if len(words) == 1 and re.fullmatch(r"\w+=.*", words[0]):
                name, value = words[0].split("=", 1)
                values.setdefault(name, value)
            elif words and words[0] == "unmask":
                out.append([re.sub(r"\$(\w+)", lambda m: values[m.group(1)], w) for w in words[1:]])
    return out


def shrink(argv: list[str], flags: dict[str, str]) -> list[str]:
    """``argv`` with the value of each flag in ``flags`` replaced (the page's sizes, cut to a test's)."""
    argv = list(argv)
    for flag, value in flags.items():
        if flag in argv:
            argv[argv.index(flag) + 1] = value
    return argv
