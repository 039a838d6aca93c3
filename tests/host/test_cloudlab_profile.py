"""testbed/physical/cloudlab/profile.py writes the Clos it promises (offline).

The profile runs as a subprocess, as `python profile.py` runs outside the
portal, with its default topology (Presto's: 4 spines, 4 leaves, 16 hosts)
and one other; the RSpec is parsed and checked: one bare-metal Debian 12 node
per host, leaf and spine, full leaf-spine bipartite links and one link per
host to its leaf, all at 10 Gbit/s, the startup script on every node (with
the playbook on h1 only), and an inventory (`--inventory`) whose names are
the RSpec's nodes.
"""
import os
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROFILE = os.path.join(ROOT, "testbed", "physical", "cloudlab", "profile.py")
IMAGE = "urn:publicid:IDN+emulab.net+image+emulab-ops//DEB12-64-STD"
BOOT = "/local/repository/testbed/physical/cloudlab/boot.sh"
NS = {"r": "http://www.geni.net/resources/rspec/3"}

try:
    import geni.rspec.pg  # noqa: F401
except ImportError as e:  # make deps installs it (scripts/requirements.txt)
    pytest.skip("geni-lib is not importable (%s); `make deps` installs it" % e,
                allow_module_level=True)
yaml = pytest.importorskip("yaml")    # ansible-core's dependency

TOPOLOGIES = [(4, 4, 4), (2, 3, 2)]    # (spines, leaves, hosts per leaf); the first is the default


def run(*args):
    env = dict(os.environ)
    env.pop("GENILIB_PORTAL_MODE", None)
    out = subprocess.run([sys.executable, PROFILE, *args], capture_output=True, text=True,
                         timeout=30, env=env, cwd=os.path.dirname(PROFILE))
    assert out.returncode == 0, out.stderr
    return out.stdout


def topo_args(spines, leaves, hpl):
    return ["--spines", str(spines), "--leaves", str(leaves), "--hostsPerLeaf", str(hpl)]


@pytest.fixture(scope="module", params=TOPOLOGIES, ids=lambda t: "s%d-l%d-h%d" % t)
def case(request):
    spines, leaves, hpl = request.param
    args = [] if request.param == TOPOLOGIES[0] else topo_args(spines, leaves, hpl)
    rspec = ET.fromstring(run(*args))
    inv = yaml.safe_load(run("--inventory", *args, "--domain", "exp.proj.site.example"))
    return request.param, rspec, inv


def names(spines, leaves, hpl):
    return (["h%d" % i for i in range(1, leaves * hpl + 1)],
            ["l%d" % i for i in range(1, leaves + 1)],
            ["s%d" % i for i in range(1, spines + 1)])


def test_nodes_are_bare_metal_debian12(case):
    (spines, leaves, hpl), rspec, _ = case
    nodes = rspec.findall("r:node", NS)
    assert len(nodes) == spines + leaves + leaves * hpl
    hosts, lv, sp = names(spines, leaves, hpl)
    assert sorted(n.get("client_id") for n in nodes) == sorted(hosts + lv + sp)
    for n in nodes:
        st = n.find("r:sliver_type", NS)
        assert st.get("name") == "raw-pc", n.get("client_id")
        assert n.get("exclusive") == "true"
        assert st.find("r:disk_image", NS).get("name") == IMAGE


def test_links_full_bipartite_and_hosts_to_leaves(case):
    (spines, leaves, hpl), rspec, _ = case
    hosts, lv, sp = names(spines, leaves, hpl)
    ends = set()
    for link in rspec.findall("r:link", NS):
        refs = [r.get("client_id").split(":")[0] for r in link.findall("r:interface_ref", NS)]
        assert len(refs) == 2, link.get("client_id")
        ends.add(tuple(sorted(refs)))
        props = link.findall("r:property", NS)
        assert len(props) == 2                      # both directions
        assert all(p.get("capacity") == "10000000" for p in props), link.get("client_id")
    want = {tuple(sorted((l, s))) for l in lv for s in sp}
    want |= {tuple(sorted((h, lv[i // hpl]))) for i, h in enumerate(hosts)}
    assert ends == want
    assert len(rspec.findall("r:link", NS)) == len(want)


def test_startup_service_on_every_node(case):
    (spines, leaves, hpl), rspec, _ = case
    for n in rspec.findall("r:node", NS):
        name = n.get("client_id")
        ex = n.findall("r:services/r:execute", NS)
        assert len(ex) == 1, name
        argv = shlex.split(ex[0].get("command"))
        assert argv[:7] == ["sudo", "sh", BOOT, name, str(spines), str(leaves), str(hpl)]
        if name == "h1":
            assert argv[7] == "--playbook" and "--skip-tags repo,kernel,ovs" in argv[8]
        else:
            assert len(argv) == 7, argv


def test_inventory_matches_nodes(case):
    (spines, leaves, hpl), rspec, inv = case
    hosts, lv, sp = names(spines, leaves, hpl)
    groups = inv["all"]["children"]
    dcnet = groups["dcnet"]["hosts"]
    assert list(dcnet) == hosts                      # site.yml's group: the hosts only
    sw = groups["dcnet_switches"]["children"]
    assert list(sw["dcnet_leaves"]["hosts"]) == lv
    assert list(sw["dcnet_spines"]["hosts"]) == sp
    rnodes = {n.get("client_id"): n for n in rspec.findall("r:node", NS)}
    assert set(dcnet) | set(lv) | set(sp) == set(rnodes)
    for h, v in dcnet.items():
        assert v["ansible_host"] == h + ".exp.proj.site.example"
        ips = [ip.get("address") for ip in rnodes[h].findall("r:interface/r:ip", NS)]
        assert ips == [v["dcnet_ip"]], h             # the data-plane address the RSpec asks for
        # per host: group_vars/all.yml's dcnet_dev outranks inventory group vars
        assert v["dcnet_dev"] == "dcnet0", h
