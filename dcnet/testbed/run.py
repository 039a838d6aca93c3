#!/usr/bin/env python3
"""Run a testbed experiment on the emulated fabric and write its report.

    testbed/run.py --experiment testbed/experiments/default.json --out results/testbed

On the host this boots the release kernel (scripts/vmrun.py) and runs
itself inside with --guest, which writes raw.json; the host then writes
results.json, the PNG plots and report.md (testbed/report.py).

An experiment (JSON) names a topology, the schemes to compare and the
workloads to run under each:

    {"topology": {"kind": "clos", "spines": 4, "leaves": 4, "hosts_per_leaf": 4,
                  "link_mbit": 10, "buffer_bytes": 131072},
     "schemes": [{"name": "optimal", "topology": {"kind": "single"}, "mode": "ecmp"},
                 {"name": "ecmp", "mode": "ecmp"},
                 {"name": "mptcp", "mode": "mptcp", "subflows": 8}],
     "workloads": [{"name": "stride", "stride": 8}, {"name": "bijection", "seed": 1},
                   {"name": "stride", "with": [{"name": "mice", "count": 20}]}],
     "duration_s": 10,
     "sysctls": {"net.ipv4.tcp_congestion_control": "cubic"},
     "rtt_probe": true}

testbed/experiment.schema.json defines every key (testbed/experiment.py
checks a file against it, and across keys, before any boot: a bad key,
type or range is an error naming the file and the key's JSON path).
A scheme's "sysctls" apply to its hosts after the experiment's.
"faults" (at seconds after the clients start, in every scheme's run, so
every scheme's topology must have the link: no Optimal scheme on one
switch next to faults on l1)

    "faults": [{"at_s": 3, "node": "l1", "port": "s1", "action": "down"},
               {"at_s": 6, "node": "l1", "port": "s1", "action": "up"},
               {"at_s": 3, "node": "l1", "port": "s2", "action": "degrade", "mbit": 1}]

go into each run's record ("faults", "fault_errors"); a fault that
failed, or never happened, makes the run FAILED in the report and the
exit status non-zero.
A workload's "with" lists workloads run alongside it in the same run
(Presto's mice next to elephants: {"name": "stride", "with": [{"name":
"mice"}]}).  A scheme's "topology" overrides fields of the experiment's.  Elephants
run as iperf3 (under mptcpize for MPTCP); sized flows (shuffle, mice,
websearch, datamining, partagg) as one `dltraffic sched` per sending host
(testbed/tools), each flow an upload on its own connection at its start
time, FCT measured by the sender; the RTT probe as a sockperf
TCP ping-pong between the first host and the last, at rtt_probe_mps
messages per second (default 500: an unpaced ping-pong spins a vCPU).
"""
import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from dcnet import config, progress
from dcnet import samples as sampling
from dcnet import ROOT, hostrun, partial
from dcnet.stats import CPU_LIMIT, cpu_sample as cpu_busy

HERE = os.path.join(ROOT, "testbed")       # experiments/, tools/, this command's shim

SOCKPERF_PORT = 11111
SIZED_PORT = 5301           # one dltraffic server per receiving host
DLTRAFFIC = os.path.join(HERE, "tools", "dltraffic")
HASH_SEED = 1               # fib_multipath_hash_seed unless the experiment sets hash_seed
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def cpu_jiffies():
    """/proc/stat's first line by field (USER_HZ ticks summed over the
    CPUs), "total" their sum, "ncpu" the CPUs: the run record keeps the
    differences, from which the report derives CPU time per byte"""
    with open("/proc/stat") as f:
        lines = f.read().splitlines()
    v = [int(x) for x in lines[0].split()[1:len(CPU_FIELDS) + 1]]
    d = dict(zip(CPU_FIELDS, v))
    d["total"] = sum(v)
    d["ncpu"] = sum(1 for x in lines if re.match(r"cpu\d+ ", x))
    return d


CPORT_BASE = 20000          # iperf3 --cport: flow i's data connection leaves from CPORT_BASE + i
# `dltraffic sched --sport-base`: the k-th sized flow of a host's lane
# leaves from SPORT_BASE + lane * SPORT_LANE + k, so the 5-tuples the
# fabric hashes (ECMP, the routed hash) are the same in every boot; below
# the kernel's ephemeral range (32768-60999) and above iperf3's --cport
SPORT_BASE = 21000
SPORT_LANE = 5000
# `dltraffic fanin --sport-base`: an OLDI tree's connection to its k-th
# leaf leaves its parent from the tree's base + k, the trees of a parent
# one after the other from FANIN_SPORT_BASE, up to the ephemeral range
FANIN_SPORT_BASE = SPORT_BASE + 2 * SPORT_LANE
FANIN_SPORT_END = 32768


def fanin_sport_bases(trees):
    """{tree id: `dltraffic fanin --sport-base`}: per parent host, its
    trees' leaves on consecutive ports from FANIN_SPORT_BASE, in the
    order of trees"""
    nxt, out = {}, {}
    for t in trees:
        base = nxt.get(t["src"], FANIN_SPORT_BASE)
        if base + len(t["leaves"]) > FANIN_SPORT_END:
            raise ValueError(f"{t['src']}'s OLDI trees need more than the "
                             f"{FANIN_SPORT_END - FANIN_SPORT_BASE} fixed source ports "
                             f"from {FANIN_SPORT_BASE}")
        out[t["id"]] = base
        nxt[t["src"]] = base + len(t["leaves"])
    return out


def sched_sport_base(lane, nflows):
    """`dltraffic sched --sport-base` of a host's lane of nflows flows"""
    if lane < 0 or lane > 1 or nflows > SPORT_LANE:
        raise ValueError(f"lane {lane} with {nflows} sized flows: fixed source ports "
                         f"cover lanes 0-1 of at most {SPORT_LANE} flows each")
    return SPORT_BASE + lane * SPORT_LANE


def rtt_series(samples, ref, span_s=60.0):
    """[[t, rtt_us], ...] with t in seconds from the measured interval's
    start (`ref`: CLOCK_MONOTONIC then, the clock of a probe run with
    --no-rdtsc), or None when the first send time is not within span_s
    after it (a probe on another clock)"""
    if not 0 <= samples[0][0] - ref < span_s:
        return None
    return [[round(t - ref, 4), round(r, 1)] for t, r in samples]


def parse_fulllog(path, ref=None):
    """the RTT probe's summary; with ref (rtt_series'), also each
    sample against time ("series"), for runs with faults"""
    from dcnet.testbed.netlab import sockperf_samples
    from dcnet.stats import percentile
    samples = sockperf_samples(path)
    if not samples:
        return None
    rtts = sorted(r for _t, r in samples)

    def q(p):
        return percentile(rtts, p * 100)
    ps = [i / 100 for i in range(100)] + [0.995, 0.999, 1.0]
    rec = dict(n=len(rtts), p50=q(0.5), p90=q(0.9), p99=q(0.99), p999=q(0.999),
               cdf=[[q(p), p] for p in ps])
    if ref is not None:
        rec["series"] = rtt_series(samples, ref)
    return rec


def wait_listening(fab, node, ports, timeout=300.0):
    """Wait until every TCP port in ports listens in node's namespace (a
    fixed sleep is not enough in the debug guest, where starting a
    process in a namespace takes seconds).  Returns the ports that never
    listened."""
    want = set(ports)
    end = time.time() + timeout
    while want and time.time() < end:
        o = subprocess.run(["ss", "-N", fab.ns(node), "-ltnH"], capture_output=True, text=True).stdout
        for line in o.splitlines():
            f = line.split()
            if len(f) >= 4:
                try:
                    want.discard(int(f[3].rsplit(":", 1)[1]))
                except (IndexError, ValueError):
                    pass
        if want:
            time.sleep(0.1)
    return want


IPERF_INTERVAL_S = 0.5


def flow_record(flow, duration_s):
    """a flow's raw record, before any result"""
    return dict(id=flow["id"], src=flow["src"], dst=flow["dst"], kind=flow["kind"], bytes=0,
                duration_s=float(duration_s), tput_bps=None, fct_us=None, intervals_bps=[],
                deadline_us=None, met_deadline=None)


def iperf_record(flow, out, duration):
    rec = flow_record(flow, duration)
    try:
        j = json.loads(out)
    except ValueError:
        return rec
    if "error" in j and "end" not in j:
        rec["error"] = j["error"]
        return rec
    end = j.get("end", {})
    recv = end.get("sum_received") or {}
    if recv:
        rec["bytes"] = int(recv.get("bytes", 0))
        rec["tput_bps"] = float(recv.get("bits_per_second", 0))
    srv = (j.get("server_output_json") or {}).get("intervals") or j.get("intervals") or []
    # intervals of an --omit warm-up are flagged "omitted" and left out,
    # as iperf3 leaves them out of its end sums
    kept = [iv["sum"] for iv in srv if "sum" in iv and not iv["sum"].get("omitted")]
    rec["intervals_bps"] = [float(iv["bits_per_second"]) for iv in kept]
    # the length of one interval (iperf3 -i; the last may be shorter)
    rec["interval_s"] = round(float(kept[0].get("seconds", IPERF_INTERVAL_S)), 3) if kept else None
    return rec


def sized_schedules(fab, flows, offset_s=0):
    """per (sending host, lane), the `dltraffic sched` lines of its sized
    flows: at their start times (plus offset_s, the elephants' omitted
    warm-up), or (a shuffle's lane) one after the other.  Flows without a
    lane are lane 0; a shuffle's two lanes are two `dltraffic sched`
    processes, so two transfers run at a time."""
    per = {}
    for f in flows:
        at = "+" if f.get("start_s") is None else str(int((f["start_s"] + offset_s) * 1e6))
        per.setdefault((f["src"], f.get("lane", 0)), []).append(
            (f.get("start_s") or 0, f.get("order", 0),
             f"{f['id']} {fab.ip(f['dst'])}:{SIZED_PORT} {int(f['bytes'])} {at}"))
    return {k: "\n".join(x[2] for x in sorted(v)) + "\n" for k, v in per.items()}


def sized_record(flow, res):
    rec = flow_record(flow, 0)
    if res:
        rec["bytes"] = int(res["bytes"])
        rec["fct_us"] = float(res["fct_us"])
        rec["duration_s"] = rec["fct_us"] / 1e6
        rec["tput_bps"] = rec["bytes"] * 8 / max(rec["duration_s"], 1e-6)
    return rec


def fanin_argv(fab, tree, sport_base=None):
    """`dltraffic fanin` for one OLDI tree (workloads.oldi), run at its
    parent (after start_s): a connection to every leaf's server, `queries` queries each
    answered by every leaf with resp_bytes under a deadline drawn uniformly
    in [deadline_us, deadline_max_us] (the leaf sets TCP_DEADLINE on its
    response; under a congestion control without deadlines the deadline is
    only measured against)"""
    wait = ["sh", "-c", f'sleep {tree["start_s"]} && exec "$@"', "sh"] if tree.get("start_s") else []
    return wait + [DLTRAFFIC, "fanin", "--leaves", ",".join(f"{fab.ip(h)}:{SIZED_PORT}" for h in tree["leaves"]),
            "--queries", str(tree["queries"]), "--resp-bytes", str(tree["resp_bytes"]),
            "--deadline-us", f"{tree['deadline_us']}-{tree['deadline_max_us']}",
            "--interval-us", str(tree["interval_us"]), "--seed", str(tree["seed"])] + \
        (["--sport-base", str(sport_base)] if sport_base else [])


def oldi_records(tree, out, id0):
    """the raw flow records of one tree's responses from its `dltraffic
    fanin` output (JSON lines "type": "flow", "op": "rr", id "qQ-lL"): one
    per (query, leaf), src the leaf's host, dst the parent, kind "oldi",
    its deadline and met_deadline = FCT <= deadline (the FCT from the
    query's send to the response's last byte at the parent).  A response
    the output lacks (the process died or timed out) is a record without
    FCT and met_deadline None, so the report counts it incomplete, not met.
    Ids from id0 on, in (query, leaf) order."""
    got = {}
    for line in (out or "").splitlines():
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if j.get("type") != "flow" or j.get("op") != "rr":
            continue
        m = re.fullmatch(r"q(\d+)-l(\d+)", str(j.get("id", "")))
        if m:
            got[(int(m.group(1)), int(m.group(2)))] = j
    recs = []
    for q in range(tree["queries"]):
        for i, leaf in enumerate(tree["leaves"]):
            rec = flow_record(dict(id=id0 + len(recs), src=leaf, dst=tree["src"], kind="oldi"), 0)
            rec.update(app=tree.get("app"), query=q, tree=tree["id"], bytes=int(tree["resp_bytes"]))
            j = got.get((q, i))
            if j:
                rec["bytes"] = int(j["bytes"])
                rec["fct_us"] = float(j["fct_us"])
                rec["duration_s"] = rec["fct_us"] / 1e6
                rec["tput_bps"] = rec["bytes"] * 8 / max(rec["duration_s"], 1e-6)
                rec["deadline_us"] = float(j["deadline_us"]) or None
                rec["met_deadline"] = (rec["fct_us"] <= rec["deadline_us"]) if rec["deadline_us"] else None
            else:
                rec["deadline_us"] = float(tree["deadline_us"])
            recs.append(rec)
    return recs


# one row per `dltraffic server --sample-ms` sample ("type": "rsample"):
# the leaf host, then the line's fields (alpha, d, flags -1: not DCTCP's /
# D2TCP's; d in 1/1024, alpha in 1/1024)
RSAMPLE_FIELDS = ("host", "resp", "bytes", "deadline_us", "t_us", "cwnd", "srtt_us", "unacked", "sent",
                  "alpha", "d", "flags", "time_left_us", "bytes_left", "retrans")


def rsample_rows(host, out):
    """the rsample lines of one leaf's server output as RSAMPLE_FIELDS rows
    (other lines, and lines cut short by the server's end, skipped)"""
    rows = []
    for line in (out or "").splitlines():
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if not isinstance(j, dict) or j.get("type") != "rsample":
            continue
        try:
            rows.append([host] + [int(j[k]) for k in RSAMPLE_FIELDS[1:]])
        except (KeyError, TypeError, ValueError):
            continue
    return rows


class StartGate:
    """A start barrier for the clients of one run.

    Each client runs under `sh -c` that creates its ready file, then opens
    a FIFO for reading, which blocks until the runner opens it for
    writing; then it execs the client.  The runner opens the FIFO once
    every client is ready and keeps it open until the run ends, so a
    client that is late never blocks.
    """
    TIMEOUT_S = 120

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="testbed-gate-")
        self.fifo = os.path.join(self.dir, "go")
        os.mkfifo(self.fifo)
        self.n = 0
        self.fd = None

    def argv(self, cmd):
        ready = os.path.join(self.dir, f"ready.{self.n}")
        self.n += 1
        return ["sh", "-c", f': > {ready}; : < {self.fifo}; exec "$@"', "sh"] + cmd

    def _ready(self):
        return sum(1 for x in os.listdir(self.dir) if x.startswith("ready."))

    def open(self):
        """wait for every client (at most TIMEOUT_S), open the gate;
        returns how many were not ready"""
        t_end = time.time() + self.TIMEOUT_S
        while self._ready() < self.n and time.time() < t_end:
            time.sleep(0.1)
        late = self.n - self._ready()
        # O_RDWR never blocks on a FIFO (Linux): the gate opens even if
        # no client has reached it yet
        self.fd = os.open(self.fifo, os.O_RDWR)
        return late

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        shutil.rmtree(self.dir, ignore_errors=True)


def run_one(fab, scheme, wl, flows, exp):
    duration = exp.get("duration_s", 10)
    # the elephants' warm-up, left out of their throughput (iperf3
    # --omit); what is timed (sized flows, faults, the RTT probe, ss
    # samples) is shifted by it into the measured interval
    omit = exp.get("omit_s", 0)
    mptcp = fab.mode == "mptcp"
    # what `mptcpize run` does, with the toolbox's copy of its library
    from dcnet.warm import mptcp_preload
    wrap = ["env", f"LD_PRELOAD={mptcp_preload()}"] if mptcp and mptcp_preload() else \
        (["mptcpize", "run"] if mptcp else [])
    from dcnet.testbed.fabric import netns, sysctl
    # the experiment's host sysctls, then the scheme's (e.g. FastLane's)
    sysctls = {**exp.get("sysctls", {}), **scheme.get("sysctls", {})}
    for name in fab.hosts:
        with netns(fab.ns(name)):
            for k, v in sysctls.items():
                sysctl(k, v)
            if mptcp:
                sysctl("net.mptcp.enabled", 1)
    trees = [f for f in flows if f.get("kind") == "tree"]
    sized = [f for f in flows if f.get("bytes") and f.get("kind") != "tree"]
    flows = [f for f in flows if not f.get("bytes") and f.get("kind") != "tree"]
    servers = []
    # oldi's sample_ms: the leaves' servers sample every response's socket
    # (rsample lines to a file: a pipe would fill and stall the server)
    sample_ms = max([int(t.get("sample_ms") or 0) for t in trees] or [0])
    leaf_hosts = {h for t in trees for h in t["leaves"]}
    samplogs = []
    for dst in dict.fromkeys([f["dst"] for f in sized] + [h for t in trees for h in t["leaves"]]):
        if sample_ms and dst in leaf_hosts:
            logf = tempfile.TemporaryFile("w+")
            samplogs.append((dst, logf))
            servers.append(fab.spawn(dst, wrap + [DLTRAFFIC, "server", "-p", str(SIZED_PORT),
                                                  "--sample-ms", str(sample_ms)],
                                     stdout=logf, stderr=subprocess.DEVNULL))
            continue
        servers.append(fab.spawn(dst, wrap + [DLTRAFFIC, "server", "-p", str(SIZED_PORT)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    for f in flows:
        servers.append(fab.spawn(f["dst"], wrap + ["iperf3", "-s", "-1", "-p", str(f["port"])],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    probe = None
    hosts = list(fab.hosts)
    if exp.get("rtt_probe", True):
        fab.spawn(hosts[-1], ["sockperf", "server", "--tcp", "-i", "0.0.0.0", "-p", str(SOCKPERF_PORT)],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    listen = {}
    for f in flows:
        listen.setdefault(f["dst"], set()).add(int(f["port"]))
    for f in sized:
        listen.setdefault(f["dst"], set()).add(SIZED_PORT)
    for t in trees:
        for h in t["leaves"]:
            listen.setdefault(h, set()).add(SIZED_PORT)
    if exp.get("rtt_probe", True):
        listen.setdefault(hosts[-1], set()).add(SOCKPERF_PORT)
    for node, ports in listen.items():
        missing = wait_listening(fab, node, ports)
        if missing:
            print(f"run: {node} is not listening on {sorted(missing)} after 300 s", flush=True)
    time.sleep(0.2)
    # Every client waits at a start barrier: in the guest each process
    # start takes 1-5 s, so clients started one after the other would
    # overlap for only part of the run.
    gate = StartGate()
    clients = []
    for f in flows:
        clients.append((f, fab.spawn(f["src"], wrap + gate.argv(["iperf3", "-c", fab.ip(f["dst"]),
                                                                "-p", str(f["port"]), "-t", str(duration),
                                                                *(["-O", str(omit)] if omit else []),
                                                                "--cport", str(CPORT_BASE + f["id"]),
                                                                "-i", str(IPERF_INTERVAL_S), "-J", "--get-server-output"]))))
    scheds = []
    sched_lines = []
    for (src, lane), lines in sized_schedules(fab, sized, omit).items():
        sport = sched_sport_base(lane, lines.count("\n"))
        scheds.append(fab.spawn(src, wrap + gate.argv([DLTRAFFIC, "sched", "-p", str(SIZED_PORT),
                                                       "--sport-base", str(sport)]),
                                stdin=subprocess.PIPE))
        sched_lines.append(lines)
    # OLDI trees: one `dltraffic fanin` per tree at its parent
    # (stdout to a file: a response per line would fill a pipe and stall
    # the tree while the runner waits on other clients)
    fanins = []
    fanin_sports = fanin_sport_bases(trees)
    for t in trees:
        logf = tempfile.TemporaryFile("w+")
        fanins.append((t, fab.spawn(t["src"], gate.argv(fanin_argv(fab, t, fanin_sports[t["id"]])),
                                    stdout=logf), logf))
    # The RTT probe waits at the same barrier, sleeps 1 s and runs for
    # the run's duration less 4 s: sockperf spends about 2 s connecting
    # and warming up before its first sample, so it samples from about
    # 3 s after the elephants start to about 1 s before they end.
    # --no-rdtsc (runs with faults, whose RTT samples are cut into
    # stages): sockperf's clock is then CLOCK_MONOTONIC, the runner's
    # (rtt_series); its TSC clock ran 107-211 s behind it in a long
    # virtual-time boot (2026-11-25; RTTs agreed to 0.01% either way).
    # Not for every run: with it the debug guest's 1 s probe
    # (tests/guest/test_testbed.py) logged no sample once (CI run of
    # 2026-11-25), for a reason not found.  A
    # ping-pong logs one sample per round trip, so samples taken after
    # the elephants end (thousands a second on an idle path) would
    # outnumber those taken under load (a few a second) and make the
    # median the idle RTT.
    log = f"/tmp/testbed-sockperf-{os.getpid()}.csv"
    if exp.get("rtt_probe", True):
        probe = fab.spawn(hosts[0], gate.argv(
            ["sh", "-c", f'sleep {1 + omit} && exec "$@"', "sh",
             "sockperf", "ping-pong", "--tcp", *(["--no-rdtsc"] if exp.get("faults") else []),
             "-i", fab.ip(hosts[-1]),
             "-p", str(SOCKPERF_PORT), "-t", str(max(1, int(duration) - 4)),
             "-m", "64", "--mps", str(exp.get("rtt_probe_mps", 500)), "--full-log", log]))
    # what GRO pushes up at every host (opt in: it costs CPU)
    cap = None
    if exp.get("gro_capture"):
        from dcnet.testbed import grocap
        cap = grocap.GroCapture(fab)
        cap.start()
    late = gate.open()
    if late:
        print(f"run: {late} clients had not reached the start barrier after {gate.TIMEOUT_S} s", flush=True)
    t_cpu0 = cpu_busy()
    j_cpu0 = cpu_jiffies()
    for p, lines in zip(scheds, sched_lines):
        p.stdin.write(lines)    # after the barrier: sh does not read it
        p.stdin.close()
        p.stdin = None          # or communicate() flushes the closed pipe
    faults = Faults(fab, exp.get("faults", []), omit)
    faults.start()
    # the measured interval's start on the probe's clock
    clock_ref = time.monotonic() + omit if exp.get("faults") else None
    # TCP_INFO of the elephants during the run (dcnet/testbed/counters.py)
    from dcnet.testbed import counters
    ss_samples = []
    ss_timers = [threading.Timer(omit + frac * duration, lambda frac=frac: ss_samples.append(
        counters.sample(fab, flows, CPORT_BASE, frac))) for frac in exp.get("ss_at", counters.SS_AT)]
    for t in ss_timers:
        t.daemon = True
        t.start()
    # MPTCP: every host's connections and their subflows (dcnet/testbed/counters.py
    # mptcp_sample: per connection the TCP subflows, fully established or
    # not, and the bytes over each), once at the end of the warm-up, just
    # before the measured interval, and once in its last second
    mptcp_samples = []
    mptcp_timers = []
    if mptcp and flows:
        for label, at in (("measured_start", max(0.5, omit - 1.0)), ("measured_end", omit + max(0.5, duration - 1.0))):
            t = threading.Timer(at, lambda label=label, at=at: mptcp_samples.append(
                counters.mptcp_sample(fab, flows, CPORT_BASE, at, label)))
            t.daemon = True
            t.start()
            mptcp_timers.append(t)
    recs = []
    for f, p in clients:
        try:
            o, _e = p.communicate(timeout=omit + duration + 120)
        except subprocess.TimeoutExpired:
            p.kill()
            o, _e = p.communicate()
        recs.append(iperf_record(f, o, duration))
    done = {}
    for p in scheds:
        try:
            o, _e = p.communicate(timeout=omit + 10 * duration + 120)
        except subprocess.TimeoutExpired:
            p.kill()
            o, _e = p.communicate()
        for line in (o or "").splitlines():
            try:
                j = json.loads(line)
            except ValueError:
                continue
            if j.get("type") == "flow":
                done[str(j["id"])] = j
    recs += [sized_record(f, done.get(str(f["id"]))) for f in sized]
    oldi = []
    for t, p, logf in fanins:
        try:
            _o, e = p.communicate(timeout=10 * duration + 120)
        except subprocess.TimeoutExpired:
            p.kill()
            _o, e = p.communicate()
        logf.seek(0)
        o = logf.read()
        logf.close()
        if p.returncode:
            print(f"run: dltraffic fanin at {t['src']} (app {t.get('app')}) exited {p.returncode}: "
                  f"{(e or '')[-300:]}", flush=True)
        recs += oldi_records(t, o, 1 + max([r["id"] for r in recs] + [x["id"] for x, _p, _l in fanins]))
        oldi.append({k: t.get(k) for k in ("id", "app", "tree", "src", "leaves", "resp_bytes", "deadline_us",
                                           "deadline_max_us", "interval_us", "queries", "start_s")})
    t_cpu1 = cpu_busy()
    j_cpu1 = cpu_jiffies()
    rsamples = None
    if samplogs:
        time.sleep(1.0)         # after the CPU count: the last responses' samplers see their final ACK
        rows = []
        for host, logf in samplogs:
            logf.seek(0)
            rows += rsample_rows(host, logf.read())
            logf.close()
        rsamples = dict(sample_ms=sample_ms, fields=list(RSAMPLE_FIELDS), rows=rows)
    gro_capture = cap.stop() if cap else None
    for t in ss_timers + mptcp_timers:
        t.cancel()
        t.join(60)
    subflows = None
    if mptcp_samples:
        # the fewest fully established subflows of an elephant's data
        # connection when the measured interval starts
        mptcp_samples.sort(key=lambda x: x["at_s"])
        sm = counters.mptcp_summary(mptcp_samples, fab.subflows)
        subflows = sm[0]["min_established"]
        for x in sm:
            print(f"mptcp: {x['label']} ({x['at_s']:g} s): {x['connections']} data connections, "
                  f"{x['min_established']}-{x['max_established']} fully established subflows of "
                  f"{x['min_subflows']}-{x['max_subflows']}; short: {x['short'] or 'none'}", flush=True)
    host_counters = dict(counters.collect(fab), ss=sorted(ss_samples, key=lambda x: x["at"]))
    gate.close()
    fault_recs, fault_errors = faults.stop()
    rtt = None
    if probe:
        try:
            _o, perr = probe.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            probe.kill()
            _o, perr = probe.communicate()
        rtt = parse_fulllog(log, clock_ref)
        if rtt is None:
            print(f"run: the sockperf probe logged no RTT (exit {probe.returncode}): {(perr or '')[-400:]}",
                  flush=True)
    tot, idle = t_cpu1[0] - t_cpu0[0], t_cpu1[1] - t_cpu0[1]
    return dict(scheme=scheme["name"], workload=wl["name"], duration_s=float(duration), flows=recs,
                mptcp_subflows=subflows, mptcp_conns=mptcp_samples or None, faults=fault_recs, fault_errors=fault_errors,
                controller_events=list(fab.presto.events) if fab.presto else None,
                controller_setup=dict(fab.presto.timing, **fab.vswitch.timing) if fab.presto else None,
                flowcell_seed=(fab.flowcell_seed if fab.mode == "presto" and not fab.flowcell_seed_error
                               else None),
                flowlet_gap_us=getattr(fab, "flowlet_gap_us", None),
                ports=fab.port_counters(), rtt_us=rtt, host_counters=host_counters,
                gro_capture=gro_capture, oldi_trees=oldi or None, rsamples=rsamples,
                cpu_jiffies=dict({k: j_cpu1[k] - j_cpu0[k] for k in j_cpu0 if k != "ncpu"}, ncpu=j_cpu1["ncpu"]),
                cpu={"guest": max(0.0, min(1.0, 1 - idle / tot)) if tot else 0.0})


def fault_str(fault):
    mbit = f" to {fault.get('mbit')} Mbit/s" if fault.get("action") == "degrade" else ""
    return f"{fault.get('action')} {fault.get('node')}:{fault.get('port')}{mbit} at {fault.get('at_s')} s"


def apply_fault(fab, fault, t0=None):
    """apply one fault; returns its record: the fault's keys, "applied",
    "error" (None or why it failed) and "t_s" (seconds after t0).  Never
    raises: it runs on a timer thread, and a fault must not kill the run
    (its failure fails the run instead, through the record)."""
    rec = dict(fault, applied=False, error=None, t_s=round(time.time() - t0, 3) if t0 else None)
    try:
        if fault["action"] in ("down", "up"):
            fab.set_link(fault["node"], fault["port"], fault["action"] == "up")
        elif fault["action"] == "degrade":
            fab.degrade_link(fault["node"], fault["port"], fault["mbit"])
        else:
            raise ValueError(f"unknown action {fault['action']!r}")
        rec["applied"] = True
        print(f"fault: {fault_str(fault)}", flush=True)
    except Exception as e:
        rec["error"] = f"{type(e).__name__}: {e}" if not str(e) else str(e)
        print(f"fault: {fault_str(fault)} FAILED: {rec['error']}", flush=True)
    return rec


class Faults:
    """An experiment's faults during one run, each on a timer thread.

    start() arms the timers (offset_s + at_s after now: offset_s is the
    elephants' omitted warm-up, so at_s counts from the measured
    interval's start, and t_s in a record too); stop() cancels those that
    have not fired, waits for those being applied and returns (records,
    errors): one record per fault (apply_fault's; a fault that never
    happened has applied False and an error saying so), and one message
    per fault that failed or never happened.  A timer thread never
    raises."""
    JOIN_TIMEOUT_S = 60

    def __init__(self, fab, faults, offset_s=0):
        self.fab = fab
        self.offset_s = offset_s
        self.faults = list(faults)
        self.records = [None] * len(self.faults)
        self.timers = []
        self.t0 = None

    def start(self):
        self.t0 = time.time() + self.offset_s
        for i, fault in enumerate(self.faults):
            t = threading.Timer(self.offset_s + fault["at_s"], self._fire, (i,))
            t.daemon = True         # a run that raises must not wait for them
            t.start()
            self.timers.append(t)

    def _fire(self, i):
        fault = self.faults[i]
        self.records[i] = dict(fault, applied=False, t_s=None,
                               error="still being applied when the run ended")
        try:
            self.records[i] = apply_fault(self.fab, fault, self.t0)
        except BaseException as e:  # apply_fault does not raise; belt and braces
            self.records[i] = dict(fault, applied=False, t_s=None, error=f"{type(e).__name__}: {e}")

    def stop(self):
        for t in self.timers:
            t.cancel()
        for t in self.timers:
            t.join(self.JOIN_TIMEOUT_S)
        ran = round(time.time() - self.t0, 1) if self.t0 else 0
        recs, errors = [], []
        for fault, rec in zip(self.faults, self.records):
            if rec is None:
                rec = dict(fault, applied=False, t_s=None,
                           error=f"never happened: the run ended after {ran} s, before at_s")
            recs.append(rec)
            if not rec["applied"]:
                errors.append(f"fault {fault_str(fault)}: {rec['error']}")
        return recs, errors


def topology_for(exp, scheme):
    from dcnet.testbed.fabric import Topology
    t = dict(exp.get("topology", {}))
    t.update(scheme.get("topology", {}))
    return Topology(**t)


def experiment_congestion_controls(exp):
    """every congestion control an experiment or one of its schemes names"""
    return {str(d["net.ipv4.tcp_congestion_control"])
            for d in [exp.get("sysctls", {})] + [sc.get("sysctls", {}) for sc in exp["schemes"]]
            if "net.ipv4.tcp_congestion_control" in d}


def load_experiment(path, duration=0):
    """the experiment at path with --duration applied, checked against
    experiment.schema.json (and across keys); a bad one exits (2) with
    every problem, each naming the file and the key's JSON path"""
    from dcnet.testbed.experiment import ExperimentError, load, validate_experiment
    try:
        exp = load(path)
        name = path
        if duration and isinstance(exp, dict):
            exp["duration_s"] = duration
            name = f"{path} (with --duration {duration:g})"
        return validate_experiment(exp, name=name)
    except ExperimentError as e:
        print(f"testbed: bad experiment, nothing run:\n{e}", file=sys.stderr, flush=True)
        sys.exit(2)


def run_failures(raw):
    """every run's fault errors, as 'SCHEME/WORKLOAD: error'"""
    return [f"{r.get('scheme')}/{r.get('workload')}: {e}" for r in raw.get("runs", [])
            for e in r.get("fault_errors") or []]


def guest_main(a):
    global DLTRAFFIC
    from dcnet.testbed.fabric import Fabric, HASH_FIELDS
    from dcnet.testbed import workloads
    exp = load_experiment(a.experiment, a.duration)
    from dcnet.warm import install_for_guest
    DLTRAFFIC = install_for_guest()["dltraffic"]    # nothing a cell executes is read over 9p inside it
    subprocess.run("modprobe tcp_dctcp; modprobe sch_fastlane", shell=True)
    from dcnet.testbed.netlab import allow_congestion_controls
    allow_congestion_controls(experiment_congestion_controls(exp))
    base = topology_for(exp, {})
    raw = dict(meta=dict(platform="emulated", kernel=os.uname().release,
                         hosts=[f"h{i}" for i in range(1, base.n_hosts + 1)], link_mbit=base.link_mbit,
                         paper_link_mbit=base.paper_link_mbit, scale=base.scale,
                         started=datetime.datetime.now(datetime.timezone.utc).isoformat(),
                         hash_seed=sampling.seed(exp.get("hash_seed", HASH_SEED)), cport_base=CPORT_BASE,
                         sport_base=SPORT_BASE, sport_lane=SPORT_LANE,
                         hash_fields=exp.get("hash_fields", HASH_FIELDS),
                         experiment=exp,
                         **({"sample": sampling.index()} if sampling.index() else {})), runs=[])
    # the cells, for the host's progress lines (dcnet/progress.py)
    progress.start(len(cells_of(exp, getattr(a, "cells", None))))
    for scheme in exp["schemes"]:
        topo = topology_for(exp, scheme)
        for wl in exp["workloads"]:
            if not cell_selected(getattr(a, "cells", None), scheme, wl):
                continue
            t0 = time.time()
            fab = Fabric(topo, mode=scheme.get("mode", "ecmp"), subflows=scheme.get("subflows", 8),
                         hash_seed=sampling.seed(exp.get("hash_seed", HASH_SEED)), flowcell_bytes=scheme.get("flowcell_bytes"),
                         hash_fields=exp.get("hash_fields"),
                         **({"flowlet_gap_us": scheme["flowlet_gap_us"]}
                            if scheme.get("flowlet_gap_us") else {}),
                         **({"presto_gro": True} if scheme.get("presto_gro") else {}),
                         **({"presto_gro_knobs": scheme["presto_gro_knobs"]}
                            if scheme.get("presto_gro_knobs") else {}),
                         # each flow's first flowcell path from the seed (repeatable)
                         **({"flowcell_seed": sampling.seed(exp.get("hash_seed", HASH_SEED))}
                            if scheme.get("mode") == "presto" else {}))
            try:
                flows = []
                # "with": workloads run alongside (Presto's mice next to elephants)
                for part in [wl] + list(wl.get("with", [])):
                    params = {k: v for k, v in part.items() if k not in ("name", "with", "label")}
                    if sampling.index():
                        params["seed"] = sampling.seed(params.get("seed", 1))
                    params.setdefault("duration_s", exp.get("duration_s", 10))
                    params.setdefault("link_mbit", topo.link_mbit)
                    if part["name"] in ("random", "bijection", "oldi", "pairs") and base.kind == "clos":
                        # not under the sender's leaf (Presto Sec. 5), and
                        # the same flows for every scheme (Optimal too)
                        params.setdefault("hosts_per_leaf", base.hosts_per_leaf)
                    flows += workloads.generate(part["name"], list(fab.hosts), **params)
                workloads.renumber(flows)
                label = wl.get("label") or "+".join(part["name"] for part in [wl] + list(wl.get("with", [])))
                run = run_one(fab, scheme, dict(wl, name=label), flows, exp)
            finally:
                fab.close()
            raw["runs"].append(run)
            # the cells so far, for a boot stopped before its end
            # (testbed/report.py reads it like raw.json)
            part = os.path.join((config.get("DCNET_OUT") or a.out), "raw.partial.json")
            with open(part + ".tmp", "w") as f:
                json.dump(raw, f)
            os.replace(part + ".tmp", part)
            # and out of a sealed guest, should the boot end before raw.json
            partial.publish(part, "raw.partial.json")
            tp = [r["tput_bps"] for r in run["flows"] if r["tput_bps"] is not None]
            print(f"{scheme['name']:8s} {wl.get('label', wl['name']):10s} built in {fab.t_build:.1f} s, run {time.time() - t0:.0f} s:"
                  f" {len(tp)}/{len(flows)} flows, mean {sum(tp) / max(1, len(tp)) / 1e6:.2f} Mbit/s", flush=True)
            progress.cell_done(cell_name(scheme, wl))
    with open(os.path.join((config.get("DCNET_OUT") or a.out), "raw.json"), "w") as f:
        json.dump(raw, f)
    try:
        os.unlink(os.path.join((config.get("DCNET_OUT") or a.out), "raw.partial.json"))
    except FileNotFoundError:
        pass
    failed = run_failures(raw)
    if failed:
        print("testbed: FAILED: a fault did not happen as the experiment says:\n  " + "\n  ".join(failed),
              flush=True)
        sys.exit(1)


def cell_name(scheme, wl):
    """a cell's name: SCHEME/WORKLOAD (the workload's label, else its parts)"""
    label = wl.get("label") or "+".join(p["name"] for p in [wl] + list(wl.get("with", [])))
    return f"{scheme['name']}/{label}"


def cell_selected(cells, scheme, wl):
    """whether --cells (comma-separated shell patterns; None: all) selects a cell"""
    if not cells:
        return True
    import fnmatch
    return any(fnmatch.fnmatchcase(cell_name(scheme, wl), p.strip()) for p in cells.split(",") if p.strip())


def cells_of(exp, cells=None):
    """the names of the cells a run of exp makes, in order"""
    return [cell_name(s, w) for s in exp["schemes"] for w in exp["workloads"] if cell_selected(cells, s, w)]


def guest_cmd(a, out):
    cmd = [hostrun.GUEST_PY, os.path.join(HERE, "run.py"), "--guest",
           "--experiment", os.path.abspath(a.experiment), "--out", out]
    if a.duration:
        cmd += ["--duration", str(a.duration)]
    if getattr(a, "cells", None):
        cmd += ["--cells", a.cells]
    return cmd


def collect(out, rc):
    """One boot's raw.json; returns (raw, failures)."""
    raw_path = os.path.join(out, "raw.json")
    if not os.path.exists(raw_path):
        sys.exit(f"testbed: the guest run failed (see {out}/guest.log)")
    with open(raw_path) as f:
        raw = json.load(f)
    failed = run_failures(raw)
    if rc != 0 and not failed:
        sys.exit(f"testbed: the guest run failed (see {out}/guest.log)")
    return raw, failed


def cpu_flags(raw):
    """runs whose virtual CPU was busier than CPU_LIMIT: there the guest's
    CPU, not the network, may set the result"""
    return [f"{r['scheme']}/{r['workload']} {max((r.get('cpu') or {}).values() or [0]) * 100:.0f}%"
            for r in raw["runs"] if max((r.get("cpu") or {}).values() or [0]) > CPU_LIMIT]


# Wall time per boot: each cell's traffic (warm-up and measured) this many
# times over, plus set-up, times DCNET_TIMEOUT_SCALE; at least an hour.  A
# fixed hour was too short for presto.json: its 30 cells took 3315 s alone
# on a 2-core host and did not finish in 3600 s beside two other VMs.
CELL_WALL_PER_TRAFFIC_S = 20
CELL_SETUP_S = 300


def boot_timeout(exp, selected=None):
    """seconds of wall time a boot of experiment exp may take (of its
    cells --cells selects)"""
    cells = len(cells_of(exp, selected)) if selected else len(exp["schemes"]) * len(exp["workloads"])
    traffic = exp.get("omit_s", 0) + exp.get("duration_s", 10)
    scale = config.get("DCNET_TIMEOUT_SCALE")
    return int(max(3600, cells * (CELL_SETUP_S + CELL_WALL_PER_TRAFFIC_S * traffic)) * scale)


def host_main(a):
    from dcnet.testbed import report
    exp = load_experiment(a.experiment, a.duration)       # before any boot
    cells = getattr(a, "cells", None)
    if not cells_of(exp, cells):
        sys.exit(f"testbed: --cells {cells!r} selects none of: " + ", ".join(cells_of(exp)))
    if a.timeout is None:
        a.timeout = boot_timeout(exp, cells)
    out = os.path.abspath(a.out)
    outs, env_for = hostrun.plan(a, out)
    n = len(outs)
    boots = hostrun.boot_all(a, outs, lambda o: guest_cmd(a, o), env_for)
    results, walls, failures, rcs = [], [], [], []
    for run_out, (rc, wall) in zip(outs, boots):
        raw, failed = collect(run_out, rc)
        # failed faults: the report still shows the runs, marked FAILED
        res = report.build(raw, run_out)
        walls.append(wall)
        meta = raw.get("meta", {})
        flags = cpu_flags(raw)
        extra = {"scale": f"{meta.get('link_mbit')} Mbit/s links against the paper's "
                          f"{meta.get('paper_link_mbit')} ({meta.get('scale')})",
                 "seeds": (f"sample {meta['sample'] + 1}: every workload seed + {sampling.STRIDE * meta['sample']}, "
                           if meta.get("sample") else "workload seeds as in the experiment, ")
                          + "fib_multipath_hash_seed "
                          f"{meta.get('hash_seed')}, iperf3 --cport {meta.get('cport_base')}+flow id"
                          + (f", sized flows from port {meta['sport_base']}+{meta['sport_lane']}*lane+k"
                             if meta.get("sport_base") else "")
                          + (f", flowcell start seed {meta.get('hash_seed')} (ovs-dpctl set-flowcell)"
                             if any(r.get("flowcell_seed") is not None for r in raw.get("runs", [])) else ""),
                 "elephants measured": (f"over the last {(meta.get('experiment') or {}).get('duration_s', 10)} s"
                                        f" of {(meta.get('experiment') or {}).get('omit_s', 0)} s warm-up + "
                                        f"{(meta.get('experiment') or {}).get('duration_s', 10)} s (iperf3 --omit)"
                                        if (meta.get("experiment") or {}).get("omit_s") else "from their start"),
                 "virtual CPU": (f"above {CPU_LIMIT * 100:.0f}% busy in " + ", ".join(flags)) if flags
                 else f"at most {CPU_LIMIT * 100:.0f}% busy in every run"}
        hostrun.insert_header(os.path.join(run_out, "report.md"), hostrun.header(run_out, wall, extra))
        results.append(res)
        failures += failed
        rcs.append(rc)
    hostrun.finish_runs(a, out, results, walls, hostrun.clock_of(a), "testbed")
    print(open(os.path.join(out, "report.md")).read())
    if failures:
        sys.exit("testbed: FAILED: a fault did not happen as the experiment says:\n  " + "\n  ".join(failures))
    if any(rcs):
        sys.exit("testbed: the guest run failed")


def reanalyse(a):
    """--reanalyse DIR: the report of a finished run (DIR/raw.json[.xz], or
    DIR/run*/ of a --repeat run) again, into --out, without a boot"""
    from dcnet.testbed import report

    def analyse(raw):
        report.validate(raw, "raw")
        res = report.analyse(raw)
        report.validate(res, "results")
        return res

    def render(raw, res, out):
        report.markdown(res, report.plots(raw, res, out), out)
    if os.path.abspath(a.reanalyse) == os.path.abspath(a.out):
        sys.exit("testbed: --reanalyse DIR needs another --out (DIR keeps the run as it was)")
    results = hostrun.reanalyse(a.reanalyse, a.out, analyse, render, "testbed")
    return 1 if any(r.get("failed") for r in results) else 0


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("--guest", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--experiment", default=os.path.join(HERE, "experiments", "default.json"))
    hostrun.add_args(ap, os.path.join(ROOT, "results", "testbed"))
    # default: from the experiment's size (boot_timeout())
    ap.set_defaults(timeout=None)
    ap.add_argument("--duration", type=float, default=0, help="override the experiment's seconds per run")
    ap.add_argument("--cells", default=None, metavar="SCHEME/WORKLOAD,...",
                    help="run only these cells (shell patterns on SCHEME/WORKLOAD, the names "
                         "the report uses; e.g. 'ecmp/*,*/stride')")
    a = ap.parse_args(argv)
    if a.duration < 0:
        ap.error("--duration must be > 0 (or 0: the experiment's)")
    if a.reanalyse:
        return reanalyse(a)
    (guest_main if a.guest else host_main)(a)


if __name__ == "__main__":
    main()
