"""Presto's tables from a declared topology: pure computation, no I/O.

The plan is the JSON the emulated fabric writes (Fabric.presto_plan(),
dcnet/testbed/fabric.py) and an operator writes for real machines:

    {"version": 1, "method": "flowcell", "flowcell_bytes": 65536,
     "hosts": [{"name": "h1", "index": 1, "mac": "02:dc:00:00:00:01",
                "leaf": "l1", "dpid": 1, "port_host": 1, "port_up": 2}, ...],
     "leaves": ["l1", ...], "spines": ["s1", ...],
     "links": [{"a": "l1", "b": "s1", "mbit": 100}, ...]}

"links" holds the fabric's links (leaf-spine) and each host's uplink
(host-leaf); "mbit" is the link's rate, 0 when it is down.  Tree t
(1..S) is the spanning tree through spine t: every leaf -> spine t ->
the destination's leaf.  Shadow MAC of host N on tree t:
02:dc:TT:00:NN:NN (tree 0 is the host's real MAC).

The emulator's table generator (dcnet/testbed/presto.py) and the
OpenFlow controller (dcnet/controller/app.py) both take their groups
and flows from here.
"""
import math

QUANTA = 4                      # weight resolution: quarters of the best tree
PORT_VM, PORT_UP = 1, 2         # default OpenFlow ports of a host's bridge
PLAN_VERSION = 1


def shadow_mac(index, tree):
    """host index (1..), tree (0 = the real MAC, 1.. = spine)"""
    if not 0 <= tree <= 0xff or not 1 <= index <= 0xffff:
        raise ValueError(f"shadow MAC of host {index}, tree {tree}: out of range")
    return "02:dc:%02x:00:%02x:%02x" % (tree, index >> 8, index & 0xff)


def weights(caps):
    """[(tree, weight)] from [(tree, rate)]: quarters of the best tree's
    rate, reduced by their gcd (equal trees weigh 1 each, a tree at half
    rate 1 against 2: OVS repeats a bucket as often as its weight in the
    group's round robin sequence); a tree at rate 0 is pruned"""
    top = max((c for _, c in caps), default=0)
    if top <= 0:
        return []
    w = [(t, max(1, round(QUANTA * c / top))) for t, c in caps if c > 0]
    g = 0
    for _, x in w:
        g = math.gcd(g, x)
    return [(t, x // g) for t, x in w]


def tree_weights(link_rate, src_leaf, dst_leaf, trees, spines):
    """[(tree, weight)] for traffic from src_leaf to dst_leaf: a tree's
    weight is its bottleneck rate for the pair (0: a cut link prunes it),
    in quarters of the largest (Presto Sec. 3.3's weighted sequences).
    link_rate(a, b): the link's rate now, 0 when it is down."""
    caps = []
    for t in trees:
        if src_leaf == dst_leaf or not spines:
            cap = 1.0
        else:
            s = spines[t - 1]
            cap = min(link_rate(src_leaf, s), link_rate(s, dst_leaf))
        caps.append((t, cap))
    return weights(caps)


class Plan:
    """a declared topology (the plan JSON) and its links' state"""

    def __init__(self, d):
        if d.get("version", PLAN_VERSION) != PLAN_VERSION:
            raise ValueError(f"plan version {d.get('version')}: this controller reads {PLAN_VERSION}")
        self.method = d.get("method", "flowcell")
        if self.method not in ("flowcell", "hash"):
            raise ValueError(f"method {self.method!r}: flowcell or hash")
        self.flowcell_bytes = int(d.get("flowcell_bytes", 65536))
        self.leaves = list(d.get("leaves", []))
        self.spines = list(d.get("spines", []))
        self.hosts = sorted((dict(h) for h in d["hosts"]), key=lambda h: h["index"])
        if not self.hosts:
            raise ValueError("plan: no hosts")
        nodes = set(self.leaves) | set(self.spines)
        seen = set()
        for h in self.hosts:
            h.setdefault("dpid", h["index"])
            h.setdefault("port_host", PORT_VM)
            h.setdefault("port_up", PORT_UP)
            if h["leaf"] not in nodes:
                raise ValueError(f"plan: host {h['name']}'s leaf {h['leaf']} is not a switch")
            if h["index"] in seen:
                raise ValueError(f"plan: host index {h['index']} twice")
            seen.add(h["index"])
        self.by_dpid = {h["dpid"]: h for h in self.hosts}
        if len(self.by_dpid) != len(self.hosts):
            raise ValueError("plan: two hosts with one dpid")
        self.by_index = {h["index"]: h for h in self.hosts}
        self.rates = {}
        for link in d.get("links", []):
            self.rates[frozenset((link["a"], link["b"]))] = float(link.get("mbit", 0))

    def to_dict(self):
        links = [dict(a=a, b=b, mbit=r) for (a, b), r in
                 sorted((tuple(sorted(k)), v) for k, v in self.rates.items())]
        return dict(version=PLAN_VERSION, method=self.method, flowcell_bytes=self.flowcell_bytes,
                    hosts=self.hosts, leaves=self.leaves, spines=self.spines, links=links)

    def trees(self):
        return list(range(1, len(self.spines) + 1)) or [1]

    def link_rate(self, a, b):
        """a declared link's rate now (0: down); an undeclared pair: 0"""
        return self.rates.get(frozenset((a, b)), 0.0)

    def set_link(self, a, b, mbit):
        """a link's new rate (0: down).  KeyError for a link not declared."""
        key = frozenset((a, b))
        if key not in self.rates:
            raise KeyError(f"no link {a}-{b} in the plan")
        self.rates[key] = float(mbit)

    def host_up(self, h):
        """a host's uplink is up (an undeclared uplink counts as up)"""
        key = frozenset((h["name"], h["leaf"]))
        return self.rates.get(key, 1.0) > 0

    def buckets(self, src, dst):
        """[(tree, weight)] from host src to host dst; [] when either
        host's uplink is down"""
        if not (self.host_up(src) and self.host_up(dst)):
            return []
        return tree_weights(self.link_rate, src["leaf"], dst["leaf"], self.trees(), self.spines)

    def groups(self, src):
        """{dst index: [(tree, weight)]} of host src's bridge"""
        return {d["index"]: self.buckets(src, d) for d in self.hosts if d is not src}

    def flows(self, src):
        """host src's bridge flows, each {priority, in_port, eth_dst
        (or None), actions: [("group", g) | ("set_eth_dst", mac) |
        ("output", port)]}:
          - from the host to another host's real MAC: that host's group;
          - from the host, anything else: the uplink;
          - from the uplink to one of src's shadow MACs: back to its real
            MAC, to the host (the source MAC, which carries the flowcell
            ID, is left alone);
          - from the uplink, anything else: the host"""
        vm, up = src["port_host"], src["port_up"]
        out = [dict(priority=10, in_port=vm, eth_dst=d["mac"], actions=[("group", d["index"])])
               for d in self.hosts if d is not src]
        out.append(dict(priority=5, in_port=vm, eth_dst=None, actions=[("output", up)]))
        out += [dict(priority=10, in_port=up, eth_dst=shadow_mac(src["index"], t),
                     actions=[("set_eth_dst", src["mac"]), ("output", vm)]) for t in self.trees()]
        out.append(dict(priority=5, in_port=up, eth_dst=None, actions=[("output", vm)]))
        return out

    def selection(self):
        """(OVS selection method, its parameter) of the groups"""
        if self.method == "flowcell":
            return "flowcell", self.flowcell_bytes
        return "dp_hash", 0


def ofctl_group(dst_index, buckets, method="flowcell", flowcell_bytes=65536, port_up=PORT_UP):
    """one ovs-ofctl (OpenFlow 1.5) group line: buckets [(tree, weight)]
    towards host dst_index.  method "flowcell" (Presto) or "hash"
    (per-flow dp_hash)."""
    if not buckets:
        raise ValueError(f"group {dst_index}: no usable tree")
    if method == "flowcell":
        # ovs-patches: the datapath's flowcell dp_hash algorithm
        sel = f"selection_method=flowcell,flowcell_size={flowcell_bytes}"
    elif method == "hash":
        sel = "selection_method=dp_hash"
    else:
        raise ValueError(f"method {method!r}: flowcell or hash")
    parts = [f"group_id={dst_index},type=select,{sel}"]
    for tree, weight in buckets:
        parts.append(f"bucket=bucket_id:{tree},weight:{weight},"
                     f"actions=set_field:{shadow_mac(dst_index, tree)}->eth_dst,output:{port_up}")
    return ",".join(parts)


def ofctl_flow(f):
    """one ovs-ofctl flow line from a flows() entry"""
    acts = []
    for kind, arg in f["actions"]:
        if kind == "group":
            acts.append(f"group:{arg}")
        elif kind == "set_eth_dst":
            acts.append(f"set_field:{arg}->eth_dst")
        elif kind == "output":
            acts.append(f"output:{arg}")
        else:
            raise ValueError(f"action {kind!r}")
    match = f"priority={f['priority']},in_port={f['in_port']}"
    if f["eth_dst"]:
        match += f",dl_dst={f['eth_dst']}"
    return f"{match},actions={','.join(acts)}"
