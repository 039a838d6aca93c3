"""Results tables in README.md and docs/ generated from committed results.

A table in a Markdown file sits between two markers:

    <!-- generated:NAME -->
    ...
    <!-- /generated:NAME -->

NAME is a function registered with @table("NAME") in one of this package's
modules (one per feature). It reads files under docs/results/ and returns
the Markdown that belongs between the markers. `make docs-tables` rewrites
every marked region; tests/host/test_docs.py fails when a committed region
differs from what the generator writes, so no number can drift from the
run it quotes.
"""

import importlib
import json
import lzma
import os
import pkgutil
import re

from dcnet import ROOT
RESULTS = os.path.join(ROOT, "docs", "results")

TABLES = {}

MARK_RE = re.compile(
    r"(<!-- generated:(?P<name>[A-Za-z0-9_.-]+) -->\n)(?P<body>.*?)(<!-- /generated:(?P=name) -->)",
    re.S,
)


def table(name):
    """Register FUNC() -> str as the generator of table NAME."""
    def deco(func):
        if name in TABLES:
            raise ValueError("table %s registered twice" % name)
        TABLES[name] = func
        return func
    return deco


def load_all():
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(__name__ + "." + mod.name)
    return TABLES


def result_path(*parts):
    return os.path.join(RESULTS, *parts)


def load_json(*parts):
    """A JSON file under docs/results (FILE or FILE.xz)."""
    path = result_path(*parts)
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    with lzma.open(path + ".xz", "rt") as f:
        return json.load(f)


def md_table(header, rows):
    """Markdown table text (ends with a newline)."""
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out) + "\n"


def render(name):
    body = TABLES[name]()
    if not body.endswith("\n"):
        body += "\n"
    return body


def regions(text):
    return [(m.group("name"), m.group("body")) for m in MARK_RE.finditer(text)]


def rewrite_text(text):
    def sub(m):
        name = m.group("name")
        if name not in TABLES:
            raise KeyError("no generator for table %r" % name)
        return m.group(1) + render(name) + m.group(4)
    return MARK_RE.sub(sub, text)


def doc_files():
    files = [os.path.join(ROOT, "README.md")]
    for dirpath, _dirs, names in os.walk(os.path.join(ROOT, "docs")):
        if os.path.join("docs", "results") in dirpath:
            continue
        files += [os.path.join(dirpath, n) for n in sorted(names) if n.endswith(".md")]
    return files
