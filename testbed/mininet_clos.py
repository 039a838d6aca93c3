#!/usr/bin/python3
"""Mininet 2.3 (Debian's /usr/bin/python3) building the same 2-tier Clos as
dcnet/testbed/fabric.py: routers as Mininet nodes with forwarding on, TCLink
shaping, ECMP routes.  Kept to measure the build time against fabric.py
(docs/testbed.md: why the testbed does not build on Mininet) and as a
starting point for anyone who prefers it.

    /usr/bin/python3 testbed/mininet_clos.py [spines leaves hosts_per_leaf]
"""
import sys
import time

from mininet.link import TCLink
from mininet.net import Mininet
from mininet.node import Node
from mininet.topo import Topo


class Router(Node):
    def config(self, **params):
        super().config(**params)
        self.cmd("sysctl -qw net.ipv4.ip_forward=1 net.ipv4.fib_multipath_hash_policy=1")


class Clos(Topo):
    def build(self, S=4, L=4, H=4, bw=10):
        spines = [self.addNode(f"s{i}", cls=Router, ip=None) for i in range(1, S + 1)]
        n = 0
        for li in range(1, L + 1):
            leaf = self.addNode(f"l{li}", cls=Router, ip=None)
            for si, sp in enumerate(spines, start=1):
                self.addLink(leaf, sp, cls=TCLink, bw=bw, max_queue_size=87,
                             params1=dict(ip=f"10.{100 + li}.{si}.1/24"), params2=dict(ip=f"10.{100 + li}.{si}.2/24"))
            for i in range(1, H + 1):
                n += 1
                h = self.addHost(f"h{n}", ip=f"10.{li}.{i}.1/24", defaultRoute=f"via 10.{li}.{i}.254")
                self.addLink(h, leaf, cls=TCLink, bw=bw, max_queue_size=87,
                             params2=dict(ip=f"10.{li}.{i}.254/24"))


def main():
    S, L, H = (int(x) for x in sys.argv[1:4]) if len(sys.argv) > 3 else (4, 4, 4)
    t0 = time.time()
    net = Mininet(topo=Clos(S=S, L=L, H=H), controller=None, autoSetMacs=True)
    net.start()
    for li in range(1, L + 1):
        leaf = net.get(f"l{li}")
        for lo in range(1, L + 1):
            if lo != li:
                nh = " ".join(f"nexthop via 10.{100 + li}.{si}.2" for si in range(1, S + 1))
                leaf.cmd(f"ip route add 10.{lo}.0.0/16 {nh}")
    for si in range(1, S + 1):
        for li in range(1, L + 1):
            net.get(f"s{si}").cmd(f"ip route add 10.{li}.0.0/16 via 10.{100 + li}.{si}.1")
    built = time.time() - t0
    t1 = time.time()
    loss = net.ping([net.get("h1"), net.get(f"h{L * H}")], timeout=2)
    print(f"mininet: {S}x{L}x{H} Clos built in {built:.1f} s; h1 <-> h{L * H} loss {loss}%"
          f" ({time.time() - t1:.1f} s)")
    net.stop()


if __name__ == "__main__":
    main()
