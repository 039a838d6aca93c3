"""Per-packet scatter (FastLane's FL-PS) on the routed Clos: mode "scatter"."""
from dcnet.testbed.modes import Mode, register

# spine k's table at a leaf: TABLE + k
TABLE = 100


def spines(fab):
    return [s for s in fab.switches if s.startswith("s")]


def rules(fab, leaf):
    """ip lines: fwmark k -> table 100 + k (a miss there, e.g. a host
    of the same leaf, falls through to the main table)"""
    return [f"rule add fwmark {int(s[1:])} table {TABLE + int(s[1:])}"
            f" pref {TABLE + int(s[1:])}" for s in spines(fab)]


def routes(fab, leaf):
    """ip lines: in spine k's table, every other leaf through spine k,
    or, when spine k does not reach that leaf now, through one of the
    spines that do (so a cut link takes no packets)"""
    li = int(leaf[1:])
    leaves = [s for s in fab.switches if s.startswith("l")]
    L = []
    sp = spines(fab)
    for s in sp:
        k = int(s[1:])
        table = TABLE + k
        for other in leaves:
            if other == leaf:
                continue
            oi = int(other[1:])
            via = [v for v in sp if fab.is_up(leaf, v) and fab.is_up(v, other)]
            if not via:
                L.append(f"route del 10.{oi}.0.0/16 table {table}")
                continue
            v = s if s in via else via[(k - 1) % len(via)]
            L.append(f"route replace 10.{oi}.0.0/16 via 10.{100 + li}.{int(v[1:])}.2 dev {v} table {table}")
    return L


def filters(fab, leaf):
    """tc lines: on every host port's ingress, the low bits of the IPv4
    ID pick the spine (skbedit mark k): round robin per connection,
    as Linux counts the ID up per segment (TSO/GSO are off on the
    hosts, so one packet is one segment)"""
    sp = spines(fab)
    if not sp:
        return []
    m = 1
    while m < len(sp):
        m *= 2
    L = []
    for h in sorted(fab.hosts.values(), key=lambda h: h.index):
        if h.leaf != leaf:
            continue
        L.append(f"qdisc add dev {h.name} handle ffff: ingress")
        for v in range(m):
            L.append(f"filter add dev {h.name} parent ffff: protocol ip prio 1 u32"
                     f" match u16 0x{v:04x} 0x{m - 1:04x} at 4"
                     f" action skbedit mark {int(sp[v % len(sp)][1:])}")
    return L


@register
class Scatter(Mode):
    name = "scatter"
    doc = ("the `ecmp` fabric with per-packet scatter (FastLane's FL-PS): each leaf sends its "
           "hosts' IPv4 packets round robin over the spines by the low bits of the IP ID (a `u32` "
           "filter sets `skbedit mark k`, rule `fwmark k` looks up table 100 + k, whose routes to "
           "the other leaves go through spine k, or another spine while k cannot reach that leaf). "
           "IPv6 stays hashed (the kernels have no `IPV6_MULTIPLE_TABLES`)")

    def leaf_ip_lines(self, fab, leaf):
        return rules(fab, leaf) + routes(fab, leaf)

    def leaf_tc_lines(self, fab, leaf):
        return filters(fab, leaf)

    def reroute_lines(self, fab, leaf):
        return routes(fab, leaf)
