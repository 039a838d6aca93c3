#!/usr/bin/env python3
"""make bench-d2tcp: D2TCP against DCTCP, side by side in one run.

  fig6   the deadline microbenchmark of the paper's Fig. 6: four flows of
         150/220/350/500 MB with deadlines 1000/1500/2500/4000 ms into one
         ECN-marking bottleneck, sizes scaled to the emulated link rate.
  fig7   the fan-in experiment of Fig. 7: one root, 20 and 40 leaves that
         answer each query with 100-500 KB within 5-25 ms, two background
         flows of 10 MB every 80 ms; sizes and times scaled, responses not
         below 10 segments (beyond the initial window).

On the host this script boots the release kernel (scripts/vmrun.py) and
runs itself inside with --guest, which writes raw.json; then it writes
results.json, PNG plots and report.md next to it.
"""
import argparse
import json
import os
import subprocess
import sys
import time

from dcnet import config, progress
from dcnet import samples as sampling
from dcnet import ROOT
from dcnet import hostrun
from dcnet.bench.calibrate import calibrate
from dcnet.stats import busy_pct, cpu_busy, cpu_note, cpu_sample, percentile, sample_at

SCHEMES = ["dctcp", "d2tcp"]

# The emulated bottleneck.  What a TCG guest sustains depends on the host
# (and on the kernel config), so by default the guest first measures one
# unshaped cubic flow through the router namespace and sets the bottleneck
# to RATE_FRACTION of that: the link, not the CPU, must be the bottleneck.
# Four senders, a router and a receiver share the guest's 2 vCPUs: with
# 0.4 (one flow 140 Mbit/s, bottleneck 55 Mbit/s) Fig. 6's four flows
# together moved only about 22 Mbit/s, so the fraction is 0.2.
# --rate-mbit fixes the rate instead.
RATE_MBIT = 0
RATE_FRACTION = 0.2
K_BYTES = 30000          # marking threshold: 20 packets, DCTCP's 1 Gbit/s K
QUEUE_BYTES = 1_000_000  # port buffer

# Fig. 6: the paper's flows finish in about 4 s on its testbed, an
# aggregate of about 2.7 Gbit/s; sizes are scaled by RATE / 2.7 Gbit/s so
# the same deadlines (unscaled) are as tight as in the paper.
FIG6_SIZES_MB = [150, 220, 350, 500]
FIG6_DEADLINES_MS = [1000, 1500, 2500, 4000]
FIG6_REF_GBIT = 2.7
# Rigs (--fig6-rig):
#  "time" (default since 2026-11-24, third session): the paper's pipe in
#     packets.  Its sizes and deadlines are those of a 2.7 Gbit/s
#     bottleneck; the rig is that bottleneck slowed down by
#     TS6 = 2.7 Gbit/s / RATE, then sizes and deadlines compressed by the
#     same TS6 (so: sizes scaled by RATE / 2.7 Gbit/s, deadlines unscaled,
#     as before) while the round trip keeps its scaled value: the base RTT
#     is the paper's 100 us times TS6 (netem on the receiver's port), K the
#     paper's 65 packets, the buffer its 4 MB.  Four flows then share
#     BDP + K = 23 + 65 packets, about 22 each, and alpha^d tells them
#     apart.  The flows last about 1000 round trips instead of the paper's
#     10000-20000, enough for alpha (g = 1/16) to converge.
#  "bytes" (until 2026-11-24): K = 20 packets (DCTCP's 1 Gbit/s K), 1 MB
#     buffer, no added delay: the pipe holds about 24 packets, 6 per flow
#     (measured: cwnd 5-7, alpha 0.35-0.58 for every flow of both
#     schemes), so a cut of alpha^d / 2 differs between d = 0.5 and 2 by
#     about one packet and D2TCP landed near fair sharing.
FIG6_RIGS = ["time", "bytes"]
FIG6_PAPER_RTT_US = 100

# Fig. 7: the paper's 10 Gbit/s testbed (Sec. 4.1.1, 4.1.3): responses of
# 100-500 KB with deadlines of 5-25 ms, two background flows of 10 MB every
# 80 ms, K = 65 packets, a 4 MB switch buffer; the base round trip is not
# given, FIG7_PAPER_RTT_US is typical of a 10 Gbit/s rack (and within
# DCTCP's K > C * RTT / 7 for K = 65).
#
# Rigs (--fig7-rig):
#  "time" (default since 2026-11-24): the testbed slowed down, every
#     time multiplied by TS = 10 Gbit/s / RATE (deadlines, background
#     period, base RTT, added by netem on the root's port), every size in
#     bytes and packets the paper's (responses, background, K, buffer).
#     Window dynamics in packets and round trips are the paper's: at
#     fan-in 40 the pipe plus K holds (BDP + K) / 40 = 3.7 packets per flow
#     as on the testbed.
#  "bytes" (until 2026-11-24): sizes scaled by RATE / 10 Gbit/s * 5,
#     times by 5, K = 20 packets (DCTCP's 1 Gbit/s K), 1 MB buffer, no
#     added delay.  Responses of 10-35 packets, a pipe of a few packets:
#     (BDP + K) / 40 is about 0.5 packet per flow, below the minimum window
#     of 2, so every flow sits at cwnd 2 with every packet marked (see
#     docs/d2tcp.md, issue 22).
FIG7_FANINS = [20, 40]
FIG7_REF_BIT = 10e9
FIG7_PAPER_RTT_US = 100
FIG7_PAPER_K_PKTS = 65
FIG7_PAPER_QUEUE = 4_000_000
FIG7_BYTES_TIME_SCALE = 5
FIG7_MIN_RESP = 10 * 1448     # "bytes" rig: no response within the initial window
FIG7_RIGS = ["time", "bytes"]


def fig6_scale():
    return RATE_MBIT * 1e6 / (FIG6_REF_GBIT * 1e9)


def fig6_params(rig):
    """Fig. 6's bottleneck on this rig (see FIG6_RIGS)"""
    if rig == "time":
        ts = FIG6_REF_GBIT * 1e9 / (RATE_MBIT * 1e6)
        return dict(rig=rig, time_scale=ts, k_bytes=FIG7_PAPER_K_PKTS * 1500,
                    queue_bytes=FIG7_PAPER_QUEUE, base_rtt_us=int(FIG6_PAPER_RTT_US * ts))
    return dict(rig=rig, time_scale=1.0, k_bytes=K_BYTES, queue_bytes=QUEUE_BYTES, base_rtt_us=0)


def fig7_params(rig):
    """Fig. 7's workload and bottleneck on this rig (see FIG7_RIGS)"""
    if rig == "time":
        ts = FIG7_REF_BIT / (RATE_MBIT * 1e6)
        return dict(rig=rig, scale=1.0, time_scale=ts, resp_bytes=(100_000, 500_000),
                    deadline_us=(int(5000 * ts), int(25000 * ts)), bg_bytes=10_000_000,
                    bg_every_us=int(80_000 * ts), k_bytes=FIG7_PAPER_K_PKTS * 1500,
                    queue_bytes=FIG7_PAPER_QUEUE, base_rtt_us=int(FIG7_PAPER_RTT_US * ts))
    s = RATE_MBIT * 1e6 / FIG7_REF_BIT * FIG7_BYTES_TIME_SCALE
    ts = FIG7_BYTES_TIME_SCALE
    # responses beyond the initial window (10 segments), or they finish
    # in one round trip and no window, hence no deadline, matters
    return dict(rig=rig, scale=s, time_scale=ts,
                resp_bytes=(max(int(100e3 * s), FIG7_MIN_RESP), max(int(500e3 * s), 3 * FIG7_MIN_RESP)),
                deadline_us=(5000 * ts, 25000 * ts), bg_bytes=int(10e6 * s), bg_every_us=80_000 * ts,
                k_bytes=K_BYTES, queue_bytes=QUEUE_BYTES, base_rtt_us=0)


# ---------------------------------------------------------------- guest side

def guest_fig6(reps, rig="time"):
    from dcnet.testbed.netlab import DLTRAFFIC, Lab, json_lines, monotonic_us, tc
    P = fig6_params(rig)
    runs = []
    s = fig6_scale()
    sizes = [int(mb * 1e6 * s) for mb in FIG6_SIZES_MB]
    for rep in range(reps):
        for cc in SCHEMES:
            lab = Lab(["h1", "h2", "h3", "h4", "rx"], prefix="b")
            try:
                lab.bottleneck("rx", RATE_MBIT, P["k_bytes"], P["queue_bytes"])
                if P["base_rtt_us"]:
                    # the base round trip on the receiver's way out (its
                    # ACKs), away from the marking queue
                    tc(f"qdisc add dev eth0 root netem delay {P['base_rtt_us']}us limit 100000",
                       ns=lab.ns("rx"))
                lab.server("rx", 5001, cc=cc)
                start = monotonic_us() + 500_000
                procs = []
                for i, (size, dl) in enumerate(zip(sizes, FIG6_DEADLINES_MS)):
                    args = [DLTRAFFIC, "flow", "-c", lab.ip("rx"), "-p", "5001", "--bytes", str(size),
                            "--deadline-us", str(dl * 1000), "--cc", cc, "--id", f"flow{i}",
                            "--sample-ms", "100", "--start-at-us", str(start)]
                    procs.append(lab.spawn(f"h{i + 1}", args))
                c0 = sample_at(start)
                flows, samples = [], []
                for p in procs:
                    out, err = p.communicate(timeout=300)
                    if p.returncode != 0:
                        raise RuntimeError(f"dltraffic failed: {err}")
                    for r in json_lines(out):
                        (flows if r["type"] == "flow" else samples).append(r)
                busy = cpu_busy(c0, cpu_sample())
                q = lab.qdisc_stats("rx")
                runs.append(dict(cc=cc, rep=rep, start_us=start, flows=flows, samples=samples, qdisc=q,
                                 cpu_busy=busy))
                print(f"fig6 {cc} rep {rep}: " + ", ".join(
                    f"{f['id']} {f['fct_us'] / 1000:.0f} ms {'met' if f['met'] else 'MISSED'}"
                    for f in sorted(flows, key=lambda f: f["id"])) + f"; virtual CPU {busy_pct(busy)} busy",
                    flush=True)
                progress.cell_done(f"fig6 {cc} rep {rep}")
            finally:
                lab.close()
    return dict(P, sizes=sizes, deadlines_ms=FIG6_DEADLINES_MS, runs=runs)


def p_of(alpha, d):
    """p = alpha^d (d in 1/1024; d < 0: DCTCP, p = alpha); alpha in 1/1024"""
    if alpha is None or alpha < 0:
        return None
    a = min(alpha, 1024) / 1024
    return a if d is None or d < 0 else a ** (d / 1024)


def response_state(samples, flow=None):
    """One response's congestion state from the leaf's samples (dltraffic
    server --sample-ms): means over the samples with data in flight (all
    of them when none has), the state it started with, and the extremes."""
    fl = [x for x in samples if x["unacked"] > 0] or samples
    n = len(fl)

    def mean(k):
        v = [x[k] for x in fl if x[k] is not None and x[k] >= 0]
        return sum(v) / len(v) if v else None
    ps = [p_of(x["alpha"], x["d"]) for x in fl]
    ps = [v for v in ps if v is not None]
    ds = [x["d"] for x in fl if x["d"] >= 0]
    first = samples[0]
    r = dict(resp=first["resp"], bytes=first["bytes"], deadline_us=first["deadline_us"], samples=n,
             alpha0=first["alpha"], cwnd0=first["cwnd"], srtt0_us=first["srtt_us"],
             alpha_mean=mean("alpha"), alpha_max=max((x["alpha"] for x in fl), default=None),
             d_mean=mean("d"), d_min=min(ds) if ds else None, d_max=max(ds) if ds else None,
             d_cap_frac=sum(1 for v in ds if v >= 2048) / len(ds) if ds else None,
             p_mean=sum(ps) / len(ps) if ps else None,
             cwnd_mean=mean("cwnd"), cwnd_min=min(x["cwnd"] for x in fl),
             srtt_mean_us=mean("srtt_us"), srtt_max_us=max(x["srtt_us"] for x in fl),
             retrans=samples[-1]["retrans"] - first["retrans"])
    if flow:
        r.update(met=flow["met"], fct_us=flow["fct_us"])
    return r


def ccstate_of(leaf_logs, flows):
    """per-response states of a fan-in cell: leaf_logs[i] the JSON lines of
    leaf i's server, flows the root's records (id q<Q>-l<I>)"""
    from dcnet.testbed.netlab import json_lines
    byid = {f["id"]: f for f in flows}
    out = []
    for i, text in enumerate(leaf_logs):
        per = {}
        for x in json_lines(text):
            if x.get("type") == "rsample":
                per.setdefault(x["resp"], []).append(x)
        for q, ss in sorted(per.items()):
            r = response_state(ss, byid.get(f"q{q}-l{i}"))
            r["leaf"] = i
            out.append(r)
    return out


def guest_fig7(queries, fanins=None, cc_sample_ms=0, q_sample_ms=0, rig="time"):
    from dcnet.testbed.fabric import ns_exec
    from dcnet.testbed.netlab import DLTRAFFIC, Lab, json_lines, monotonic_us, tc
    P = fig7_params(rig)
    # about 1/5 of the paper's 100 us round trip (0.1 for the queue), scaled
    cc_sample_ms = max(2, int(P["time_scale"] / 5)) if cc_sample_ms is None else cc_sample_ms
    q_sample_ms = max(2, int(P["time_scale"] / 10)) if q_sample_ms is None else q_sample_ms
    resp, dl, bg_bytes, bg_every = P["resp_bytes"], P["deadline_us"], P["bg_bytes"], P["bg_every_us"]
    runs = []
    for fanin in fanins or FIG7_FANINS:
        # about 10% utilisation, as in the paper: a query's responses take
        # fanin * mean(resp) / RATE; queries come 10 times that apart.
        burst_us = fanin * (sum(resp) / 2) * 8 / RATE_MBIT
        interval = int(burst_us * 10)
        for cc in SCHEMES:
            leaves = [f"l{i}" for i in range(fanin)]
            lab = Lab(["root", "bg1", "bg2"] + leaves, prefix="f")
            try:
                lab.bottleneck("root", RATE_MBIT, P["k_bytes"], P["queue_bytes"])
                if P["base_rtt_us"]:
                    # the base round trip, on the root's way out (ACKs,
                    # queries), away from the marking queue
                    tc(f"qdisc add dev eth0 root netem delay {P['base_rtt_us']}us limit 100000",
                       ns=lab.ns("root"))
                logs, servers = [], []
                for j, leaf in enumerate(leaves):
                    args = [DLTRAFFIC, "server", "-p", "5001", "--cc", cc]
                    if cc_sample_ms:
                        # each leaf samples the socket of every response it sends
                        logs.append(f"/tmp/d2tcp-leaf{j}.jsonl")
                        args += ["--sample-ms", str(cc_sample_ms)]
                        servers.append(lab.spawn(leaf, args, stdout=open(logs[-1], "w")))
                    else:
                        lab.spawn(leaf, args)
                lab.server("root", 5002, cc=cc)
                qs = None
                if q_sample_ms:
                    qfile = "/tmp/d2tcp-queue.json"
                    qs = subprocess.Popen(ns_exec(lab.sw) + [sys.executable, os.path.join(ROOT, "bench", "qsample.py"),
                                                            "root", "red", str(q_sample_ms), qfile])
                time.sleep(0.5)
                start = monotonic_us() + 1_000_000
                duration = queries * interval
                count = max(1, int(duration / bg_every))
                bgs = [lab.spawn(b, [DLTRAFFIC, "bulk", "-c", lab.ip("root"), "-p", "5002",
                                     "--bytes", str(bg_bytes), "--every-us", str(bg_every),
                                     "--count", str(count), "--cc", cc, "--id-prefix", f"{b}-",
                                     "--start-at-us", str(start)])
                       for b in ("bg1", "bg2")]
                root = lab.spawn("root", [DLTRAFFIC, "fanin", "--leaves",
                                          ",".join(f"{lab.ip(l)}:5001" for l in leaves),
                                          "--queries", str(queries), "--resp-bytes", f"{resp[0]}-{resp[1]}",
                                          "--deadline-us", f"{dl[0]}-{dl[1]}", "--interval-us", str(interval),
                                          "--cc", cc, "--seed", str(sampling.seed(7)), "--start-at-us", str(start)])
                c0 = sample_at(start)
                out, err = root.communicate(timeout=1800)
                if root.returncode != 0:
                    raise RuntimeError(f"fanin failed: {err}")
                recs = json_lines(out)
                bg = []
                for b in bgs:
                    o, e = b.communicate(timeout=600)
                    bg += [r for r in json_lines(o) if r["type"] == "flow"]
                busy = cpu_busy(c0, cpu_sample())
                q = lab.qdisc_stats("root")
                flows = [r for r in recs if r["type"] == "flow"]
                missed = sum(1 for r in flows if r["met"] is False)
                run = dict(cc=cc, fanin=fanin, interval_us=interval, flows=flows,
                           queries=[r for r in recs if r["type"] == "query"], background=bg, qdisc=q,
                           cpu_busy=busy)
                if qs:
                    qs.terminate()
                    qs.wait(timeout=60)
                    with open(qfile) as f:
                        run["queue"] = json.load(f)
                    run["queue"]["period_ms"] = q_sample_ms
                if servers:
                    for p in servers:
                        p.terminate()
                    for p in servers:
                        p.wait(timeout=30)
                    texts = []
                    for path in logs:
                        with open(path) as f:
                            texts.append(f.read())
                        os.unlink(path)
                    run["ccstate"] = ccstate_of(texts, flows)
                    run["cc_sample_ms"] = cc_sample_ms
                runs.append(run)
                print(f"fig7 fan-in {fanin} {cc}: {missed}/{len(flows)} responses missed; "
                      f"virtual CPU {busy_pct(busy)} busy", flush=True)
                progress.cell_done(f"fig7 fan-in {fanin} {cc}")
            finally:
                lab.close()
    return dict(P, runs=runs)


def guest_main(a):
    global RATE_MBIT
    out = config.get("DCNET_OUT")
    subprocess.run("sysctl -qw net.ipv4.tcp_ecn=1", shell=True)
    from dcnet.warm import install_for_guest
    install_for_guest()     # nothing a cell executes is read over 9p inside it
    subprocess.run("modprobe tcp_dctcp; modprobe tcp_d2tcp", shell=True, check=True)
    sustained, cal_busy = calibrate()
    RATE_MBIT = a.rate_mbit or max(1, int(sustained * RATE_FRACTION))
    print(f"calibration: one unshaped flow {sustained:.1f} Mbit/s; bottleneck {RATE_MBIT} Mbit/s",
          flush=True)
    # the cells, for the host's progress lines (dcnet/progress.py)
    progress.start((a.reps * len(SCHEMES) if a.only in (None, "fig6") else 0)
                   + (len(a.fanins or FIG7_FANINS) * len(SCHEMES) if a.only in (None, "fig7") else 0))
    raw = dict(kernel=os.uname().release, rate_mbit=RATE_MBIT, sustained_mbit=sustained, k_bytes=K_BYTES, queue_bytes=QUEUE_BYTES,
               fig6_scale=fig6_scale(),
               calibration_cpu_busy=cal_busy)
    if a.only in (None, "fig6"):
        raw["fig6"] = guest_fig6(a.reps, a.fig6_rig)
    if a.only in (None, "fig7"):
        raw["fig7"] = guest_fig7(a.queries, a.fanins, a.cc_sample_ms, a.q_sample_ms, a.fig7_rig)
    with open(os.path.join(out, "raw.json"), "w") as f:
        json.dump(raw, f)


# ----------------------------------------------------------------- host side

def _pcts(v, ps=(10, 50, 90)):
    v = sorted(x for x in v if x is not None)
    return {f"p{p}": percentile(v, p) for p in ps} if v else None


def ccstate_summary(states, dl):
    """alpha, d, p = alpha^d and cwnd of the responses (means over each
    response's samples in flight), split by deadline: near = the lowest
    third of the deadline range, far = the highest third"""
    lo, hi = dl
    third = (hi - lo) / 3
    classes = dict(near=lambda r: r["deadline_us"] <= lo + third,
                   mid=lambda r: lo + third < r["deadline_us"] < hi - third,
                   far=lambda r: r["deadline_us"] >= hi - third,
                   all=lambda r: True)
    out = {}
    for name, f in classes.items():
        rs = [r for r in states if f(r)]
        if not rs:
            continue
        met = [r for r in rs if r.get("met") is not None]
        out[name] = dict(
            responses=len(rs),
            missed_fraction=sum(1 for r in met if r["met"] is False) / len(met) if met else None,
            alpha=_pcts(r["alpha_mean"] / 1024 if r["alpha_mean"] is not None else None for r in rs),
            alpha_at_start=_pcts(r["alpha0"] / 1024 if r["alpha0"] is not None and r["alpha0"] >= 0 else None
                                 for r in rs),
            d=_pcts(r["d_mean"] / 1024 if r["d_mean"] is not None else None for r in rs),
            d_at_cap_fraction=(lambda v: sum(v) / len(v) if v else None)(
                [r["d_cap_frac"] for r in rs if r["d_cap_frac"] is not None]),
            p=_pcts(r["p_mean"] for r in rs),
            cwnd=_pcts(r["cwnd_mean"] for r in rs),
            cwnd_at_start=_pcts(r["cwnd0"] for r in rs),
            srtt_ms=_pcts(r["srtt_mean_us"] / 1000 if r["srtt_mean_us"] is not None else None for r in rs),
            windows=_pcts(r["fct_us"] / r["srtt_mean_us"] if r.get("fct_us") and r["srtt_mean_us"] else None
                          for r in rs),
            samples_per_response=_pcts(r["samples"] for r in rs))
    return out


def queue_summary(queue, queries, flows, k_bytes):
    """the bottleneck's queue while a query's responses are in flight
    (from the query's start to its last response) and CE marks per packet
    over those intervals"""
    f = queue["fields"]
    ti, bi, pi, mi = f.index("t_us"), f.index("backlog"), f.index("packets"), f.index("marked")
    s = queue["samples"]
    ends = {}
    for fl in flows:
        ends[fl["query"]] = max(ends.get(fl["query"], 0), fl["end_us"])
    spans = sorted((q["start_us"], ends.get(q["query"], q["start_us"])) for q in queries)
    inb, j = [], 0
    for x in s:
        while j < len(spans) and spans[j][1] < x[ti]:
            j += 1
        inb.append(j < len(spans) and spans[j][0] <= x[ti] <= spans[j][1])
    burst = [x for x, b in zip(s, inb) if b]
    pk = mk = 0
    for a, b, ia, ib in zip(s, s[1:], inb, inb[1:]):
        if ia and ib:
            pk += b[pi] - a[pi]
            mk += b[mi] - a[mi]
    bl = [x[bi] for x in burst]
    return dict(samples=len(s), burst_samples=len(burst), period_ms=queue.get("period_ms"),
                backlog_kb_in_bursts=_pcts([v / 1000 for v in bl], (10, 50, 90, 99)),
                backlog_kb_max=max(bl) / 1000 if bl else None,
                above_k_fraction_in_bursts=sum(1 for v in bl if v > k_bytes) / len(bl) if bl else None,
                marked_per_packet_in_bursts=mk / pk if pk else None,
                packets_in_bursts=pk)


def fig6_d(bytes_left, cwnd, srtt_us, time_left_us, mss=1448, cap=2.0):
    """The module's d (d2tcp_imminence(), in floating point) from a
    sample: Tc = B / (3/4 W) round trips, d = Tc * srtt / D in [1/cap, cap],
    the cap once the deadline has passed"""
    if bytes_left <= 0:
        return 1.0
    if time_left_us <= 0:
        return cap
    if not srtt_us or not cwnd:
        return 1.0
    d = bytes_left * 4 / (3 * cwnd * mss) * srtt_us / time_left_us
    return min(cap, max(1 / cap, d))


def fig6_ccstate(runs, sizes=None, deadlines_ms=None):
    """Per scheme and flow: median alpha (of 1), cwnd, srtt and d over the
    samples taken while all four flows were running (up to the first
    flow's completion), the interval where deadline-aware sharing acts.
    d is computed from each sample with the module's formula (the flow
    sampler reads DCTCP's info only); for DCTCP it is the d D2TCP would
    have used."""
    out = {}
    for run in runs:
        first = min((f["fct_us"] for f in run["flows"]), default=0)
        by = {}
        for smp in run["samples"]:
            if smp["t_us"] <= first:
                by.setdefault(smp["id"], []).append(smp)
        for fid, v in by.items():
            d = out.setdefault(run["cc"], {}).setdefault(fid, dict(alpha=[], cwnd=[], srtt_us=[], d=[]))
            d["alpha"] += [x["alpha"] / 1024 for x in v if x.get("alpha", -1) >= 0]
            d["cwnd"] += [x["cwnd"] for x in v]
            d["srtt_us"] += [x["srtt_us"] for x in v]
            i = int(fid[4:]) if fid.startswith("flow") and fid[4:].isdigit() else None
            if sizes and deadlines_ms and i is not None and i < len(sizes):
                d["d"] += [fig6_d(sizes[i] - x["bytes_acked"], x["cwnd"], x["srtt_us"],
                                  deadlines_ms[i] * 1000 - x["t_us"]) for x in v]
    return {cc: {fid: {k: (percentile(sorted(x), 50) if x else None) for k, x in d.items()}
                 for fid, d in sorted(flows.items())} for cc, flows in out.items()}


def analyse(raw):
    res = dict(kernel=raw["kernel"], rate_mbit=raw["rate_mbit"], sustained_mbit=raw.get("sustained_mbit"),
               calibration_cpu_busy=raw.get("calibration_cpu_busy"), k_bytes=raw["k_bytes"],
               queue_bytes=raw["queue_bytes"])
    if "fig6" in raw:
        f6 = raw["fig6"]
        per = {}
        for run in f6["runs"]:
            d = per.setdefault(run["cc"], dict(missed=0, flows=0, fct_ms={}, marks=0, cpu_busy=[]))
            d["cpu_busy"].append(run.get("cpu_busy"))      # per rep, in run order
            for fl in run["flows"]:
                d["flows"] += 1
                d["missed"] += fl["met"] is False
                d["fct_ms"].setdefault(fl["id"], []).append(fl["fct_us"] / 1000)
            for q in run["qdisc"]:
                if q.get("kind") == "red":
                    d["marks"] += q.get("marked", 0)
        for d in per.values():
            d["missed_fraction"] = d["missed"] / max(1, d["flows"])
            d["fct_ms_mean"] = {k: sum(v) / len(v) for k, v in sorted(d["fct_ms"].items())}
        res["fig6"] = dict(scale=raw["fig6_scale"], sizes=f6["sizes"], deadlines_ms=f6["deadlines_ms"],
                           rig=f6.get("rig", "bytes"), time_scale=f6.get("time_scale", 1.0),
                           k_bytes=f6.get("k_bytes", raw["k_bytes"]),
                           queue_bytes=f6.get("queue_bytes", raw["queue_bytes"]),
                           base_rtt_us=f6.get("base_rtt_us", 0),
                           ccstate=fig6_ccstate(f6["runs"], f6["sizes"], f6["deadlines_ms"]),
                           schemes=per)
    if "fig7" in raw:
        f7 = raw["fig7"]
        rows = []
        for run in f7["runs"]:
            flows = run["flows"]
            missed = sum(1 for r in flows if r["met"] is False)
            bg = run["background"]
            bg_mbit = [r["bytes"] * 8 / r["fct_us"] for r in bg if r["fct_us"] > 0]
            fcts = sorted(r["fct_us"] for r in flows)
            red = [q for q in run["qdisc"] if q.get("kind") == "red"]
            row = dict(cc=run["cc"], fanin=run["fanin"], cpu_busy=run.get("cpu_busy"),
                       responses=len(flows), missed=missed,
                       missed_fraction=missed / max(1, len(flows)),
                       fct_p50_ms=percentile(fcts, 50) / 1000 if fcts else None,
                       fct_p99_ms=percentile(fcts, 99) / 1000 if fcts else None,
                       background_flows=len(bg),
                       background_mbit_mean=sum(bg_mbit) / len(bg_mbit) if bg_mbit else None,
                       marked_per_packet=(red[0].get("marked", 0) / red[0]["packets"]
                                          if red and red[0].get("packets") else None),
                       drops=sum(q.get("drops", 0) for q in red))
            if run.get("ccstate"):
                row["ccstate"] = ccstate_summary(run["ccstate"], f7["deadline_us"])
            if run.get("queue"):
                row["queue"] = queue_summary(run["queue"], run["queries"], flows, f7.get("k_bytes", raw["k_bytes"]))
            rows.append(row)
        res["fig7"] = dict(rig=f7.get("rig", "bytes"), scale=f7.get("scale", raw.get("fig7_scale")),
                           time_scale=f7.get("time_scale", raw.get("fig7_time_scale")),
                           resp_bytes=f7["resp_bytes"], deadline_us=f7["deadline_us"],
                           bg_bytes=f7["bg_bytes"], bg_every_us=f7["bg_every_us"],
                           k_bytes=f7.get("k_bytes", raw["k_bytes"]),
                           queue_bytes=f7.get("queue_bytes", raw["queue_bytes"]),
                           base_rtt_us=f7.get("base_rtt_us", 0), rows=rows)
    return res


def plots(raw, res, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    pngs = []
    if "fig6" in raw:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
        for ax, cc in zip(axes, SCHEMES):
            run = next(r for r in raw["fig6"]["runs"] if r["cc"] == cc and r["rep"] == 0)
            for fid in sorted({s["id"] for s in run["samples"]}):
                ss = sorted((s for s in run["samples"] if s["id"] == fid), key=lambda s: s["t_us"])
                t, mbit, prev_t, prev_b = [], [], 0, 0
                for s in ss:
                    dt = s["t_us"] - prev_t
                    if dt > 0:
                        t.append(s["t_us"] / 1e3)
                        mbit.append((s["bytes_acked"] - prev_b) * 8 / dt)
                    prev_t, prev_b = s["t_us"], s["bytes_acked"]
                i = int(fid[4:])
                ax.plot(t, mbit, label=f"{fid} ({raw['fig6']['deadlines_ms'][i]} ms)")
                ax.axvline(raw["fig6"]["deadlines_ms"][i], ls=":", color=ax.lines[-1].get_color())
            ax.set_title(f"{cc.upper()}: per-flow throughput")
            ax.set_xlabel("time (ms)")
            ax.grid(alpha=.3)
        axes[0].set_ylabel("Mbit/s")
        axes[1].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "fig6-throughput.png"), dpi=110)
        pngs.append("fig6-throughput.png")
    if "fig7" in res:
        rows = res["fig7"]["rows"]
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        fanins = sorted({r["fanin"] for r in rows})
        w = 0.35
        for j, cc in enumerate(SCHEMES):
            mf = [next(r["missed_fraction"] * 100 for r in rows if r["cc"] == cc and r["fanin"] == f) for f in fanins]
            bg = [next((r["background_mbit_mean"] or 0) for r in rows if r["cc"] == cc and r["fanin"] == f)
                  for f in fanins]
            x = [i + (j - .5) * w for i in range(len(fanins))]
            axes[0].bar(x, mf, w, label=cc.upper())
            axes[1].bar(x, bg, w, label=cc.upper())
        for ax, title in zip(axes, ["missed deadlines (%)", "background flow throughput (Mbit/s)"]):
            ax.set_xticks(range(len(fanins)), [f"fan-in {f}" for f in fanins])
            ax.set_title(title)
            ax.legend()
            ax.grid(axis="y", alpha=.3)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "fig7-fanin.png"), dpi=110)
        pngs.append("fig7-fanin.png")
    return pngs


def _fmt(d, k="p50", scale=1, f="{:.2f}"):
    if not d or d.get(k) is None:
        return "-"
    return f.format(d[k] * scale)


def _rng(d, f="{:.2f}"):
    if not d:
        return "-"
    return f"{f.format(d['p50'])} ({f.format(d['p10'])}-{f.format(d['p90'])})"


def ccstate_report(f7, k_bytes):
    rows = [r for r in f7["rows"] if r.get("ccstate")]
    if not rows:
        return []
    lo, hi = f7["deadline_us"]
    third = (hi - lo) / 3
    L = ["### Congestion state of the responses", "",
         "Each leaf sampled the socket sending each response (`dltraffic server --sample-ms`: "
         "`TCP_INFO` and `TCP_CC_INFO`, which for D2TCP holds d, the time and the bytes left). Per "
         "response, the mean over its samples with data in flight; the table gives the median and "
         "(10th-90th percentile) over the responses. p = alpha^d (DCTCP: p = alpha). Near: deadline "
         f"<= {(lo + third) / 1e3:.0f} ms, far: >= {(hi - third) / 1e3:.0f} ms. windows: FCT / mean srtt.", "",
         "| fan-in | scheme | deadlines | responses | missed | alpha | alpha at start | d | time at d = n "
         "| p | cwnd (pkts) | cwnd at start | srtt (ms) | windows |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["fanin"], r["cc"])):
        for cls in ("near", "mid", "far", "all"):
            c = r["ccstate"].get(cls)
            if not c:
                continue
            L.append(f"| {r['fanin']} | {r['cc']} | {cls} | {c['responses']} | "
                     + (f"{c['missed_fraction']:.1%}" if c["missed_fraction"] is not None else "-") + " | "
                     f"{_rng(c['alpha'])} | {_rng(c['alpha_at_start'])} | {_rng(c['d'])} | "
                     + (f"{c['d_at_cap_fraction']:.0%}" if c["d_at_cap_fraction"] is not None else "-") + " | "
                     f"{_rng(c['p'])} | {_rng(c['cwnd'], '{:.1f}')} | {_rng(c['cwnd_at_start'], '{:.0f}')} | "
                     f"{_rng(c['srtt_ms'], '{:.1f}')} | {_rng(c['windows'], '{:.1f}')} |")
    L.append("")
    qrows = [r for r in f7["rows"] if r.get("queue")]
    if qrows:
        L += [f"The bottleneck's queue (RED's backlog, sampled every {qrows[0]['queue']['period_ms']} ms over "
              "netlink) while a query's responses are in flight, and CE marks per packet then and over "
              f"the whole cell; K = {k_bytes / 1e3:.0f} KB.", "",
              "| fan-in | scheme | backlog KB p10 / p50 / p90 / p99 | max | time above K "
              "| marked per packet (bursts) | marked per packet (cell) | drops |",
              "|---|---|---|---|---|---|---|---|"]
        for r in sorted(qrows, key=lambda r: (r["fanin"], r["cc"])):
            q = r["queue"]
            b = q["backlog_kb_in_bursts"] or {}
            L.append(f"| {r['fanin']} | {r['cc']} | "
                     + " / ".join(f"{b.get(k, 0):.0f}" for k in ("p10", "p50", "p90", "p99"))
                     + f" | {q['backlog_kb_max'] or 0:.0f} | "
                     + (f"{q['above_k_fraction_in_bursts']:.0%}" if q["above_k_fraction_in_bursts"] is not None
                        else "-") + " | "
                     + (f"{q['marked_per_packet_in_bursts']:.2f}" if q["marked_per_packet_in_bursts"] is not None
                        else "-") + " | "
                     + (f"{r['marked_per_packet']:.2f}" if r.get("marked_per_packet") is not None else "-")
                     + f" | {r.get('drops', 0)} |")
        L.append("")
    return L


def report(res, pngs, out):
    L = ["# D2TCP against DCTCP", "",
         f"Kernel `{res['kernel']}` (vCPUs and root: the run header). One unshaped cubic flow "
         f"through the router namespace sustained {res['sustained_mbit'] or 0:.1f} Mbit/s in this guest"
         + (f" (virtual CPU {busy_pct(res.get('calibration_cpu_busy'))} busy: this flow measures what the "
            "guest's CPU sustains, so it is not a flagged cell)" if res.get("calibration_cpu_busy") is not None
            else "") + "; "
         f"the bottleneck is scaled to that. "
         f"Bottleneck: HTB {res['rate_mbit']} Mbit/s with RED marking CE above K (min = K, max = K + 1 "
         f"packet, probability 1); K, buffer and added delay: see each figure's section. "
         f"Both schemes in the same run, same topology, same seeds.", ""]
    cells = []
    if "fig6" in res:
        cells += [(f"Fig. 6 {cc} rep {i}", b) for cc in SCHEMES
                  for i, b in enumerate(res["fig6"]["schemes"].get(cc, {}).get("cpu_busy", []))]
    if "fig7" in res:
        cells += [(f"Fig. 7 fan-in {r['fanin']} {r['cc']}", r.get("cpu_busy"))
                  for r in sorted(res["fig7"]["rows"], key=lambda r: (r["fanin"], r["cc"]))]
    L += ["The virtual CPU's busy fraction is taken from /proc/stat over each cell's measured interval. "
          + cpu_note(cells), ""]
    if "fig6" in res:
        f6 = res["fig6"]
        L += ["## Deadline microbenchmark (paper Fig. 6)", "",
              f"Four flows into one receiver; paper sizes 150/220/350/500 MB scaled by {f6['scale']:.4f} "
              f"(link {res['rate_mbit']} Mbit/s against the paper's ~{FIG6_REF_GBIT} Gbit/s aggregate) to "
              + "/".join(f"{s / 1e6:.1f}" for s in f6["sizes"]) + " MB; deadlines unscaled "
              + "/".join(str(d) for d in f6["deadlines_ms"]) + f" ms. Rig \"{f6.get('rig', 'bytes')}\": "
              f"K = {f6.get('k_bytes', res['k_bytes'])} B, {f6.get('queue_bytes', res['queue_bytes'])} B buffer"
              + (f", {f6['base_rtt_us'] / 1e3:g} ms base round trip (netem on the receiver's port: the paper's "
                 f"{FIG6_PAPER_RTT_US} us times {f6['time_scale']:.1f})" if f6.get("base_rtt_us") else
                 ", no delay added") + ".", "",
              "| scheme | flows | missed | missed fraction | mean FCT per flow (ms) | CE marks "
              "| virtual CPU busy (per rep) |",
              "|---|---|---|---|---|---|---|"]
        for cc in SCHEMES:
            d = f6["schemes"].get(cc)
            if d:
                L.append(f"| {cc} | {d['flows']} | {d['missed']} | {d['missed_fraction']:.2f} | "
                         + ", ".join(f"{k}: {v:.0f}" for k, v in d["fct_ms_mean"].items())
                         + f" | {d['marks']} | "
                         + ", ".join(busy_pct(b) for b in d.get("cpu_busy", [])) + " |")
        if f6.get("ccstate"):
            L += ["", "Congestion state while all four flows run (medians of 100 ms samples over the reps; "
                  "paper: the near-deadline flows take the larger share):", "",
                  "| scheme | flow | alpha | cwnd (packets) | srtt (ms) | d (the module's formula on the "
                  "sample; for DCTCP what D2TCP would use) |", "|---|---|---|---|---|---|"]
            for cc in SCHEMES:
                for fid, st in f6["ccstate"].get(cc, {}).items():
                    L.append(f"| {cc} | {fid} | "
                             + (f"{st['alpha']:.2f}" if st["alpha"] is not None else "-")
                             + f" | {st['cwnd'] or 0:.0f} | {(st['srtt_us'] or 0) / 1e3:.2f} | "
                             + (f"{st['d']:.2f}" if st.get("d") is not None else "-") + " |")
        if "fig6-throughput.png" in pngs:
            L += ["", "![per-flow throughput](fig6-throughput.png)"]
        L.append("")
    if "fig7" in res:
        f7 = res["fig7"]
        L += ["## Fan-in with deadlines (paper Fig. 7)", "",
              f"One root, N leaves answering every query with {f7['resp_bytes'][0] / 1e3:.0f}-"
              f"{f7['resp_bytes'][1] / 1e3:.0f} KB within {f7['deadline_us'][0] / 1e3:.0f}-"
              f"{f7['deadline_us'][1] / 1e3:.0f} ms (uniform), two background flows of "
              f"{f7['bg_bytes'] / 1e6:.1f} MB every {f7['bg_every_us'] / 1e3:.0f} ms. Paper values "
              f"(100-500 KB, 5-25 ms, 10 MB / 80 ms at 10 Gbit/s) with sizes scaled by {f7['scale']:.3f} "
              f"and times by {f7['time_scale']:g} (rig \"{f7['rig']}\"). Bottleneck: RED marking above "
              f"K = {f7['k_bytes']} B ({f7['k_bytes'] / 1500:.0f} packets), {f7['queue_bytes']} B buffer"
              + (f"; {f7['base_rtt_us'] / 1e3:g} ms added to the base round trip (netem on the root's port: the "
                 f"paper's {FIG7_PAPER_RTT_US} us times {f7['time_scale']:g})" if f7["base_rtt_us"] else
                 "; no delay added") + ".", "",
              "| fan-in | scheme | responses | missed | missed fraction | FCT p50 (ms) | FCT p99 (ms) "
              "| background Mbit/s | virtual CPU busy |",
              "|---|---|---|---|---|---|---|---|---|"]
        for r in sorted(f7["rows"], key=lambda r: (r["fanin"], r["cc"])):
            L.append(f"| {r['fanin']} | {r['cc']} | {r['responses']} | {r['missed']} | "
                     f"{r['missed_fraction']:.3f} | {r['fct_p50_ms']:.1f} | {r['fct_p99_ms']:.1f} | "
                     f"{(r['background_mbit_mean'] or 0):.1f} | {busy_pct(r.get('cpu_busy'))} |")
        if "fig7-fanin.png" in pngs:
            L += ["", "![fan-in](fig7-fanin.png)"]
        L.append("")
        L += ccstate_report(f7, f7["k_bytes"])
    L += ["Raw records: `raw.json`; summary: `results.json`. Rerun with `make bench-d2tcp`."]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(L) + "\n")


def host_main(a):
    if not a.rate_mbit and hostrun.clock_of(a) == "virtual":
        # virtual time is a fixed-speed machine: one unshaped flow sustains
        # about VIRTUAL_SUSTAINED_MBIT (1000-1050 measured), so the rate is
        # fixed rather than calibrated (a calibration moved it 5% between
        # boots); the calibration still runs and is reported
        a.rate_mbit = int(hostrun.VIRTUAL_SUSTAINED_MBIT * RATE_FRACTION)
    cmd = [hostrun.GUEST_PY, os.path.join(ROOT, "bench", "d2tcp.py"), "--guest",
           "--reps", str(a.reps), "--queries", str(a.queries), "--rate-mbit", str(a.rate_mbit)]
    if a.only:
        cmd += ["--only", a.only]
    if a.fanins:
        cmd += ["--fanins", ",".join(map(str, a.fanins))]
    cmd += ["--fig6-rig", a.fig6_rig, "--fig7-rig", a.fig7_rig]
    for opt, v in (("--cc-sample-ms", a.cc_sample_ms), ("--q-sample-ms", a.q_sample_ms)):
        if v is not None:
            cmd += [opt, str(v)]

    def render(raw, res, out):
        report(res, plots(raw, res, out), out)
    # cpu_busy is a diagnostic of the run, not a figure of it (as in testbed/run.py)
    hostrun.run(a, cmd, analyse, render, "bench-d2tcp")


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("--guest", action="store_true", help=argparse.SUPPRESS)
    hostrun.add_args(ap, os.path.join(ROOT, "results", "bench-d2tcp"))
    ap.add_argument("--only", choices=["fig6", "fig7"])
    ap.add_argument("--reps", type=int, default=3, help="repetitions of fig6 per scheme")
    ap.add_argument("--rate-mbit", type=int, default=0,
                    help="bottleneck rate; 0 (default): measure the guest and scale to it")
    ap.add_argument("--queries", type=int, default=None,
                    help="queries per fan-in and scheme in fig7 (default: 30 on the 'time' rig, 60 on 'bytes')")
    ap.add_argument("--fanins", type=lambda v: [int(x) for x in v.split(",")], default=None,
                    help="fig7's fan-ins, comma-separated (default %s)" % ",".join(map(str, FIG7_FANINS)))
    ap.add_argument("--fig6-rig", choices=FIG6_RIGS, default="time",
                    help="how fig6 scales the paper's testbed to the bottleneck (see FIG6_RIGS)")
    ap.add_argument("--fig7-rig", choices=FIG7_RIGS, default="time",
                    help="how fig7 scales the paper's testbed to the bottleneck (see FIG7_RIGS)")
    ap.add_argument("--cc-sample-ms", type=int, default=None,
                    help="fig7: each leaf samples alpha, d, cwnd, srtt of every response this often "
                    "(0: off; default: the time scale / 5 ms, at least 2)")
    ap.add_argument("--q-sample-ms", type=int, default=None,
                    help="fig7: sample the bottleneck's queue and CE marks this often "
                    "(0: off; default: the time scale / 10 ms, at least 2)")
    a = ap.parse_args(argv)
    if a.queries is None:
        a.queries = 30 if a.fig7_rig == "time" else 60
    (guest_main if a.guest else host_main)(a)


if __name__ == "__main__":
    main()
