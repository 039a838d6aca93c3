#!/usr/bin/env python3
"""FastLane over multiple paths on the testbed's Clos: FL-FH against FL-PS.

    bench/fastlane_clos.py OUT            # OUT: a testbed/run.py --out dir
                                          # of testbed/experiments/fastlane-scatter.json

Reads OUT/raw.json (and OUT/run*/raw.json of a --repeat run) and writes
OUT/fastlane-scatter.md: per scheme and load, the p99.9 FCT of each short
response size (2/4/8/16/32 KB), the mean FCT of the 1 MB flows, the
reductions of FL-FH and FL-PS against TCP-Codel beside the paper's
(Zats et al., SoCC 2015, Sec. 4.2.1, Fig. 4: -81% at the 2 KB p99.9,
1.12 ms -> 0.21 ms at 20% utilization, "very similar" at 80%; -62% at the
1 MB mean with packet scatter), and what explains them: drops,
notifications, timeouts, retransmissions, reordering seen by the hosts,
and how evenly the leaves' uplinks carried the load.
"""
import glob
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from dcnet.stats import percentile  # noqa: E402

SHORT_KB = [2, 4, 8, 16, 32]
LONG_BYTES = 1 << 20
BASE = "tcp-codel"
PAPER = {"2kb_p999_reduction": -0.81, "2kb_p999_ms": (1.12, 0.21), "1mb_mean_reduction": -0.62}
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


def report(out):
    raws = load_raws(out)
    if not raws:
        sys.exit(f"{out}: no raw.json")
    L = ["# FastLane over multiple paths on the Clos: FL-FH against FL-PS", ""]
    for path, raw in raws:
        meta = raw.get("meta", {})
        vm = {}
        vmp = os.path.join(os.path.dirname(path), "vm.json")
        if os.path.exists(vmp):
            with open(vmp) as f:
                vm = json.load(f)
        cells = [cell(r) for r in raw["runs"]]
        L += [f"From `{os.path.relpath(path, out)}` (kernel {meta.get('kernel', '?')}, "
              f"clock {vm.get('clock', meta.get('clock', '?'))}, commit {vm.get('commit', '?')}).", ""]
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


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(report(sys.argv[1]))


if __name__ == "__main__":
    main()
