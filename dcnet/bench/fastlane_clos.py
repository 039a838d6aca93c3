#!/usr/bin/env python3
"""FastLane over multiple paths on the testbed's Clos: FL-FH against FL-PS.

    bench/fastlane_clos.py OUT [OUT...]   # OUT: a testbed/run.py --out dir
                                          # of testbed/experiments/fastlane-scatter.json
                                          # (Fig. 4), fastlane-degraded.json (Fig. 5)
                                          # or fastlane-share.json (Fig. 6)

Reads OUT/raw.json (and OUT/run*/raw.json of a --repeat run) and writes
OUT/fastlane-scatter.md: per scheme and load, the p99.9 FCT of each short
response size (2/4/8/16/32 KB), the mean FCT of the 1 MB flows, the
reductions of FL-FH and FL-PS against TCP-Codel beside the paper's
(Zats et al., SoCC 2015, Sec. 4.2.1, Fig. 4: -81% at the 2 KB p99.9,
1.12 ms -> 0.21 ms at 20% utilization, "very similar" at 80%; -62% at the
1 MB mean with packet scatter), and what explains them: drops,
notifications, timeouts, retransmissions, reordering seen by the hosts,
and how evenly the leaves' uplinks carried the load.

Each OUT's kind is read from its experiment: one with a "degrade" fault
is Fig. 5 (Sec. 4.2.1: a core link degraded to a tenth of its rate; the
paper's figure is FastLane against CP, -82% more at the p99.9), one whose
workloads set "short_share" is Fig. 6 (Sec. 4.2.2: 60% load, 10-50% of
it from short flows; FL-PS -70% or more at 2 and 4 KB at 50%).  Those get
a summary beside the paper's, a Fig. 5 one also each cell against the
same cell of a Fig. 4 OUT given with it (healthy links).  The report of
all OUTs goes to the first OUT's fastlane-scatter.md.
"""
import glob
import json
import os
import statistics
import sys

from dcnet.stats import percentile

SHORT_KB = [2, 4, 8, 16, 32]
LONG_BYTES = 1 << 20
BASE = "tcp-codel"
PAPER = {"2kb_p999_reduction": -0.81, "2kb_p999_ms": (1.12, 0.21), "1mb_mean_reduction": -0.62,
         # Fig. 5: FastLane's direct notification against CP's (via the
         # receiver), one core link degraded 10 -> 1 Gbit/s: "an additional 82%"
         "fig5_vs_cp": -0.82,
         # Fig. 6: at 50% short, FL-PS "reduces the 99.9th percentile
         # completion times of both 2 and 4KB flows by over 70%"
         "fig6_2_4kb_at_50": -0.70}
HOST_KEYS = ("TcpExtTCPTimeouts", "TcpRetransSegs", "TcpExtTCPFastLaneNotify", "TcpExtTCPFastLaneRetrans",
             "TcpExtTCPFastLaneOfoInflated", "TcpExtTCPFastLaneScatterHeld", "TcpExtTCPSACKReorder",
             "TcpExtTCPOFOQueue", "TcpExtTCPLossProbes", "TcpExtTCPDSACKRecv")


def load_raws(out):
    """OUT's raw.json, or raw.json.xz as kept under docs/results/, and a
    --repeat run's run*/raw.json"""
    import lzma
    raws = []
    for d in [out] + sorted(glob.glob(os.path.join(out, "run*"))):
        for name, opener in (("raw.json", open), ("raw.json.xz", lzma.open)):
            p = os.path.join(d, name)
            if os.path.exists(p):
                with opener(p, "rt") as f:
                    raws.append((p, json.load(f)))
                break
    return raws


def cell(run):
    """one run's figures"""
    fl = [f for f in run["flows"] if f.get("fct_us") is not None]
    out = dict(scheme=run["scheme"], workload=run["workload"], flows=len(run["flows"]),
               incomplete=len(run["flows"]) - len(fl))
    for kb in SHORT_KB:
        xs = [f["fct_us"] for f in fl if f["kind"] == "short" and f["bytes"] == kb * 1024]
        out[f"n_{kb}"] = len(xs)
        out[f"p999_{kb}"] = percentile(xs, 99.9)
        out[f"p50_{kb}"] = percentile(xs, 50)
    longs = [f["fct_us"] for f in fl if f["kind"] == "long"]
    out["n_long"] = len(longs)
    out["long_mean"] = statistics.mean(longs) if longs else None
    out["long_p50"] = percentile(longs, 50)
    out["long_done"] = len(longs)
    out["long_total"] = sum(1 for f in run["flows"] if f["kind"] == "long")
    ports = run.get("ports") or []
    out["drops"] = sum(p.get("drops", 0) for p in ports)
    out["marks"] = sum(p.get("marks", 0) for p in ports)
    out["nf_generated"] = sum(p.get("nf_generated", 0) for p in ports)
    out["nf_cap_drops"] = sum(p.get("nf_cap_drops", 0) for p in ports)
    # the leaves' uplinks: bytes per spine port, summed over leaves, and
    # the spread of each leaf's uplinks (max/min)
    up = {}
    spread = []
    for p in ports:
        if p["node"].startswith("l") and p["dev"].startswith("s"):
            up.setdefault(p["node"], []).append(p.get("sent_bytes", 0))
    for v in up.values():
        if v and min(v) > 0:
            spread.append(max(v) / min(v))
    out["uplink_spread_max"] = max(spread) if spread else None
    # a degraded link's two ends (Fig. 5)
    out["degraded"] = []
    for fault in run.get("faults") or []:
        if fault.get("action") != "degrade":
            continue
        for p in ports:
            if (p["node"], p["dev"]) in ((fault["node"], fault["port"]), (fault["port"], fault["node"])):
                out["degraded"].append(p)
    hosts = ((run.get("host_counters") or {}).get("nstat") or {}).get("hosts") or {}
    for k in HOST_KEYS:
        out[k] = sum(h.get(k, 0) for h in hosts.values() if "error" not in h)
    out["cpu"] = max((run.get("cpu") or {}).values() or [0])
    return out


def red(x, base):
    if x is None or not base:
        return None
    return x / base - 1


def ms(us):
    return "-" if us is None else f"{us / 1000:.1f}"


def pc(x):
    return "-" if x is None else f"{x * 100:+.0f}%"


def kind(raw):
    """fig4, fig5 (a degraded link) or fig6 (the short flows' share)"""
    exp = (raw.get("meta") or {}).get("experiment") or {}
    if any(f.get("action") == "degrade" for f in exp.get("faults") or []):
        return "fig5"
    if any("short_share" in w for w in exp.get("workloads") or []):
        return "fig6"
    return "fig4"


def workload_of(raw, label):
    """the experiment's workload entry of a run's label"""
    for w in ((raw.get("meta") or {}).get("experiment") or {}).get("workloads") or []:
        if w.get("label", w.get("name")) == label:
            return w
    return {}


def core_pct(w):
    """partagg's load as the 4:1 core's utilization: 12/15 of 16 x load x
    10 Mbit/s over the 40 Mbit/s core (load 0.125 = 40%)"""
    return round(w["load"] * 320) if w.get("load") else None


def p999_cell(c, base, kb):
    v = c[f"p999_{kb}"]
    r = red(v, base and base[f"p999_{kb}"]) if c is not base else None
    return ms(v) + (f" ({pc(r)})" if r is not None else "")


def mean_cell(c, base):
    r = red(c["long_mean"], base and base["long_mean"]) if c is not base else None
    return ms(c["long_mean"]) + (f" ({pc(r)})" if r is not None else "")


def fig5(raw, cells, healthy):
    """Fig. 5's summary: per load, each scheme with the degraded link,
    against TCP-Codel, and against its own cell with healthy links"""
    exp = raw["meta"]["experiment"]
    faults = [f for f in exp.get("faults") or [] if f.get("action") == "degrade"]
    what = "; ".join(f"{f['node']}-{f['port']} to {f['mbit']} Mbit/s at {f['at_s']} s" for f in faults)
    L = ["## Fig. 5: a degraded spine link", "",
         f"Degraded: {what} (the paper: one core-to-aggregation link from 10 to 1 Gbit/s). p99.9 FCT (ms), "
         "the 1 MB flows' mean (ms), reductions against TCP-Codel in brackets; 'healthy' is the same cell of "
         "the Fig. 4 run given with it (no fault).", "",
         "| core load | scheme | " + " | ".join(f"{kb} KB" for kb in SHORT_KB)
         + " | 1 MB mean | 1 MB done | drops | notif. | timeouts | degraded link: bytes, drops, marks "
         "| 2 KB p99.9 healthy -> degraded | 1 MB mean healthy -> degraded |",
         "|---" * (len(SHORT_KB) + 10) + "|"]
    for wl in sorted({c["workload"] for c in cells}, key=lambda x: core_pct(workload_of(raw, x)) or 0):
        cs = [c for c in cells if c["workload"] == wl]
        base = next((c for c in cs if c["scheme"] == BASE), None)
        pct = core_pct(workload_of(raw, wl))
        for c in cs:
            h = healthy.get((c["scheme"], wl))
            deg = ", ".join(f"{p['node']}:{p['dev']} {p.get('sent_bytes', 0) // 1000} KB {p.get('drops', 0)} "
                            f"{p.get('marks', 0)}" for p in c["degraded"]) or "-"
            L.append(f"| {pct}% | {c['scheme']} | " + " | ".join(p999_cell(c, base, kb) for kb in SHORT_KB)
                     + f" | {mean_cell(c, base)} | {c['long_done']}/{c['long_total']} | {c['drops']} | "
                     f"{c['nf_generated']} | {c['TcpExtTCPTimeouts']} | {deg} | "
                     + (f"{ms(h['p999_2'])} -> {ms(c['p999_2'])} ({pc(red(c['p999_2'], h['p999_2']))})"
                        if h else "-") + " | "
                     + (f"{ms(h['long_mean'])} -> {ms(c['long_mean'])} ({pc(red(c['long_mean'], h['long_mean']))})"
                        if h else "-") + " |")
    L += ["", "Against the paper (Fig. 5, Sec. 4.2.1):", "",
          "| core load | paper: FastLane against CP, p99.9 | FL-PS against TCP-Codel, 2 KB p99.9 | "
          "FL-PS against FL-FH, 2 KB p99.9 | FL-PS against TCP-Codel, 1 MB mean | FL-PS against FL-FH, 1 MB mean |",
          "|---|---|---|---|---|---|"]
    for wl in sorted({c["workload"] for c in cells}, key=lambda x: core_pct(workload_of(raw, x)) or 0):
        by = {c["scheme"]: c for c in cells if c["workload"] == wl}
        base, fh, ps = by.get(BASE), by.get("fl-fh"), by.get("fl-ps")

        def r(a, b, key):
            return pc(red(a[key], b[key])) if a and b else "-"
        L.append(f"| {core_pct(workload_of(raw, wl))}% | up to {pc(PAPER['fig5_vs_cp'])} (no CP here) | "
                 f"{r(ps, base, 'p999_2')} | {r(ps, fh, 'p999_2')} | {r(ps, base, 'long_mean')} | "
                 f"{r(ps, fh, 'long_mean')} |")
    return L + [""]


def fig6(raw, cells):
    """Fig. 6's summary: per share of short flows, each scheme's p99.9 per
    size and 1 MB mean against TCP-Codel"""
    L = ["## Fig. 6: the share of short flows in the load", "",
         "p99.9 FCT (ms) per response size, the 1 MB flows' mean (ms), reductions against TCP-Codel in brackets:",
         "", "| short share | core load | scheme | " + " | ".join(f"{kb} KB" for kb in SHORT_KB)
         + " | 1 MB mean | 1 MB done | drops | notif. | timeouts |", "|---" * (len(SHORT_KB) + 8) + "|"]
    wls = sorted({c["workload"] for c in cells}, key=lambda x: workload_of(raw, x).get("short_share", 0.1))
    for wl in wls:
        w = workload_of(raw, wl)
        cs = [c for c in cells if c["workload"] == wl]
        base = next((c for c in cs if c["scheme"] == BASE), None)
        for c in cs:
            L.append(f"| {w.get('short_share', 0.1) * 100:.0f}% | {core_pct(w)}% | {c['scheme']} | "
                     + " | ".join(p999_cell(c, base, kb) for kb in SHORT_KB)
                     + f" | {mean_cell(c, base)} | {c['long_done']}/{c['long_total']} | {c['drops']} | "
                     f"{c['nf_generated']} | {c['TcpExtTCPTimeouts']} |")
    L += ["", "Against the paper (Fig. 6, Sec. 4.2.2; reductions against TCP-Codel):", "",
          "| short share | paper: FL-PS 2 KB / 4 KB p99.9 | FL-PS 2 KB | FL-PS 4 KB | FL-PS 32 KB | FL-FH 2 KB | "
          "FL-PS 1 MB mean | FL-FH 1 MB mean |", "|---|---|---|---|---|---|---|---|"]
    for wl in wls:
        share = workload_of(raw, wl).get("short_share", 0.1)
        by = {c["scheme"]: c for c in cells if c["workload"] == wl}
        base, fh, ps = by.get(BASE), by.get("fl-fh"), by.get("fl-ps")

        def r(a, key):
            return pc(red(a[key], base[key])) if a and base else "-"
        paper = (f"over {pc(PAPER['fig6_2_4kb_at_50'])} / over {pc(PAPER['fig6_2_4kb_at_50'])}"
                 if abs(share - 0.5) < 1e-9 else "(-81% at 2 KB with 10% short, Fig. 4)" if abs(share - 0.1) < 1e-9
                 else "-")
        L.append(f"| {share * 100:.0f}% | {paper} | {r(ps, 'p999_2')} | {r(ps, 'p999_4')} | {r(ps, 'p999_32')} | "
                 f"{r(fh, 'p999_2')} | {r(ps, 'long_mean')} | {r(fh, 'long_mean')} |")
    return L + [""]


def report(out, *more):
    """the report of OUT (and of more OUTs), written to OUT/fastlane-scatter.md"""
    runs = []
    for o in (out,) + more:
        raws = load_raws(o)
        if not raws:
            sys.exit(f"{o}: no raw.json")
        runs += [(o, path, raw) for path, raw in raws]
    # Fig. 4's cells (healthy links), for Fig. 5's "healthy -> degraded"
    healthy = {}
    for _o, _p, raw in runs:
        if kind(raw) == "fig4":
            for r in raw["runs"]:
                healthy.setdefault((r["scheme"], r["workload"]), cell(r))
    L = ["# FastLane over multiple paths on the Clos: FL-FH against FL-PS", ""]
    for o, path, raw in runs:
        k = kind(raw)
        meta = raw.get("meta", {})
        vm = {}
        vmp = os.path.join(os.path.dirname(path), "vm.json")
        if os.path.exists(vmp):
            with open(vmp) as f:
                vm = json.load(f)
        cells = [cell(r) for r in raw["runs"]]
        L += [f"{dict(fig4='Fig. 4 (utilization)', fig5='Fig. 5 (a degraded link)', fig6='Fig. 6 (short share)')[k]}"
              f" from `{os.path.relpath(path, out)}` (kernel {meta.get('kernel', '?')}, "
              f"clock {vm.get('clock', meta.get('clock', '?'))}, commit {vm.get('commit', '?')}).", ""]
        if k == "fig5":
            L += fig5(raw, cells, healthy)
        elif k == "fig6":
            L += fig6(raw, cells)
        for wl in sorted({c["workload"] for c in cells}):
            cs = [c for c in cells if c["workload"] == wl]
            base = next((c for c in cs if c["scheme"] == BASE), None)
            L += [f"## {wl}", "",
                  "p99.9 FCT (ms) per response size, mean FCT of the 1 MB flows (ms), reductions against "
                  f"{BASE} in brackets:", "",
                  "| scheme | " + " | ".join(f"{kb} KB p99.9" for kb in SHORT_KB)
                  + " | 1 MB mean | 1 MB done | drops | marks | notifications | timeouts | retrans | "
                  "SACK reorder | OFO queued | ofo inflated | scatter held | uplink max/min | CPU |",
                  "|---" * (len(SHORT_KB) + 15) + "|"]
            for c in cs:
                row = []
                for kb in SHORT_KB:
                    v = c[f"p999_{kb}"]
                    r = red(v, base and base[f"p999_{kb}"]) if c is not base else None
                    row.append(ms(v) + (f" ({pc(r)})" if r is not None else "") + f" n={c[f'n_{kb}']}")
                r = red(c["long_mean"], base and base["long_mean"]) if c is not base else None
                row.append(ms(c["long_mean"]) + (f" ({pc(r)})" if r is not None else ""))
                row.append(f"{c['long_done']}/{c['long_total']}")
                row += [str(c["drops"]), str(c["marks"]), f"{c['nf_generated']} (cap drops {c['nf_cap_drops']})",
                        str(c["TcpExtTCPTimeouts"]), str(c["TcpRetransSegs"]), str(c["TcpExtTCPSACKReorder"]),
                        str(c["TcpExtTCPOFOQueue"]), str(c["TcpExtTCPFastLaneOfoInflated"]),
                        str(c["TcpExtTCPFastLaneScatterHeld"]),
                        "-" if c["uplink_spread_max"] is None else f"{c['uplink_spread_max']:.2f}",
                        f"{c['cpu'] * 100:.0f}%"]
                L.append(f"| {c['scheme']} | " + " | ".join(row) + " |")
            by = {c["scheme"]: c for c in cs}
            if k != "fig4":
                L.append("")
                continue
            L += ["", "Against the paper (Fig. 4, Sec. 4.2.1):", "",
                  "| figure | paper | FL-FH here | FL-PS here |", "|---|---|---|---|"]
            fh, ps = by.get("fl-fh"), by.get("fl-ps")

            def r_of(c, key):
                return pc(red(c[key], base[key])) if c and base else "-"
            L.append(f"| 2 KB p99.9 FCT against TCP-Codel | {pc(PAPER['2kb_p999_reduction'])} "
                     f"(1.12 -> 0.21 ms, FL-PS) | {r_of(fh, 'p999_2')} | {r_of(ps, 'p999_2')} |")
            L.append(f"| 1 MB mean FCT against TCP-Codel | {pc(PAPER['1mb_mean_reduction'])} (FL-PS) "
                     f"| {r_of(fh, 'long_mean')} | {r_of(ps, 'long_mean')} |")
            if fh and ps and fh["long_mean"]:
                L.append(f"| 1 MB mean FCT, FL-PS against FL-FH | (the paper's -62% may be this one) | | "
                         f"{pc(red(ps['long_mean'], fh['long_mean']))} |")
            L.append("")
    text = "\n".join(L) + "\n"
    with open(os.path.join(out, "fastlane-scatter.md"), "w") as f:
        f.write(text)
    return text


def main(argv=None, prog=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    print(report(*argv))
    return 0


if __name__ == "__main__":
    main()
