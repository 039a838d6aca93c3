"""HTB congestion signals' results (docs/htb-ecn.md) from docs/results/htb-tables.

Paper: Keqiang He, Weite Qin, Qiwei Zhang, Wenfei Wu, Junjie Yang, Tian Pan,
Chengchen Hu, Jiao Zhang, Brent Stephens, Aditya Akella, Ying Zhang,
"Low Latency Software Rate Limiters for Cloud Networks", APNet 2017,
DOI 10.1145/3106989.3107005.  Paper numbers are constants below, each with
its table or section; every measured number is read from the claim
directory.
"""

import os
import re

from dcnet.doctables import RESULTS, load_json, md_table, table
from dcnet.samples import median

CLAIM = "htb-tables"

# Table 1 (one receiver VM), 1 Gbit/s limiter, 1/2/8/16 flows: median RTT
# 957/1513/2316/3192 us, saturation 94.5-96%; no HTB, no flow: 116 us.
PAPER_T1_PLAIN_P50_US = (957, 3192)
PAPER_T1_SAT = (0.945, 0.96)
# Table 2 (two receiver VMs, min 2-5 Gbit/s, total 10 Gbit/s): median RTT
# 475-2064 us, saturation 91.6-94.2%.
PAPER_T2_PLAIN_P50_US = (475, 2064)
# Sec. 3.1: "the median TCP RTT is 62us" without HTB and without load;
# bench/htb.py drains our queues at the paper's rate over this path.
PAPER_UNLOADED_US = 62
PAPER_RATE_MBIT = 1000
# Sec. 3.2, Fig. 4: DCTCP + CE marking in HTB: median RTT below 1 ms
# (224 us at a 60 KB threshold), but throughput oscillates.
PAPER_CE_P50_US = 1000
# Sec. 4, "Preliminary Results", 1 Gbit/s limiter: ECE 950 Mbit/s at
# 166 us median; RWND 956 Mbit/s at 161 us.
PAPER_ECE = (950, 166)
PAPER_RWND = (956, 161)

# Verdict thresholds.  Goodput: at most 1448/1514 of R can reach iperf3;
# the paper's solutions reach 95% of R: ours must reach GOODPUT_OK of R.
GOODPUT_OK = 0.93
# Plain HTB's latency claim (Sec. 1: "an order of magnitude"): plain
# HTB's median at least 10x the unloaded RTT.
ORDER = 10
# Stability (Fig. 4's oscillation): CV of the limiter's output per 100 ms.
CV_OSC = 0.05


def _res():
    return load_json(CLAIM, "run1", "results.json")


def _cells(rows, scheme, flows=None):
    return [r for r in rows if r["scheme"] == scheme and (flows is None or r["flows"] in flows)]


def _rng(vals, fmt):
    """"lo-hi unit" of VALS formatted by FMT (which returns "number unit")."""
    lo, hi = fmt(min(vals)), fmt(max(vals))
    if lo == hi:
        return lo
    (nlo, _, ulo), (nhi, _, uhi) = lo.partition(" "), hi.partition(" ")
    if ulo == uhi and ulo:
        return "%s-%s %s" % (nlo, nhi, ulo)
    return "%s-%s" % (lo, hi)


def _ms(us):
    return "%.2f ms" % (us / 1000.0) if us < 10000 else "%.0f ms" % (us / 1000.0)


def _us(us):
    return "%.0f us" % us


def _pct(x):
    return "%.1f%%" % (100.0 * x)


def _scale(res):
    return "R = %d Mbit/s (%.2g of the paper's %d Mbit/s), K = %d B" % (
        res["rate_mbit"], res["rate_mbit"] / PAPER_RATE_MBIT, PAPER_RATE_MBIT, res["k_bytes"])


def _flows(rows):
    return "/".join(str(f) for f in sorted({r["flows"] for r in rows}))


def plain_t1():
    res = _res()
    c = _cells(res["table1"], "plain")
    un = res["unloaded_rtt"]["p50_us"]
    ours = "median RTT %s (unloaded %s), %s flows" % (
        _rng([r["rtt_p50_us"] for r in c], _ms), _us(un), _flows(c))
    paper = "median RTT %d-%d us (unloaded %d us), 1-16 flows" % (
        PAPER_T1_PLAIN_P50_US + (PAPER_UNLOADED_US,))
    ok = min(r["rtt_p50_us"] for r in c) >= ORDER * un
    return paper, ours, _scale(res), "reproduced (deeper queue)" if ok else "not reproduced"


def plain_t2():
    res = _res()
    c = _cells(res["table2"], "plain")
    un = res["unloaded_rtt"]["p50_us"]
    xs = "/".join("%.1f" % x for x in sorted({r["min_kbit"] / r["total_kbit"] for r in c}))
    ours = "median RTT %s, X/T %s" % (_rng([r["rtt_p50_us"] for r in c], _ms), xs)
    paper = "median RTT %d-%d us" % PAPER_T2_PLAIN_P50_US
    ok = min(r["rtt_p50_us"] for r in c) >= ORDER * un
    return paper, ours, _scale(res), "reproduced (deeper queue)" if ok else "not reproduced"


def signal_t1(scheme, flows):
    """A signal's Table 1 cells at FLOWS: goodput, median, and the median's
    queue drained at the paper's rate over its unloaded path."""
    res = _res()
    c = _cells(res["table1"], scheme, flows)
    return res, c, "goodput %s of R, median %s (%s at 1 Gbit/s, %s of unloaded), %s flows" % (
        _rng([r["saturation"] for r in c], _pct),
        _rng([r["rtt_p50_us"] for r in c], _ms),
        _rng([r["rtt_p50_at_paper_us"] for r in c], _us),
        _rng([r["rtt_p50_at_paper_ratio"] for r in c], lambda x: "%.1fx" % x),
        _flows(c))


def ce_row():
    res, c, ours = signal_t1("ce", None)
    ok = max(r["rtt_p50_at_paper_us"] for r in c) < PAPER_CE_P50_US
    paper = "median RTT < 1 ms (Fig. 4)"
    return paper, ours, _scale(res), "reproduced" if ok else "not reproduced"


def solution_row(scheme, paper_num, flows):
    res, c, ours = signal_t1(scheme, flows)
    mbit, p50 = paper_num
    paper = "%d Mbit/s of 1000 at %d us median (%.1fx of %d us)" % (
        mbit, p50, p50 / PAPER_UNLOADED_US, PAPER_UNLOADED_US)
    ok = (min(r["saturation"] for r in c) >= GOODPUT_OK
          and max(r["rtt_p50_at_paper_us"] for r in c) <= p50)
    return paper, ours, _scale(res), "reproduced" if ok else "not reproduced"


def stability_row():
    res = _res()
    c = [r for r in res["table1"] + res["table2"] if r["scheme"] == "ce"]
    cv = max(r["wire_cv"] for r in c)
    ours = "limiter output CV at most %s per 100 ms, every CE cell" % _pct(cv)
    paper = "DCTCP + CE: throughput oscillates (Fig. 4)"
    verdict = "reproduced" if cv > CV_OSC else "not reproduced (no oscillation)"
    return paper, ours, _scale(res), verdict


def signals_t2():
    res = _res()
    c = [r for r in res["table2"] if r["scheme"] in ("ce", "ece", "rwnd")]
    ours = "CE/ECE/RWND: goodput %s of T, median %s" % (
        _rng([r["saturation"] for r in c], _pct), _rng([r["rtt_p50_us"] for r in c], _ms))
    paper = "(no signal measured in Table 2's setup)"
    ok = min(r["saturation"] for r in c) >= GOODPUT_OK
    return paper, ours, _scale(res), "low latency at full rate" if ok else "below rate"


LINK = "[%s](results/%s/)" % (CLAIM, CLAIM)


@table("htb-results")
def results_table():
    rows = [
        ("Table 1: plain HTB",) + plain_t1(),
        ("Table 2: plain HTB",) + plain_t2(),
        ("Sec. 3.2: CE (DCTCP + ECN)",) + ce_row(),
        ("Fig. 4: CE stability",) + stability_row(),
        ("Sec. 4: ECE, 1-2 flows",) + solution_row("ece", PAPER_ECE, (1, 2)),
        ("Sec. 4: ECE, 8-16 flows",) + solution_row("ece", PAPER_ECE, (8, 16)),
        ("Sec. 4: RWND, 1-2 flows",) + solution_row("rwnd", PAPER_RWND, (1, 2)),
        ("Sec. 4: RWND, 8-16 flows",) + solution_row("rwnd", PAPER_RWND, (8, 16)),
        ("Table 2 setup: signals",) + signals_t2(),
    ]
    rows = [r + (LINK,) for r in rows]
    return md_table(["paper figure", "paper's number", "ours", "scale", "verdict", "link"], rows)


def summary_rows():
    """(claim, paper, ours, scale, verdict, link) for the README's results
    at a glance; link relative to the repository root."""
    link = "docs/results/%s/" % CLAIM
    return [
        ("HTB Table 1: plain HTB's queueing",) + plain_t1() + (link,),
        ("HTB Sec. 4: ECE, 1-2 flows",) + solution_row("ece", PAPER_ECE, (1, 2)) + (link,),
        ("HTB Sec. 4: RWND, 1-2 flows",) + solution_row("rwnd", PAPER_RWND, (1, 2)) + (link,),
        ("HTB Sec. 4: ECE/RWND, 8-16 flows",)
        + _combined_816() + (link,),
    ]


def _combined_816():
    p1, o1, s, v1 = solution_row("ece", PAPER_ECE, (8, 16))
    p2, o2, _, v2 = solution_row("rwnd", PAPER_RWND, (8, 16))
    return (p1 + "; RWND " + p2, "ECE " + o1 + "; RWND " + o2, s,
            v1 if v1 == v2 else "ECE %s, RWND %s" % (v1, v2))


# --- upstream's sch_fq beside HTB (bench-htb's fq cells, docs/results/htb-fq) --

FQ_CLAIM = "htb-fq"

# the schemes of bench/htb.py's Table 1, in its order, as the table names them
FQ_TABLE_SCHEMES = (
    ("plain", "HTB, pfifo leaf (CUBIC)"),
    ("ce", "HTB `ecn_mode ce`"),
    ("ece", "HTB `ecn_mode ece`"),
    ("rwnd", "HTB `ecn_mode rwnd` (CUBIC)"),
    ("fq_codel", "HTB, fq_codel leaf `ce_threshold`"),
    ("fq", "fq `maxrate R/N ce_threshold` on the limiter's port"),
    ("fq_edt", "fq `maxrate R/N ce_threshold` on the sender (EDT)"),
)


def _goal(v):
    return "-" if v is None else ("yes" if v else "**no**")


@table("htb-fq")
def fq_table():
    """Table 1's cells, HTB's schemes and fq's, against the paper's goals"""
    res = load_json(FQ_CLAIM, "results.json")
    rows = []
    for scheme, name in FQ_TABLE_SCHEMES:
        for r in _cells(res["table1"], scheme):
            g = r["goals"]
            rows.append((name, "%d" % r["flows"], _pct(r["wire_saturation"]), _pct(r["wire_cv"]),
                         "%s (%.1fx)" % (_t(r["rtt_p50_us"]), r["rtt_p50_at_paper_ratio"]),
                         "%s (%.1fx)" % (_t(r["flow_rtt_p50_us"]), r["flow_rtt_at_paper_ratio"]),
                         "%.1f" % r["probe_mbit"],
                         " / ".join(_goal(g[k]) for k in ("rate", "cv", "rtt")), _goal(g["flows_rtt"])))
    return md_table(("limiter", "flows", "output of R", "CV (100 ms)", "probe RTT p50 (at 1 Gbit/s)",
                     "flows' sRTT p50 (at 1 Gbit/s)", "probe (Mbit/s)",
                     ">= 95% / CV <= 5% / RTT <= 2x", "flows' sRTT <= 2x"), rows) + (
        "\n%s; unloaded RTT %s; DCTCP and ECN for every scheme but plain and rwnd. "
        "Data: [htb-fq](results/htb-fq/).\n" % (_scale(res), _us(res["unloaded_rtt"]["p50_us"])))


# --- ecn_mode ce beside a RED leaf (bench-htb's red cells, docs/results/htb-ce-red)

RED_CLAIM = "htb-ce-red"
RED_TABLE_SCHEMES = (("ce", "HTB `ecn_mode ce`", "ecn_ce_marked"),
                     ("red", "HTB, RED leaf (min K max K+1 probability 1 ecn)", "red_marked"))


def _med_rng(vals, fmt):
    """"median (lo-hi)" of VALS, each formatted by FMT"""
    vals = sorted(vals)
    med = median(vals)
    if vals[0] == vals[-1]:
        return fmt(med)
    return "%s (%s-%s)" % (fmt(med), fmt(vals[0]), fmt(vals[-1]))


def red_samples():
    """the results.json of every sample of the ce/red run, in order"""
    d = os.path.join(RESULTS, RED_CLAIM)
    names = sorted((n for n in os.listdir(d) if re.match(r"sample\d+$", n)), key=lambda n: int(n[6:]))
    return [load_json(RED_CLAIM, n, "results.json") for n in names]


@table("htb-ce-red")
def red_table():
    """ce and the RED leaf in the same boots: median (range) over the samples"""
    res = red_samples()
    rows = []
    for scheme, name, mark in RED_TABLE_SCHEMES:
        for flows in sorted({r["flows"] for r in res[0]["table1"] if r["scheme"] == scheme}):
            cells = [c for r in res for c in _cells(r["table1"], scheme, (flows,))]
            rows.append((name, "%d" % flows,
                         _med_rng([c["wire_saturation"] for c in cells], _pct),
                         _med_rng([c["wire_cv"] for c in cells], _pct),
                         _med_rng([c["rtt_p50_us"] for c in cells], _t),
                         _med_rng([c["flow_rtt_p50_us"] for c in cells], _t),
                         _med_rng([c["counters"].get(mark, 0) for c in cells], lambda v: "%d" % v),
                         _med_rng([c["counters"].get("drops", 0) for c in cells], lambda v: "%d" % v)))
    return md_table(("leaf", "flows", "output of R", "CV (100 ms)", "probe RTT p50",
                     "flows' sRTT p50", "CE marks", "drops"), rows) + (
        "\n%s; unloaded RTT %s; DCTCP and ECN; median (range) of %d samples, one boot each. "
        "Data: [htb-ce-red](results/htb-ce-red/).\n" % (
            _scale(res[0]), _us(res[0]["unloaded_rtt"]["p50_us"]), len(res)))


# --- the paper's rate in dilated time (docs/results/htb-fig4-dilated) ---------

DILATED = "htb-fig4-dilated"
# Sec. 3.2, Fig. 4 (1 Gbit/s, one flow): DCTCP + ECN at K = 60 KB, median
# RTT 224 us; native HTB 957 us.  Sec. 4, "Preliminary Results" (1 Gbit/s,
# K not stated): ECE 950 Mbit/s at 166 us, RWND 956 Mbit/s at 161 us.
PAPER_FIG4_P50_US = dict(plain=957, ce=224, ece=166, rwnd=161)


@table("htb-dilated")
def dilated_table():
    res = load_json(DILATED, "results.json")
    meta = load_json(DILATED, "vm.json")
    rows = []
    for r in res["table1"]:
        paper = PAPER_FIG4_P50_US.get(r["scheme"])
        rows.append((r["scheme"], "%d" % r["flows"], "%.0f" % r["tput_mbit"], _pct(r["saturation"]),
                     _t(r["rtt_p50_us"]), _t(r["rtt_p999_us"]), _t(paper) if paper else "-",
                     "%.0f%%" % (r["cpu_busy"] * 100)))
    return md_table(("scheme", "flows", "goodput (Mbit/s)", "of R", "RTT p50", "RTT p99.9",
                     "paper's p50", "virtual CPU busy"), rows) + (
        "\nR = %d Mbit/s, K = %d B, %d s per cell, icount shift %d (%g instructions per ns); "
        "unloaded RTT %s. Data: [htb-fig4-dilated](results/htb-fig4-dilated/).\n" % (
            res["rate_mbit"], res["k_bytes"], res["duration_s"], meta["icount_shift"],
            meta["instructions_per_ns"], _t(res["unloaded_rtt"]["p50_us"])))


def _t(us):
    return _ms(us) if us >= 1000 else _us(us)
