"""Per-run host counters for diagnosis (testbed/run.py puts them in each
run's record in raw.json under "host_counters").

Every fabric is built afresh per run (new namespaces), so the absolute
values read at the end of a run are that run's:

  nstat      per host: TCP's MIB counters (/proc/net/snmp "Tcp" and
             /proc/net/netstat "TcpExt", "MPTcpExt"), the nonzero ones;
             "totals" sums the interesting ones (reordering, DSACK,
             retransmissions, MPTCP joins) over hosts
  ss         per elephant flow, TCP_INFO as `ss -ti` prints it, sampled
             at the experiment's ss_at (fractions of the run, before
             iperf3 closes the connection; none by default, see SS_AT):
             cwnd, rtt, reordering, reord_seen, retrans, dsack_dups, ...
  nic        the host NICs' qdisc counters (the vSwitch's uN in Presto's
             modes, else the host's eth0): sent, drops, backlog
  presto_gro per host, eth0's Presto GRO state (Presto's modes; dcnet/prestogro.py)
  flowcell   the datapath's flowcell counters (`ovs-dpctl show`)

nstat also keeps IPv4's receive counters (Ip, IpExt): InReceives counts
the skbs IP receives after GRO (Presto GRO included), InOctets their
bytes and In{NoECT,ECT0,ECT1,CE}Pkts their wire segments (gso_segs), so
rx_mean_skb_bytes() and rx_segs_per_skb() give the mean size of what GRO
pushes up for free (ACKs included).  The distribution, the reordering
that reaches TCP and the paper's per-flowcell out-of-order count come
from GroCapture (opt in: the experiment's "gro_capture").

Reading never fails a run: an error is recorded instead.
"""
import json
import re
import subprocess

from dcnet import config

# Fractions of the run's duration at which to sample, when an experiment
# asks ("ss_at": [0.5, 0.9]).  None by default: a sample starts a process
# per elephant and per node inside the measured interval, which cost
# Optimal about 3% of its throughput on the 16-host Clos (8.70-9.15
# Mbit/s per elephant, mean 8.92, in five runs with samples at 0.5 and
# 0.9; 9.14 and 9.24 in two without).
SS_AT = ()

# summed over hosts into "totals"
TOTAL_KEYS = ("TcpRetransSegs", "TcpOutSegs", "TcpExtTCPSACKReorder", "TcpExtTCPTSReorder",
              "TcpExtTCPRenoReorder", "TcpExtTCPDSACKRecv", "TcpExtTCPDSACKRecvSegs",
              "TcpExtTCPDSACKOfoRecv", "TcpExtTCPDSACKOldSent", "TcpExtTCPDSACKOfoSent",
              "TcpExtTCPDSACKUndo", "TcpExtTCPDSACKIgnoredNoUndo", "TcpExtTCPDSACKIgnoredOld",
              "TcpExtTCPLostRetransmit", "TcpExtTCPFastRetrans", "TcpExtTCPSlowStartRetrans",
              "TcpExtTCPSpuriousRTOs", "TcpExtTCPTimeouts", "TcpExtTCPLossProbes",
              "TcpExtTCPLossProbeRecovery", "TcpExtTCPSackRecovery", "TcpExtTCPLossUndo",
              "TcpExtTCPFullUndo", "TcpExtTCPPartialUndo", "TcpExtTCPSackRecoveryFail",
              "TcpExtTCPOFOQueue", "TcpExtTCPOFODrop", "TcpExtTCPOFOMerge", "TcpExtTCPRcvQDrop",
              "TcpExtTCPSpuriousRtxHostQueues", "TcpExtTCPWantZeroWindowAdv", "TcpExtTCPToZeroWindowAdv",
              "TcpExtTCPSACKReneging", "TcpExtTCPLossFailures", "TcpExtTCPRcvCoalesce",
              "TcpExtTCPHystartTrainDetect", "TcpExtTCPHystartDelayDetect", "TcpExtTCPAckCompressed",
              "TcpInSegs", "IpInReceives", "IpExtInOctets", "IpExtInNoECTPkts", "IpExtInECT0Pkts",
              "IpExtInECT1Pkts", "IpExtInCEPkts",
              # MPTCP: connections and the subflows that joined them (a
              # join that never completes leaves SynTx above AckRx)
              "MPTcpExtMPCapableSYNTX", "MPTcpExtMPCapableSYNACKRX", "MPTcpExtMPJoinSynTx",
              "MPTcpExtMPJoinSynAckRx", "MPTcpExtMPJoinSynRx", "MPTcpExtMPJoinAckRx",
              "MPTcpExtMPJoinSynTxConnectErr", "MPTcpExtMPJoinSynAckHMacFailure",
              "MPTcpExtMPJoinAckHMacFailure", "MPTcpExtMPFallbackTokenInit", "MPTcpExtMPTCPRetrans")
MIB_PREFIXES = ("Tcp", "TcpExt", "Ip", "IpExt", "MPTcpExt")


def _mib(path):
    """{"TcpExtTCPSACKReorder": n, ...} of a /proc/net snmp-style file"""
    out = {}
    with open(path) as f:
        lines = f.read().splitlines()
    for names, values in zip(lines[0::2], lines[1::2]):
        p, names = names.split(":", 1)
        _p, values = values.split(":", 1)
        if p not in MIB_PREFIXES:
            continue
        for n, v in zip(names.split(), values.split()):
            try:
                v = int(v)
            except ValueError:
                continue
            if v and n not in ("RtoAlgorithm", "RtoMin", "RtoMax", "MaxConn", "Forwarding", "DefaultTTL"):
                out[p + n] = v
    return out


def nstat(fab):
    from dcnet.testbed.fabric import netns
    res = {}
    for name in fab.hosts:
        try:
            with netns(fab.ns(name)):
                # /proc/thread-self: this thread's namespace (/proc/self
                # is the process's main thread's)
                m = _mib("/proc/thread-self/net/snmp")
                m.update(_mib("/proc/thread-self/net/netstat"))
            res[name] = m
        except OSError as e:
            res[name] = {"error": str(e)}
    totals = {k: sum(h.get(k, 0) for h in res.values() if "error" not in h) for k in TOTAL_KEYS}
    return dict(hosts=res, totals=totals)


SS_FIELDS = {
    "cwnd": r"\bcwnd:(\d+)", "ssthresh": r"\bssthresh:(\d+)", "rtt_ms": r"\brtt:([\d.]+)/",
    "rttvar_ms": r"\brtt:[\d.]+/([\d.]+)", "minrtt_ms": r"\bminrtt:([\d.]+)",
    "reordering": r"\breordering:(\d+)", "reord_seen": r"\breord_seen:(\d+)",
    "retrans_total": r"\bretrans:\d+/(\d+)", "dsack_dups": r"\bdsack_dups:(\d+)",
    "lost": r"\blost:(\d+)", "sacked": r"\bsacked:(\d+)", "unacked": r"\bunacked:(\d+)",
    "bytes_retrans": r"\bbytes_retrans:(\d+)", "bytes_acked": r"\bbytes_acked:(\d+)",
    "delivery_rate_bps": r"\bdelivery_rate (\d+)bps", "pacing_rate_bps": r"\bpacing_rate (\d+)bps",
    "busy_ms": r"\bbusy:(\d+)ms", "rwnd_limited_ms": r"\brwnd_limited:(\d+)ms",
    "sndbuf_limited_ms": r"\bsndbuf_limited:(\d+)ms", "notsent": r"\bnotsent:(\d+)",
    "mss": r"\bmss:(\d+)", "app_limited": r"\b(app_limited)\b",
    # skmem: t = sk_wmem_alloc (what TSQ limits), w = sk_wmem_queued
    "wmem_alloc": r"skmem:\([^)]*\bt(\d+)", "wmem_queued": r"skmem:\([^)]*\bw(\d+)",
}


def ss_sample(fab, flows, cport_base):
    """TCP_INFO of each elephant's data connection (iperf3 --cport)"""
    res = []
    for f in flows:
        if f.get("bytes"):
            continue
        sport = cport_base + f["id"]
        try:
            o = subprocess.run([config.get("DCNET_SS"), "-N", fab.ns(f["src"]), "-tinmH", "state", "established",
                                f"sport = :{sport}"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired) as e:
            res.append(dict(id=f["id"], error=str(e)))
            continue
        text = " ".join(o.split())
        rec = dict(id=f["id"], src=f["src"], dst=f["dst"])
        for k, rx in SS_FIELDS.items():
            m = re.search(rx, text)
            if m:
                v = m.group(1)
                rec[k] = True if not v[:1].isdigit() else float(v) if "." in v else int(v)
        rec["raw"] = text[:1200]
        res.append(rec)
    return res


def sample(fab, flows, cport_base, at):
    """one sample during the run: TCP_INFO of the elephants, queues"""
    out = dict(at=at, flows=ss_sample(fab, flows, cport_base))
    try:
        out["queues"] = queues(fab)
    except Exception as e:      # never fail the run over a counter
        out["queues"] = {"error": f"{type(e).__name__}: {e}"}
    return out


def queues(fab):
    """the backlog (bytes, packets) of every leaf/spine qdisc and host NIC
    now: where a run's queueing delay sits"""
    tc = config.get("DCNET_TC")
    nodes = list(getattr(fab, "switches", []))
    if getattr(fab, "vswitched", False):
        nodes.append("vs")
    elif getattr(fab, "hosts", None):
        nodes += list(fab.hosts)
    res = {}
    for node in nodes:
        try:
            out = json.loads(subprocess.run([tc, "-n", fab.ns(node), "-s", "-j", "qdisc", "show"],
                                            capture_output=True, text=True, timeout=30).stdout or "[]")
        except (OSError, ValueError, subprocess.TimeoutExpired):
            continue
        for q in out:
            if q.get("parent") in ("1:1",) and (q.get("backlog") or q.get("qlen")):
                res[f"{node}>{q.get('dev')}"] = [q.get("backlog", 0), q.get("qlen", 0)]
    return res


def nic(fab):
    """qdisc counters of every host NIC: [{host, dev, kind, handle, ...}]"""
    from dcnet.testbed.presto import VS
    res = []
    if fab.vswitched:
        where = [(h.name, fab.ns(VS), f"u{h.index}") for h in fab.hosts.values()]
    else:
        where = [(h.name, fab.ns(h.name), "eth0") for h in fab.hosts.values()]
    tc = config.get("DCNET_TC")
    for host, ns, dev in where:
        try:
            out = json.loads(subprocess.run([tc, "-n", ns, "-s", "-j", "qdisc", "show", "dev", dev],
                                            capture_output=True, text=True, timeout=30).stdout or "[]")
        except (OSError, ValueError, subprocess.TimeoutExpired) as e:
            res.append(dict(host=host, dev=dev, error=str(e)))
            continue
        for q in out:
            res.append(dict(host=host, dev=dev, kind=q.get("kind"), handle=q.get("handle"),
                            parent=q.get("parent"), sent_bytes=q.get("bytes", 0),
                            sent_packets=q.get("packets", 0), drops=q.get("drops", 0),
                            overlimits=q.get("overlimits", 0), requeues=q.get("requeues", 0),
                            backlog=q.get("backlog", 0), qlen=q.get("qlen", 0)))
    return res


def presto_gro(fab):
    """each host's eth0: Presto GRO's settings and counters (its generic
    netlink family; {} on a kernel without it)"""
    from dcnet.prestogro import NetlinkError, PrestoGro, flat
    from dcnet.testbed.ns import netns
    res = {}
    for name in fab.hosts:
        try:
            with netns(fab.ns(name)), PrestoGro() as pg:
                res[name] = flat(pg.get("eth0"))
        except NetlinkError:
            res[name] = {}
    return res


def flowcell(fab):
    """the datapath's flowcell lines of `ovs-dpctl show`, parsed"""
    from dcnet.testbed.presto import VS
    from dcnet.testbed.fabric import ns_exec
    p = subprocess.run(ns_exec(fab.ns(VS)) + [fab.vswitch.prog["ovs-dpctl"], "show"],
                       capture_output=True, text=True, timeout=60, env=fab.vswitch.env)
    text = p.stdout
    d = {k: int(v) for k, v in re.findall(r"\b(flows|limit|packets|bytes|cells|evictions|expired|"
                                          r"alloc_fails|fallbacks|seed|gap|gap_cells):(\d+)", text)}
    lines = [x.strip() for x in text.splitlines() if "flowcell" in x or "cells:" in x]
    # the datapath's flow-table lookups: "missed" went to ovs-vswitchd
    # (an upcall), "lost" were dropped on the way
    m = re.search(r"lookups: hit:(\d+) missed:(\d+) lost:(\d+)", text)
    if m:
        d.update(lookup_hit=int(m.group(1)), lookup_missed=int(m.group(2)), lookup_lost=int(m.group(3)))
    return dict(d, raw=lines)


def collect(fab):
    """everything but the ss samples, at the end of a run"""
    out = {}
    vswitched = getattr(fab, "vswitched", False)
    for key, fn, when in (("nstat", nstat, True), ("nic", nic, True),
                          ("presto_gro", presto_gro, vswitched),
                          ("flowcell", flowcell, vswitched and getattr(fab, "vswitch", None) is not None)):
        if not when:
            continue
        try:
            out[key] = fn(fab)
        except Exception as e:      # never fail the run over a counter
            out[key] = {"error": f"{type(e).__name__}: {e}"}
    return out


# ---------------------------------------------------------------- MPTCP
# Each MPTCP subflow is a TCP socket; `ss -tni` prints its MPTCP state
# after "tcp-ulp-mptcp": flags (M/m MP_CAPABLE remote/local, J/j MP_JOIN
# remote/local, B/b backup, e fully established, c connected, v mapping
# valid) and "token:REMOTE(id:R)/LOCAL(id:L)", LOCAL being the token of
# the MPTCP connection the subflow belongs to on this host.
_SS_SUBFLOW = re.compile(r"tcp-ulp-mptcp\s+(?:flags:(\S+)\s+)?token:([0-9a-f]+)\(id:(\d+)\)/([0-9a-f]+)\(id:(\d+)\)")


def _addr_port(s):
    """'10.1.1.2%eth0:5201' / '[fd00::1]:5201' -> ('10.1.1.2', 5201)"""
    a, _, p = s.rpartition(":")
    a = a.split("%", 1)[0].strip("[]")
    return a, int(p)


def parse_mptcp_subflows(text):
    """the MPTCP subflows in `ss -tniH state established` output: one dict
    per TCP socket that carries tcp-ulp-mptcp info: local, peer
    ([addr, port]), flags, token (the local connection's), remote_token,
    local_id, remote_id, fully_established (flag e), join (j or J: an
    MP_JOIN subflow, else the connection's first), bytes_acked,
    bytes_received (TCP_INFO; 0 when ss leaves them out)"""
    entries, cur = [], None
    for line in text.splitlines():
        if not line.strip():
            continue
        if line[:1].isspace() and cur is not None:
            cur.append(line)
        else:
            cur = [line]
            entries.append(cur)
    out = []
    for e in entries:
        head = e[0].split()
        rest = " ".join(x.strip() for x in e[1:])
        m = _SS_SUBFLOW.search(rest) or _SS_SUBFLOW.search(" ".join(e))
        # the header: [State] Recv-Q Send-Q Local Peer (state absent with a state filter)
        addrs = [x for x in head if ":" in x]
        if not m or len(addrs) < 2:
            continue
        flags = m.group(1) or ""
        sf = dict(local=list(_addr_port(addrs[0])), peer=list(_addr_port(addrs[1])), flags=flags,
                  token=m.group(4), local_id=int(m.group(5)), remote_token=m.group(2),
                  remote_id=int(m.group(3)), fully_established="e" in flags,
                  join=("j" in flags or "J" in flags))
        for k in ("bytes_acked", "bytes_received"):
            v = re.search(rf"\b{k}:(\d+)", rest)
            sf[k] = int(v.group(1)) if v else 0
        out.append(sf)
    return out


def mptcp_connections(host, subflows, flows, cport_base, ips=None):
    """host's MPTCP connections from its subflows (parse_mptcp_subflows),
    grouped by local token: per connection its role ("client": its first
    subflow left from a port that is not a flow's server port; "server"),
    the elephant it carries ("flow": the flow's id, "kind": "data" for
    iperf3's data connection, which leaves from cport_base + id, "control"
    for the other connection between the same hosts and port, None for a
    connection no elephant explains; ips, host -> its address, also
    matches the peer's address), "subflows" (TCP subflows, the first
    one included), "established" (those fully established: a join's
    fourth ACK seen), the bytes acked/received over them, and the
    subflows themselves"""
    by = {}
    for sf in subflows:
        by.setdefault(sf["token"], []).append(sf)
    eleph = [f for f in flows if not f.get("bytes") and f.get("port")]
    out = []
    for token, sfs in sorted(by.items()):
        first = next((s for s in sfs if not s["join"]), None)
        role, fid, kind = None, None, None
        if first is not None:
            lport, pport, paddr = first["local"][1], first["peer"][1], first["peer"][0]
            for f in eleph:
                if f["src"] == host and pport == f["port"] and (ips is None or ips.get(f["dst"]) == paddr):
                    role, fid = "client", f["id"]
                    kind = "data" if lport == cport_base + f["id"] else "control"
                    break
                if f["dst"] == host and lport == f["port"] and (ips is None or ips.get(f["src"]) == paddr):
                    role, fid = "server", f["id"]
                    kind = "data" if pport == cport_base + f["id"] else "control"
                    break
        out.append(dict(host=host, token=token, role=role, flow=fid, kind=kind,
                        first=[first["local"], first["peer"]] if first else None,
                        subflows=len(sfs), established=sum(1 for s in sfs if s["fully_established"]),
                        bytes_acked=sum(s["bytes_acked"] for s in sfs),
                        bytes_received=sum(s["bytes_received"] for s in sfs),
                        sf=[dict(local=s["local"], peer=s["peer"], flags=s["flags"], bytes_acked=s["bytes_acked"],
                                 bytes_received=s["bytes_received"]) for s in sfs]))
    return out


def mptcp_sample(fab, flows, cport_base, at_s, label):
    """every host's MPTCP connections now (one `ss` per host): {"at_s",
    "label", "conns": [mptcp_connections records], "errors"}"""
    conns, errors = [], {}
    for name in fab.hosts:
        try:
            o = subprocess.run([config.get("DCNET_SS"), "-N", fab.ns(name), "-tniH", "state",
                                "established"], capture_output=True, text=True, timeout=30).stdout or ""
        except (OSError, subprocess.TimeoutExpired) as e:
            errors[name] = str(e)
            continue
        conns += mptcp_connections(name, parse_mptcp_subflows(o), flows, cport_base,
                                   {h: fab.ip(h) for h in fab.hosts})
    return dict(at_s=at_s, label=label, conns=conns, errors=errors)


def mptcp_summary(samples, want):
    """per sample, the elephants' data connections as their clients see
    them: how many, the fewest and most subflows (all, and fully
    established), and those with fewer than want fully established
    subflows ("short": [flow id, established]); from the second sample on,
    the fewest and most subflows a connection used since the one before
    ("min_used", "max_used": those that carried >= 1% of its newly acked
    bytes)"""
    out = []
    prev = {}
    for s in samples or []:
        data = [c for c in s.get("conns", []) if c.get("role") == "client" and c.get("kind") == "data"]
        est = [c["established"] for c in data]
        rec = dict(label=s.get("label"), at_s=s.get("at_s"), connections=len(data),
                   min_subflows=min((c["subflows"] for c in data), default=None),
                   max_subflows=max((c["subflows"] for c in data), default=None),
                   min_established=min(est, default=None), max_established=max(est, default=None),
                   short=sorted([c["flow"], c["established"]] for c in data if c["established"] < want))
        # since the previous sample: the subflows that carried at least
        # 1% of the connection's newly acked bytes ("used")
        used = []
        for c in data:
            p = prev.get((c["host"], c["token"]))
            if p is None:
                continue
            before = {(tuple(x["local"]), tuple(x["peer"])): x["bytes_acked"] for x in p["sf"]}
            d = [max(0, x["bytes_acked"] - before.get((tuple(x["local"]), tuple(x["peer"])), 0)) for x in c["sf"]]
            used.append(sum(1 for v in d if sum(d) and v >= 0.01 * sum(d)))
        if used:
            rec.update(min_used=min(used), max_used=max(used))
        prev = {(c["host"], c["token"]): c for c in data}
        out.append(rec)
    return out
