"""dcnet: a 2-tier Clos of bare-metal machines (hosts, Linux leaf and spine switches).

Every host, leaf and spine is a bare-metal node running Debian 12; every
host-leaf and leaf-spine link asks for 10 Gbit/s.  The leaves and spines are
Linux routers (IPv4 ECMP over the spines, set up by each switch at boot).
Host h1 also runs the repository's Ansible playbook,
testbed/physical/site.yml, once the other nodes are ready.

Instructions:
Log in to h1.  /var/log/dcnet-cloudlab.log on every node says what its boot
script did; h1's /var/log/dcnet-cloudlab-playbook.log is the playbook's
output and /local/repository/results/physical/ holds its results.  The
inventory is /var/lib/dcnet-cloudlab/inventory.yml on h1.  See
docs/deploy.md in the repository ("CloudLab").
"""
# Runs in CloudLab's portal (geni-lib, Python 3) and offline:
#   python profile.py [--spines N --leaves N --hostsPerLeaf N ...] > request.xml
#   python profile.py --inventory [--spines ...] [--domain D]    # Ansible inventory (no geni-lib needed)
import argparse
import shlex
import sys

# Node and address plan, the same as the emulated fabric's ecmp mode
# (dcnet/testbed/fabric.py): host k of leaf l is 10.l.k.1/24 behind the leaf's
# 10.l.k.254; leaf l and spine s share 10.(100+l).s.0/24 (.1 the leaf,
# .2 the spine).
LINK_KBPS = 10 * 1000 * 1000          # 10 Gbit/s, in the RSpec's kbit/s
IMAGE = "urn:publicid:IDN+emulab.net+image+emulab-ops//DEB12-64-STD"
REPO = "/local/repository"            # where a repository-based profile's nodes have it
BOOT = REPO + "/testbed/physical/cloudlab/boot.sh"
CONTROLLER = "h1"
DCNET_DEV = "dcnet0"                  # altname each host gives its data-plane NIC
PLAYBOOK_ARGS = "--skip-tags repo,kernel,ovs -e dcnet_run=cloudlab-boot -e dcnet_report_args=--no-plots"

# (name, description, type, default, long description); the defaults are
# Presto's testbed: 16 hosts, 4 leaves, 4 spines.
TOPOLOGY_PARAMS = [
    ("spines", "Spine switches", "integer", 4,
     "Spine switches of the 2-tier Clos (Presto's testbed: 4)."),
    ("leaves", "Leaf switches", "integer", 4,
     "Leaf (top-of-rack) switches; every leaf links to every spine (Presto's testbed: 4)."),
    ("hostsPerLeaf", "Hosts per leaf", "integer", 4,
     "Hosts below each leaf (Presto's testbed: 4, 16 hosts in all)."),
]


def topology(spines, leaves, hosts_per_leaf):
    """Nodes and links of the Clos: (hosts, leaves, spines, links).

    hosts: list of (name, leaf, index in leaf, ip); links: list of
    (name, (node, ip), (node, ip)), every address a /24."""
    if not (1 <= spines <= 254 and 1 <= leaves <= 99 and 1 <= hosts_per_leaf <= 253):
        raise ValueError("need 1..254 spines, 1..99 leaves, 1..253 hosts per leaf")
    leaf_names = ["l%d" % i for i in range(1, leaves + 1)]
    spine_names = ["s%d" % i for i in range(1, spines + 1)]
    hosts, links = [], []
    n = 0
    for li, leaf in enumerate(leaf_names, start=1):
        for k in range(1, hosts_per_leaf + 1):
            n += 1
            name = "h%d" % n
            ip = "10.%d.%d.1" % (li, k)
            hosts.append((name, leaf, k, ip))
            links.append(("%s-%s" % (name, leaf), (name, ip), (leaf, "10.%d.%d.254" % (li, k))))
    for li, leaf in enumerate(leaf_names, start=1):
        for si, spine in enumerate(spine_names, start=1):
            links.append(("%s-%s" % (leaf, spine), (leaf, "10.%d.%d.1" % (100 + li, si)),
                          (spine, "10.%d.%d.2" % (100 + li, si))))
    return hosts, leaf_names, spine_names, links


def inventory(spines, leaves, hosts_per_leaf, domain=""):
    """The Ansible inventory (YAML text) for testbed/physical/site.yml.

    Group `dcnet` holds the hosts (what site.yml configures); the switches
    are in `dcnet_switches` (children `dcnet_leaves`, `dcnet_spines`), which
    site.yml does not use: they configure themselves at boot.  ansible_host
    is NAME.DOMAIN, the node's control-network name."""
    hosts, leaf_names, spine_names, _ = topology(spines, leaves, hosts_per_leaf)

    def mgmt(name):
        return "%s.%s" % (name, domain) if domain else name
    out = [
        "# Written by testbed/physical/cloudlab/profile.py --inventory --spines %d --leaves %d"
        " --hostsPerLeaf %d" % (spines, leaves, hosts_per_leaf),
        "all:",
        "  children:",
        "    dcnet:",
        "      vars:",
        "        ansible_user: root",
        "        ansible_python_interpreter: /usr/bin/python3",
        "        ansible_ssh_private_key_file: /root/.ssh/id_dcnet",
        "      hosts:",
    ]
    # dcnet_dev per host: group_vars/all.yml, next to site.yml, outranks an
    # inventory file's group variables
    for name, leaf, _k, ip in hosts:
        out += ["        %s:" % name,
                "          ansible_host: %s" % mgmt(name),
                "          dcnet_ip: %s" % ip,
                "          dcnet_dev: %s" % DCNET_DEV,
                "          dcnet_leaf: %s" % leaf]
    out += ["    dcnet_switches:",
            "      vars:",
            "        ansible_user: root",
            "        ansible_python_interpreter: /usr/bin/python3",
            "        ansible_ssh_private_key_file: /root/.ssh/id_dcnet",
            "      children:"]
    for group, names in (("dcnet_leaves", leaf_names), ("dcnet_spines", spine_names)):
        out += ["        %s:" % group, "          hosts:"]
        for name in names:
            out += ["            %s:" % name, "              ansible_host: %s" % mgmt(name)]
    return "\n".join(out) + "\n"


def boot_command(name, spines, leaves, hosts_per_leaf, run_playbook, playbook_args):
    """The startup command of node NAME (CloudLab runs it at every boot)."""
    argv = ["sudo", "sh", BOOT, name, str(spines), str(leaves), str(hosts_per_leaf)]
    if name == CONTROLLER and run_playbook:
        argv += ["--playbook", playbook_args]
    return " ".join(shlex.quote(a) for a in argv)


def _inventory_main(argv):
    ap = argparse.ArgumentParser(description="print the Ansible inventory of the profile's nodes")
    ap.add_argument("--inventory", action="store_true", required=True)
    for name, desc, _typ, default, _long in TOPOLOGY_PARAMS:
        ap.add_argument("--" + name, type=int, default=default, help=desc)
    ap.add_argument("--domain", default="", help="control-network domain: ansible_host is NAME.DOMAIN")
    a = ap.parse_args(argv)
    sys.stdout.write(inventory(a.spines, a.leaves, a.hostsPerLeaf, a.domain))


def _import_portal():
    """geni.portal; PyPI's geni-lib 0.9.9.4 has Python 2 print statements
    in portal.py, so offline on Python 3 it is loaded with those fixed."""
    try:
        import geni.portal as portal
        return portal
    except SyntaxError:
        pass
    import importlib.util
    import re
    spec = importlib.util.find_spec("geni.portal")
    with open(spec.origin) as f:
        src = f.read()
    src = re.sub(r"^(\s*)print (.+)$", r"\1print(\2)", src, flags=re.M)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["geni.portal"] = mod
    exec(compile(src, spec.origin, "exec"), mod.__dict__)
    import geni
    geni.portal = mod
    return mod


def main():
    portal = _import_portal()
    import geni.rspec.pg as pg

    pc = portal.context
    for name, desc, typ, default, long_desc in TOPOLOGY_PARAMS:
        pc.defineParameter(name, desc, typ, default, longDescription=long_desc)
    pc.defineParameter("image", "Disk image", portal.ParameterType.IMAGE, IMAGE,
                       longDescription="Image of every node: Debian 12 (bookworm), amd64.")
    pc.defineParameter("hardwareType", "Node type", portal.ParameterType.NODETYPE, "",
                       longDescription="One hardware type for every node (e.g. c6525-25g); "
                       "empty lets the mapper choose.")
    pc.defineParameter("multiplex", "Share physical ports", portal.ParameterType.BOOLEAN, False,
                       advanced=True,
                       longDescription="Let several links share one physical port (VLANs, best "
                       "effort).  A leaf needs hostsPerLeaf + spines links and a spine one per "
                       "leaf; without this every link needs its own 10 Gbit/s port.")
    pc.defineParameter("runPlaybook", "Run the playbook at boot", portal.ParameterType.BOOLEAN,
                       True, advanced=True,
                       longDescription="h1 runs testbed/physical/site.yml once, when every "
                       "node is ready.")
    pc.defineParameter("playbookArgs", "Playbook arguments", portal.ParameterType.STRING,
                       PLAYBOOK_ARGS, advanced=True,
                       longDescription="ansible-playbook arguments for the run at boot.  The "
                       "repo and kernel tags need the packages of make packages on h1, so "
                       "the default skips them.")
    params = pc.bindParameters()
    try:
        hosts, leaf_names, spine_names, links = topology(params.spines, params.leaves,
                                                         params.hostsPerLeaf)
    except ValueError as e:
        pc.reportError(portal.ParameterError(str(e), ["spines", "leaves", "hostsPerLeaf"]))
    pc.verifyParameters()

    request = pc.makeRequestRSpec()
    nodes = {}
    for name in [h[0] for h in hosts] + leaf_names + spine_names:
        node = request.RawPC(name)
        # the sliver type CloudLab's portal writes for a bare-metal node
        # (geni-lib's RawPC writes the older alias "raw")
        node.type = "raw-pc"
        node.disk_image = params.image
        if params.hardwareType:
            node.hardware_type = params.hardwareType
        node.addService(pg.Execute(shell="sh", command=boot_command(
            name, params.spines, params.leaves, params.hostsPerLeaf,
            params.runPlaybook, params.playbookArgs)))
        nodes[name] = node
    for lname, (a, ipa), (b, ipb) in links:
        link = request.Link(lname)
        link.bandwidth = LINK_KBPS
        if params.multiplex:
            link.link_multiplexing = True
            link.best_effort = True
        for node, ip in ((a, ipa), (b, ipb)):
            iface = nodes[node].addInterface("if-" + lname)
            iface.addAddress(pg.IPv4Address(ip, "255.255.255.0"))
            link.addInterface(iface)
    # Offline, PyPI's geni-lib writes the RSpec's bytes to sys.stdout, a
    # text stream on Python 3; in the portal it writes to a file it names.
    out = sys.stdout
    sys.stdout = _TextOrBytes(out)
    try:
        pc.printRequestRSpec(request)
    finally:
        sys.stdout = out


class _TextOrBytes:
    """A text stream that also takes bytes (as UTF-8)."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, s):
        if isinstance(s, bytes):
            s = s.decode("utf-8")
        return self._stream.write(s)

    def __getattr__(self, name):
        return getattr(self._stream, name)


if __name__ == "__main__" and "--inventory" in sys.argv[1:]:
    _inventory_main(sys.argv[1:])
else:
    main()
