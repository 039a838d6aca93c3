#!/usr/bin/env python3
"""make bench-fastlane: FastLane against TCP's own loss recovery, side by side in one run.

  pa       the partition-aggregate workload of the paper (Sec. 5): an
           aggregator queries workers that answer with 2/4/8/16/32 KB
           (fanned in to 32-160 KB per query), while 1 MB long flows
           share the aggregator's port; short traffic is 10% of the load,
           the load 20/40/60/80% of the port's rate.
  incast   N workers x one response to one aggregator through one port,
           N from 8 to 80.

Schemes, each on the same namespaces and seeds:

  tcp               stock TCP (CUBIC, SACK, RACK-TLP, timestamps), 200 ms RTOmin
  tcp-rto10         the same with a 10 ms RTOmin (route option rto_min)
  tcp-quench        the paper's baseline (Sec. 2.2.1, TCP-Quench in Sec. 4): ports
                    send ICMP Source Quench for each drop (fastlane mode quench, at
                    the data's priority, no caps), hosts reduce cwnd as for ECN
                    (net.ipv4.tcp_source_quench=1) and resend nothing at once
  tcp-fastlane      stock TCP with net.ipv4.tcp_fastlane=1, fastlane ports
  dctcp             DCTCP, ports marking CE above K (RED)
  dctcp-fastlane    DCTCP with FastLane, fastlane ports marking CE above K

Every switch port is a fastlane qdisc in the FastLane schemes (caps at the
paper's 1% of the rate and 2.5% of the buffer), a byte FIFO of the same
size otherwise.  The topology is one switch (a router namespace), the
ToR of FastLane's incast and of D2TCP's testbed; the aggregator's port
is shaped to the rate the guest sustains (measured first, as bench-d2tcp).

On the host this script boots the release kernel (scripts/vmrun.py) and
runs itself inside with --guest, which writes raw.json; then it writes
results.json, PNG plots and report.md next to it.
"""
import argparse
import json
import os
import subprocess
import time

from dcnet import config, progress
from dcnet import samples as sampling
from dcnet import ROOT
from dcnet import hostrun
from dcnet.stats import busy_pct, cpu_busy, cpu_note, cpu_sample, percentile, sample_at

SCHEMES = ["tcp", "tcp-rto10", "tcp-quench", "tcp-fastlane", "dctcp", "dctcp-fastlane"]
RATE_FRACTION = 0.2
BUFFER = 128 * 1024              # per port, the paper's 128 KB
K_BYTES = 30000                  # DCTCP's marking threshold
SIZES_KB = [2, 4, 8, 16, 32]     # short responses
TOTAL_KB = 160                   # a query's responses fan in to at most this
WORKERS = 16
LONG_BYTES = 1_000_000
LONG_SENDERS = 2
LOADS = [0.2, 0.4, 0.6, 0.8]
SHORT_SHARE = 0.1
INCAST_N = [8, 16, 32, 48, 80]
INCAST_BYTES = 16 * 1024
TC = config.get("DCNET_TC")


def sh(cmd, ns=None, check=True):
    from dcnet.testbed.netlab import sh as _sh
    return _sh(cmd, ns=ns, check=check)


def fanin_of(kb):
    return max(1, min(WORKERS, TOTAL_KB // kb))


def port_qdisc(scheme, rate_mbit):
    """the fastlane qdisc's options of a scheme's ports, or None where they
    are a plain byte FIFO (bfifo) or RED"""
    if scheme.endswith("fastlane"):
        ce = f" ce_threshold {K_BYTES}" if scheme.startswith("dctcp") else ""
        return f"fastlane limit {BUFFER} rate {rate_mbit}mbit{ce}"
    if scheme == "tcp-quench":
        # the same port, a Source Quench for each drop instead
        return f"fastlane limit {BUFFER} rate {rate_mbit}mbit mode quench"
    return None


def host_sysctls(scheme):
    """the TCP sysctls every host of a scheme runs with"""
    dctcp = scheme.startswith("dctcp")
    return {"net.ipv4.tcp_fastlane": int(scheme.endswith("fastlane")),
            "net.ipv4.tcp_source_quench": int(scheme == "tcp-quench"),
            "net.ipv4.tcp_ecn": 1 if dctcp else 2}


def configure(lab, scheme, rate_mbit, aggregator, ports, hosts=True):
    """the switch ports (fresh counters), and every host's TCP, for one
    scheme"""
    from dcnet.testbed.fabric import batch, netns, sysctl
    fl = scheme.endswith("fastlane")
    dctcp = scheme.startswith("dctcp")
    # sysctls through setns(2), routes and qdiscs in batches: every
    # process start costs a second or more in the guest
    for name, (ns, i) in (lab.hosts.items() if hosts else []):
        with netns(ns):
            for k, v in host_sysctls(scheme).items():
                sysctl(k, v)
        rto = " rto_min 10ms" if scheme == "tcp-rto10" else ""
        batch("ip", [f"route replace default via 10.0.{i}.254{rto}"], ns)
    with netns(lab.sw):
        sysctl("net.ipv4.tcp_fastlane", int(fl))
    batch("tc", [f"qdisc del dev {dev} root" for dev in ports], lab.sw, force=True)
    L = []
    for dev in ports:
        if dev == aggregator:
            L.append(f"qdisc add dev {dev} root handle 1: htb default 1")
            L.append(f"class add dev {dev} parent 1: classid 1:1 htb rate {rate_mbit}mbit ceil {rate_mbit}mbit")
            parent = "parent 1:1 handle 10:"
        else:
            parent = "root"
        if port_qdisc(scheme, rate_mbit):
            L.append(f"qdisc add dev {dev} {parent} {port_qdisc(scheme, rate_mbit)}")
        elif dctcp:
            L.append(f"qdisc add dev {dev} {parent} red limit {BUFFER} min {K_BYTES} max {K_BYTES + 1500}"
                     f" avpkt 1500 burst {K_BYTES // 1500 + 1} probability 1.0 ecn bandwidth {rate_mbit}mbit")
        else:
            L.append(f"qdisc add dev {dev} {parent} bfifo limit {BUFFER}")
    batch("tc", L, lab.sw)


def port_stats(lab, ports):
    out = {}
    qs = json.loads(sh(f"{TC} -s -j qdisc show", ns=lab.sw))
    for dev in ports:
        leaf = [q for q in qs if q.get("dev") == dev and q["kind"] in ("fastlane", "red", "bfifo")]
        if leaf:
            q = leaf[0]
            out[dev] = {k: q.get(k, 0) for k in ("kind", "bytes", "packets", "drops", "nf_generated",
                                                  "nf_sent", "nf_bytes", "nf_cap_drops", "nf_backlog_max",
                                                  "nf_sent_idle", "ce_marked", "marked",
                                                  "nf_pending_max", "nf_pending_drops",
                                                  "quench_generated", "quench_none")}
    return out


# The hosts' FastLane counters (nstat -az | grep -i fastlane), in the
# report's order: what the notifications became, then bound_sim's
FL_COUNTERS = ("TCPFastLaneNotify", "TCPFastLaneRetrans", "TCPFastLaneCtlResend", "TCPFastLaneStale",
               "TCPFastLaneBadSeq", "TCPFastLaneBadOpts", "TCPFastLaneNoSocket", "TCPFastLaneRefused",
               "TCPFastLaneRateLimited", "TCPFastLaneLockDropped", "TCPFastLaneBoundAllowed",
               "TCPFastLaneBoundLowest", "TCPFastLaneBoundThrottled", "TCPFastLaneDeferred",
               "TCPFastLaneTailPush", "TCPFastLaneBoundPair")


# Linux's undo of a recovery it judged spurious (tcp_packet_delayed(),
# DSACKs): an undo unmarks every lost segment, notified ones included
# (issue 20, fifth session); and retransmissions marked lost again
UNDO_COUNTERS = ("TCPPartialUndo", "TCPFullUndo", "TCPDSACKUndo", "TCPLossUndo", "TCPLostRetransmit")


def netstat(lab):
    keys = FL_COUNTERS + ("TCPTimeouts", "TCPLossProbes", "TCPSackRecovery", "TCPSourceQuench") + UNDO_COUNTERS
    from dcnet.testbed.fabric import netns
    tot = dict.fromkeys(keys, 0)
    for name, (ns, _) in lab.hosts.items():
        with netns(ns):
            with open("/proc/thread-self/net/netstat") as f:
                lines = f.read().splitlines()
        for a, b in zip(lines[::2], lines[1::2]):
            if a.startswith("TcpExt:"):
                for k, v in zip(a.split()[1:], b.split()[1:]):
                    if k in tot:
                        tot[k] += int(v)
    return tot


def run_pa(lab, scheme, rate_mbit, load, duration, workers, longs, seed):
    """the cell's flows, and the virtual CPU's busy fraction from the
    traffic's start until its last process ended"""
    from dcnet.testbed.netlab import DLTRAFFIC, json_lines, monotonic_us
    cc = "dctcp" if scheme.startswith("dctcp") else "cubic"
    rate_Bps = rate_mbit * 1e6 / 8
    short_Bps = load * SHORT_SHARE * rate_Bps / len(SIZES_KB)
    long_Bps = load * (1 - SHORT_SHARE) * rate_Bps / len(longs)
    start = monotonic_us() + 1_500_000
    procs = []
    for j, kb in enumerate(SIZES_KB):
        f = fanin_of(kb)
        interval = int(f * kb * 1024 / short_Bps * 1e6)
        q = max(3, int(duration * 1e6 / interval))
        leaves = ",".join(f"{lab.ip(w)}:{5001 + j}" for w in workers[:f])
        procs.append(("short", kb, lab.spawn("agg", [
            DLTRAFFIC, "fanin", "--leaves", leaves, "--queries", str(q), "--resp-bytes", str(kb * 1024),
            "--interval-us", str(interval), "--cc", cc, "--seed", str(seed + j), "--start-at-us", str(start)])))
    every = int(LONG_BYTES / long_Bps * 1e6)
    count = max(1, int(duration * 1e6 / every))
    for b in longs:
        procs.append(("long", 0, lab.spawn(b, [
            DLTRAFFIC, "bulk", "-c", lab.ip("agg"), "-p", "5100", "--bytes", str(LONG_BYTES), "--every-us",
            str(every), "--count", str(count), "--cc", cc, "--id-prefix", f"{b}-", "--start-at-us", str(start)])))
    c0 = sample_at(start)
    outs = []
    for kind, kb, p in procs:
        try:
            out, err = p.communicate(timeout=duration * 10 + 300)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        outs.append((kind, kb, out))
    busy = cpu_busy(c0, cpu_sample())
    flows = []
    for kind, kb, out in outs:
        for r in json_lines(out):
            if r.get("type") == "flow":
                flows.append(dict(kind=kind, kb=kb, bytes=r["bytes"], fct_us=r["fct_us"]))
    return flows, busy


def run_incast(lab, scheme, n, queries, workers, seed):
    from dcnet.testbed.netlab import DLTRAFFIC, json_lines
    cc = "dctcp" if scheme.startswith("dctcp") else "cubic"
    leaves = ",".join(f"{lab.ip(w)}:5001" for w in workers[:n])
    c0 = cpu_sample()           # the queries start as soon as fanin does
    p = lab.spawn("agg", [DLTRAFFIC, "fanin", "--leaves", leaves, "--queries", str(queries),
                          "--resp-bytes", str(INCAST_BYTES), "--interval-us", "300000", "--cc", cc,
                          "--seed", str(seed)])
    out, err = p.communicate(timeout=1800)
    busy = cpu_busy(c0, cpu_sample())
    recs = json_lines(out)
    return dict(flows=[r["fct_us"] for r in recs if r.get("type") == "flow"],
                queries=[r["fct_us"] for r in recs if r.get("type") == "query"], cpu_busy=busy)


def calibrate():
    """(Mbit/s, virtual CPU busy fraction) of one unshaped cubic flow in
    this guest (bench-d2tcp's, dcnet.bench.calibrate)"""
    from dcnet.bench.calibrate import calibrate as one_flow
    return one_flow()


def servers(lab, workers, ports, cc):
    from dcnet.testbed.netlab import DLTRAFFIC
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for w in workers:
        for port in ports:
            lab.spawn(w, [DLTRAFFIC, "server", "-p", str(port), "--cc", cc], **quiet)


def kill_servers(lab):
    for p in lab.procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    lab.procs = []


def start_capture(lab, hosts, port, out, tag):
    """tcpdump on every host's eth0 for the TCP packets of @port (headers
    only), when asked for (--capture); the processes, to stop"""
    if not port:
        return []
    # written to the guest's memory during the cell, not over 9p
    files = [(f"/tmp/cap-{tag}-{h}.pcap", os.path.join(out, f"cap-{tag}-{h}.pcap")) for h in hosts]
    procs = [lab.spawn(h, ["tcpdump", "-i", "eth0", "-s", "128", "-n", "-w", f[0], f"tcp port {port}"],
                       stderr=subprocess.DEVNULL) for h, f in zip(hosts, files)]
    time.sleep(1)
    return list(zip(procs, files))


def stop_capture(caps):
    import shutil
    for p, _ in caps:
        p.terminate()
    for p, (tmp, dst) in caps:
        p.wait()
        shutil.move(tmp, dst)


def guest_main(a):
    from dcnet.testbed.netlab import Lab
    out = config.get("DCNET_OUT")
    subprocess.run("modprobe tcp_dctcp; modprobe sch_fastlane", shell=True, check=True)
    from dcnet.warm import install_for_guest
    install_for_guest()     # nothing a cell executes is read over 9p inside it
    sustained, cal_busy = calibrate()
    rate = a.rate_mbit or max(1, int(sustained * RATE_FRACTION))
    print(f"calibration: one unshaped flow {sustained:.1f} Mbit/s; aggregator port {rate} Mbit/s", flush=True)
    raw = dict(kernel=os.uname().release, rate_mbit=rate, sustained_mbit=sustained, buffer=BUFFER,
               k_bytes=K_BYTES, duration_s=a.duration, calibration_cpu_busy=cal_busy, pa=[], incast=[])
    # the cells, for the host's progress lines (dcnet/progress.py)
    schemes = a.schemes or SCHEMES
    progress.start((len(schemes) * len([x for x in LOADS if a.loads is None or x in a.loads])
                    if a.only in (None, "pa") else 0)
                   + (len(schemes) * len(a.incast_n or INCAST_N) if a.only in (None, "incast") else 0))
    if a.only in (None, "pa"):
        workers = [f"w{i}" for i in range(WORKERS)]
        longs = [f"b{i}" for i in range(LONG_SENDERS)]
        lab = Lab(["agg"] + workers + longs, prefix="p")
        ports = list(lab.hosts)
        try:
            for scheme in a.schemes or SCHEMES:
                cc = "dctcp" if scheme.startswith("dctcp") else "cubic"
                configure(lab, scheme, rate, "agg", ports)
                servers(lab, workers, range(5001, 5001 + len(SIZES_KB)), cc)
                lab.server("agg", 5100, cc=cc)
                time.sleep(1)
                for load in [x for x in LOADS if a.loads is None or x in a.loads]:
                    n0 = netstat(lab)
                    configure(lab, scheme, rate, "agg", ports, hosts=False)  # fresh counters
                    caps = start_capture(lab, ["agg"] + workers, a.capture, out, f"{scheme}-{load}")
                    t0 = time.time()
                    flows, busy = run_pa(lab, scheme, rate, load, a.duration, workers, longs, seed=sampling.seed(11))
                    el = time.time() - t0
                    stop_capture(caps)
                    raw["pa"].append(dict(scheme=scheme, load=load, flows=flows, elapsed_s=el, cpu_busy=busy,
                                          ports=port_stats(lab, ports),
                                          netstat={k: v - n0[k] for k, v in netstat(lab).items()}))
                    short = sorted(f["fct_us"] for f in flows if f["kind"] == "short")
                    p999 = short[min(len(short) - 1, int(len(short) * 0.999))] / 1000 if short else -1
                    print(f"pa {scheme:14s} load {load:.1f}: {len(short)} short, p99.9 {p999:.1f} ms, "
                          f"{sum(f['kind'] == 'long' for f in flows)} long; virtual CPU {busy_pct(busy)} busy",
                          flush=True)
                    progress.cell_done(f"pa {scheme} load {load:.1f}")
                kill_servers(lab)
        finally:
            lab.close()
    if a.only in (None, "incast"):
        nmax = max(a.incast_n or INCAST_N)
        workers = [f"w{i}" for i in range(nmax)]
        lab = Lab(["agg"] + workers, prefix="i")
        ports = list(lab.hosts)
        try:
            for scheme in a.schemes or SCHEMES:
                cc = "dctcp" if scheme.startswith("dctcp") else "cubic"
                configure(lab, scheme, rate, "agg", ports)
                servers(lab, workers, [5001], cc)
                time.sleep(1)
                for n in a.incast_n or INCAST_N:
                    n0 = netstat(lab)
                    configure(lab, scheme, rate, "agg", ports, hosts=False)
                    t0 = time.time()
                    r = run_incast(lab, scheme, n, a.incast_queries, workers, seed=sampling.seed(5))
                    r["elapsed_s"] = time.time() - t0
                    r.update(scheme=scheme, n=n, ports=port_stats(lab, ports),
                             netstat={k: v - n0[k] for k, v in netstat(lab).items()})
                    raw["incast"].append(r)
                    q = sorted(r["queries"])
                    print(f"incast {scheme:14s} N={n:2d}: query p99 {q[int(len(q) * .99)] / 1000 if q else -1:.1f} ms; "
                          f"virtual CPU {busy_pct(r['cpu_busy'])} busy", flush=True)
                    progress.cell_done(f"incast {scheme} N={n}")
                kill_servers(lab)
        finally:
            lab.close()
    with open(os.path.join(out, "raw.json"), "w") as f:
        json.dump(raw, f)


# ----------------------------------------------------------------- host side

def pct(v, p):
    """p as a fraction (0.999): dcnet.stats.percentile, interpolated."""
    return percentile(v, p * 100)


def host_counters(ns):
    """the FastLane counters of a cell, summed over its hosts, by short
    name (Notify, Stale, ..., BoundThrottled); None where the run did not
    record one (an older raw.json)"""
    return {k[len("TCPFastLane"):]: ns.get(k) for k in FL_COUNTERS}


def host_table(rows, first, key):
    """Markdown: the host counters of the FastLane schemes' cells"""
    names = [k[len("TCPFastLane"):] for k in FL_COUNTERS]
    L = [f"| {first} | scheme | " + " | ".join(names) + " | RTOs |",
         "|---|---|" + "---|" * (len(names) + 1)]
    for r in rows:
        if not r["scheme"].endswith("fastlane"):
            continue
        h = r.get("host") or host_counters(r["netstat"])
        L.append(f"| {key(r)} | {r['scheme']} | " + " | ".join(fmt(h[n], "{}") for n in names)
                 + f" | {r['netstat'].get('TCPTimeouts', 0)} |")
    return L


def quench_counters(c):
    """the Source Quenches of a cell: made by its ports, drops none could
    be made of (IPv6, fragments), acted on by its hosts"""
    return dict(quench_generated=sum(p.get("quench_generated", 0) for p in c["ports"].values()),
                quench_none=sum(p.get("quench_none", 0) for p in c["ports"].values()),
                quench_acted=c["netstat"].get("TCPSourceQuench", 0))


def quench_table(rows, first, key):
    """Markdown: the Source Quench cells' quenches, from ports to hosts"""
    L = [f"| {first} | drops | quenches sent | drops without a quench | quenches acted on (TCPSourceQuench) "
         "| RTOs |", "|---|---|---|---|---|---|"]
    for r in rows:
        if r["scheme"] == "tcp-quench":
            L.append(f"| {key(r)} | {r['drops']} | {r['quench_generated']} | {r['quench_none']} | "
                     f"{r['quench_acted']} | {r['netstat'].get('TCPTimeouts', 0)} |")
    return L


def analyse(raw):
    rate_Bps = raw["rate_mbit"] * 1e6 / 8
    res = dict(kernel=raw["kernel"], rate_mbit=raw["rate_mbit"], sustained_mbit=raw["sustained_mbit"],
               calibration_cpu_busy=raw.get("calibration_cpu_busy"),
               buffer=raw["buffer"], k_bytes=raw["k_bytes"], duration_s=raw["duration_s"], pa=[], incast=[])
    for c in raw["pa"]:
        row = dict(scheme=c["scheme"], load=c["load"], netstat=c["netstat"], cpu_busy=c.get("cpu_busy"),
                   host=host_counters(c["netstat"]))
        for kb in SIZES_KB:
            f = [x["fct_us"] / 1000 for x in c["flows"] if x["kind"] == "short" and x["kb"] == kb]
            row[f"short{kb}"] = dict(n=len(f), p99=pct(f, .99), p999=pct(f, .999))
        allshort = [x["fct_us"] / 1000 for x in c["flows"] if x["kind"] == "short"]
        row["short"] = dict(n=len(allshort), p50=pct(allshort, .5), p99=pct(allshort, .99),
                            p999=pct(allshort, .999))
        lng = [x["fct_us"] / 1000 for x in c["flows"] if x["kind"] == "long"]
        row["long"] = dict(n=len(lng), mean=sum(lng) / len(lng) if lng else None)
        nf_bytes = sum(p.get("nf_bytes", 0) for p in c["ports"].values())
        nf_max = max([p.get("nf_backlog_max", 0) for p in c["ports"].values()] or [0])
        per_port_bw = max([p.get("nf_bytes", 0) / c["elapsed_s"] / rate_Bps for p in c["ports"].values()] or [0])
        row.update(nf_generated=sum(p.get("nf_generated", 0) for p in c["ports"].values()),
                   nf_bytes=nf_bytes, nf_cap_drops=sum(p.get("nf_cap_drops", 0) for p in c["ports"].values()),
                   nf_bw_fraction_max=per_port_bw, nf_buffer_fraction_max=nf_max / raw["buffer"],
                   drops=sum(p.get("drops", 0) for p in c["ports"].values()),
                   **quench_counters(c))
        res["pa"].append(row)
    for c in raw["incast"]:
        res["incast"].append(dict(scheme=c["scheme"], n=c["n"], cpu_busy=c.get("cpu_busy"),
                                  queries=len(c["queries"]),
                                  qct_p50=(pct(c["queries"], .5) or 0) / 1000,
                                  qct_p99=(pct(c["queries"], .99) or 0) / 1000,
                                  fct_p99=(pct(c["flows"], .99) or 0) / 1000,
                                  fct_p999=(pct(c["flows"], .999) or 0) / 1000,
                                  netstat=c["netstat"], host=host_counters(c["netstat"]),
                                  nf_generated=sum(p.get("nf_generated", 0) for p in c["ports"].values()),
                                  nf_cap_drops=sum(p.get("nf_cap_drops", 0) for p in c["ports"].values()),
                                  # the hand-off of notifications to the port's work
                                  # (older raw.json: none recorded)
                                  nf_pending_max=max([p.get("nf_pending_max", 0)
                                                      for p in c["ports"].values()] or [0]),
                                  nf_pending_drops=sum(p.get("nf_pending_drops", 0) for p in c["ports"].values()),
                                  nf_buffer_fraction_max=max([p.get("nf_backlog_max", 0)
                                                              for p in c["ports"].values()] or [0]) / raw["buffer"],
                                  # older raw.json has no incast elapsed time: no rate fraction
                                  nf_bw_fraction_max=(max([p.get("nf_bytes", 0) for p in c["ports"].values()] or [0])
                                                      / c["elapsed_s"] / rate_Bps) if c.get("elapsed_s") else None,
                                  drops=sum(p.get("drops", 0) for p in c["ports"].values()),
                                  **quench_counters(c)))
    # reductions of the short flows' p99.9 against the two baselines
    red = []
    for row in res["pa"]:
        if not row["scheme"].endswith("fastlane"):
            continue
        base = "tcp" if row["scheme"] == "tcp-fastlane" else "dctcp"
        for b in ([base, "tcp-rto10", "tcp-quench"] if base == "tcp" else [base]):
            other = next((r for r in res["pa"] if r["scheme"] == b and r["load"] == row["load"]), None)
            if other and other["short"]["p999"] and row["short"]["p999"] is not None:
                red.append(dict(scheme=row["scheme"], against=b, load=row["load"],
                                p999_reduction=1 - row["short"]["p999"] / other["short"]["p999"],
                                p99_reduction=1 - row["short"]["p99"] / other["short"]["p99"]))
    res["reductions"] = red
    res["goals"] = goals(res)
    return res


# The goals for TCP + FastLane (the paper's Sec. 5 claims, against
# stock TCP and against its implementation baseline, TCP with a 10 ms
# RTOmin)
GOAL_LOADS = (0.4, 0.6, 0.8)
GOAL_VS_TCP = 0.68            # short-flow p99.9 at least 68% below stock TCP's
GOAL_VS_RTO10 = 0.50          # ... and at least 50% below TCP-RTO10's
GOAL_INCAST_N = 80
CAP_RATE = 0.01               # notifications: at most 1% of a port's rate
CAP_BUFFER = 0.025            # ... and 2.5% of its buffer


def updown(reduction):
    """'78% below' (FastLane faster) or '16% above' (slower)"""
    return f"{reduction * 100:.0f}% below" if reduction >= 0 else f"{-reduction * 100:.0f}% above"


def goals(res):
    """Each goal as a dict(goal, status, detail, cells):
    status 'met', 'not met' or 'not measured' (the run lacks a cell it
    needs); cells hold the numbers it was decided on."""
    out = []
    pa = {(r["scheme"], r["load"]): r for r in res["pa"]}
    for base, need, name in (("tcp", GOAL_VS_TCP, "stock TCP"), ("tcp-rto10", GOAL_VS_RTO10, "TCP, RTOmin 10 ms")):
        cells, missing = [], []
        for ld in GOAL_LOADS:
            fl, other = pa.get(("tcp-fastlane", ld)), pa.get((base, ld))
            if not fl or not other or fl["short"]["p999"] is None or not other["short"]["p999"]:
                missing.append(ld)
                continue
            redn = 1 - fl["short"]["p999"] / other["short"]["p999"]
            cells.append(dict(load=ld, fastlane_p999=fl["short"]["p999"], base_p999=other["short"]["p999"],
                              reduction=redn, met=redn >= need))
        status = "not measured" if missing else ("met" if all(c["met"] for c in cells) else "not met")
        detail = "; ".join(f"{int(c['load'] * 100)}%: {c['fastlane_p999']:.1f} ms vs {c['base_p999']:.1f} ms, "
                           f"{updown(c['reduction'])} ({'met' if c['met'] else 'not met'})" for c in cells)
        if missing:
            detail += ("; " if detail else "") + "no cell at " + ", ".join(f"{int(x * 100)}%" for x in missing)
        out.append(dict(goal=f"short-flow p99.9 FCT >= {GOAL_VS_TCP * 100 if base == 'tcp' else GOAL_VS_RTO10 * 100:.0f}% "
                             f"below {name} at 40-80% load", key=f"p999_vs_{base}", status=status,
                        detail=detail, cells=cells))
    inc = {(r["scheme"], r["n"]): r for r in res["incast"]}
    fl, rto10, tcp = (inc.get((s, GOAL_INCAST_N)) for s in ("tcp-fastlane", "tcp-rto10", "tcp"))
    if fl and rto10 and tcp:
        p99_ok = fl["qct_p99"] < rto10["qct_p99"]
        drops_ok = fl["drops"] <= tcp["drops"]
        status = "met" if p99_ok and drops_ok else "not met"
        detail = (f"query p99 {fl['qct_p99']:.1f} ms vs TCP-RTO10's {rto10['qct_p99']:.1f} ms "
                  f"({'below' if p99_ok else 'not below'}); drops {fl['drops']} vs TCP's {tcp['drops']} "
                  f"({fl['drops'] / tcp['drops']:.1f}x)" if tcp["drops"] else
                  f"query p99 {fl['qct_p99']:.1f} ms vs TCP-RTO10's {rto10['qct_p99']:.1f} ms "
                  f"({'below' if p99_ok else 'not below'}); drops {fl['drops']} vs TCP's 0")
        detail += f"; FastLane RTOs {fl['netstat'].get('TCPTimeouts', 0)}"
        cells = [dict(fastlane_p99=fl["qct_p99"], rto10_p99=rto10["qct_p99"], fastlane_drops=fl["drops"],
                      tcp_drops=tcp["drops"], rto10_drops=rto10["drops"], p99_met=p99_ok, drops_met=drops_ok)]
    else:
        status, cells = "not measured", []
        detail = f"needs incast N = {GOAL_INCAST_N} of tcp, tcp-rto10 and tcp-fastlane" + (
            f" (FastLane alone: query p99 {fl['qct_p99']:.1f} ms, {fl['drops']} drops, "
            f"{fl['netstat'].get('TCPTimeouts', 0)} RTOs)" if fl else "")
    out.append(dict(goal=f"incast N = {GOAL_INCAST_N}: query p99 below TCP-RTO10's, drops no higher than TCP's",
                    key="incast", status=status, detail=detail, cells=cells))
    # the caps, over every FastLane cell (both schemes)
    rows = [r for r in res["pa"] + res["incast"] if r["scheme"].endswith("fastlane")]
    bw = [r["nf_bw_fraction_max"] for r in rows if r.get("nf_bw_fraction_max") is not None]
    buf = [r["nf_buffer_fraction_max"] for r in rows if r.get("nf_buffer_fraction_max") is not None]
    if not bw or not buf:
        status, detail = "not measured", "no FastLane cell"
    else:
        ok = max(bw) <= CAP_RATE and max(buf) <= CAP_BUFFER
        status = "met" if ok else "not met"
        detail = (f"notifications at most {max(bw) * 100:.2f}% of a port's rate ({len(bw)} cells; cap "
                  f"{CAP_RATE * 100:g}%) and {max(buf) * 100:.2f}% of its buffer ({len(buf)} cells; cap "
                  f"{CAP_BUFFER * 100:g}%); drops the caps made: {sum(r.get('nf_cap_drops', 0) for r in rows)}")
    out.append(dict(goal="caps held: notifications <= 1% of the rate, <= 2.5% of the buffer", key="caps",
                    status=status, detail=detail, cells=[dict(rate_max=max(bw, default=None),
                                                              buffer_max=max(buf, default=None))]))
    return out


def goals_md(gs):
    """Markdown: one row per goal"""
    L = ["| goal | status | numbers |", "|---|---|---|"]
    for g in gs:
        L.append(f"| {g['goal']} | **{g['status']}** | {g['detail']} |")
    return L


def plots(res, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    pngs = []
    if res["pa"]:
        fig, axes = plt.subplots(1, 3, figsize=(15, 4))
        loads = sorted({r["load"] for r in res["pa"]})
        for s in SCHEMES:
            rows = [next((r for r in res["pa"] if r["scheme"] == s and r["load"] == ld), None) for ld in loads]
            if not any(rows):
                continue
            x = [int(ld * 100) for ld in loads]
            axes[0].plot(x, [r["short"]["p999"] if r else None for r in rows], "o-", label=s)
            axes[1].plot(x, [r["short"]["p99"] if r else None for r in rows], "o-", label=s)
            axes[2].plot(x, [r["long"]["mean"] if r else None for r in rows], "o-", label=s)
        for ax, t in zip(axes, ["short flows: p99.9 FCT (ms)", "short flows: p99 FCT (ms)",
                                "long flows: mean FCT (ms)"]):
            ax.set_title(t)
            ax.set_xlabel("load (% of the port's rate)")
            ax.set_yscale("log")
            ax.grid(alpha=.3)
        axes[0].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "pa-fct.png"), dpi=110)
        pngs.append("pa-fct.png")
    if res["incast"]:
        fig, ax = plt.subplots(figsize=(6, 4))
        for s in SCHEMES:
            rows = sorted((r for r in res["incast"] if r["scheme"] == s), key=lambda r: r["n"])
            if rows:
                ax.plot([r["n"] for r in rows], [r["qct_p99"] for r in rows], "o-", label=s)
        ax.set_xlabel("senders")
        ax.set_ylabel("query completion p99 (ms)")
        ax.set_yscale("log")
        ax.grid(alpha=.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "incast.png"), dpi=110)
        pngs.append("incast.png")
    return pngs


def fmt(v, f="{:.1f}"):
    return "-" if v is None else f.format(v)


def report(res, pngs, out):
    L = ["# FastLane against TCP's own loss recovery", "",
         f"Kernel `{res['kernel']}` (vCPUs and root: the run header). One unshaped flow sustained "
         f"{res['sustained_mbit']:.1f} Mbit/s; the aggregator's port is HTB {res['rate_mbit']} Mbit/s "
         f"(scale {res['rate_mbit'] / 10000:.4f} of the paper's 10 Gbit/s) over a {res['buffer']} B port buffer; "
         f"DCTCP's K = {res['k_bytes']} B. All schemes in one run, same namespaces and seeds."
         + (f" The unshaped flow kept the virtual CPU {busy_pct(res['calibration_cpu_busy'])} busy (it "
            "measures what the guest's CPU sustains, so it is not a flagged cell)."
            if res.get("calibration_cpu_busy") is not None else ""), ""]
    cells = [(f"partition-aggregate {r['scheme']} load {int(r['load'] * 100)}%", r.get("cpu_busy"))
             for r in sorted(res["pa"], key=lambda r: (r["load"], SCHEMES.index(r["scheme"])))]
    cells += [(f"incast {r['scheme']} N={r['n']}", r.get("cpu_busy"))
              for r in sorted(res["incast"], key=lambda r: (r["n"], SCHEMES.index(r["scheme"])))]
    L += ["The virtual CPU's busy fraction is taken from /proc/stat over each cell's measured interval. "
          + cpu_note(cells), ""]
    if res.get("goals"):
        L += ["## Goals (TCP + FastLane, the paper's Sec. 5 claims)", ""] + goals_md(res["goals"]) + [""]
    if res["pa"]:
        L += ["## Partition-aggregate (paper Sec. 5)", "",
              f"Short responses {'/'.join(map(str, SIZES_KB))} KB fanned in to at most {TOTAL_KB} KB per query "
              f"from {WORKERS} workers, 10% of the load; 1 MB long flows from {LONG_SENDERS} senders, 90%; "
              f"{res['duration_s']} s per cell.", "",
              "| load | scheme | short flows | short p99 (ms) | short p99.9 (ms) | long flows | long mean FCT (ms) "
              "| drops | notifications | nf bandwidth (max port, % of rate) | nf buffer (max, % of buffer) | "
              "nf cap drops | RTOs | virtual CPU busy |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in sorted(res["pa"], key=lambda r: (r["load"], SCHEMES.index(r["scheme"]))):
            L.append(f"| {int(r['load'] * 100)}% | {r['scheme']} | {r['short']['n']} | {fmt(r['short']['p99'])} | "
                     f"{fmt(r['short']['p999'])} | {r['long']['n']} | {fmt(r['long']['mean'], '{:.0f}')} | "
                     f"{r['drops']} | {r['nf_generated']} | {r['nf_bw_fraction_max'] * 100:.2f} | "
                     f"{r['nf_buffer_fraction_max'] * 100:.2f} | {r['nf_cap_drops']} | "
                     f"{r['netstat'].get('TCPTimeouts', 0)} | {busy_pct(r.get('cpu_busy'))} |")
        L += ["", "p99.9 and p99 FCT of the short flows, FastLane against its baselines "
              "(positive: FastLane is faster):", "",
              "| scheme | against | load | p99.9 reduction | p99 reduction |", "|---|---|---|---|---|"]
        for r in res["reductions"]:
            L.append(f"| {r['scheme']} | {r['against']} | {int(r['load'] * 100)}% | "
                     f"{r['p999_reduction'] * 100:.0f}% | {r['p99_reduction'] * 100:.0f}% |")
        L += ["", "Per flow size, p99.9 FCT (ms):", "",
              "| load | scheme | " + " | ".join(f"{kb} KB" for kb in SIZES_KB) + " |",
              "|---|---|" + "---|" * len(SIZES_KB)]
        for r in sorted(res["pa"], key=lambda r: (r["load"], SCHEMES.index(r["scheme"]))):
            L.append(f"| {int(r['load'] * 100)}% | {r['scheme']} | "
                     + " | ".join(fmt(r[f"short{kb}"]["p999"]) for kb in SIZES_KB) + " |")
        L += ["", "FastLane's host counters, summed over the hosts (`nstat -az | grep -i fastlane`): "
              "notifications taken (Notify), the retransmissions and control packets they caused "
              "(Retrans, CtlResend), those refused (Stale, BadSeq, BadOpts, NoSocket, Refused, "
              "RateLimited, LockDropped), and bound_sim's: segments resent within the bound "
              "(BoundAllowed), lowest-sequence resends beyond it (BoundLowest), passes it held "
              "back (BoundThrottled); lowest-sequence resends a rate-limited notification left to the "
              "next round trip (Deferred); held new segments sent with the recovery's last "
              "retransmission (TailPush); held resends sent beside a lone resend in flight (BoundPair):", ""]
        L += host_table(sorted(res["pa"], key=lambda r: (r["load"], SCHEMES.index(r["scheme"]))),
                        "load", lambda r: f"{int(r['load'] * 100)}%")
        if any(r["scheme"] == "tcp-quench" for r in res["pa"]):
            L += ["", "Source Quench (tcp-quench): a quench per drop from the ports, at the data's "
                  "priority; a host reduces cwnd for at most one a window and resends nothing:", ""]
            L += quench_table(sorted(res["pa"], key=lambda r: r["load"]), "load",
                              lambda r: f"{int(r['load'] * 100)}%")
        if "pa-fct.png" in pngs:
            L += ["", "![partition-aggregate](pa-fct.png)"]
        L.append("")
    if res["incast"]:
        L += ["## Incast", "", f"N workers answer each query with {INCAST_BYTES // 1024} KB through the "
              "aggregator's port.", "",
              "| N | scheme | queries | query p50 (ms) | query p99 (ms) | flow p99.9 (ms) | drops | notifications | RTOs "
              "| hand-off max / drops | virtual CPU busy |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in sorted(res["incast"], key=lambda r: (r["n"], SCHEMES.index(r["scheme"]))):
            L.append(f"| {r['n']} | {r['scheme']} | {r['queries']} | {r['qct_p50']:.1f} | {r['qct_p99']:.1f} | "
                     f"{r['fct_p999']:.1f} | {r['drops']} | {r['nf_generated']} | "
                     f"{r['netstat'].get('TCPTimeouts', 0)} | "
                     f"{r.get('nf_pending_max', 0)} / {r.get('nf_pending_drops', 0)} | {busy_pct(r.get('cpu_busy'))} |")
        L += ["", "FastLane's host counters in incast (as above):", ""]
        L += host_table(sorted(res["incast"], key=lambda r: (r["n"], SCHEMES.index(r["scheme"]))),
                        "N", lambda r: r["n"])
        if any(r["scheme"] == "tcp-quench" for r in res["incast"]):
            L += ["", "Source Quench in incast (as above):", ""]
            L += quench_table(sorted(res["incast"], key=lambda r: r["n"]), "N", lambda r: r["n"])
        if "incast.png" in pngs:
            L += ["", "![incast](incast.png)"]
        L.append("")
    L += ["Raw records: `raw.json`; summary: `results.json`. Rerun with `make bench-fastlane`."]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(L) + "\n")


def host_main(a):
    if not a.rate_mbit and hostrun.clock_of(a) == "virtual":
        # virtual time is a fixed-speed machine: one unshaped flow sustains
        # about VIRTUAL_SUSTAINED_MBIT (1000-1050 measured), so the rate is
        # fixed rather than calibrated (a calibration moved it 5% between
        # boots); the calibration still runs and is reported
        a.rate_mbit = int(hostrun.VIRTUAL_SUSTAINED_MBIT * RATE_FRACTION)
    cmd = [hostrun.GUEST_PY, os.path.join(ROOT, "bench", "fastlane.py"), "--guest",
           "--duration", str(a.duration), "--rate-mbit", str(a.rate_mbit),
           "--incast-queries", str(a.incast_queries)]
    if a.only:
        cmd += ["--only", a.only]
    if a.loads:
        cmd += ["--loads", ",".join(str(x) for x in a.loads)]
    if a.incast_n:
        cmd += ["--incast-n", ",".join(str(x) for x in a.incast_n)]
    if a.schemes:
        cmd += ["--schemes", ",".join(a.schemes)]
    if a.capture:
        cmd += ["--capture", str(a.capture)]

    def render(raw, res, out):
        report(res, plots(res, out), out)
    # cpu_busy is a diagnostic of the run, not a figure of it (as in testbed/run.py)
    hostrun.run(a, cmd, analyse, render, "bench-fastlane")


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("--guest", action="store_true", help=argparse.SUPPRESS)
    hostrun.add_args(ap, os.path.join(ROOT, "results", "bench-fastlane"), timeout=5400)
    ap.add_argument("--only", choices=["pa", "incast"])
    ap.add_argument("--duration", type=int, default=15, help="seconds per partition-aggregate cell")
    ap.add_argument("--loads", type=lambda s: [float(x) for x in s.split(",")], default=None)
    ap.add_argument("--rate-mbit", type=int, default=0,
                    help="the aggregator port's rate; 0 (default): measure the guest and scale to it")
    ap.add_argument("--incast-queries", type=int, default=20)
    ap.add_argument("--incast-n", type=lambda s: [int(x) for x in s.split(",")], default=None,
                    help="incast sender counts (default 8,16,32,48,80)")
    ap.add_argument("--schemes", type=lambda s: s.split(","), default=None,
                    help=f"a short run: only these schemes (default all: {','.join(SCHEMES)})")
    ap.add_argument("--capture", type=int, default=0, metavar="PORT",
                    help="diagnostics: capture the TCP packets of this server port (5001: the 2 KB "
                         "responses) at every host of the partition-aggregate cells, "
                         "cap-SCHEME-LOAD-HOST.pcap in the output directory")
    a = ap.parse_args(argv)
    if a.schemes and set(a.schemes) - set(SCHEMES):
        ap.error(f"--schemes: want some of {','.join(SCHEMES)}")
    (guest_main if a.guest else host_main)(a)


if __name__ == "__main__":
    main()
