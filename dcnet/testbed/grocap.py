"""What GRO pushes up the stack, seen from the receiving hosts (Presto
Fig. 5): an opt-in packet capture on every host's eth0 (the experiment's
"gro_capture": true; off by default: it costs the guest's CPU, so the
CPU-cost runs leave it off).

A capture on eth0 sees each skb as IP and TCP receive it: packet taps
run in __netif_receive_skb_core, after GRO merged the packets and after
Presto GRO (which delivers through netif_receive_skb_list_internal)
reordered them.  tcpdump keeps 80 bytes of each inbound TCP skb
(headers only) and the skb's full length; analyse() turns the pcaps into

  sizes      TCP payload bytes of each data skb: count, mean, percentiles,
             CDF, the share of skbs of at most one MSS (Fig. 5b)
  ooo_skbs   data skbs that start beyond the next expected sequence number
             of their flow (a hole before them: TCP queues them out of
             order), old_skbs those that start before it (retransmitted
             or overtaken data), late_skbs the old skbs whose flowcell ID
             is older than the newest ID the flow has shown: original
             data overtaken by a later flowcell (a retransmission carries
             the sender's current flowcell ID), i.e. reordering without
             loss that reached TCP; 0 for flows without IDs
  flowcells  the paper's Fig. 5a count: per flowcell (flow and flowcell
             ID, the source MAC's bytes 4-5 as the Presto sender stamps
             them), the data skbs of other flowcells of the same flow
             that arrived between its first and last skb; 0 = no
             reordering.  Only flows whose IDs change (Presto's modes).
  reorder    per flowcell-boundary hole (reorder()): a data skb of a newer
             flowcell than the flow had shown arrives beyond the next
             expected byte; the hole's duration is the time until every
             byte before that skb has arrived, and whether the older
             flowcell's own data filled it (reordering without loss) or a
             retransmission (loss).  Durations against the hold Presto
             GRO would give them (alpha x an EWMA, gain 1/8, of the earlier
             lossless durations, as net/core/presto_gro.c): how many
             reorderings outlast it.  Meaningful where the capture sees
             arrival order (official GRO); behind Presto GRO it sees what
             Presto GRO released.
  dropped    skbs tcpdump reported dropped (0: the capture is complete)
  flowlets   per inactivity gap (100 us to 500 ms), the flowlets the
             flows' arrivals form (flowlets()): how flowlet switching
             would cut these flows, seen at the receiver

IPv4 only (the testbed's flows are IPv4).
"""
import math
import os
import re
import signal
import struct
import subprocess

SNAPLEN = 80
CDF_POINTS = 50


def percentile(xs, p):
    """nearest-rank percentile of sorted xs"""
    if not xs:
        return None
    k = max(0, min(len(xs) - 1, int(math.ceil(p / 100.0 * len(xs))) - 1))
    return xs[k]


def cdf(xs, points=CDF_POINTS):
    """[[value, fraction <= value], ...] of sorted xs, at most points+1 rows"""
    if not xs:
        return []
    n = len(xs)
    idx = sorted({min(n - 1, int(i * n / points)) for i in range(points)} | {n - 1})
    return [[xs[i], round((i + 1) / n, 4)] for i in idx]


def read_pcap(data, with_ts=False):
    """[(orig_len, frame bytes)] of a classic pcap (tcpdump -w); with_ts:
    [(seconds, orig_len, frame bytes)]"""
    if len(data) < 24:
        return []
    magic = struct.unpack("<I", data[:4])[0]
    if magic in (0xa1b2c3d4, 0xa1b23c4d):
        e = "<"
    elif magic in (0xd4c3b2a1, 0x4d3cb2a1):
        e = ">"
    else:
        raise ValueError("not a pcap file")
    frac = 1e-9 if magic in (0xa1b23c4d, 0x4d3cb2a1) else 1e-6
    out, off = [], 24
    while off + 16 <= len(data):
        sec, sub, incl, orig = struct.unpack(e + "IIII", data[off:off + 16])
        off += 16
        out.append((sec + sub * frac, orig, data[off:off + incl]) if with_ts else (orig, data[off:off + incl]))
        off += incl
    return out


# inactivity gaps for the flowlet analysis: the paper's 100 and 500 us,
# and the same scaled by the testbed's 1000 (10 Mbit/s against 10 Gbit/s)
FLOWLET_GAPS_US = (100, 500, 10000, 100000, 500000)


def flowlets(pkts_per_host, gaps_us=FLOWLET_GAPS_US, min_bytes=1 << 20):
    """pkts_per_host: {host: [(seconds, orig_len, frame)]}: per gap, the
    flowlets the receivers' data skbs form (a new flowlet after an
    inactivity gap longer than the gap): count, mean and largest size,
    and the mean share of a flow's bytes in its largest flowlet (Presto
    Fig. 1's point: flowlets are not uniform).  Only flows that carried
    at least min_bytes (the elephants, not iperf3's control connections)."""
    per_flow = {}
    for h, pkts in pkts_per_host.items():
        for ts, orig, frame in pkts:
            r = parse(frame, orig)
            if r is None or r[2] == 0:
                continue
            per_flow.setdefault((h,) + r[0], []).append((ts, r[2]))
    per_flow = {k: v for k, v in per_flow.items() if sum(n for _t, n in v) >= min_bytes}
    out = {}
    for g in gaps_us:
        sizes, top_share = [], []
        for arr in per_flow.values():
            cur, last, mine = 0, None, []
            for ts, n in arr:
                if last is not None and (ts - last) * 1e6 > g:
                    mine.append(cur)
                    cur = 0
                cur += n
                last = ts
            mine.append(cur)
            sizes += mine
            top_share.append(max(mine) / sum(mine))
        sizes.sort()
        out[str(g)] = dict(flowlets=len(sizes), per_flow=(len(sizes) / len(per_flow)) if per_flow else None,
                           mean_bytes=(sum(sizes) / len(sizes)) if sizes else None,
                           p50_bytes=percentile(sizes, 50), max_bytes=sizes[-1] if sizes else None,
                           largest_share=(sum(top_share) / len(top_share)) if top_share else None)
    return out


def parse(frame, orig_len):
    """(flow, seq, payload bytes, flowcell ID) of an IPv4 TCP frame, else None"""
    if len(frame) < 14 + 20 or frame[12:14] != b"\x08\x00":
        return None
    ip = frame[14:]
    ihl = (ip[0] & 0xf) * 4
    if ip[0] >> 4 != 4 or ip[9] != 6 or len(ip) < ihl + 20:
        return None
    tot = struct.unpack(">H", ip[2:4])[0] or (orig_len - 14)     # 0: BIG TCP
    tcp = ip[ihl:]
    sport, dport, seq = struct.unpack(">HHI", tcp[:8])
    doff = (tcp[12] >> 4) * 4
    payload = max(0, min(tot, orig_len - 14) - ihl - doff)
    flow = (bytes(ip[12:16]), sport, bytes(ip[16:20]), dport)
    fc = struct.unpack(">H", frame[10:12])[0]
    return flow, seq, payload, fc


def fc_after(a, b):
    """flowcell ID a after b (u16 serial arithmetic)"""
    return 0 < ((a - b) & 0xffff) < 0x8000


def after(a, b):
    """a after b in 32-bit sequence space"""
    return 0 < ((a - b) & 0xffffffff) < 0x80000000


def analyse(pkts_per_host, mss=1448):
    """pkts_per_host: {host: [(orig_len, frame)]} -> the run's record"""
    sizes = []
    ooo = old = late = 0
    fc_counts = []
    flows_n = 0
    for pkts in pkts_per_host.values():
        per_flow = {}
        for orig, frame in pkts:
            r = parse(frame, orig)
            if r is None or r[2] == 0:
                continue
            per_flow.setdefault(r[0], []).append(r[1:])
        for arr in per_flow.values():
            flows_n += 1
            nxt = top = None
            first, last, count = {}, {}, {}
            for i, (seq, plen, fc) in enumerate(arr):
                sizes.append(plen)
                if nxt is not None:
                    if after(seq, nxt):
                        ooo += 1
                    elif after(nxt, seq):
                        old += 1
                        if fc_after(top, fc):
                            late += 1
                if top is None or fc_after(fc, top):
                    top = fc
                end = (seq + plen) & 0xffffffff
                if nxt is None or after(end, nxt):
                    nxt = end
                first.setdefault(fc, i)
                last[fc] = i
                count[fc] = count.get(fc, 0) + 1
            if len(count) > 1:
                fc_counts += [last[fc] - first[fc] + 1 - count[fc] for fc in count]
    sizes.sort()
    fc_counts.sort()
    res = dict(data_skbs=len(sizes), flows=flows_n, bytes=sum(sizes),
               mean_bytes=(sum(sizes) / len(sizes)) if sizes else None,
               p10_bytes=percentile(sizes, 10), p50_bytes=percentile(sizes, 50),
               p90_bytes=percentile(sizes, 90), p99_bytes=percentile(sizes, 99),
               one_mss_share=(sum(1 for x in sizes if x <= mss) / len(sizes)) if sizes else None,
               size_cdf=cdf(sizes), ooo_skbs=ooo, old_skbs=old, late_skbs=late,
               flowcells=len(fc_counts),
               fc_ooo_zero_share=(sum(1 for x in fc_counts if x == 0) / len(fc_counts)) if fc_counts else None,
               fc_ooo_p50=percentile(fc_counts, 50), fc_ooo_p90=percentile(fc_counts, 90),
               fc_ooo_p99=percentile(fc_counts, 99), fc_ooo_max=fc_counts[-1] if fc_counts else None,
               fc_ooo_cdf=cdf(fc_counts))
    return res


def reorder(pkts_per_host, alpha=2, tmin_us=100, tmax_us=500000):
    """pkts_per_host: {host: [(seconds, orig_len, frame)]}: the
    flowcell-boundary holes of the data flows and their durations (see
    the module's docstring).  alpha, tmin_us, tmax_us: Presto GRO's hold
    (alpha x EWMA clamped to [tmin, tmax]), replayed per receiving host
    over the holes in time order."""
    events = []         # (t0, t1, host, filled by the original data)
    for h, pkts in pkts_per_host.items():
        per_flow = {}
        for ts, orig, frame in pkts:
            r = parse(frame, orig)
            if r is None or r[2] == 0:
                continue
            per_flow.setdefault(r[0], []).append((ts,) + r[1:])
        for arr in per_flow.values():
            cum = top = None
            ooo = {}            # start -> end of data beyond cum
            pending = []        # [target seq, t0, fc of the skb]
            for ts, seq, plen, fc in arr:
                end = (seq + plen) & 0xffffffff
                if cum is None:
                    cum, top = end, fc
                    continue
                newer = fc_after(fc, top)
                if after(seq, cum):
                    if newer and not any(p[0] == seq for p in pending):
                        pending.append([seq, ts, fc])
                    e = ooo.get(seq)
                    if e is None or after(end, e):
                        ooo[seq] = end
                elif after(end, cum):
                    cum = end
                    moved = True
                    while moved:
                        moved = False
                        for st in list(ooo):
                            if not after(st, cum):
                                if after(ooo[st], cum):
                                    cum = ooo[st]
                                del ooo[st]
                                moved = True
                    keep = []
                    for p in pending:
                        if after(p[0], cum):
                            keep.append(p)
                        else:
                            # filled: by the older flowcell's own data
                            # (an ID before the hole's) or a retransmission
                            events.append((p[1], ts, h, fc_after(p[2], fc)))
                    pending = keep
                if top is None or newer:
                    top = fc
    events.sort()
    ewma = {}
    durs, lossless, outlast = [], [], 0
    for t0, t1, h, orig in events:
        d_us = (t1 - t0) * 1e6
        durs.append(d_us)
        if not orig:
            continue
        lossless.append(d_us)
        e = ewma.get(h, 0.0)
        hold = min(max(alpha * e, tmin_us), tmax_us)
        if d_us > hold:
            outlast += 1
        ewma[h] = d_us if not e else e + (d_us - e) / 8
    durs.sort()
    lossless.sort()

    def pct(xs):
        return dict({f"p{p}_us": percentile(xs, p) for p in (10, 50, 90, 99)}, max_us=xs[-1] if xs else None)
    return dict(holes=len(durs), lossless=len(lossless), by_retransmission=len(durs) - len(lossless),
                lossless_us=pct(lossless), all_us=pct(durs), lossless_cdf_us=cdf(lossless),
                alpha=alpha, outlast_hold=outlast,
                outlast_share=(outlast / len(lossless)) if lossless else None,
                ewma_end_us=(sum(ewma.values()) / len(ewma)) if ewma else None)


class GroCapture:
    """tcpdump on every host's eth0 for one run: start() before the
    clients' gate opens, stop() when they are done"""

    def __init__(self, fab, tmpdir="/tmp"):
        self.fab = fab
        self.procs = {}
        self.paths = {}
        self.tmpdir = tmpdir
        self.errors = []

    def start(self):
        for h in self.fab.hosts:
            path = os.path.join(self.tmpdir, f"grocap-{os.getpid()}-{h}.pcap")
            self.paths[h] = path
            self.procs[h] = self.fab.spawn(h, ["tcpdump", "-i", "eth0", "-Q", "in", "-n", "-s", str(SNAPLEN),
                                               "-B", "4096", "-w", path, "tcp"],
                                           stdout=subprocess.DEVNULL)
        # tcpdump says "listening on eth0" once the socket is bound
        for h, p in self.procs.items():
            line = p.stderr.readline()
            if "listening on" not in line:
                self.errors.append(f"{h}: {line.strip()[:200]}")

    def stop(self):
        dropped = 0
        pkts = {}
        for h, p in self.procs.items():
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
            try:
                _o, err = p.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                _o, err = p.communicate()
            m = re.search(r"(\d+) packets? dropped by kernel", err or "")
            dropped += int(m.group(1)) if m else 0
            try:
                with open(self.paths[h], "rb") as f:
                    pkts[h] = read_pcap(f.read(), with_ts=True)
                os.unlink(self.paths[h])
            except (OSError, ValueError) as e:
                self.errors.append(f"{h}: {e}")
        res = analyse({h: [(o, f) for _t, o, f in v] for h, v in pkts.items()})
        res.update(dropped=dropped, hosts=len(pkts), errors=self.errors, flowlets=flowlets(pkts),
                   reorder=reorder(pkts))
        return res
