#!/usr/bin/env python3
"""Testbed report: raw run records -> results.json, PNG plots, report.md.

    python3 testbed/report.py RAW.json --out DIR

RAW is written by the emulated runner (testbed/run.py) or by the physical
path (testbed/physical/collect.py); both follow report.schema.json's
"raw" definition:

    {"meta": {"platform", "kernel", "hosts", "link_mbit", "paper_link_mbit",
              "scale", "started", "experiment"},
     "runs": [{"scheme", "workload", "duration_s",
               "flows": [{"id", "src", "dst", "kind", "bytes", "duration_s",
                          "tput_bps", "fct_us", "intervals_bps",
                          "deadline_us", "met_deadline"}],
               "ports": [{"node", "dev", "kind", "sent_bytes", "sent_packets",
                          "drops", "marks", "overlimits"}],
               "rtt_us": null | {"n" (samples), "p50", "p90", "p99", "p999", "cdf": [[us, p], ...]},
               "cpu": {node or "guest": busy fraction}}]}

Per run it computes: per-flow throughput (mean, min, and as a fraction of
the link rate), Jain's fairness index over flow throughputs, FCT
percentiles p50/p90/p99/p99.9 by flow-size class for sized flows, drops
and marks summed over ports, missed deadlines, CPU.  Plots: elephant
throughput per scheme and workload (bars, as Presto's Fig. 4/7), CDF of
flow throughputs, FCT percentiles by size, RTT CDFs.
"""
import argparse
import json
import os
import statistics
import sys

from dcnet import ROOT
from dcnet.stats import percentile

HERE = os.path.join(ROOT, "testbed")       # report.schema.json
SCHEMA = os.path.join(HERE, "report.schema.json")
SIZE_CLASSES = [(10 * 1024, "<10KB"), (100 * 1024, "10-100KB"), (1 << 20, "100KB-1MB"),
                (10 << 20, "1-10MB"), (float("inf"), ">10MB")]


def pct(xs, p):
    return percentile(xs, p)


def jain(xs):
    xs = [x for x in xs if x is not None]
    if not xs or not any(xs):
        return None
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def size_class(b):
    for lim, name in SIZE_CLASSES:
        if b < lim:
            return name
    return SIZE_CLASSES[-1][1]


def validate(doc, what):
    """JSON-Schema check of a raw ("raw") or results ("results") document"""
    import jsonschema
    with open(SCHEMA) as f:
        schema = json.load(f)
    sub = dict(schema)
    sub["$ref"] = f"#/$defs/{what}"
    jsonschema.validate(doc, sub)


def notification_overhead(ports, duration_s, meta):
    """FastLane ports: notifications made and sent, those the caps dropped,
    and the largest share of a port's rate and buffer they took (the
    paper's caps: 1% and 2.5%); None without FastLane ports"""
    fl = [p for p in ports if "nf_generated" in p]
    if not fl:
        return None
    topo = (meta.get("experiment") or {}).get("topology") or {}
    rate_Bps = (meta.get("link_mbit") or 0) * 1e6 / 8
    buf = topo.get("buffer_bytes") or 131072
    return dict(generated=sum(p["nf_generated"] for p in fl), sent=sum(p["nf_sent"] for p in fl),
                cap_drops=sum(p["nf_cap_drops"] for p in fl),
                max_rate_share=max(p["nf_bytes"] / (rate_Bps * duration_s) for p in fl)
                if rate_Bps and duration_s else None,
                max_buffer_share=max(p["nf_backlog_max"] for p in fl) / buf)


USER_HZ = 100           # /proc/stat's tick
MSS = 1448              # payload bytes of a full segment (1500-byte MTU, TCP timestamps)
# Presto Fig. 5 and 6, as the paper prints them (Sec. 5, 10 Gbit/s testbed)
PAPER_RX = {"official GRO": "4.6 Gbit/s at 86% CPU; segments of other flowcells inside a flowcell: "
                            "mostly nonzero; many small segments pushed up",
            "Presto GRO": "9.3 Gbit/s at 69% CPU; 0 out-of-order segments; large segments pushed up"}
PAPER_CPU_OVERHEAD = 0.06   # Fig. 6: Presto (Clos, Presto GRO) against official GRO (non-blocking switch)
PRESTO_GRO_SUMS = ("held", "pushed_inorder", "pushed_timeout", "pushed_loss", "pushed_old",
                   "pushed_evicted", "reorder_events", "late_fills")


def receiver(r):
    """what reached TCP at the receivers (Presto Fig. 5): the capture's
    record (dcnet/testbed/grocap.py, when the experiment had gro_capture), TCP's
    out-of-order queueing, IP's mean skb size and Presto GRO's counters,
    summed over hosts; None when the run has none of them"""
    hc = r.get("host_counters") or {}
    tot = (hc.get("nstat") or {}).get("totals") or {}
    cap = r.get("gro_capture")
    if not tot and not cap:
        return None
    out = dict(tcp_ofo_queue=tot.get("TcpExtTCPOFOQueue"), retrans_segs=tot.get("TcpRetransSegs"),
               ip_in_skbs=tot.get("IpInReceives"))
    segs = sum(tot.get(k, 0) for k in ("IpExtInNoECTPkts", "IpExtInECT0Pkts", "IpExtInECT1Pkts",
                                       "IpExtInCEPkts"))
    out["ip_mean_skb_bytes"] = (tot["IpExtInOctets"] / tot["IpInReceives"]) if tot.get("IpInReceives") else None
    out["ip_segs_per_skb"] = (segs / tot["IpInReceives"]) if tot.get("IpInReceives") and segs else None
    gro = {h: d for h, d in (hc.get("presto_gro") or {}).items() if isinstance(d, dict) and d.get("enabled")}
    if gro:
        out["presto_gro"] = {k: sum(int(d.get(k, 0)) for d in gro.values()) for k in PRESTO_GRO_SUMS}
        ew = [d["ewma_us"] for d in gro.values() if d.get("ewma_us")]
        out["presto_gro"]["ewma_us_mean"] = statistics.mean(ew) if ew else 0
    if cap:
        out["capture"] = {k: cap.get(k) for k in (
            "data_skbs", "mean_bytes", "p10_bytes", "p50_bytes", "p90_bytes", "p99_bytes", "one_mss_share",
            "ooo_skbs", "old_skbs", "late_skbs", "flowcells", "fc_ooo_zero_share", "fc_ooo_p50", "fc_ooo_p90",
            "fc_ooo_p99", "fc_ooo_max", "dropped", "flowlets", "reorder")}
    return out


def cpu_cost(r):
    """virtual CPU time per delivered byte (Presto Fig. 6): busy ticks of
    /proc/stat over the run (every CPU; the guest runs all hosts, the
    switches and the vSwitch) over the payload bytes the flows
    delivered; None without cpu_jiffies"""
    j = r.get("cpu_jiffies")
    if not j or not j.get("total"):
        return None
    busy = j["total"] - j.get("idle", 0) - j.get("iowait", 0)
    nbytes = sum(f.get("bytes") or 0 for f in r["flows"])
    fc = (r.get("host_counters") or {}).get("flowcell") or {}
    return dict(busy_s=busy / USER_HZ, upcalls=fc.get("lookup_missed"), upcalls_lost=fc.get("lookup_lost"),
                softirq_s=j.get("softirq", 0) / USER_HZ, system_s=j.get("system", 0) / USER_HZ,
                user_s=(j.get("user", 0) + j.get("nice", 0)) / USER_HZ, ncpu=j.get("ncpu"),
                delivered_bytes=nbytes,
                us_per_segment=(busy / USER_HZ * 1e6 / (nbytes / MSS)) if nbytes else None,
                softirq_us_per_segment=(j.get("softirq", 0) / USER_HZ * 1e6 / (nbytes / MSS)) if nbytes else None)


def flowcells(r):
    """the sender's side of Presto (and of flowlet switching, Fig. 13):
    the flowcell datapath's counters of the run (`ovs-dpctl show`, the one
    datapath of every vSwitch): data skbs that took a flowcell decision,
    their payload, the flowcells begun, how many of them the inactivity
    gap started (gap_cells) and their share; None when no data skb took a
    flowcell decision (not a Presto run, or no counters)"""
    fc = (r.get("host_counters") or {}).get("flowcell") or {}
    if not fc.get("packets"):
        return None
    cells, gap_cells = fc.get("cells") or 0, fc.get("gap_cells")
    return dict(gap_us=fc.get("gap") or r.get("flowlet_gap_us"), data_skbs=fc["packets"],
                bytes=fc.get("bytes"), cells=cells, gap_cells=gap_cells,
                gap_cells_share=(gap_cells / cells) if cells and gap_cells is not None else None,
                gap_cells_per_skb=gap_cells / fc["packets"] if gap_cells is not None else None,
                mean_cell_bytes=(fc["bytes"] / cells) if cells and fc.get("bytes") is not None else None)


def cpu_overheads(meta, runs):
    """each run whose scheme names a cpu_baseline: its CPU per segment
    against the baseline's on the same workload"""
    base = {s["name"]: s.get("cpu_baseline") for s in ((meta.get("experiment") or {}).get("schemes") or [])}
    by = {(r["scheme"], r["workload"]): r for r in runs}
    for r in runs:
        b = by.get((base.get(r["scheme"]), r["workload"]))
        c, cb = r.get("cpu_cost"), (b or {}).get("cpu_cost")
        if c and cb and c.get("us_per_segment") and cb.get("us_per_segment"):
            r["cpu_overhead"] = dict(baseline=b["scheme"], ratio=c["us_per_segment"] / cb["us_per_segment"] - 1,
                                     softirq_ratio=(c["softirq_us_per_segment"] / cb["softirq_us_per_segment"] - 1)
                                     if cb.get("softirq_us_per_segment") else None)


# D2TCP Sec. 4.2 (ns-3, 1000 hosts, 1 Gbit/s host links), as the text gives
# them (the figures' other points are plots only)
PAPER_D2TCP = [
    "Fig. 10 (medium variance, no background flows): at fan-in 40 DCTCP and D3 miss about 25% of the "
    "deadlines, D2TCP under 7%; TCP misses a rapidly increasing fraction as the fan-in grows (5 to 40)",
    "Fig. 12 (medium variance): D2TCP's p50/p90/p99 latencies, normalized to the deadline, significantly "
    "lower than DCTCP's and D3's, tracking Fig. 10",
    "Fig. 13: the background flows' bandwidth at 85% or more of TCP's under every scheme, D2TCP's at 95% or "
    "more, slightly above DCTCP's",
    "Fig. 14 (with the background flows): missed fractions similar to Fig. 10's",
]


def oldi_summary(r):
    """D2TCP's at-scale benchmark (workloads.oldi) in one run: responses,
    missed deadlines (of the completed ones; a response without a result is
    incomplete, not met), per application, the FCT normalized to the
    deadline (Fig. 12) and the background flows' throughput (Fig. 13);
    None without OLDI responses"""
    resp = [f for f in r["flows"] if f["kind"] == "oldi"]
    if not resp:
        return None
    trees = {t["app"]: t for t in (r.get("oldi_trees") or [])}

    def part(fs):
        done = [f for f in fs if f.get("fct_us") is not None]
        missed = sum(1 for f in done if f.get("met_deadline") is False)
        norm = [f["fct_us"] / f["deadline_us"] for f in done if f.get("deadline_us")]
        return dict(responses=len(fs), completed=len(done), missed=missed,
                    missed_frac=missed / len(done) if done else None, incomplete=len(fs) - len(done),
                    norm_p50=pct(norm, 50) if norm else None, norm_p90=pct(norm, 90) if norm else None,
                    norm_p99=pct(norm, 99) if norm else None,
                    fct_p50_us=pct([f["fct_us"] for f in done], 50) if done else None,
                    fct_p99_us=pct([f["fct_us"] for f in done], 99) if done else None)
    out = part(resp)
    apps = {}
    for f in resp:
        apps.setdefault(f.get("app"), []).append(f)
    out["apps"] = []
    for a in sorted(apps, key=lambda x: (x is None, x)):
        t = trees.get(a) or {}
        out["apps"].append(dict(part(apps[a]), app=a, bytes=t.get("resp_bytes", apps[a][0]["bytes"]),
                                deadline_us=t.get("deadline_us"), deadline_max_us=t.get("deadline_max_us"),
                                parent=t.get("src"), queries=t.get("queries")))
    fanins = sorted({len(t["leaves"]) for t in trees.values()})
    out["fanin"] = fanins[0] if len(fanins) == 1 else None
    bg = [f for f in r["flows"] if f["kind"] == "long"]
    bgd = [f for f in bg if f.get("tput_bps") is not None]
    out["background"] = dict(flows=len(bg), completed=len(bgd),
                             mean_bps=statistics.mean(f["tput_bps"] for f in bgd) if bgd else None,
                             bytes=sum(f["bytes"] for f in bgd))
    return out


D_ONE = 1024        # D2TCP's d and DCTCP's alpha in TCP_CC_INFO: 1024 = 1.0
DEADLINE_F_SET = 1  # TCP_DEADLINE_F_SET
DEADLINE_F_EXPIRED = 2
MSS = 1448          # the fabric's (1500-byte MTU, timestamps)


def _d_dist(ds):
    """d values (1/1024) -> n, p10/p50/p90 (as 1.0 = 1), the fractions
    below, at and above 1"""
    if not ds:
        return None
    n = len(ds)
    return dict(n=n, p10=pct(ds, 10) / D_ONE, p50=pct(ds, 50) / D_ONE, p90=pct(ds, 90) / D_ONE,
                lt1=sum(1 for d in ds if d < D_ONE) / n, eq1=sum(1 for d in ds if d == D_ONE) / n,
                gt1=sum(1 for d in ds if d > D_ONE) / n)


def oldi_samples(r):
    """The leaves' samples of the sockets sending the responses (the run
    record's "rsamples", testbed/run.py: `dltraffic server --sample-ms`) in
    one run: how many responses were sampled and had a deadline set
    (TCP_DEADLINE_F_SET in any sample); D2TCP's d over the samples taken
    while bytes of the response were unacknowledged (bytes_left > 0; d is 1
    once all are acknowledged, by definition), all together and for the
    responses that met / missed their deadline; each response's largest d;
    DCTCP's alpha over every sample.  A sample is matched to its response
    by (leaf host, bytes, query number = the connection's response count,
    deadline): the deadline is drawn per response.  None without samples."""
    rs = r.get("rsamples")
    if not rs or not rs.get("rows"):
        return None
    F = {k: i for i, k in enumerate(rs["fields"])}
    rows = rs["rows"]
    outcome, dup = {}, set()
    for f in r["flows"]:
        if f["kind"] != "oldi" or not f.get("deadline_us") or f.get("fct_us") is None:
            continue
        k = (f["src"], int(f["bytes"]), f.get("query"), int(f["deadline_us"]))
        if k in outcome:
            dup.add(k)
        outcome[k] = f.get("met_deadline")
    per = {}
    for x in rows:
        k = (x[F["host"]], x[F["bytes"]], x[F["resp"]], x[F["deadline_us"]])
        per.setdefault(k, []).append(x)
    d_all, d_met, d_missed, alphas, raw, srtts = [], [], [], [], [], []
    resp_dl = 0
    maxd = {True: [], False: [], None: []}
    expired = 0
    for k, xs in per.items():
        if any(x[F["flags"]] >= 0 and x[F["flags"]] & DEADLINE_F_SET for x in xs):
            resp_dl += 1
        met = outcome.get(k) if k not in dup else None
        ds = [x[F["d"]] for x in xs if x[F["d"]] >= 0 and x[F["bytes_left"]] > 0]
        # the paper's Tc / D before the module's clamp to [1/cap, cap]:
        # Tc = B / (3/4 W) round trips of srtt, D the time left
        raw += [x[F["bytes_left"]] * 4 * x[F["srtt_us"]] / (3 * x[F["cwnd"]] * MSS * x[F["time_left_us"]])
                for x in xs if x[F["d"]] >= 0 and x[F["bytes_left"]] > 0 and x[F["time_left_us"]] > 0
                and x[F["cwnd"]] > 0 and x[F["srtt_us"]] > 0]
        d_all += ds
        if met is True:
            d_met += ds
        elif met is False:
            d_missed += ds
        if ds:
            maxd[met].append(max(ds))
        alphas += [x[F["alpha"]] for x in xs if x[F["alpha"]] >= 0]
        srtts += [x[F["srtt_us"]] for x in xs if x[F["srtt_us"]] > 0 and not (x[F["sent"]] and not x[F["unacked"]])]
        expired += sum(1 for x in xs if x[F["flags"]] >= 0 and x[F["flags"]] & DEADLINE_F_EXPIRED)
    matched = sum(1 for k in per if k in outcome and k not in dup)
    allmax = maxd[True] + maxd[False] + maxd[None]
    return dict(sample_ms=rs.get("sample_ms"), samples=len(rows), responses=len(per), matched=matched,
                with_deadline=resp_dl if any(x[F["flags"]] >= 0 for x in rows) else None,
                expired_samples=expired,
                d=_d_dist(d_all), d_met=_d_dist(d_met), d_missed=_d_dist(d_missed),
                max_d_gt1=(sum(1 for d in allmax if d > D_ONE) if allmax else None),
                max_d_gt1_missed=(sum(1 for d in maxd[False] if d > D_ONE) if maxd[False] else None),
                missed_sampled=len(maxd[False]),
                tc_over_d=(dict(n=len(raw), p10=pct(raw, 10), p50=pct(raw, 50), p90=pct(raw, 90), p99=pct(raw, 99),
                                ge_half=sum(1 for v in raw if v >= 0.5) / len(raw)) if raw else None),
                srtt_us=(dict(n=len(srtts), p50=pct(srtts, 50), p90=pct(srtts, 90), p99=pct(srtts, 99))
                         if srtts else None),
                alpha=(dict(n=len(alphas), p10=pct(alphas, 10) / D_ONE, p50=pct(alphas, 50) / D_ONE,
                            p90=pct(alphas, 90) / D_ONE, zero=sum(1 for a in alphas if a == 0) / len(alphas))
                       if alphas else None))


def oldi_compare(runs):
    """against the same workload's "tcp" run (background, Fig. 13) and
    "dctcp" run (missed deadlines)"""
    by = {(r["scheme"], r["workload"]): r.get("oldi") for r in runs}
    for r in runs:
        o = r.get("oldi")
        if not o:
            continue
        t, d = by.get(("tcp", r["workload"])), by.get(("dctcp", r["workload"]))
        tb = (t or {}).get("background", {}).get("mean_bps")
        o["background_of_tcp"] = (o["background"]["mean_bps"] / tb) if tb and o["background"]["mean_bps"] else None
        dm = (d or {}).get("missed_frac")
        o["missed_of_dctcp"] = (o["missed_frac"] / dm) if dm and o["missed_frac"] is not None else None


def mptcp_subflows(r, meta):
    """MPTCP runs with subflow samples (run.py's mptcp_conns): per sample
    the elephants' data connections, their fewest and most (fully
    established) subflows and those short of the scheme's subflows
    (counters.mptcp_summary); None otherwise"""
    samples = r.get("mptcp_conns")
    if not samples:
        return None
    from dcnet.testbed.counters import mptcp_summary
    want = next((sc.get("subflows", 8) for sc in (meta.get("experiment") or {}).get("schemes", [])
                 if sc.get("name") == r["scheme"]), 8)
    return dict(want=want, samples=mptcp_summary(samples, want))


def stages(r):
    """A run with faults, cut into stages at the times its faults were
    applied (Presto Figs. 17-18: before the first, between, after the
    last): per stage its span, the elephants' mean and lowest throughput
    over the whole intervals inside it (iperf3's intervals from each
    flow's start, `interval_s` long; the first second, slow start, and
    the interval a fault lands in are left out) and the RTT probe's
    samples sent in it (p50, p99, p99.9; the probe's send times on the
    run's clock, run.py's rtt_series), and the controller's reaction to
    each fault (stage times).  None for a run without faults."""
    faults = [f for f in (r.get("faults") or []) if f.get("applied") and f.get("t_s") is not None]
    if not faults:
        return None
    cuts = [0.0] + sorted(float(f["t_s"]) for f in faults) + [float(r["duration_s"])]
    names = ["before"] + [f"after {f['action']} {f['node']}:{f['port']}"
                          for f in sorted(faults, key=lambda f: f["t_s"])]
    series = (r.get("rtt_us") or {}).get("series")
    eleph = [f for f in r["flows"] if f["kind"] == "elephant" and f.get("intervals_bps")]
    out = []
    for i, name in enumerate(names):
        a, b = cuts[i], cuts[i + 1]
        per_flow, seconds = [], 0.0
        for f in eleph:
            # interval k covers [k dt, (k + 1) dt): those inside [a, b), after the first second
            dt = f.get("interval_s") or float(r["duration_s"]) / len(f["intervals_bps"])
            ks = [k for k in range(len(f["intervals_bps"])) if k * dt >= max(a, 1.0) - 1e-9
                  and (k + 1) * dt <= b + 1e-9]
            if ks:
                per_flow.append(statistics.mean(f["intervals_bps"][k] for k in ks))
                seconds = max(seconds, len(ks) * dt)
        rt = [x[1] for x in series if a <= x[0] < b] if series else []
        out.append(dict(stage=name, from_s=round(a, 3), to_s=round(b, 3), seconds=seconds,
                        mean_bps=statistics.mean(per_flow) if per_flow else None,
                        min_bps=min(per_flow) if per_flow else None,
                        rtt_n=len(rt), rtt_p50_us=pct(rt, 50) if rt else None,
                        rtt_p99_us=pct(rt, 99) if rt else None, rtt_p999_us=pct(rt, 99.9) if rt else None))
    return dict(stages=out, rtt_series=series is not None,
                controller=[dict(cause=e.get("cause", ""), failover_s=e.get("failover_s"),
                                 failover_entries=e.get("failover_entries"), fabric_s=e.get("fabric_s"),
                                 groups_s=e.get("groups_s"), groups_changed=e.get("groups_changed"))
                            for e in (r.get("controller_events") or [])])


MICE_BYTES = 100 * 1024      # Presto Table 1: mice are flows under 100 KB
MICE_BASELINES = ("l2ecmp", "ecmp")


def mice_fct(flows):
    """FCT percentiles of the completed flows under MICE_BYTES, or None"""
    xs = [f["fct_us"] for f in flows if f.get("fct_us") is not None and f.get("bytes", 0) < MICE_BYTES]
    if not xs:
        return None
    return dict(n=len(xs), p50_us=pct(xs, 50), p90_us=pct(xs, 90), p99_us=pct(xs, 99), p999_us=pct(xs, 99.9))


def mice_against_ecmp(runs):
    """Presto Table 1: each run's mice FCT percentiles against ECMP's on
    the same workload (ECMP over the trees, l2ecmp, where it ran, else
    routed ECMP): value / ECMP's - 1, negative is shorter"""
    for r in runs:
        r["mice_vs_ecmp"] = None
        if not r.get("mice_fct"):
            continue
        base = next((b for name in MICE_BASELINES for b in runs
                     if b["scheme"] == name and b["workload"] == r["workload"] and b.get("mice_fct")), None)
        if base is None or base is r:
            continue
        r["mice_vs_ecmp"] = dict(against=base["scheme"], **{
            k: (r["mice_fct"][k] / base["mice_fct"][k] - 1) if base["mice_fct"][k] else None
            for k in ("p50_us", "p90_us", "p99_us", "p999_us")})


def analyse(raw):
    meta = raw["meta"]
    link_bps = (meta.get("link_mbit") or 0) * 1e6 or None
    runs = []
    for r in raw["runs"]:
        flows = r["flows"]
        eleph = [f for f in flows if f["kind"] == "elephant"]
        sized = [f for f in flows if f.get("fct_us") is not None]
        tputs = [f["tput_bps"] for f in eleph if f.get("tput_bps") is not None]
        fct = {}
        for f in sized:
            fct.setdefault(size_class(f["bytes"]), []).append(f["fct_us"])
        fct_stats = {c: dict(n=len(v), p50_us=pct(v, 50), p90_us=pct(v, 90), p99_us=pct(v, 99),
                             p999_us=pct(v, 99.9)) for c, v in fct.items()}
        dl = [f for f in flows if f.get("deadline_us")]
        ports = r.get("ports") or []
        runs.append(dict(
            scheme=r["scheme"], workload=r["workload"], duration_s=r["duration_s"],
            flows=len(flows), elephants=len(eleph),
            elephant_mean_bps=statistics.mean(tputs) if tputs else None,
            elephant_min_bps=min(tputs) if tputs else None,
            elephant_total_bps=sum(tputs) if tputs else None,
            elephant_mean_of_link=(statistics.mean(tputs) / link_bps) if tputs and link_bps else None,
            jain=jain(tputs),
            fct=fct_stats,
            mice_fct=mice_fct(flows),
            missed_deadlines=sum(1 for f in dl if f.get("met_deadline") is False),
            deadline_flows=len(dl),
            drops=sum(p.get("drops", 0) for p in ports),
            marks=sum(p.get("marks", 0) for p in ports),
            notifications=notification_overhead(ports, r["duration_s"], meta),
            rtt_us=({k: v for k, v in r["rtt_us"].items() if k != "series"} if r.get("rtt_us") else None),
            stages=stages(r),
            cpu=r.get("cpu"),
            receiver=receiver(r),
            cpu_cost=cpu_cost(r),
            flowcells=flowcells(r),
            fault_errors=list(r.get("fault_errors") or []),
            oldi=oldi_summary(r),
            oldi_samples=oldi_samples(r),
            mptcp=mptcp_subflows(r, meta),
            incomplete=sum(1 for f in flows if f.get("tput_bps") is None and f.get("fct_us") is None)))
    # each scheme's elephant throughput against "optimal" on the same workload
    opt = {r["workload"]: r["elephant_mean_bps"] for r in runs if r["scheme"] == "optimal"}
    for r in runs:
        o = opt.get(r["workload"])
        r["of_optimal"] = (r["elephant_mean_bps"] / o) if o and r["elephant_mean_bps"] is not None else None
    cpu_overheads(meta, runs)
    oldi_compare(runs)
    mice_against_ecmp(runs)
    # a run whose fault failed (or never happened) is not the run the
    # experiment asked for: the report says FAILED
    failed = [f"{r['scheme']}/{r['workload']}: {e}" for r in runs for e in r["fault_errors"]]
    return dict(meta=meta, runs=runs, failed=failed)


def plots(raw, res, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    pngs = []
    runs = res["runs"]
    schemes = list(dict.fromkeys(r["scheme"] for r in runs))
    workloads = list(dict.fromkeys(r["workload"] for r in runs))
    # elephant throughput bars (Presto Fig. 7 style)
    if any(r["elephant_mean_bps"] for r in runs):
        fig, ax = plt.subplots(figsize=(max(6, 2 * len(workloads) * len(schemes) / 3), 4))
        w = 0.8 / max(1, len(schemes))
        for i, s in enumerate(schemes):
            ys = []
            for wl in workloads:
                r = next((r for r in runs if r["scheme"] == s and r["workload"] == wl), None)
                ys.append((r["elephant_mean_bps"] or 0) / 1e6 if r else 0)
            ax.bar([k + i * w for k in range(len(workloads))], ys, w, label=s)
        ax.set_xticks([k + w * (len(schemes) - 1) / 2 for k in range(len(workloads))])
        ax.set_xticklabels(workloads)
        ax.set_ylabel("mean elephant throughput (Mbit/s)")
        if res["meta"].get("link_mbit"):
            ax.axhline(res["meta"]["link_mbit"], color="k", ls=":", lw=1)
        ax.legend()
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        p = os.path.join(out, "elephant_tput.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        pngs.append(p)
        # CDF of flow throughputs, one panel per workload
        fig, axes = plt.subplots(1, len(workloads), figsize=(4.5 * len(workloads), 3.6), squeeze=False)
        for ax, wl in zip(axes[0], workloads):
            for rr in raw["runs"]:
                if rr["workload"] != wl:
                    continue
                xs = sorted(f["tput_bps"] / 1e6 for f in rr["flows"]
                            if f["kind"] == "elephant" and f.get("tput_bps") is not None)
                if xs:
                    ax.step(xs, [(i + 1) / len(xs) for i in range(len(xs))], where="post", label=rr["scheme"])
            ax.set_title(wl)
            ax.set_xlabel("flow throughput (Mbit/s)")
            ax.set_ylabel("CDF")
            ax.grid(alpha=0.3)
        axes[0][0].legend()
        fig.tight_layout()
        p = os.path.join(out, "flow_tput_cdf.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        pngs.append(p)
    # RTT CDFs
    rtts = [(r["scheme"], r["workload"], r["rtt_us"]) for r in runs if r.get("rtt_us") and r["rtt_us"].get("cdf")]
    if rtts:
        fig, axes = plt.subplots(1, len(workloads), figsize=(4.5 * len(workloads), 3.6), squeeze=False)
        for ax, wl in zip(axes[0], workloads):
            for s, w2, rt in rtts:
                if w2 == wl:
                    ax.plot([c[0] / 1000 for c in rt["cdf"]], [c[1] for c in rt["cdf"]], label=s)
            ax.set_xscale("log")
            ax.set_title(f"sockperf RTT under {wl}")
            ax.set_xlabel("RTT (ms)")
            ax.set_ylabel("CDF")
            ax.grid(alpha=0.3)
        axes[0][0].legend()
        fig.tight_layout()
        p = os.path.join(out, "rtt_cdf.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        pngs.append(p)
    # Presto Fig. 5: what GRO pushes up (captured runs)
    caps = [(r["scheme"], r["workload"], r.get("gro_capture")) for r in raw["runs"] if r.get("gro_capture")]
    if caps:
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
        for i, (s, wl, c) in enumerate(caps):
            lab = f"{s} {wl}" if len(workloads) > 1 else s
            if c.get("size_cdf"):
                axes[0].step([x[0] / 1000 for x in c["size_cdf"]], [x[1] for x in c["size_cdf"]], where="post",
                             label=lab, color=f"C{i % 10}")
            if c.get("fc_ooo_cdf"):
                axes[1].step([x[0] for x in c["fc_ooo_cdf"]], [x[1] for x in c["fc_ooo_cdf"]], where="post",
                             label=lab, color=f"C{i % 10}")
        axes[0].set_xlabel("TCP payload of each skb pushed up (KB)")
        axes[0].set_title("segment sizes at TCP (Fig. 5b)")
        axes[1].set_xlabel("skbs of other flowcells inside a flowcell")
        axes[1].set_title("out-of-order count per flowcell (Fig. 5a)")
        for ax in axes:
            ax.set_ylabel("CDF")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        p = os.path.join(out, "gro_fig5.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        pngs.append(p)
    # FCT percentiles by size class
    if any(r["fct"] for r in runs):
        fig, ax = plt.subplots(figsize=(8, 4))
        for r in runs:
            cls = [c for _lim, c in SIZE_CLASSES if c in r["fct"]]
            ax.plot(cls, [r["fct"][c]["p99_us"] / 1000 for c in cls], "o-", label=f"{r['scheme']} {r['workload']} p99")
        ax.set_yscale("log")
        ax.set_ylabel("FCT p99 (ms)")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        p = os.path.join(out, "fct.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        pngs.append(p)
    return pngs


def mbit(v):
    return "-" if v is None else f"{v / 1e6:.2f}"


def frac(v, digits=0):
    return "-" if v is None else f"{v * 100:.{digits}f}%"


def us(v):
    return "-" if v is None else (f"{v / 1000:.2f} ms" if v >= 1000 else f"{v:.0f} us")


def markdown(res, pngs, out):
    m = res["meta"]
    L = [f"# Testbed report ({m.get('platform')}, {m.get('kernel')})", ""]
    if res.get("failed"):
        L += ["**FAILED**: fault injection failed, so these runs are not the failure experiment they claim to be:",
              ""] + [f"- {x}" for x in res["failed"]] + [""]
    hi = m.get("host_info") or {}
    if any((v or {}).get("packages") for v in hi.values()):
        names = sorted({p for v in hi.values() for p in ((v or {}).get("packages") or {})})
        L += ["## Hosts", "", "| host | kernel | " + " | ".join(names) + " |", "|" + "---|" * (2 + len(names))]
        for h in sorted(hi):
            pk = (hi[h] or {}).get("packages") or {}
            L.append(f"| {h} | {(hi[h] or {}).get('kernel') or '-'} | "
                     + " | ".join(pk.get(n, "-") for n in names) + " |")
        L.append("")
    pg = {h: (hi[h] or {}).get("presto_gro") for h in sorted(hi) if (hi[h] or {}).get("presto_gro")}
    if pg:
        keys = ["held", "pushed_inorder", "pushed_timeout", "pushed_loss", "reorder_events", "untagged",
                "restarts"]
        L += ["## Presto GRO (receive side, counters over the run)", "",
              "| host | device | enabled | " + " | ".join(keys) + " |", "|" + "---|" * (3 + len(keys))]
        for h, r in pg.items():
            c = r.get("counters") or {}
            L.append(f"| {h} | {r.get('dev') or '-'} | {(r.get('settings') or {}).get('enabled', '-')} | "
                     + " | ".join(str(c.get(k, "-")) for k in keys) + " |")
        L.append("")
    topo = (m.get("experiment") or {}).get("topology")
    if topo:
        L.append(f"Topology: {json.dumps(topo)}.")
    if m.get("link_mbit"):
        L.append(f"Links at {m['link_mbit']} Mbit/s: scale {m.get('scale')} of the papers' "
                 f"{m.get('paper_link_mbit')} Mbit/s.")
    L += ["", "| scheme | workload | flows | elephant mean (Mbit/s) | of link | of Optimal | min | Jain | "
          "drops | marks | RTT p50 | RTT p99.9 | RTT samples | CPU |", "|" + "---|" * 14]
    for r in res["runs"]:
        cpu = r.get("cpu") or {}
        cpu_s = "-" if not cpu else f"{statistics.mean(cpu.values()) * 100:.0f}%"
        rtt = r.get("rtt_us") or {}
        jain_s = "-" if r["jain"] is None else f"{r['jain']:.2f}"
        L.append(f"| {r['scheme']} | {r['workload']} | {r['flows']} | {mbit(r['elephant_mean_bps'])} | "
                 f"{frac(r['elephant_mean_of_link'])} | {frac(r['of_optimal'])} | {mbit(r['elephant_min_bps'])} | "
                 f"{jain_s} | "
                 f"{r['drops']} | {r['marks']} | {us(rtt.get('p50'))} | {us(rtt.get('p999'))} | "
                 f"{rtt.get('n', '-')} | {cpu_s} |")
    nfs = [r for r in res["runs"] if r.get("notifications")]
    if nfs:
        L += ["", "## FastLane notifications", "",
              "| scheme | workload | made | sent | dropped by the caps | max share of a port's rate |"
              " max share of a port's buffer |", "|---|---|---|---|---|---|---|"]
        for r in nfs:
            n = r["notifications"]
            L.append(f"| {r['scheme']} | {r['workload']} | {n['generated']} | {n['sent']} | {n['cap_drops']} |"
                     f" {frac(n['max_rate_share'], 2)} | {frac(n['max_buffer_share'], 2)} |")
    mv = [r for r in res["runs"] if r.get("mice_fct")]
    if any(r.get("mice_vs_ecmp") for r in mv):
        L += ["", "## Mice (< 100 KB) FCT against ECMP (Presto Table 1)", "",
              "Completed flows under 100 KB; each percentile against ECMP's on the same workload "
              "(ECMP over the trees, `l2ecmp`, where it ran, else routed ECMP); negative is shorter.", "",
              "| scheme | workload | mice | p50 | p90 | p99 | p99.9 | p50 | p90 | p99 | p99.9 |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in mv:
            m, v = r["mice_fct"], r.get("mice_vs_ecmp")
            rel = (lambda k: "-" if not v or v[k] is None else f"{v[k] * 100:+.0f}%")
            L.append(f"| {r['scheme']} | {r['workload']} | {m['n']} | {us(m['p50_us'])} | {us(m['p90_us'])} |"
                     f" {us(m['p99_us'])} | {us(m['p999_us'])} | "
                     + (" | ".join(rel(k) for k in ("p50_us", "p90_us", "p99_us", "p999_us"))
                        if v else "baseline | | |") + " |")
    st = [r for r in res["runs"] if r.get("stages")]
    if st:
        L += ["", "## Stages of a failure (Presto Figs. 17-18)", "",
              "Each run cut at the times its faults were applied. Elephants: mean and lowest of the flows' "
              "throughput over the whole intervals inside the stage (iperf3's 0.5 s intervals; a flow's first "
              "second and the interval a fault lands in left out); seconds: the time those intervals cover. "
              "RTT: the probe's samples sent in the stage.",
              "", "| scheme | workload | stage | from-to (s) | seconds | elephant mean (Mbit/s) | of before | min |"
              " RTT p50 | RTT p99 | RTT p99.9 | RTT samples |", "|" + "---|" * 12]
        for r in st:
            base = r["stages"]["stages"][0]["mean_bps"]
            for x in r["stages"]["stages"]:
                rel = frac(x["mean_bps"] / base) if base and x["mean_bps"] is not None else "-"
                L.append(f"| {r['scheme']} | {r['workload']} | {x['stage']} | {x['from_s']:g}-{x['to_s']:g} |"
                         f" {x['seconds']:g} | {mbit(x['mean_bps'])} | {rel} | {mbit(x['min_bps'])} |"
                         f" {us(x['rtt_p50_us'])} | {us(x['rtt_p99_us'])} | {us(x['rtt_p999_us'])} |"
                         f" {x['rtt_n'] if r['stages']['rtt_series'] else 'no times'} |")
        ctl = [(r, e) for r in st for e in r["stages"]["controller"]]
        if ctl:
            L += ["", "The reaction to each fault (testbed/presto.py), its stages one after the other: the "
                  "switches' fast failover (shadow-MAC entries detoured around a cut link), the fabric's other "
                  "entries moved, then the senders' groups rewritten (pruned or weighted).", "",
                  "| scheme | workload | cause | fast failover (s) | entries detoured | fabric entries (s) |"
                  " groups rewritten (s) | groups changed |", "|---|---|---|---|---|---|---|---|"]
            for r, e in ctl:
                f2 = (lambda v: "-" if v is None else f"{v:.3f}")
                L.append(f"| {r['scheme']} | {r['workload']} | {e['cause']} | {f2(e['failover_s'])} |"
                         f" {'-' if e['failover_entries'] is None else e['failover_entries']} |"
                         f" {f2(e['fabric_s'])} | {f2(e['groups_s'])} | {e['groups_changed']} |")
    rx = [r for r in res["runs"] if r.get("receiver")]
    if rx:
        L += ["", "## Receiver: what reaches TCP (Presto Fig. 5)", "",
              "Per run, summed over the receiving hosts. TCP OFO: `TcpExtTCPOFOQueue` (skbs TCP queued out of "
              "order). IP mean skb: `IpExtInOctets / IpInReceives` (every IPv4 skb after GRO, ACKs included). "
              "With a capture (`gro_capture`): data skbs, their TCP payload (mean, p10/p50/p90, share of at most "
              "one MSS), skbs past a hole (out of order) or behind the next expected byte (old; late: old skbs "
              "carrying an older flowcell ID than the flow had shown, i.e. reordered original data, not "
              "retransmissions), and the paper's count per flowcell (skbs of other flowcells between its first "
              "and last skb: share at 0, p99, max).",
              "",
              "| scheme | workload | elephant mean | TCP OFO | retrans | IP mean skb (B) | data skbs | payload mean / "
              "p10 / p50 / p90 (B) | <= 1 MSS | out of order / old / late skbs | flowcells: at 0 / p99 / max | "
              "capture drops | Presto GRO: held / timeout / loss / old / reorder events / EWMA |",
              "|" + "---|" * 13]
        for r in rx:
            v = r["receiver"]
            c = v.get("capture") or {}
            g = v.get("presto_gro")

            def n(x, fmt="{:.0f}"):
                return "-" if x is None else fmt.format(x)
            cap_s = ("- | - | - | - | - | -" if not c else
                     f"{n(c['data_skbs'])} | {n(c['mean_bytes'])} / {n(c['p10_bytes'])} / {n(c['p50_bytes'])} / "
                     f"{n(c['p90_bytes'])} | {frac(c['one_mss_share'], 1)} | {n(c['ooo_skbs'])} / {n(c['old_skbs'])} / "
                     f"{n(c.get('late_skbs'))} | "
                     + (f"{frac(c['fc_ooo_zero_share'], 1)} / {n(c['fc_ooo_p99'])} / {n(c['fc_ooo_max'])} "
                        f"(of {c['flowcells']})" if c.get("flowcells") else "no flowcell IDs")
                     + f" | {n(c['dropped'])}")
            g_s = "-" if not g else (f"{g['held']} / {g['pushed_timeout']} / {g['pushed_loss']} / {g['pushed_old']} / "
                                     f"{g['reorder_events']} / {g['ewma_us_mean'] / 1000:.1f} ms")
            L.append(f"| {r['scheme']} | {r['workload']} | {mbit(r['elephant_mean_bps'])} | {n(v['tcp_ofo_queue'])} | "
                     f"{n(v['retrans_segs'])} | {n(v['ip_mean_skb_bytes'])} | {cap_s} | {g_s} |")
        L += ["", "Paper (Fig. 5, two paths, 10 Gbit/s): official GRO " + PAPER_RX["official GRO"] + "; Presto GRO "
              + PAPER_RX["Presto GRO"] + ". Goal: 0 out-of-order segments reach TCP without loss."]
    ro = [r for r in rx if (r["receiver"].get("capture") or {}).get("reorder")]
    if ro:
        L += ["", "### Flowcell-boundary reordering: how long, against Presto GRO's hold", "",
              "From the capture (testbed/grocap.py `reorder`): a data skb of a newer flowcell arrives past a hole; "
              "the hole lasts until every byte before it arrived, filled by the older flowcell's own data "
              "(lossless) or by a retransmission. Presto GRO's hold (alpha x EWMA of earlier lossless durations, "
              "gain 1/8, per host) replayed over them: lossless holes that outlast it reach TCP. Arrival order is "
              "seen with official GRO only (behind Presto GRO the capture sees what it released).",
              "",
              "| scheme | workload | holes | lossless / by retransmission | lossless p50 / p90 / p99 / max (ms) | "
              "outlast alpha x EWMA (alpha) | EWMA at end (ms) |", "|" + "---|" * 7]
        for r in ro:
            q = r["receiver"]["capture"]["reorder"]
            u = q["lossless_us"]

            def ms(x):
                return "-" if x is None else f"{x / 1000:.1f}"
            L.append(f"| {r['scheme']} | {r['workload']} | {q['holes']} | {q['lossless']} / {q['by_retransmission']} | "
                     f"{ms(u['p50_us'])} / {ms(u['p90_us'])} / {ms(u['p99_us'])} / {ms(u['max_us'])} | "
                     f"{q['outlast_hold']} ({frac(q['outlast_share'], 0)}, alpha {q['alpha']}) | "
                     f"{ms(q['ewma_end_us'])} |")
    fl = [r for r in rx if (r["receiver"].get("capture") or {}).get("flowlets")]
    if fl:
        gaps = list(fl[0]["receiver"]["capture"]["flowlets"])
        L += ["", "## Flowlets in these flows (Presto Fig. 1)", "",
              "How flowlet switching would cut the captured flows: a new flowlet after an inactivity gap longer "
              "than the column's, at the receiver (arrivals after GRO). Per gap: flowlets per flow, mean size, "
              "and the mean share of a flow's bytes in its largest flowlet.", "",
              "| scheme | workload | " + " | ".join(f"gap {int(g) / 1000:g} ms" for g in gaps) + " |",
              "|---|---|" + "---|" * len(gaps)]
        for r in fl:
            f = r["receiver"]["capture"]["flowlets"]
            L.append(f"| {r['scheme']} | {r['workload']} | " + " | ".join(
                "-" if not f[g].get("flowlets") else
                f"{f[g]['per_flow']:.0f} per flow, {f[g]['mean_bytes'] / 1000:.0f} KB, largest "
                f"{frac(f[g]['largest_share'])}" for g in gaps) + " |")
    fcs = [r for r in res["runs"] if r.get("flowcells")]
    if fcs:
        L += ["", "## Sender: flowcells and flowlets (Presto datapath)", "",
              "The flowcell datapath's counters over the run (`ovs-dpctl show`, one datapath for every vSwitch; "
              "besides the elephants they count the rig's own short connections): data skbs that took a flowcell "
              "decision, the flowcells begun (a flow's first, a full flowcell's successor or, with a gap, a "
              "flowlet), `gap_cells` (flowlets the inactivity gap started), their share of the flowcells and of "
              "the data skbs, and the mean payload per flowcell.", "",
              "| scheme | workload | elephant mean | gap | data skbs | flowcells | gap_cells | of flowcells | "
              "of data skbs | payload per flowcell |", "|" + "---|" * 10]
        for r in fcs:
            c = r["flowcells"]
            gap = c.get("gap_us")
            L.append(f"| {r['scheme']} | {r['workload']} | {mbit(r['elephant_mean_bps'])} | "
                     + ("-" if not gap else f"{gap} us" if gap < 1000 else f"{gap / 1000:g} ms") + f" | {c['data_skbs']} | {c['cells']} | "
                     + ("-" if c["gap_cells"] is None else str(c["gap_cells"])) + " | "
                     + f"{frac(c['gap_cells_share'], 1)} | {frac(c['gap_cells_per_skb'], 1)} | "
                     + ("-" if c["mean_cell_bytes"] is None else f"{c['mean_cell_bytes'] / 1000:.1f} KB") + " |")
    mp = [r for r in res["runs"] if r.get("mptcp")]
    if mp:
        L += ["", "## MPTCP subflows per connection", "",
              "Each elephant's data connection as its client sees it (`ss -tni`, the subflows' tcp-ulp-mptcp "
              "info grouped by connection token), at the end of the warm-up and in the measured interval's "
              "last second: TCP subflows (fully established: the join's fourth ACK seen) and the connections "
              "short of the scheme's subflows ([flow, fully established]).", "",
              "| scheme | workload | wanted | when | connections | subflows min-max | fully established min-max "
              "| used since the sample before (>= 1% of its bytes) min-max | short |", "|" + "---|" * 9]
        for r in mp:
            for x in r["mptcp"]["samples"]:
                L.append(f"| {r['scheme']} | {r['workload']} | {r['mptcp']['want']} | {x['label']} ({x['at_s']:g} s)"
                         f" | {x['connections']} | {x['min_subflows']}-{x['max_subflows']} | "
                         f"{x['min_established']}-{x['max_established']} | "
                         + (f"{x['min_used']}-{x['max_used']} | " if "min_used" in x else "- | ")
                         + (", ".join(f"{a}: {b}" for a, b in x["short"]) or "none") + " |")
    cc = [r for r in res["runs"] if r.get("cpu_cost")]
    if cc:
        L += ["", "## CPU cost (Presto Fig. 6)", "",
              "Virtual CPU time (/proc/stat busy ticks, all CPUs: every host, switch and vSwitch of the guest, and "
              "the testbed's own processes) per MSS of payload delivered (1448 B), and against the scheme's "
              "`cpu_baseline` on the same workload.", "",
              "| scheme | workload | elephant mean | busy CPU s (softirq / system / user) | delivered MB | "
              "CPU us per segment | softirq us per segment | against | overhead (softirq) | upcalls (lost) |",
              "|" + "---|" * 10]
        for r in cc:
            c = r["cpu_cost"]
            o = r.get("cpu_overhead") or {}
            L.append(f"| {r['scheme']} | {r['workload']} | {mbit(r['elephant_mean_bps'])} | {c['busy_s']:.2f} "
                     f"({c['softirq_s']:.2f} / {c['system_s']:.2f} / {c['user_s']:.2f}) | "
                     f"{c['delivered_bytes'] / 1e6:.1f} | "
                     + ("-" if c["us_per_segment"] is None else f"{c['us_per_segment']:.1f}") + " | "
                     + ("-" if c["softirq_us_per_segment"] is None else f"{c['softirq_us_per_segment']:.1f}")
                     + f" | {o.get('baseline', '-')} | "
                     + (f"{o['ratio'] * 100:+.1f}%" if o else "-")
                     + (f" ({o['softirq_ratio'] * 100:+.1f}%)" if o.get("softirq_ratio") is not None else "")
                     + (" | -" if c.get("upcalls") is None else f" | {c['upcalls']} ({c['upcalls_lost']})") + " |")
        L += ["", f"Paper (Fig. 6): Presto's receiver CPU {PAPER_CPU_OVERHEAD * 100:.0f}% above official GRO's "
              "on average (Presto GRO on the Clos against official GRO on a non-blocking switch, both at 9.3 Gbit/s)."]
    fcts = [(r, c, s) for r in res["runs"] for c, s in r["fct"].items()]
    if fcts:
        L += ["", "## Flow completion times", "", "| scheme | workload | size | n | p50 | p90 | p99 | p99.9 |",
              "|---|---|---|---|---|---|---|---|"]
        for r, c, s in fcts:
            L.append(f"| {r['scheme']} | {r['workload']} | {c} | {s['n']} | {us(s['p50_us'])} | {us(s['p90_us'])} |"
                     f" {us(s['p99_us'])} | {us(s['p999_us'])} |")
    od = [r for r in res["runs"] if r.get("oldi")]
    if od:
        ts = (1 / m["scale"]) if m.get("scale") else None
        L += ["", "## D2TCP at scale (Sec. 4.2: Figs. 10, 12, 13, 14)", "",
              f"OLDI trees (testbed/workloads.py `oldi`), each application's at its parent host; times x {ts:g} (the paper's "
              f"{m.get('paper_link_mbit'):g} Mbit/s over {m.get('link_mbit'):g}); deadlines as the leaves set them "
              "(TCP_DEADLINE under D2TCP, measured against under the others), FCT from the query's send to the "
              "response's last byte at the parent. Missed: of the completed responses. FCT / deadline: p50 / p90 / "
              "p99 (Fig. 12). Background: mean throughput of the 1 MB flows to the parents, and against TCP's on the "
              "same fan-in (Fig. 13)." if ts else "OLDI trees (testbed/workloads.py `oldi`).", "",
              "| scheme | fan-in | responses | missed | of DCTCP's | missed per app (" + " / ".join(
                  f"{a['bytes'] // 1024} KB" for a in od[0]["oldi"]["apps"]) + ") | FCT / deadline p50 / p90 / p99 | "
              "FCT p99 | background mean (flows) | of TCP's | drops | marks | CPU | incomplete |",
              "|" + "---|" * 14]
        for r in sorted(od, key=lambda r: (r["oldi"]["fanin"] or 0, r["scheme"])):
            o = r["oldi"]
            bg = o["background"]
            cpu = r.get("cpu") or {}

            def f2(x):
                return "-" if x is None else f"{x:.2f}"
            L.append(f"| {r['scheme']} | {o['fanin'] if o['fanin'] is not None else r['workload']} | "
                     f"{o['completed']} | {o['missed']} ({frac(o['missed_frac'], 1)}) | {f2(o.get('missed_of_dctcp'))} | "
                     + " / ".join(frac(a["missed_frac"], 1) for a in o["apps"])
                     + f" | {f2(o['norm_p50'])} / {f2(o['norm_p90'])} / {f2(o['norm_p99'])} | {us(o['fct_p99_us'])} | "
                     f"{mbit(bg['mean_bps'])} ({bg['completed']}/{bg['flows']}) | {frac(o.get('background_of_tcp'), 1)} | "
                     f"{r['drops']} | {r['marks']} | "
                     + ("-" if not cpu else f"{statistics.mean(cpu.values()) * 100:.0f}%")
                     + f" | {o['incomplete']} |")
        L += ["", "Paper (Sec. 4.2, ns-3 with 1000 hosts):", ""] + [f"- {x}" for x in PAPER_D2TCP]
        sm = [r for r in od if r.get("oldi_samples")]
        if sm:
            L += ["", "### The responders' congestion state, sampled", "",
                  f"Every {sm[0]['oldi_samples']['sample_ms']} ms (virtual) and before the first byte, each leaf sampled "
                  "the socket sending each response (`dltraffic server --sample-ms`, oldi's `sample_ms`) until it was "
                  "all acknowledged. Responses: sampled (with a deadline set: TCP_DEADLINE_F_SET seen; D2TCP only). d (D2TCP's "
                  "imminence, 1 = DCTCP's back-off, below 1 backs off more): over the samples with bytes "
                  "unacknowledged, p10 / p50 / p90 and the share below / at / above 1, over all responses and over "
                  "those that met / missed their deadline. Largest d > 1: responses whose d ever exceeded 1 (of the "
                  "missed ones). Tc / D: the paper's d before the module clamps it to [1/2, 2] (d_cap 2), from the same "
                  "samples (bytes left / (3/4 cwnd x 1448 B) round trips of srtt, over the time left): p50 / p90 / p99 "
                  "and the share at or above 1/2. srtt: the socket's smoothed RTT while the response had bytes "
                  "unacknowledged (every sample but those after the response was all acknowledged), p50 / p90 / p99. alpha: every sample's (DCTCP's and D2TCP's), p10 / p50 / p90 and the "
                  "share at 0.",
                  "",
                  "| scheme | fan-in | samples | responses (deadline set) | d p10 / p50 / p90 | d <1 / =1 / >1 | "
                  "met: d <1 / =1 / >1 | missed: d <1 / =1 / >1 (responses) | largest d > 1 (of missed) | "
                  "Tc / D p50 / p90 / p99 (>= 1/2) | srtt p50 / p90 / p99 | alpha p10 / p50 / p90 (at 0) |",
                  "|" + "---|" * 12]

            def shares(x):
                return "-" if not x else f"{frac(x['lt1'], 1)} / {frac(x['eq1'], 1)} / {frac(x['gt1'], 1)}"
            for r in sorted(sm, key=lambda r: (r["oldi"]["fanin"] or 0, r["scheme"])):
                q = r["oldi_samples"]
                d, a = q["d"], q["alpha"]
                L.append(f"| {r['scheme']} | {r['oldi']['fanin'] if r['oldi']['fanin'] is not None else r['workload']} | "
                         f"{q['samples']} | {q['responses']}"
                         + ("" if q["with_deadline"] is None else f" ({q['with_deadline']})") + " | "
                         + ("-" if not d else f"{d['p10']:.2f} / {d['p50']:.2f} / {d['p90']:.2f}")
                         + f" | {shares(d)} | {shares(q['d_met'])} | {shares(q['d_missed'])} ({q['missed_sampled']}) | "
                         + ("-" if q["max_d_gt1"] is None else
                            f"{q['max_d_gt1']} ({q['max_d_gt1_missed'] if q['max_d_gt1_missed'] is not None else 0})")
                         + " | " + ("-" if not q.get("tc_over_d") else
                                    "{p50:.3f} / {p90:.3f} / {p99:.3f} ({s})".format(
                                        s=frac(q["tc_over_d"]["ge_half"], 1), **q["tc_over_d"]))
                         + " | " + ("-" if not q.get("srtt_us") else
                                    f"{us(q['srtt_us']['p50'])} / {us(q['srtt_us']['p90'])} / {us(q['srtt_us']['p99'])}")
                         + " | " + ("-" if not a else f"{a['p10']:.2f} / {a['p50']:.2f} / {a['p90']:.2f} "
                                                      f"({frac(a['zero'])})") + " |")
    if any(r["deadline_flows"] for r in res["runs"]):
        L += ["", "Missed deadlines: " + ", ".join(f"{r['scheme']}/{r['workload']} {r['missed_deadlines']}"
                                                  f" of {r['deadline_flows']}" for r in res["runs"])]
    inc = [r for r in res["runs"] if r["incomplete"]]
    if inc:
        L += ["", "Incomplete flows (no result): " + ", ".join(f"{r['scheme']}/{r['workload']} {r['incomplete']}"
                                                             for r in inc)]
    L += [""] + [f"![{os.path.basename(p)}]({os.path.basename(p)})" for p in pngs]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(L) + "\n")


def build(raw, out, plot=True):
    validate(raw, "raw")
    res = analyse(raw)
    validate(res, "results")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    pngs = plots(raw, res, out) if plot else []
    markdown(res, pngs, out)
    return res


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("raw")
    ap.add_argument("--out", required=True)
    ap.add_argument("--no-plots", action="store_true")
    a = ap.parse_args(argv)
    with open(a.raw) as f:
        raw = json.load(f)
    res = build(raw, a.out, plot=not a.no_plots)
    sys.stdout.write(open(os.path.join(a.out, "report.md")).read())
    if res["failed"]:
        sys.exit(f"report: FAILED: {len(res['failed'])} fault(s) failed or never happened")


if __name__ == "__main__":
    main()
