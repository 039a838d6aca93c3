"""The controller's plan for real hosts, from what the playbook knows.

testbed/physical's `controller` role writes the hosts of the inventory
group `dcnet` as JSON and turns them into the plan the controller reads
(dcnet/controller/plan.py):

    {"hosts": [{"name": "h1", "index": 1, "mac": "02:dc:00:00:00:01",
                "leaf": "l1"}, ...],
     "fabric": {"leaves": ["l1"], "spines": [], "links": []},
     "method": "flowcell", "flowcell_bytes": 65536, "link_mbit": 10000}

On a host the stack sits on the OVS bridge's LOCAL port and the uplink is
OpenFlow port 2 (the ovs role asks for it with ofport_request), so every
host gets port_host LOCAL and port_up 2; its datapath ID is its index.
"fabric" declares the switches between the hosts: leaves, spines and the
leaf-spine links with their rates; each host's link to its leaf is added
at link_mbit.  With no spines there is one tree (the L2 the hosts share).

    python -m dcnet.controller.inventory HOSTS.json [--out PLAN.json]
"""
import argparse
import json
import re
import sys

from dcnet.controller.plan import PLAN_VERSION, PORT_UP, Plan, shadow_mac

OFPP_LOCAL = 0xfffffffe         # OpenFlow 1.3+ number of a bridge's LOCAL port
_MAC = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")


def check_mac(name, mac):
    """a host's data-plane MAC must be a locally administered unicast
    address outside the shadow MACs' trees (byte 2 is the tree)"""
    mac = str(mac).lower()
    if not _MAC.match(mac):
        raise ValueError(f"host {name}: MAC {mac!r} is not xx:xx:xx:xx:xx:xx")
    first = int(mac[:2], 16)
    if first & 0x01 or not first & 0x02:
        raise ValueError(f"host {name}: MAC {mac} is not a locally administered unicast address; "
                         "the flowcell stamp keeps its first two bytes, so a vendor address would "
                         "put universal addresses on the wire")
    return mac


def plan_from_inventory(d):
    """the plan (a dict Plan accepts) from the role's JSON; ValueError
    with the host and field at fault"""
    fabric = d.get("fabric") or {}
    leaves = list(fabric.get("leaves") or ["l1"])
    spines = list(fabric.get("spines") or [])
    link_mbit = float(d.get("link_mbit", 10000))
    hosts, links = [], [dict(x) for x in fabric.get("links") or []]
    macs = {}
    for h in d["hosts"]:
        name, index = h["name"], int(h["index"])
        mac = check_mac(name, h["mac"])
        if mac in macs:
            raise ValueError(f"hosts {macs[mac]} and {name}: one MAC {mac}")
        macs[mac] = name
        leaf = h.get("leaf") or leaves[0]
        hosts.append(dict(name=name, index=index, mac=mac, leaf=leaf, dpid=index,
                          port_host=OFPP_LOCAL, port_up=PORT_UP))
        links.append(dict(a=name, b=leaf, mbit=link_mbit))
    trees = range(1, max(len(spines), 1) + 1)
    shadows = {shadow_mac(h["index"], t): h["name"] for h in hosts for t in trees}
    for mac, name in macs.items():
        if mac in shadows:
            raise ValueError(f"host {name}: MAC {mac} is a shadow MAC of host {shadows[mac]}")
    plan = dict(version=PLAN_VERSION, method=d.get("method", "flowcell"),
                flowcell_bytes=int(d.get("flowcell_bytes", 65536)),
                hosts=hosts, leaves=leaves, spines=spines, links=links)
    Plan(plan)                  # the controller's own checks
    return plan


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m dcnet.controller.inventory",
                                 description="the controller's plan from the playbook's hosts")
    ap.add_argument("hosts", help="the role's JSON (hosts, fabric, method, flowcell_bytes, link_mbit)")
    ap.add_argument("--out", help="write the plan here (default: stdout)")
    a = ap.parse_args(argv)
    with open(a.hosts) as f:
        d = json.load(f)
    try:
        plan = plan_from_inventory(d)
    except (ValueError, KeyError) as e:
        sys.exit(f"inventory: {e}")
    text = json.dumps(plan, indent=1) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    p = Plan(plan)
    print(f"inventory: {len(p.hosts)} hosts, {len(p.trees())} trees, method {p.method}", file=sys.stderr)


if __name__ == "__main__":
    main()
