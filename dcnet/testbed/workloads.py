#!/usr/bin/env python3
"""The papers' workloads as flow lists, one name each.

A workload is a pure function of the host list and its parameters (and a
seed): it returns flows, each a dict

    {"id": 0, "src": "h1", "dst": "h9", "kind": "elephant",
     "duration_s": 10, "port": 5201}            # a timed elephant
    {"id": 7, "src": "h3", "dst": "h5", "kind": "mouse", "bytes": 51200,
     "start_s": 0.4, "port": 5301}              # a sized flow

so that the emulated fabric (testbed/run.py) and the physical path
(testbed/physical/) run the very same flows.  Ports are unique per
destination host.

Elephant patterns (Presto, Sec. 5, after Hedera and MPTCP):
  stride      host i sends to host (i + stride) mod N (stride 8 of 16)
  bijection   a random permutation without fixed points
  random      every host to a uniformly random host not under its own leaf
              (several senders may share a receiver)
  shuffle     every host to every other host, in random order, two
              transfers at a time (each flow's "lane", 0 or 1, is a chain
              of transfers one after the other)
  pairs       `count` elephants from the first leaf's hosts to the second
              leaf's (host i of leaf 1 to host i of leaf 2): Presto's
              oversubscription benchmark (Fig. 4b), where 2 to 8 pairs
              share 2 spines
The Presto paper's random and bijection never pick a destination in the
sender's own pod: with hosts_per_leaf (hosts h1.. placed on leaves in
order, as dcnet/testbed/fabric.py does) neither picks one under the same leaf.
Sized flows:
  mice        50 KB flows with an application-level ack every 100 ms, as
              Presto's mice next to the elephants
  websearch / datamining
              flow sizes from the published CDFs (below), Poisson arrivals
              at a given load of the host link rate
  partagg     FastLane's partition-aggregate: short responses of 2-32 KB
              fanned in to one aggregator, 1 MB long flows all-to-all, 10%
              of the load short
Deadline-bound partition-aggregate:
  oldi        D2TCP's at-scale benchmark (Sec. 4.2): one OLDI tree per
              application (parent, `fanin` leaves), 2-18 KB responses with
              20-45 ms deadlines plus a uniform variation, 1 MB background
              flows to each parent; every time scaled by the paper's rate
              over ours.  A tree is one entry of kind "tree" (run.py runs it
              as `dltraffic fanin` at the parent), the background flows are
              sized flows of kind "long".
"""
import argparse
import json
import random
import sys

BASE_PORT = 5201

# Flow-size CDFs (bytes, cumulative probability).  Web search: Alizadeh et
# al., "Data Center TCP", SIGCOMM 2010, Fig. 4; data mining: Greenberg et
# al., "VL2", SIGCOMM 2009, Fig. 2.  Both as tabulated (in 1460-byte
# packets) in the pFabric/PIAS simulation scripts used across the field.
MSS = 1460
WEBSEARCH_CDF = [(6, 0.15), (13, 0.2), (19, 0.3), (33, 0.4), (53, 0.53), (133, 0.6), (667, 0.7),
                 (1333, 0.8), (3333, 0.9), (6667, 0.97), (20000, 1.0)]
DATAMINING_CDF = [(1, 0.5), (2, 0.6), (3, 0.7), (7, 0.8), (267, 0.9), (2107, 0.95), (66667, 0.99),
                  (666667, 1.0)]


def _ports(flows):
    nxt = {}
    for f in flows:
        f["port"] = BASE_PORT + nxt.get(f["dst"], 0)
        nxt[f["dst"]] = nxt.get(f["dst"], 0) + 1
    for i, f in enumerate(flows):
        f["id"] = i
    return flows


def renumber(flows):
    """ids and ports again, for flows of several workloads run together"""
    return _ports(flows)


def stride(hosts, stride=8, duration_s=10, **_):
    n = len(hosts)
    if n < 2:
        raise ValueError("stride needs at least 2 hosts")
    s = stride % n or 1
    return _ports([dict(src=hosts[i], dst=hosts[(i + s) % n], kind="elephant", duration_s=duration_s)
                   for i in range(n)])


def _pod(i, hosts_per_leaf):
    """the leaf of the i-th host (0-based); one pod when not given"""
    return i // hosts_per_leaf if hosts_per_leaf else 0


def _other_pod(n, hosts_per_leaf):
    """per host index, the indices it may send to: another leaf's hosts, or
    (one leaf only) every other host"""
    if hosts_per_leaf and n > hosts_per_leaf:
        return [[j for j in range(n) if _pod(j, hosts_per_leaf) != _pod(i, hosts_per_leaf)]
                for i in range(n)]
    return [[j for j in range(n) if j != i] for i in range(n)]


def bijection(hosts, seed=1, duration_s=10, hosts_per_leaf=None, **_):
    rng = random.Random(seed)
    n = len(hosts)
    if n < 2:
        raise ValueError("bijection needs at least 2 hosts")
    allowed = [set(a) for a in _other_pod(n, hosts_per_leaf)]
    for _try in range(100000):
        perm = list(range(n))
        rng.shuffle(perm)
        if all(perm[i] in allowed[i] for i in range(n)):
            break
    else:
        raise ValueError(f"no bijection of {n} hosts avoids their own leaf")
    return _ports([dict(src=hosts[i], dst=hosts[perm[i]], kind="elephant", duration_s=duration_s)
                   for i in range(n)])


def random_pattern(hosts, seed=1, duration_s=10, hosts_per_leaf=None, **_):
    rng = random.Random(seed)
    allowed = _other_pod(len(hosts), hosts_per_leaf)
    return _ports([dict(src=h, dst=hosts[rng.choice(allowed[i])], kind="elephant",
                        duration_s=duration_s) for i, h in enumerate(hosts)])


def pairs(hosts, count=2, hosts_per_leaf=None, duration_s=10, **_):
    """count elephants, host i of the first leaf to host i of the second
    (Presto Fig. 4b: the pairs from L1 to L2 share the spines)"""
    if not hosts_per_leaf or len(hosts) < 2 * hosts_per_leaf:
        raise ValueError("pairs needs a Clos of at least two leaves (hosts_per_leaf)")
    if not 1 <= count <= hosts_per_leaf:
        raise ValueError(f"pairs: count must be 1-{hosts_per_leaf} (the hosts of one leaf), not {count}")
    return _ports([dict(src=hosts[i], dst=hosts[hosts_per_leaf + i], kind="elephant", duration_s=duration_s)
                   for i in range(count)])


def shuffle(hosts, seed=1, bytes=1 << 20, parallel=2, **_):
    """every host sends `bytes` to every other host in a random order,
    `parallel` transfers at a time (the Presto paper: two): "lane" is the
    chain a flow belongs to, "order" its position in that chain"""
    if parallel < 1:
        raise ValueError("shuffle: parallel must be at least 1")
    rng = random.Random(seed)
    flows = []
    for h in hosts:
        dsts = [d for d in hosts if d != h]
        rng.shuffle(dsts)
        flows += [dict(src=h, dst=d, kind="shuffle", bytes=bytes, lane=k % parallel, order=k // parallel)
                  for k, d in enumerate(dsts)]
    return _ports(flows)


def mice(hosts, seed=1, duration_s=10, count=20, bytes=50 * 1024, **_):
    """`count` 50 KB mice per host to random others, uniformly spread over
    the run; the application acks each every 100 ms (Presto, Sec. 5)"""
    rng = random.Random(seed)
    flows = []
    for h in hosts:
        for _k in range(count):
            flows.append(dict(src=h, dst=rng.choice([d for d in hosts if d != h]), kind="mouse",
                              bytes=bytes, start_s=round(rng.uniform(0, duration_s * 0.9), 4),
                              app_ack_ms=100))
    flows.sort(key=lambda f: f["start_s"])
    return _ports(flows)


def _sample_cdf(rng, cdf):
    u = rng.random()
    prev_size, prev_p = cdf[0][0], 0.0
    for size, p in cdf:
        if u <= p:
            # linear between the points, as the simulators interpolate
            frac = 0 if p == prev_p else (u - prev_p) / (p - prev_p)
            return max(1, int((prev_size + frac * (size - prev_size)) * MSS))
        prev_size, prev_p = size, p
    return cdf[-1][0] * MSS


def cdf_mean(cdf):
    mean, prev_size, prev_p = 0.0, cdf[0][0], 0.0
    for size, p in cdf:
        mean += (p - prev_p) * (prev_size + size) / 2
        prev_size, prev_p = size, p
    return mean * MSS


def trace(hosts, cdf, seed=1, duration_s=10, load=0.4, link_mbit=10, hosts_per_leaf=None, **_):
    """Poisson arrivals per sender at `load` of its link rate, sizes from
    cdf; with hosts_per_leaf, every receiver is under another leaf (Presto's
    trace-driven workload: "a random receiver that is not in the same rack")"""
    rng = random.Random(seed)
    rate = load * link_mbit * 1e6 / 8 / cdf_mean(cdf)        # flows/s per host
    allowed = _other_pod(len(hosts), hosts_per_leaf)
    flows = []
    for i, h in enumerate(hosts):
        t = rng.expovariate(rate)
        while t < duration_s:
            flows.append(dict(src=h, dst=hosts[rng.choice(allowed[i])], kind="trace",
                              bytes=_sample_cdf(rng, cdf), start_s=round(t, 6)))
            t += rng.expovariate(rate)
    flows.sort(key=lambda f: f["start_s"])
    return _ports(flows)


def partagg(hosts, seed=1, duration_s=10, load=0.4, link_mbit=10, short_share=0.1, **_):
    """FastLane Sec. 5: 10% of the load is short responses (2/4/8/16/32 KB
    each, fanned in to totals of 32-160 KB at one aggregator), 90% is 1 MB
    long flows between random pairs.  A query is one "query" id shared by
    its responses, which all start together.  short_share: the fraction of
    the load from the short responses (FastLane Sec. 4.2.2 / Fig. 6 varies
    it from 10% to 50% at a fixed total load)."""
    if not 0 < short_share < 1:
        raise ValueError(f"short_share {short_share} must lie strictly between 0 and 1")
    rng = random.Random(seed)
    n = len(hosts)
    total_bps = load * link_mbit * 1e6 * n
    flows = []
    # long flows
    rate_long = (1 - short_share) * total_bps / 8 / (1 << 20)
    t = rng.expovariate(rate_long)
    while t < duration_s:
        src, dst = rng.sample(hosts, 2)
        flows.append(dict(src=src, dst=dst, kind="long", bytes=1 << 20, start_s=round(t, 6)))
        t += rng.expovariate(rate_long)
    # queries
    sizes = [2048, 4096, 8192, 16384, 32768]
    mean_query = 0
    for s in sizes:
        mean_query += s * max(1, min(n - 1, 96 * 1024 // s)) / len(sizes)
    rate_q = short_share * total_bps / 8 / mean_query
    t, q = rng.expovariate(rate_q), 0
    while t < duration_s:
        agg = rng.choice(hosts)
        size = rng.choice(sizes)
        # fan-in so that the total lies in 32-160 KB
        fan = max(1, min(n - 1, rng.randint(32 * 1024, 160 * 1024) // size))
        for w in rng.sample([h for h in hosts if h != agg], fan):
            flows.append(dict(src=w, dst=agg, kind="short", bytes=size, start_s=round(t, 6), query=q))
        q += 1
        t += rng.expovariate(rate_q)
    flows.sort(key=lambda f: f["start_s"])
    return _ports(flows)


# D2TCP Sec. 4.2.1: the five applications' leaf-to-parent message sizes
# ("2, 6, 10, 14, and 18 KB") and base deadlines (20-45 ms), on 1 Gbit/s
# host links; Sec. 4.2.3: a background flow per tree, 1 MB, exponential
# arrivals with a mean of 300 ms.
D2TCP_APPS = [(2 * 1024, 20000), (6 * 1024, 30000), (10 * 1024, 35000), (14 * 1024, 40000),
              (18 * 1024, 45000)]
D2TCP_PAPER_LINK_MBIT = 1000
D2TCP_BG_BYTES = 1 << 20
D2TCP_BG_MEAN_S = 0.3


def oldi_time_scale(link_mbit, paper_link_mbit=D2TCP_PAPER_LINK_MBIT):
    """TS = the paper's rate / ours: with bytes kept, every time (deadline,
    query interval, background arrivals, RTT, RTO) is multiplied by TS"""
    if not link_mbit or link_mbit <= 0:
        raise ValueError("oldi: link_mbit must be > 0")
    return paper_link_mbit / link_mbit


def oldi(hosts, seed=1, duration_s=10, link_mbit=10, fanin=20, apps=5, trees=1, variance=0.5, load=0.15,
         background=True, paper_link_mbit=D2TCP_PAPER_LINK_MBIT, hosts_per_leaf=None, sample_ms=0, **_):
    """D2TCP Sec. 4.2: `apps` applications (the first of the paper's five),
    each `trees` identical trees (the paper: five) of a parent and `fanin`
    leaf connections.  All trees of an application share its parent host
    (16 hosts cannot hold the paper's 25 parents), the applications'
    parents spread over the leaves of the Clos (hosts_per_leaf); each
    tree's leaf hosts are drawn from the other hosts, cycling through them
    when fanin exceeds them (a host may serve several leaves of a tree).
    Application a's responses are D2TCP_APPS[a]'s size; deadlines uniform
    in [D, D * (1 + variance)] x TS (the paper's medium variance: 0.5).  A
    tree sends a query to all its leaves at once, one every interval_us
    (the next not before the last response), the application's trees
    staggered evenly over the interval (start_s): together they take
    `load` of the parent's link on average.  With `background`, per tree,
    1 MB flows from a random other host to the parent, exponential gaps of
    mean 300 ms x TS (Sec. 4.2.3).  With `sample_ms` (> 0) the leaves'
    servers sample the socket sending each response every sample_ms
    (`dltraffic server --sample-ms`: d, alpha, time left; the tree's
    "sample_ms")."""
    if not 1 <= apps <= len(D2TCP_APPS):
        raise ValueError(f"oldi: apps must be 1-{len(D2TCP_APPS)}")
    if fanin < 1 or trees < 1:
        raise ValueError("oldi: fanin and trees must be at least 1")
    if not 0 < load <= 1:
        raise ValueError("oldi: load must be in (0, 1]")
    if variance < 0:
        raise ValueError("oldi: variance must be >= 0")
    if sample_ms < 0:
        raise ValueError("oldi: sample_ms must be >= 0")
    n = len(hosts)
    if n < 2:
        raise ValueError("oldi needs at least 2 hosts")
    if apps > n:
        raise ValueError(f"oldi: {apps} parents need as many hosts ({n})")
    ts = oldi_time_scale(link_mbit, paper_link_mbit)
    rng = random.Random(seed)
    hpl = hosts_per_leaf or n
    racks = [list(hosts[i:i + hpl]) for i in range(0, n, hpl)]
    for r in racks:
        rng.shuffle(r)
    # parent of app a: rack a mod L, the rack's (a // L)-th host (shuffled)
    order = [r[k] for k in range(max(len(r) for r in racks)) for r in racks if k < len(r)]
    flows = []
    for a in range(apps):
        parent = order[a]
        size, dl = D2TCP_APPS[a]
        others = [h for h in hosts if h != parent]
        interval_us = int(trees * fanin * size * 8 / (load * link_mbit))     # bits / (bit/us)
        for j in range(trees):
            rng.shuffle(others)
            leaves = [others[k % len(others)] for k in range(fanin)]
            start_s = round(j * interval_us / trees / 1e6, 6)
            flows.append(dict(src=parent, dst=parent, kind="tree", app=a, tree=j, leaves=leaves,
                              resp_bytes=size, deadline_us=int(round(dl * ts)),
                              deadline_max_us=int(round(dl * ts * (1 + variance))), interval_us=interval_us,
                              queries=max(1, int((duration_s - start_s) * 1e6 // interval_us)),
                              seed=seed * 1000 + a * 100 + j, start_s=start_s,
                              **({"sample_ms": int(sample_ms)} if sample_ms else {})))
            if background:
                t = rng.expovariate(1 / (D2TCP_BG_MEAN_S * ts))
                while t < duration_s:
                    flows.append(dict(src=rng.choice(others), dst=parent, kind="long", bytes=D2TCP_BG_BYTES,
                                      start_s=round(t, 6), app=a))
                    t += rng.expovariate(1 / (D2TCP_BG_MEAN_S * ts))
    flows.sort(key=lambda f: f["start_s"])
    return _ports(flows)


WORKLOADS = {
    "stride": stride,
    "bijection": bijection,
    "random": random_pattern,
    "shuffle": shuffle,
    "pairs": pairs,
    "mice": mice,
    "websearch": lambda hosts, **kw: trace(hosts, WEBSEARCH_CDF, **kw),
    "datamining": lambda hosts, **kw: trace(hosts, DATAMINING_CDF, **kw),
    "partagg": partagg,
    "oldi": oldi,
}


def generate(name, hosts, **params):
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r} (one of {', '.join(WORKLOADS)})")
    return WORKLOADS[name](list(hosts), **params)


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description="print a workload's flows as JSON")
    ap.add_argument("workload", choices=sorted(WORKLOADS))
    ap.add_argument("--hosts", required=True, help="comma-separated host names, e.g. h1,h2,h3")
    ap.add_argument("--stride", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--bytes", type=int, default=None)
    ap.add_argument("--load", type=float, default=0.4)
    ap.add_argument("--link-mbit", type=float, default=10)
    ap.add_argument("--count", type=int, default=None, help="mice per host")
    ap.add_argument("--hosts-per-leaf", type=int, default=None,
                    help="random/bijection: never a destination under the sender's leaf")
    ap.add_argument("--with", dest="with_", action="append", default=[], choices=sorted(WORKLOADS),
                    metavar="WORKLOAD", help="run this workload alongside (same parameters; repeatable)")
    a = ap.parse_args(argv)
    hosts = a.hosts.split(",")
    flows = []
    for name in [a.workload] + a.with_:
        params = dict(stride=a.stride, seed=a.seed, duration_s=a.duration, load=a.load, link_mbit=a.link_mbit,
                      hosts_per_leaf=a.hosts_per_leaf)
        if a.bytes is not None and name == a.workload:
            params["bytes"] = a.bytes       # sizes the main workload only
        if a.count is not None:
            params["count"] = a.count
        if name == "stride":
            params = dict(stride=a.stride, duration_s=a.duration)
        flows += generate(name, hosts, **params)
    json.dump(renumber(flows), sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
