"""The emulated fabric: a declarative topology built from network namespaces.

    from dcnet.testbed.fabric import Fabric, Topology
    topo = Topology(kind="clos", spines=4, leaves=4, hosts_per_leaf=4,
                    link_mbit=10, buffer_bytes=131072)
    fab = Fabric(topo, mode="ecmp")     # or "scatter", "mptcp", "l2", "presto", "l2ecmp"
    ...
    fab.close()

Nodes are network namespaces named PREFIX-NODE: hosts h1..hN, leaves
l1..lL, spines s1..sS (kind "clos"), or one switch o1 (kind "single": the
non-blocking "Optimal" switch of Presto, or the one ToR of D2TCP and of
incast).  Each link is a veth pair; a switch's port towards node X is
named X (leaf l1's ports: h1..h4 and s1..s4), a host's uplink is eth0.

Every switch egress port is a switch port queue: HTB at the link rate with
a byte-limited FIFO of buffer_bytes (RED marking CE above ecn_k_bytes when
set; CoDel with ECN when codel_target_us is set; netem when delay_us is set, whose limit is the buffer in MTU
packets plus the packets in its delay line).  Host NICs are HTB at the
link rate over a 1000-packet FIFO, or over netem when host_delay_us is
set (the hosts' latency; limit 1000 packets plus the delay line).
Hosts segment at their NIC (TSO/GSO off on eth0, so the fabric carries
MTU packets), switch ports do no GRO, receiving hosts do (GRO on eth0),
so the fabric's queues hold MTU packets as hardware ports do.

Forwarding modes:
  ecmp   every switch routes (IPv4 and IPv6); leaves spread over all
         spines with multipath routes hashed on the 5-tuple
         (fib_multipath_hash_policy 3, fields HASH_FIELDS); a cut link is taken out of the
         leaves' routes at once
  scatter the ecmp fabric with per-packet scatter (FastLane's FL-PS): every
         leaf sends the IPv4 packets it receives from its hosts round
         robin over the spines, by the low bits of the IP ID (Linux counts
         it up per TCP segment on each connection): a u32 filter on the
         host port's ingress marks the packet (skbedit mark k), a policy
         rule (fwmark k) looks it up in a table whose routes to the other
         leaves all go through spine k.  IPv6 stays hashed (the kernel has
         no IPV6_MULTIPLE_TABLES); spine-to-leaf has one path anyway
  mptcp  the ecmp fabric, and hosts run MPTCP with `subflows` subflows
         (one per extra address, ip mptcp endpoints)
  l2     every switch is a Linux bridge that neither learns nor floods;
         the Controller installs its FDB (destination MAC -> port), one
         spanning tree per spine; hosts share one subnet with static
         neighbours.  Presto's shadow MACs use the same interface.
  presto the l2 fabric, each host behind an Open vSwitch bridge that
         sprays 64 KB flowcells over one shadow MAC per spanning tree
         (dcnet/testbed/presto.py: wiring, vSwitches, controller)
  l2ecmp the same, with a per-flow hash over the trees (ECMP on L2)

Everything is built with batched netlink (`ip -batch`, `tc -batch`) and
setns(2) from this process, not one process per command: in the debug
guest each process start costs 1-5 s.
"""
import json
import subprocess
import time
from dataclasses import asdict, dataclass, field

from dcnet import config
from dcnet.testbed import modes

# the namespace primitives (dcnet.testbed.ns), also importable from here
from dcnet.testbed.ns import (  # noqa: F401
    ETHTOOL_SGRO, ETHTOOL_SGSO, ETHTOOL_STSO, batch, batch_checked, batch_errors, ethtool_set, netns,
    ns_exec, run, sysctl)

MTU = 1500
# The switches' ECMP hash (fib_multipath_hash_fields): the 5-tuple,
# source and destination address, protocol, source and destination port
# (0x1|0x2|0x4|0x10|0x20).  An experiment's "hash_fields" sets another:
# 0x27 leaves out the source port, which makes MPTCP's extra subflows
# (ports from the kernel's per-boot secret) take the same spines in every
# boot, but also puts every connection between two hosts to one server
# port on one spine (test_ecmp_spreads_flows_over_spines), so it is not
# the default.
HASH_FIELDS = 0x37
# MPTCP hosts: the ports clients connect from (iperf3 --cport from 20000,
# the kernel's ephemeral range 32768-60999); servers listen below them.
# A subflow from a host's extra address to one of these is the server
# side's doomed join (Fabric.mptcp_host_lines).  65534: the kernel takes
# no rule port range ending at 65535.
MPTCP_CLIENT_PORTS = (20000, 65534)


@dataclass
class Topology:
    kind: str = "clos"              # clos | single
    spines: int = 4
    leaves: int = 4
    hosts_per_leaf: int = 4
    hosts: int = 0                  # single: number of hosts (default leaves * hosts_per_leaf)
    link_mbit: float = 10.0         # every link (host and fabric)
    fabric_mbit: float = 0.0        # leaf-spine links (0: link_mbit)
    delay_us: int = 0               # one-way, per switch egress port
    host_delay_us: int = 0          # one-way, per host NIC (the hosts' own latency)
    buffer_bytes: int = 131072      # per switch egress port
    ecn_k_bytes: int = 0            # CE marking threshold (0: none)
    fastlane: bool = False          # FastLane ports (sch_fastlane): drop notifications
    codel_target_us: int = 0        # CoDel with ECN at switch ports (0: none)
    codel_interval_us: int = 100000  # its interval (with codel_target_us)
    paper_link_mbit: float = 10000.0

    def __post_init__(self):
        if self.kind not in ("clos", "single"):
            raise ValueError(f"topology kind {self.kind!r}: clos or single")
        if self.kind == "single" and not self.hosts:
            self.hosts = self.leaves * self.hosts_per_leaf
        if self.link_mbit <= 0 or self.buffer_bytes < MTU:
            raise ValueError("link_mbit must be > 0 and buffer_bytes at least one MTU")
        if self.ecn_k_bytes and self.delay_us:
            raise ValueError("ecn_k_bytes and delay_us cannot be combined on one port")
        if self.fastlane and self.delay_us:
            raise ValueError("fastlane and delay_us cannot be combined on one port")
        if self.codel_target_us and (self.ecn_k_bytes or self.fastlane or self.delay_us):
            raise ValueError("codel_target_us cannot be combined with ecn_k_bytes, fastlane or delay_us"
                             " on one port")
        if self.codel_target_us < 0 or self.codel_interval_us <= 0:
            raise ValueError("codel_target_us must be >= 0 and codel_interval_us > 0")
        if self.delay_us < 0 or self.host_delay_us < 0:
            raise ValueError("delay_us and host_delay_us must be >= 0")

    @property
    def n_hosts(self):
        return self.leaves * self.hosts_per_leaf if self.kind == "clos" else self.hosts

    @property
    def scale(self):
        return self.link_mbit / self.paper_link_mbit

    def to_dict(self):
        return asdict(self)


@dataclass
class Host:
    name: str
    index: int                      # 1..N
    leaf: str                       # its switch
    ip: str = ""
    ip6: str = ""
    mac: str = ""
    extra_ips: list = field(default_factory=list)


class Fabric:
    def __init__(self, topo, mode="ecmp", prefix="tb", subflows=8, hash_seed=None,
                 hash_fields=None,
                 flowcell_bytes=None, presto_gro=False, flowcell_seed=None, presto_gro_knobs=None,
                 flowlet_gap_us=None, presto_controller=False):
        from dcnet.testbed.presto import FLOWCELL_BYTES
        modes.get(mode)                 # ValueError: not a mode
        self.flowcell_bytes = flowcell_bytes or FLOWCELL_BYTES
        self.presto_gro = presto_gro
        self.presto_gro_knobs = dict(presto_gro_knobs or {})     # sysfs name -> value
        # the datapath's flowcell seed (None: not set, random starts)
        self.flowcell_seed = flowcell_seed
        self.flowcell_seed_error = None
        # mode presto: flowlet switching with this inactivity gap (us)
        # instead of flowcells (None or 0: flowcells)
        if flowlet_gap_us and mode != "presto":
            raise ValueError(f"flowlet_gap_us needs mode presto, not {mode!r}")
        self.flowlet_gap_us = flowlet_gap_us or None
        # Presto's modes: the hosts' bridges take their tables from the
        # OpenFlow controller (dcnet/controller, a process of its own)
        # instead of ovs-ofctl batches
        if presto_controller and not modes.get(mode).vswitched:
            raise ValueError(f"presto_controller needs mode presto or l2ecmp, not {mode!r}")
        self.presto_controller = bool(presto_controller)
        self.vswitch = self.presto = None
        self.rates = {}             # frozenset({a, b}) -> Mbit/s set by degrade_link()
        self.topo, self.mode, self.prefix, self.subflows = topo, mode, prefix, subflows
        # net.ipv4.fib_multipath_hash_seed of every switch (None: the
        # kernel's random per-boot key); IPv4 ECMP placement then repeats
        self.hash_seed = hash_seed
        self.hash_fields = HASH_FIELDS if hash_fields is None else hash_fields
        self.hosts = {}
        self.switches = []
        self.links = []             # (node a, port on a, node b, port on b)
        self.procs = []
        self.down = set()           # links cut by set_link(): frozenset({(node, port), (peer, port)})
        self._plan()
        self.t_build = time.time()
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        self.controller = Controller(self) if self.l2 else None
        try:
            if self.controller:
                self.controller.install_baseline()
            if self.vswitched:
                self._build_vswitches()
        except BaseException:
            self.close()
            raise
        self.t_build = time.time() - self.t_build

    # ------------------------------------------------------------ plan
    @property
    def scheme(self):
        """the mode (dcnet/testbed/modes): what the plane needs, the lines it adds"""
        return modes.get(self.mode)

    @property
    def vswitched(self):
        """hosts behind vSwitches (Presto's modes)"""
        return self.scheme.vswitched

    @property
    def l2(self):
        """switches forward on destination MAC (a controller's tables)"""
        return self.scheme.l2 or self.vswitched

    def ns(self, node):
        return f"{self.prefix}-{node}"

    def _plan(self):
        t = self.topo
        if t.kind == "clos":
            leaves = [f"l{i}" for i in range(1, t.leaves + 1)]
            spines = [f"s{i}" for i in range(1, t.spines + 1)]
            self.switches = leaves + spines
            n = 0
            for li, leaf in enumerate(leaves, start=1):
                for i in range(1, t.hosts_per_leaf + 1):
                    n += 1
                    self.hosts[f"h{n}"] = Host(f"h{n}", n, leaf)
                for spine in spines:
                    self.links.append((leaf, spine, spine, leaf))
        else:
            self.switches = ["o1"]
            for n in range(1, t.hosts + 1):
                self.hosts[f"h{n}"] = Host(f"h{n}", n, "o1")
        for h in self.hosts.values():
            if self.vswitched:
                # host -> its vSwitch port vN; the vSwitch's uplink uN -> leaf
                self.links.append((h.name, "eth0", "vs", f"v{h.index}"))
                self.links.append(("vs", f"u{h.index}", h.leaf, h.name))
            else:
                self.links.append((h.name, "eth0", h.leaf, h.name))
            h.mac = "02:dc:00:00:%02x:%02x" % (h.index >> 8, h.index & 0xff)
            if self.l2:
                h.ip, h.ip6 = f"10.2.{h.index >> 8}.{h.index & 0xff}", f"fd02::{h.index:x}"
            else:
                h.ip, h.ip6 = self._l3_addr(h, 1)
                if self.mode == "mptcp":
                    h.extra_ips = [self._l3_addr(h, k)[0] for k in range(2, self.subflows + 1)]

    def mptcp_host_lines(self, h):
        """`ip -batch` lines of host h's MPTCP setup (mode mptcp): the
        subflow limit, one `subflow` endpoint per extra address, and a
        policy rule per extra address that makes a connect() from it to a
        client port (MPTCP_CLIENT_PORTS) fail at once (ENETUNREACH).

        Every host is a client and a server.  The in-kernel path manager
        also uses `subflow` endpoints on the server side of a connection:
        it opens subflows from them to the client's initial address and
        port, where nothing listens.  Until those SYNs are refused (a
        round trip, or seconds when the ports are full and SYNs are lost)
        they count against the server's subflow limit (8, the kernel's
        most), and the client's joins arriving meanwhile are reset at
        their third ACK (EPROHIBIT): the connection keeps fewer subflows
        for the rest of its life, a different number in each boot
        (docs/testbed.md, "MPTCP's joins").  With the rule the server's
        attempts fail inside connect() (MPJoinSynTxConnectErr) and give
        their budget back before any join arrives; the clients' joins go
        to server ports, below the range, and pass."""
        if self.mode != "mptcp":
            return []
        L = [f"mptcp limits set subflows {self.subflows} add_addr_accepted {self.subflows}"]
        # no "dev eth0": a subflow socket bound to a device that finds no
        # route (the rule below) takes its destination as on link
        # (ip_route_output_key_hash_rcu) and sends the SYN out anyway,
        # where no neighbour answers: the attempt then hangs for seconds
        for a in h.extra_ips:
            L.append(f"mptcp endpoint add {a} subflow")
        lo, hi = MPTCP_CLIENT_PORTS
        for a in h.extra_ips:
            L.append(f"rule add from {a} ipproto tcp dport {lo}-{hi} unreachable pref 100")
        return L

    def _l3_addr(self, h, k):
        leaf = int(h.leaf[1:]) if self.topo.kind == "clos" else 1
        i = (h.index - 1) % self.topo.hosts_per_leaf + 1 if self.topo.kind == "clos" else h.index
        return f"10.{leaf}.{i}.{k}", f"fd00:{leaf}:{i}::{k}"

    # ------------------------------------------------------------ build
    @staticmethod
    def delay_line_packets(rate_mbit, delay_us):
        """packets a netem queue holds in its delay line when the port
        runs at rate_mbit: netem's limit counts them together with the
        backlog, so a limit of the buffer alone would shrink the buffer by
        the delay line (twice it: a host NIC sends ACKs too, one per data
        packet at most, and they count as packets)"""
        return 2 * -(-int(rate_mbit * delay_us) // (8 * MTU))

    def _port_qdisc(self, dev, host_nic=False):
        t = self.topo
        rate = t.link_mbit
        # leaf-spine links, both directions: a leaf's ports to spines are
        # named s1.., a spine's ports to leaves l1..
        if not host_nic and t.fabric_mbit and t.kind == "clos" and dev[:1] in ("s", "l") \
                and dev[1:].isdigit():
            rate = t.fabric_mbit
        L = [f"qdisc replace dev {dev} root handle 1: htb default 1",
             f"class add dev {dev} parent 1: classid 1:1 htb rate {rate}mbit ceil {rate}mbit"
             f" burst {MTU * 2} cburst {MTU * 2}"]
        if host_nic and t.host_delay_us:
            lim = 1000 + self.delay_line_packets(rate, t.host_delay_us)
            L.append(f"qdisc add dev {dev} parent 1:1 handle 10: netem delay {t.host_delay_us}us"
                     f" limit {lim}")
        elif host_nic:
            L.append(f"qdisc add dev {dev} parent 1:1 handle 10: pfifo limit 1000")
        elif t.fastlane:
            # the caps follow: 1% of the rate, 2.5% of the buffer
            ce = f" ce_threshold {t.ecn_k_bytes}" if t.ecn_k_bytes else ""
            L.append(f"qdisc add dev {dev} parent 1:1 handle 10: fastlane limit {t.buffer_bytes}"
                     f" rate {rate}mbit{ce}")
        elif t.delay_us:
            lim = max(1, t.buffer_bytes // MTU) + self.delay_line_packets(rate, t.delay_us)
            L.append(f"qdisc add dev {dev} parent 1:1 handle 10: netem delay {t.delay_us}us"
                     f" limit {lim}")
        elif t.codel_target_us:
            # CoDel (fq_codel with one flow queue is CoDel on one FIFO),
            # marking CE instead of dropping for ECN-capable packets; the
            # buffer in MTU packets, and one packet dropped at a time at
            # the head when it is full (not fq_codel's batch of 64)
            L.append(f"qdisc add dev {dev} parent 1:1 handle 10: fq_codel limit {max(1, t.buffer_bytes // MTU)}"
                     f" flows 1 target {t.codel_target_us}us interval {t.codel_interval_us}us"
                     f" quantum {MTU + 14} drop_batch 1 ecn")
        elif t.ecn_k_bytes:
            k = t.ecn_k_bytes
            L.append(f"qdisc add dev {dev} parent 1:1 handle 10: red limit {t.buffer_bytes} min {k}"
                     f" max {k + MTU} avpkt {MTU} burst {k // MTU + 1} probability 1.0 ecn"
                     f" bandwidth {rate}mbit")
        else:
            L.append(f"qdisc add dev {dev} parent 1:1 handle 10: bfifo limit {t.buffer_bytes}")
        return L

    def _build(self):
        nodes = list(self.hosts) + self.switches + (["vs"] if self.vswitched else [])
        batch("ip", [f"netns add {self.ns(n)}" for n in nodes])
        self._created = nodes
        batch("ip", [f"link add {pa} netns {self.ns(a)} type veth peer name {pb} netns {self.ns(b)}"
                     for a, pa, b, pb in self.links])
        ports = {n: [] for n in nodes}
        for a, pa, b, pb in self.links:
            ports[a].append(pa)
            ports[b].append(pb)
        self.ports = ports
        routes = self._route_lines() if not self.l2 else {}
        for sw in self.switches:
            self._build_switch(sw, ports[sw], routes.get(sw, []))
        for h in self.hosts.values():
            self._build_host(h)
        if self.vswitched:
            self._build_vs_ports()
        # carrier changes reach routing through linkwatch, up to 1 s late
        time.sleep(1.0)

    def _build_switch(self, sw, ports, routes=()):
        ns = self.ns(sw)
        with netns(ns):
            sysctl("net.ipv4.ip_forward", 1)
            sysctl("net.ipv6.conf.all.forwarding", 1)
            # policy 3 with the 5-tuple's fields, not policy 1: policy 1
            # takes a forwarded skb's L4 hash when it has one, and a
            # veth keeps the sending socket's hash, a random number
            # per connection (sk_txhash), so placement changed per boot
            # whatever the seed and ports (a real switch sees no such
            # hash); the fields: HASH_FIELDS unless the experiment says
            for fam in ("ipv4", "ipv6"):
                sysctl(f"net.{fam}.fib_multipath_hash_policy", 3)
                sysctl(f"net.{fam}.fib_multipath_hash_fields", self.hash_fields)
            if self.hash_seed is not None:
                sysctl("net.ipv4.fib_multipath_hash_seed", self.hash_seed)
            sysctl("net.ipv6.conf.default.accept_dad", 0)
            sysctl("net.ipv6.conf.all.accept_dad", 0)
        L = ["link set lo up"]
        if self.l2:
            L.append("link add br0 type bridge stp_state 0 mcast_snooping 0")
        for p in ports:
            L.append(f"link set {p} up")
            if self.l2:
                L.append(f"link set {p} master br0")
        if self.l2:
            L.append("link set br0 up")
        else:
            for p in ports:
                L += self._l3_port_addrs(sw, p)
            L += list(routes)
            if sw.startswith("l"):
                L += self.scheme.leaf_ip_lines(self, sw)
        batch("ip", L, ns)
        if self.l2:
            batch("bridge", [f"link set dev {p} learning off flood off mcast_flood off" for p in ports], ns)
        tcl = []
        for p in ports:
            tcl += self._port_qdisc(p)
        if sw.startswith("l") and not self.l2:
            tcl += self.scheme.leaf_tc_lines(self, sw)
        batch("tc", tcl, ns)

    def _l3_port_addrs(self, sw, port):
        if port in self.hosts:          # leaf/switch port towards a host
            h = self.hosts[port]
            a, a6 = self._l3_addr(h, 254)
            return [f"addr add {a}/24 dev {port}", f"addr add {a6}/64 dev {port} nodad"]
        leaf, spine = (sw, port) if sw.startswith("l") else (port, sw)
        li, si = int(leaf[1:]), int(spine[1:])
        k = 1 if sw == leaf else 2
        return [f"addr add 10.{100 + li}.{si}.{k}/24 dev {port}",
                f"addr add fd01:{li}:{si}::{k}/64 dev {port} nodad"]

    def _build_host(self, h):
        ns = self.ns(h.name)
        with netns(ns):
            sysctl("net.ipv6.conf.all.accept_dad", 0)
            sysctl("net.ipv6.conf.default.accept_dad", 0)
            # behind a vSwitch the host keeps TSO/GSO (flowcells are
            # TSO-sized); its NIC, uN, segments
            ethtool_set("eth0", ETHTOOL_STSO, self.vswitched)
            ethtool_set("eth0", ETHTOOL_SGSO, self.vswitched)
            ethtool_set("eth0", ETHTOOL_SGRO, True)
        L = ["link set lo up", f"link set eth0 address {h.mac}", "link set eth0 up"]
        if self.l2:
            L += [f"addr add {h.ip}/16 dev eth0", f"addr add {h.ip6}/64 dev eth0 nodad"]
            for o in self.hosts.values():
                if o is not h:
                    L += [f"neigh replace {o.ip} lladdr {o.mac} dev eth0 nud permanent",
                          f"neigh replace {o.ip6} lladdr {o.mac} dev eth0 nud permanent"]
        else:
            gw, gw6 = self._l3_addr(h, 254)
            L += [f"addr add {h.ip}/24 dev eth0", f"addr add {h.ip6}/64 dev eth0 nodad",
                  f"route add default via {gw}", f"route add default via {gw6}"]
            for a in h.extra_ips:
                L.append(f"addr add {a}/24 dev eth0")
            L += self.mptcp_host_lines(h)
        batch("ip", L, ns)
        if not self.vswitched:
            batch("tc", self._port_qdisc("eth0", host_nic=True), ns)

    def _build_vs_ports(self):
        """the vSwitches' namespace: vN (towards host N: no offloads, so
        the host's veth GRO sees MTU packets) and uN (host N's NIC: the
        fabric gets MTU packets; HTB at the link rate)"""
        ns = self.ns("vs")
        with netns(ns):
            for h in self.hosts.values():
                for dev in (f"v{h.index}", f"u{h.index}"):
                    ethtool_set(dev, ETHTOOL_STSO, False)
                    ethtool_set(dev, ETHTOOL_SGSO, False)
                    ethtool_set(dev, ETHTOOL_SGRO, False)
        L = ["link set lo up"]
        for h in self.hosts.values():
            L += [f"link set v{h.index} up", f"link set u{h.index} up"]
        batch("ip", L, ns)
        tcl = []
        for h in self.hosts.values():
            tcl += self._port_qdisc(f"u{h.index}", host_nic=True)
        batch("tc", tcl, ns)

    def _build_vswitches(self):
        from dcnet.testbed.presto import OpenFlowPresto, PrestoController, VSwitch
        self.vswitch = VSwitch(self)
        self.vswitch.start()
        kind = OpenFlowPresto if self.presto_controller else PrestoController
        self.presto = kind(self, self.vswitch, method="flowcell" if self.mode == "presto" else "hash",
                           flowcell_bytes=self.flowcell_bytes)
        if self.presto_controller:
            # the controller first: the bridges connect as they appear
            self.presto.start()
        self.vswitch.add_bridges([h.index for h in self.hosts.values()],
                                 controller=self.presto.target if self.presto_controller else None)
        if self.flowcell_seed is not None and self.mode == "presto":
            self.flowcell_seed_error = self.vswitch.set_flowcell_seed(self.flowcell_seed)
        if self.flowlet_gap_us:
            self.vswitch.set_flowlet_gap(self.flowlet_gap_us)
        self.presto.install()
        if self.presto_gro:
            # the receivers' Presto GRO on every host's eth0, over its
            # generic netlink family from a socket opened in the host's
            # namespace (knobs and enabling in one request)
            from dcnet.prestogro import PrestoGro
            knobs = {k: int(v) for k, v in self.presto_gro_knobs.items()}
            for h in self.hosts.values():
                with netns(self.ns(h.name)), PrestoGro() as pg:
                    pg.set("eth0", enabled=1, **knobs)

    def presto_plan(self, method="flowcell", flowcell_bytes=None):
        """the declared topology Presto's tables are computed from (the
        plan JSON of dcnet/controller/plan.py): hosts with their bridge's
        datapath ID and ports, leaves, spines, and every fabric link and
        host uplink with its rate now (0: down)"""
        from dcnet.controller.plan import PORT_UP, PORT_VM
        spines = [s for s in self.switches if s.startswith("s")]
        leaves = [s for s in self.switches if not s.startswith("s")]
        hosts = [dict(name=h.name, index=h.index, mac=h.mac, ip=h.ip, ip6=h.ip6, leaf=h.leaf,
                      dpid=h.index, bridge=f"b{h.index}", port_host=PORT_VM, port_up=PORT_UP)
                 for h in sorted(self.hosts.values(), key=lambda h: h.index)]
        links = [dict(a=leaf, b=spine, mbit=self.link_rate(leaf, spine)) for leaf in leaves for spine in spines
                 if self.topo.kind == "clos"]
        for h in hosts:
            # the host's NIC towards its leaf: vs:uN - leaf:hN
            cut = frozenset({("vs", f"u{h['index']}"), (h["leaf"], h["name"])}) in self.down
            rate = self.rates.get(frozenset({h["name"], h["leaf"]}), self.topo.link_mbit)
            links.append(dict(a=h["name"], b=h["leaf"], mbit=0.0 if cut else rate))
        return dict(version=1, method=method, flowcell_bytes=flowcell_bytes or self.flowcell_bytes,
                    hosts=hosts, leaves=leaves, spines=spines, links=links)

    def link_rate(self, a, b):
        """a link's rate in Mbit/s now: 0 when it is down"""
        if not self.is_up(a, b):
            return 0.0
        r = self.rates.get(frozenset({a, b}))
        if r is not None:
            return r
        t = self.topo
        if t.fabric_mbit and {a[:1], b[:1]} == {"l", "s"}:
            return t.fabric_mbit
        return t.link_mbit

    def is_up(self, a, b):
        """is the link between nodes a and b up (ports are named after peers)"""
        return frozenset({(a, b), (b, a)}) not in self.down

    def _route_lines(self, leaves_only=False):
        """{switch: ip route commands}: a leaf reaches every other leaf over
        every spine that still reaches both (what a routing protocol
        converges to, at once); a spine reaches each leaf's hosts directly"""
        t = self.topo
        if t.kind == "single":
            return {}                   # one switch: every host subnet is connected
        spines = [s for s in self.switches if s.startswith("s")]
        leaves = [s for s in self.switches if s.startswith("l")]
        out = {}
        for leaf in leaves:
            li = int(leaf[1:])
            L = out.setdefault(leaf, [])
            for other in leaves:
                if other == leaf:
                    continue
                oi = int(other[1:])
                via = [s for s in spines if self.is_up(leaf, s) and self.is_up(s, other)]
                if not via:
                    L += [f"route del 10.{oi}.0.0/16", f"route del fd00:{oi}::/32"]
                    continue
                nh = " ".join(f"nexthop via 10.{100 + li}.{int(s[1:])}.2 dev {s}" for s in via)
                nh6 = " ".join(f"nexthop via fd01:{li}:{int(s[1:])}::2 dev {s}" for s in via)
                L += [f"route replace 10.{oi}.0.0/16 {nh}", f"route replace fd00:{oi}::/32 {nh6}"]
        if leaves_only:
            return out
        for spine in spines:
            si = int(spine[1:])
            L = out.setdefault(spine, [])
            for leaf in leaves:
                li = int(leaf[1:])
                L += [f"route replace 10.{li}.0.0/16 via 10.{100 + li}.{si}.1 dev {leaf}",
                      f"route replace fd00:{li}::/32 via fd01:{li}:{si}::1 dev {leaf}"]
        return out

    def _reroute(self):
        for leaf, lines in self._route_lines(leaves_only=True).items():
            lines = lines + self.scheme.reroute_lines(self, leaf)
            # a "route del" of a route already gone is no error; any other is
            batch_checked("ip", lines, ns=self.ns(leaf))

    # ------------------------------------------------------------ use
    def ip(self, host, v6=False):
        h = self.hosts[host]
        return h.ip6 if v6 else h.ip

    def spawn(self, node, argv, **kw):
        p = subprocess.Popen(ns_exec(self.ns(node)) + argv, **{"stdout": subprocess.PIPE,
                                "stderr": subprocess.PIPE, "text": True, **kw})
        self.procs.append(p)
        return p

    def link_peer(self, node, port):
        for a, pa, b, pb in self.links:
            if (a, pa) == (node, port):
                return b, pb
            if (b, pb) == (node, port):
                return a, pa
        raise KeyError(f"no link at {node}:{port}")

    def set_link(self, node, port, up):
        """a link down/up: both ends, as when a cable is cut"""
        peer, pport = self.link_peer(node, port)
        state = "up" if up else "down"
        batch("ip", [f"link set {port} {state}"], self.ns(node))
        batch("ip", [f"link set {pport} {state}"], self.ns(peer))
        key = frozenset({(node, port), (peer, pport)})
        if up:
            self.down.discard(key)
        else:
            self.down.add(key)
        if self.presto:
            self.presto.link_changed(cause=f"{node}:{port} {state}")
        elif self.controller:
            self.controller.link_changed()
        else:
            self._reroute()

    def degrade_lines(self, node, port, mbit):
        """[(node, tc lines)]: what degrade_link runs at each end.  The
        HTB class sets the rate; a switch's FastLane queue takes the new
        rate too, so its notification cap stays 1% of what the link now
        carries (its buffer and ce_threshold stay as they are, as a
        switch's configuration would)"""
        peer, pport = self.link_peer(node, port)
        out = []
        for n, p in ((node, port), (peer, pport)):
            L = [f"class change dev {p} parent 1: classid 1:1 htb rate {mbit}mbit ceil {mbit}mbit"
                 f" burst {MTU * 2} cburst {MTU * 2}"]
            if self.topo.fastlane and n in self.switches:
                L.append(f"qdisc change dev {p} parent 1:1 handle 10: fastlane rate {mbit}mbit")
            out.append((n, L))
        return out

    def degrade_link(self, node, port, mbit):
        """change a link's rate (both directions), e.g. 10 -> 1 scaled"""
        peer, _pport = self.link_peer(node, port)
        self.rates[frozenset({node, peer})] = float(mbit)
        for n, lines in self.degrade_lines(node, port, mbit):
            batch("tc", lines, self.ns(n))
        if self.presto:
            self.presto.link_changed(cause=f"{node}:{port} {mbit} Mbit/s")

    def link_stats(self, node):
        """{port: {tx_packets, tx_bytes, rx_packets, ...}} of one node"""
        out = json.loads(run(["ip", "-n", self.ns(node), "-s", "-j", "link", "show"]))
        res = {}
        for link in out:
            st = link.get("stats64") or link.get("stats") or {}
            res[link["ifname"]] = dict(tx_packets=st.get("tx", {}).get("packets", 0),
                                       tx_bytes=st.get("tx", {}).get("bytes", 0),
                                       rx_packets=st.get("rx", {}).get("packets", 0),
                                       operstate=link.get("operstate"))
        return res

    def port_counters(self):
        """every switch egress queue's qdisc counters"""
        res = []
        for sw in self.switches:
            out = json.loads(run([config.get("DCNET_TC"), "-n", self.ns(sw), "-s", "-j", "qdisc",
                                  "show"]))
            for q in out:
                if q.get("parent") != "1:1":
                    continue
                res.append(dict(node=sw, dev=q.get("dev"), kind=q.get("kind"),
                                sent_bytes=q.get("bytes", 0), sent_packets=q.get("packets", 0),
                                drops=q.get("drops", 0), overlimits=q.get("overlimits", 0),
                                marks=q.get("marked", 0) + q.get("ecn_mark", 0) + q.get("ce_mark", 0)
                                + q.get("ce_marked", 0),
                                **({k: q.get(k, 0) for k in ("nf_generated", "nf_sent", "nf_bytes",
                                                             "nf_cap_drops", "nf_backlog_max")}
                                   if q.get("kind") == "fastlane" else {})))
        return res

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []
        if self.presto is not None and hasattr(self.presto, "close"):
            self.presto.close()
        if self.vswitch:
            self.vswitch.stop()
            self.vswitch = None
        nodes = getattr(self, "_created", None) or list(self.hosts) + self.switches
        subprocess.run(["ip", "-force", "-batch", "-"], input="".join(f"netns del {self.ns(n)}\n" for n in nodes),
                       text=True, capture_output=True)


class Controller:
    """Installs the L2 fabric's forwarding tables (mode "l2").

    Tree t (1..S) is the spanning tree through spine t.  install(mac,
    host, tree) makes every switch forward frames for `mac` along tree
    `tree` to `host`: the host's leaf to its port, every other leaf to
    spine t, spine t to the host's leaf.  The baseline gives each host's
    own MAC one tree (index mod S); Presto (dcnet/testbed/presto.py) installs a
    shadow MAC per tree for every host and lets the hosts' vSwitches pick
    among them.
    """

    def __init__(self, fabric):
        self.fab = fabric
        self.installed = {}             # mac -> (host, tree)
        self.detoured = {}              # MAC -> {switch: fdb lines}: fast_failover's detours
        self.spines = [s for s in fabric.switches if s.startswith("s")]
        self.leaves = [s for s in fabric.switches if not s.startswith("s")]

    def trees(self):
        return list(range(1, len(self.spines) + 1)) or [1]

    def healthy(self, tree):
        """a tree is usable when spine `tree` reaches every leaf"""
        if not self.spines:
            return True
        return all(self.fab.is_up(self.spines[tree - 1], leaf) for leaf in self.leaves)

    def _entries(self, mac, host, tree):
        h = self.fab.hosts[host]
        out = {}
        for leaf in self.leaves:
            out[leaf] = host if leaf == h.leaf else self.spines[tree - 1]
        if self.spines:
            out[self.spines[tree - 1]] = h.leaf
        return out

    def install(self, mac, host, tree):
        self.install_many([(mac, host, tree)])

    def install_many(self, entries):
        """[(mac, host, tree)]: one bridge(8) batch per switch"""
        per_sw = {}
        for mac, host, tree in entries:
            old = self.installed.get(mac)
            if old:
                for sw, port in self._entries(mac, *old).items():
                    per_sw.setdefault(sw, []).append(f"fdb del {mac} dev {port} master")
            for sw, port in self._entries(mac, host, tree).items():
                per_sw.setdefault(sw, []).append(f"fdb replace {mac} dev {port} master static")
            self.installed[mac] = (host, tree)
        self._apply(per_sw)

    def _apply(self, per_sw):
        """{switch: bridge(8) fdb lines}: one batch per switch"""
        for sw, lines in per_sw.items():
            # deleting an entry already gone is no error; any other is
            batch_checked("bridge", lines, ns=self.fab.ns(sw))

    def fast_failover(self, macs):
        """What a switch's fast-failover group does in hardware, before any
        controller acts (Presto Sec. 3.3, Fig. 17's failover stage): for
        each MAC in `macs` whose tree's spine lost its link to a leaf, a
        leaf that would send it to that spine sends it to the next spine
        (in tree order) that reaches both that leaf and the MAC's host,
        which forwards it to the host's leaf.  Only the entries that cross
        the cut change; the MAC keeps its tree (`installed`).  Returns the
        number of leaf entries changed (a MAC already detoured the same
        way is not written again)."""
        per_sw = {}
        for mac in macs:
            if mac not in self.installed or not self.spines:
                continue
            host, tree = self.installed[mac]
            spine, hl = self.spines[tree - 1], self.fab.hosts[host].leaf
            mine = {}
            for leaf in self.leaves:
                if leaf == hl or (self.fab.is_up(leaf, spine) and self.fab.is_up(spine, hl)):
                    continue
                # the spines after this tree's, in tree order
                alt = next((sp for sp in self.spines[tree:] + self.spines[:tree - 1]
                            if self.fab.is_up(leaf, sp) and self.fab.is_up(sp, hl)), None)
                if alt is None:
                    continue
                mine.setdefault(leaf, []).append(f"fdb replace {mac} dev {alt} master static")
                mine.setdefault(alt, []).append(f"fdb replace {mac} dev {hl} master static")
            if mine and self.detoured.get(mac) != mine:
                self.detoured[mac] = mine
                for sw, lines in mine.items():
                    per_sw.setdefault(sw, []).extend(lines)
        self._apply(per_sw)
        return sum(len(v) for k, v in per_sw.items() if k in self.leaves)

    def restore(self, macs):
        """put detoured MACs (fast_failover) back on their own tree once it
        is whole again"""
        back = [m for m in macs if m in self.detoured and self.healthy(self.installed[m][1])]
        for m in back:
            del self.detoured[m]
        self.install_many([(m, *self.installed[m]) for m in back])
        return len(back)

    def install_baseline(self):
        trees = self.trees()
        self.install_many([(h.mac, h.name, trees[(h.index - 1) % len(trees)]) for h in self.fab.hosts.values()])

    def link_changed(self, pinned=()):
        """move every MAC off a tree that lost a link, except those in
        `pinned` (Presto's shadow MACs stay on their tree: its controller
        stops using them instead)"""
        ok = [t for t in self.trees() if self.healthy(t)]
        if not ok:
            return
        self.install_many([(mac, host, ok[(self.fab.hosts[host].index - 1) % len(ok)])
                           for mac, (host, tree) in self.installed.items()
                           if tree not in ok and mac not in pinned])
