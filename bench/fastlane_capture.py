#!/usr/bin/env python3
"""The slowest answers of a partition-aggregate cell, packet by packet.

`bench/fastlane.py --only pa --capture 5001 ...` leaves tcpdump captures of
one server port (5001: the 2 KB answers) at every host of the cell,
cap-SCHEME-LOAD-HOST.pcap.  This reads them: each answer is a query the
aggregator sends on a persistent connection and the data that comes back
until the next query.  It prints how many answers there were, how many took
40 ms or more, and for the slowest ones every packet of that connection at
the aggregator and at the worker (its sends, the ACKs it got, FastLane
notifications: DSCP 45).

    bench/fastlane_capture.py DIR [--tag tcp-fastlane-0.6] [--top 5]
"""
import argparse
import collections
import glob
import os
import re
import subprocess

LINE = re.compile(r'^(\d+\.\d+) IP6? (?:truncated-ip - \d+ bytes missing! )?\(tos (0x[0-9a-f]+).*?length (\d+)\)'
                  r'\s+(\S+)\.(\d+) > (\S+)\.(\d+): '
                  r'Flags \[([^\]]*)\](.*)$')
NF_DSCP = 45


def read(path):
    """the TCP packets of a capture: time, TOS, addresses, flags, sequence
    range, ACK and payload length"""
    if path.endswith(".xz"):        # as committed in docs/results
        import lzma
        import tempfile
        with tempfile.NamedTemporaryFile(suffix=".pcap") as tmp:
            tmp.write(lzma.open(path).read())
            tmp.flush()
            return read(tmp.name)
    out = subprocess.run(["tcpdump", "-r", path, "-tt", "-n", "-v", "-S"],
                         capture_output=True, text=True).stdout
    lines = []
    for ln in out.splitlines():     # -v puts the TCP header on a second line
        if ln.startswith((" ", "\t")) and lines:
            lines[-1] += " " + ln.strip()
        else:
            lines.append(ln)
    pkts = []
    for ln in lines:
        m = LINE.match(ln)
        if not m:
            continue
        t, tos, _iplen, src, sport, dst, dport, flags, rest = m.groups()
        seq = re.search(r'seq (\d+)(?::(\d+))?', rest)
        ack = re.search(r'ack (\d+)', rest)
        plen = re.search(r'length (\d+)$', rest)
        pkts.append(dict(t=float(t), tos=int(tos, 16), src=src, sport=int(sport), dst=dst, dport=int(dport),
                         flags=flags, seq=seq.group(0)[4:] if seq else "", ack=int(ack.group(1)) if ack else None,
                         len=int(plen.group(1)) if plen else 0))
    return pkts


def answers(agg, port):
    """(duration s, (worker, aggregator, aggregator's port), query time,
    last data time) of every answer seen at the aggregator"""
    conns = collections.defaultdict(list)
    for p in agg:
        if p["sport"] == port:
            conns[(p["src"], p["dst"], p["dport"])].append(("rx", p))
        elif p["dport"] == port:
            conns[(p["dst"], p["src"], p["sport"])].append(("tx", p))
    out = []
    for k, evs in conns.items():
        query = last = None
        for d, p in evs + [("end", None)]:
            if d in ("tx", "end") and (d == "end" or p["len"] > 0):
                if query is not None and last is not None:
                    out.append((last - query, k, query, last))
                if d == "tx":
                    query, last = p["t"], None
            elif d == "rx" and p["len"] > 0 and query is not None:
                last = p["t"]
    return sorted(out, reverse=True), conns


def show(tag, p, t0):
    nf = " notification" if p["tos"] >> 2 == NF_DSCP else ""
    print(f"  {tag} {(p['t'] - t0) * 1e3:8.3f} ms  {p['src']}.{p['sport']} > {p['dst']}.{p['dport']} "
          f"[{p['flags']}] seq {p['seq'] or '-'} ack {p['ack']} len {p['len']}{nf}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--tag", default="", help="SCHEME-LOAD of the captures (default: the only one)")
    ap.add_argument("--port", type=int, default=5001)
    ap.add_argument("--top", type=int, default=5)
    a = ap.parse_args()
    aggf = glob.glob(os.path.join(a.dir, f"cap-*{a.tag}*-agg.pcap*"))
    if len(aggf) != 1:
        ap.error(f"want one aggregator capture, found {aggf}: give --tag")
    tag = os.path.basename(aggf[0])[len("cap-"):].rsplit("-agg.pcap", 1)[0]
    agg = read(aggf[0])
    ans, conns = answers(agg, a.port)
    durs = sorted(x[0] for x in ans)
    if not durs:
        print("no answers in the capture")
        return
    print(f"{tag}: {len(durs)} answers, median {durs[len(durs) // 2] * 1e3:.1f} ms, "
          f"{sum(d >= 0.040 for d in durs)} of 40 ms or more")
    # a worker's address 10.0.I.1 is host I - 1 of the cell: agg, w0, w1, ...
    workers = {}
    for f in glob.glob(os.path.join(a.dir, f"cap-{tag}-w*.pcap*")):
        workers[f.rsplit("-", 1)[1].split(".")[0]] = f
    for d, k, t0, t1 in ans[:a.top]:
        w = f"w{int(k[0].split('.')[2]) - 2}"
        print(f"\n{d * 1e3:.1f} ms: {w} ({k[0]}) to the aggregator's port {k[2]}")
        for dirn, p in conns[k]:
            if t0 - 0.001 <= p["t"] <= t1 + 0.002:
                show("agg", p, t0)
        if w in workers:
            for p in read(workers[w]):
                mine = {p["sport"], p["dport"]} == {a.port, k[2]}
                if t0 - 0.001 <= p["t"] <= t1 + 0.002 and mine:
                    show(w.ljust(3), p, t0)


if __name__ == "__main__":
    main()
