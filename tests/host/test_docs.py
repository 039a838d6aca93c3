"""The documentation describes the product and quotes only committed results.

- every generated table (dcnet/doctables) matches what `make docs-tables`
  writes from docs/results/, and every marker names a generator;
- README.md and docs/ carry no work-log vocabulary (the list is below);
- relative links resolve inside the repository, and nothing points outside it;
- docs/results/ holds one directory per quoted claim, each with a README and a
  report, no logs, patches or scripts, and stays under 10 MB.
"""

import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "docs", "results")

from dcnet import doctables

# Words that tell how the work was done instead of what the product does.
WORKLOG = [
    r"\bsessions?\b",
    r"\bissues? #?\d+",
    r"\bthe issue\b",
    r"\bissue's\b",
    r"\brehears",
    r"\btonight\b",
    r"\byesterday\b",
    r"\black of time\b",
    r"\bby the deadline\b",
    r"\bclosing note",
    r"\bdone[- ]when\b",
    r"\bwork[- ]?log\b",
    r"\bthis work\b",
    r"\bprevious engineer",
    r"\bother engineers?\b",
    r"(?-i:\bCI\b)",
    r"\bhelper agent",
    r"\bstop \d+\b",
    r"\bnot run this\b",
    r"\bfor lack of\b",
    r"\bshared/papers\b",
    r"\bENVIRONMENT\.md\b",
    r"/work/main\b",
    r"/root/",
]
WORKLOG_RE = re.compile("|".join(WORKLOG), re.I)

ALLOWED_RESULT_EXT = (".md", ".png", ".json", ".json.xz", ".svg", ".csv")


def prose_files():
    """README.md, docs/**/*.md and the results directories' READMEs."""
    files = doctables.doc_files()
    for d in sorted(os.listdir(RESULTS)):
        p = os.path.join(RESULTS, d, "README.md")
        if os.path.exists(p):
            files.append(p)
    idx = os.path.join(RESULTS, "README.md")
    if os.path.exists(idx):
        files.append(idx)
    phys = os.path.join(ROOT, "testbed", "physical", "README.md")
    if os.path.exists(phys):
        files.append(phys)
    return files


def strip_code_urls(text):
    return re.sub(r"https?://\S+", "", text)


def test_generated_tables_are_current():
    doctables.load_all()
    stale = []
    for path in doctables.doc_files():
        with open(path) as f:
            text = f.read()
        for name, body in doctables.regions(text):
            assert name in doctables.TABLES, "%s: no generator for table %r" % (path, name)
            want = doctables.render(name)
            if body != want:
                stale.append("%s: %s" % (os.path.relpath(path, ROOT), name))
    assert not stale, "run `make docs-tables`; stale: " + ", ".join(stale)


def test_every_generator_is_used_once():
    doctables.load_all()
    used = {}
    for path in doctables.doc_files():
        with open(path) as f:
            for name, _ in doctables.regions(f.read()):
                used.setdefault(name, []).append(path)
    unused = sorted(set(doctables.TABLES) - set(used))
    assert not unused, "generators no page uses: %s" % unused
    # A marker opened and never closed is a region the generator skips.
    for path in doctables.doc_files():
        with open(path) as f:
            text = f.read()
        opened = re.findall(r"<!-- generated:([^ ]+) -->", text)
        closed = re.findall(r"<!-- /generated:([^ ]+) -->", text)
        assert sorted(opened) == sorted(closed), path


def test_no_worklog_vocabulary():
    hits = []
    for path in prose_files():
        with open(path) as f:
            for n, line in enumerate(f, 1):
                m = WORKLOG_RE.search(strip_code_urls(line))
                if m:
                    hits.append("%s:%d: %r" % (os.path.relpath(path, ROOT), n, m.group(0)))
    assert not hits, "work-log vocabulary belongs in CHANGELOG.md:\n" + "\n".join(hits)


def test_vocabulary_check_catches_worklog():
    for s in ("the eleventh session", "issue 17's goal", "a CI rehearsal",
              "fixed tonight", "see ../shared/papers/presto.txt"):
        assert WORKLOG_RE.search(s), s
    assert not WORKLOG_RE.search("issues a SYN; the stopwatch; 64 KB flowcells")


LINK_RE = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def test_relative_links_resolve():
    bad = []
    for path in prose_files() + [os.path.join(ROOT, "CHANGELOG.md")]:
        if not os.path.exists(path):
            continue
        with open(path) as f:
            text = f.read()
        for target in LINK_RE.findall(text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            rel = target.split("#")[0]
            full = os.path.normpath(os.path.join(os.path.dirname(path), rel))
            if not full.startswith(ROOT + os.sep) and full != ROOT:
                bad.append("%s -> %s (outside the repository)" % (path, target))
            elif not os.path.exists(full):
                bad.append("%s -> %s" % (os.path.relpath(path, ROOT), target))
    assert not bad, "\n".join(bad)


def tracked(under):
    out = subprocess.run(["git", "ls-files", "-z", under], cwd=ROOT,
                         capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    return [p for p in out.stdout.split("\0") if p]


def test_results_hold_claims_only():
    files = [p for p in tracked("docs/results") if os.path.exists(os.path.join(ROOT, p))]
    if not files:
        pytest.skip("no tracked results")
    bad = [p for p in files if not p.endswith(ALLOWED_RESULT_EXT)]
    assert not bad, "not results (logs, patches, scripts): %s" % bad[:20]
    dirs = sorted({p.split("/")[2] for p in files if p.count("/") >= 3})
    for d in dirs:
        assert os.path.exists(os.path.join(RESULTS, d, "README.md")), "%s lacks a README" % d
        assert any(p.startswith("docs/results/%s/" % d) and p.endswith("/report.md") for p in files), \
            "%s holds no report.md" % d
    total = sum(os.path.getsize(os.path.join(ROOT, p)) for p in files)
    assert total < 10 * 1024 * 1024, "docs/results is %.1f MB" % (total / 2**20)


def test_every_results_directory_is_quoted():
    """A results directory that no page links is not a claim."""
    if not os.path.isdir(RESULTS):
        pytest.skip("no results")
    text = ""
    for path in doctables.doc_files():
        with open(path) as f:
            text += f.read()
    pkg = os.path.join(ROOT, "dcnet", "doctables")
    for n in os.listdir(pkg):
        if n.endswith(".py"):
            with open(os.path.join(pkg, n)) as f:
                text += f.read()
    orphans = [d for d in sorted(os.listdir(RESULTS))
               if os.path.isdir(os.path.join(RESULTS, d)) and "results/" + d not in text
               and "\"" + d + "\"" not in text]
    assert not orphans, "results no page quotes: %s" % orphans
