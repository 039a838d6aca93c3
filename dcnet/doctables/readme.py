"""The README's results at a glance and docs/reproducing.md's claim table.

Both are built from the feature modules' summary_rows() and from the run
headers of the committed reports (their "wall time N s"), so they change
only when the results they quote change.
"""

import importlib
import os
import re

from dcnet.doctables import RESULTS, md_table, table

FEATURES = ("d2tcp", "htb", "fastlane", "presto", "testbed")

# claim directory -> (make target that reruns it, what it reproduces)
TARGETS = {
    "d2tcp-fanin40": ("make demo", "D2TCP Figs. 6 and 7 (fan-in 40)"),
    "d2tcp-fanin20": ("make bench-d2tcp", "D2TCP Fig. 7 (fan-in 20; the bench runs 20 and 40)"),
    "d2tcp-atscale": ("make bench-d2tcp-atscale", "D2TCP Figs. 9-14 on the Clos"),
    "htb-tables": ("make bench-htb", "HTB paper Tables 1-2"),
    "htb-fq": ("make bench-htb", "HTB Table 1 beside upstream's sch_fq (1 and 8 flows)"),
    "htb-ce-red": ("make bench-htb", "HTB's ce beside a RED leaf marking above K (1 and 8 flows)"),
    "fastlane-single-switch": ("make bench-fastlane", "FastLane partition-aggregate and incast"),
    "fastlane-clos": ("make bench-fastlane-clos", "FastLane Figs. 4-6 on the Clos (FL-PS)"),
    "presto-fig15": ("make bench-presto-grid", "Presto Fig. 15 (five workloads)"),
    "presto-rx": ("make bench-presto-rx", "Presto Fig. 5 (receiver)"),
    "presto-cpu": ("make bench-presto-cpu", "Presto Fig. 6 (CPU per segment, one switch)"),
    "presto-cpu-clos": ("make bench-presto-cpu-clos", "Presto CPU per segment on the Clos"),
    "presto-flowlet": ("make bench-presto-flowlet", "Presto Fig. 13 (flowlets)"),
    "presto-oversub": ("make bench-presto-oversub", "Presto Figs. 10-12 (oversubscription)"),
    "presto-trace": ("make bench-presto-trace", "Presto Table 1 (trace mice)"),
    "presto-failover": ("make bench-presto-failover", "Presto Figs. 17-18 (failover)"),
    "presto-steady-stride": ("make bench-presto-steady-stride", "Presto Fig. 15, stride, steady state"),
    "presto-steady-bijection": ("make bench-presto-steady-bijection",
                                "Presto Fig. 15, bijection, steady state"),
    "presto-steady-random": ("make bench-presto-steady-random", "Presto Fig. 15, random, steady state"),
    "testbed-default": ("make testbed", "the testbed's default suite (Optimal, ECMP, MPTCP)"),
}

WALL_RE = re.compile(r"wall time (\d+) s")


def summary():
    rows = []
    for name in FEATURES:
        try:
            mod = importlib.import_module("dcnet.doctables." + name)
        except ImportError:
            continue
        rows += list(getattr(mod, "summary_rows", lambda: [])())
    return rows


@table("readme-results")
def readme_results():
    rows = []
    for claim, paper, ours, scale, verdict, link in summary():
        rows.append((claim, paper, ours, scale, verdict, "[%s](%s)" % (link.rstrip("/").split("/")[-1],
                                                                     link)))
    return md_table(("claim", "paper", "ours", "scale", "verdict", "results"), rows)


def wall_times(claim):
    """The wall time of each boot of a claim's run, from its reports."""
    out = []
    base = os.path.join(RESULTS, claim)
    for dirpath, _dirs, names in sorted(os.walk(base)):
        if "report.md" in names:
            with open(os.path.join(dirpath, "report.md")) as f:
                m = WALL_RE.search(f.read(4000))
            if m:
                out.append((os.path.relpath(dirpath, base), int(m.group(1))))
    return out


def fmt_minutes(s):
    return "%d min" % round(s / 60.0)


@table("reproducing-claims")
def reproducing_claims():
    rows = []
    for claim in sorted(TARGETS, key=lambda c: list(TARGETS).index(c)):
        if not os.path.isdir(os.path.join(RESULTS, claim)):
            continue
        target, what = TARGETS[claim]
        walls = wall_times(claim)
        # a top-level report summarises boots that have their own reports
        per_boot = [w for d, w in walls if d != "."] or [w for _, w in walls]
        wall = fmt_minutes(max(per_boot)) if per_boot else "-"
        rows.append((what, "`%s`" % target, wall, "[%s](results/%s/)" % (claim, claim)))
    return md_table(("claim", "command", "wall time of one boot (2 cores)", "committed results"), rows)


CHECK_TOTAL_RE = re.compile(r"^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?$", re.M)
CHECK_WALL_RE = re.compile(r"^check: (\d+) s", re.M)
CHECK_VM_RE = re.compile(r"^\s*vm\d+\| vmrun: .*?, (\d+) s, real clock", re.M)


@table("check-time")
def check_time():
    """make check's wall time and counts, parsed from the summaries that
    scripts/check.sh printed (docs/results/check/RUN/report.md); each
    run's README says on what host and beside what it ran."""
    base = os.path.join(RESULTS, "check")
    rows = []
    for run in sorted(os.listdir(base)):
        path = os.path.join(base, run, "report.md")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            text = f.read()
        tot = CHECK_TOTAL_RE.findall(text)[-1]
        wall = int(CHECK_WALL_RE.search(text).group(1))
        vms = [int(v) for v in CHECK_VM_RE.findall(text)]
        with open(os.path.join(base, run, "README.md")) as f:
            beside = f.readline().lstrip("# ").strip()
        rows.append((beside, fmt_minutes(wall),
                     "%s passed, %s failed, %s skipped" % (tot[0], tot[1], tot[2] or 0),
                     ", ".join("%d s" % v for v in sorted(vms)) or "-",
                     "[%s](results/check/%s/)" % (run, run)))
    return md_table(("run", "make check", "tests", "each guest", "results"), rows)
