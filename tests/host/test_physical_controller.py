"""The playbook's Presto controller (testbed/physical, tags controller and
ovs) without machines: the plan from the inventory (indexes, locally
administered MACs, the bridge's LOCAL port), the ovs role's bridge set-up
for the controller, and the controller role run for real by
ansible-playbook on this machine, with two bridges of a dummy-datapath
Open vSwitch connecting to it as the hosts' bridges would."""
import json
import os
import subprocess
import sys

import pytest

from dcnet.controller import client, inventory
from dcnet.controller.plan import Plan
from dcnet.testbed import presto

yaml = pytest.importorskip("yaml")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PHYS = os.path.join(ROOT, "testbed", "physical")
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def hosts(*macs):
    return {"hosts": [{"name": f"h{i}", "index": i, "mac": m} for i, m in enumerate(macs, 1)]}


def test_plan_from_inventory_uses_local_ports_and_locally_administered_macs():
    d = inventory.plan_from_inventory(hosts("02:dc:00:00:00:01", "02:DC:00:00:00:02"))
    p = Plan(d)
    h1 = p.by_index[1]
    assert (h1["dpid"], h1["port_host"], h1["port_up"], h1["leaf"]) == (1, inventory.OFPP_LOCAL, 2, "l1")
    assert p.by_index[2]["mac"] == "02:dc:00:00:00:02" and p.trees() == [1]
    assert {(x["a"], x["b"]) for x in d["links"]} == {("h1", "l1"), ("h2", "l1")}
    assert p.groups(h1) == {2: [(1, 1)]}
    # two spines: two trees, leaf-spine links as declared
    fab = {"leaves": ["l1", "l2"], "spines": ["s1", "s2"],
           "links": [{"a": a, "b": b, "mbit": 100} for a in ("l1", "l2") for b in ("s1", "s2")]}
    two = [{"name": "h1", "index": 1, "mac": "02:dc:00:00:00:01", "leaf": "l1"},
           {"name": "h2", "index": 2, "mac": "02:dc:00:00:00:02", "leaf": "l2"}]
    p = Plan(inventory.plan_from_inventory({"hosts": two, "fabric": fab}))
    assert p.trees() == [1, 2] and p.groups(p.by_index[1]) == {2: [(1, 1), (2, 1)]}


@pytest.mark.parametrize("macs, why", [
    (("00:1b:21:00:00:01", "02:dc:00:00:00:02"), "not a locally administered"),   # a vendor (Intel) OUI
    (("03:dc:00:00:00:01", "02:dc:00:00:00:02"), "not a locally administered"),   # multicast
    (("02:dc:00:00:00:01", "02:dc:00:00:00:01"), "one MAC"),
    (("02:dc:00:00:00:01", "02:dc:01:00:00:01"), "shadow MAC of host h1"),
    (("02:dc:00:00:00:01", "nonsense"), "is not xx:"),
])
def test_bad_host_macs_are_refused_with_the_host_named(macs, why):
    with pytest.raises(ValueError, match=why):
        inventory.plan_from_inventory(hosts(*macs))


def test_the_ovs_role_points_the_bridge_at_the_controller_only_when_asked():
    tasks = yaml.safe_load(open(os.path.join(PHYS, "roles", "ovs", "tasks", "main.yml")))
    shell = next(t for t in tasks if "Bridge with the uplink" in t["name"])["ansible.builtin.shell"]["cmd"]
    from test_testbed import workload_templates
    env = workload_templates()
    v = dict(dcnet_ovs_bridge="dcbr0", dcnet_ovs_uplink="eth1", dcnet_ovs_qos="", dcnet_ip="10.251.0.1",
             dcnet_ovs_prefixlen=24, dcnet_ovs_flows=["priority=0,actions=NORMAL"], inventory_hostname="h1",
             groups={"dcnet": ["h1", "h2"]}, dcnet_mac="02:dc:00:00:00:01", dcnet_host_index="1",
             dcnet_controller_address="10.250.0.254", dcnet_controller_port=6653,
             hostvars={"h2": {"dcnet_ip": "10.251.0.2", "dcnet_mac": "02:dc:00:00:00:02"}})
    on = env.from_string(shell).render(dcnet_presto_controller=True, dcnet_static_neighbours=True, **v)
    assert "set-controller dcbr0 tcp:10.250.0.254:6653" in on and "fail_mode=secure" in on
    assert "other-config:hwaddr=02:dc:00:00:00:01" in on and "datapath-id=0000000000000001" in on
    assert "ofport_request=2" in on and "actions=NORMAL" not in on
    assert "ip neigh replace 10.251.0.2 lladdr 02:dc:00:00:00:02 dev dcbr0 nud permanent" in on
    off = env.from_string(shell).render(dcnet_presto_controller=False, dcnet_static_neighbours=False, **v)
    assert "set-controller" not in off and "del-controller dcbr0" in off and "actions=NORMAL" in off
    assert "ip neigh" not in off
    assert subprocess.run(["sh", "-n"], input=on, text=True).returncode == 0
    defaults = yaml.safe_load(open(os.path.join(PHYS, "group_vars", "all.yml")))
    assert defaults["dcnet_presto_controller"] is False
    site = yaml.safe_load(open(os.path.join(PHYS, "site.yml")))
    tags = [p.get("tags") for p in site]
    assert tags.index(["controller"]) < tags.index(["ovs"]) < tags.index(["workload"])
    assert tags[-1] == ["controller", "gather"]


@pytest.mark.skipif(not os.access(PLAYBOOK, os.X_OK), reason="no ansible-playbook beside this Python")
@pytest.mark.skipif(not presto.have_ovs(), reason="the patched Open vSwitch is not built (make ovs)")
def test_the_controller_role_runs_a_controller_the_bridges_sync_with(tmp_path):
    from test_ofcontroller import DummyOVS, free_port
    port = free_port()
    results = tmp_path / "results"
    inv = tmp_path / "inventory.yml"
    inv.write_text(yaml.safe_dump({"all": {"children": {"dcnet": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
        "hosts": {"h1": {"dcnet_ip": "10.251.0.1"}, "h2": {"dcnet_ip": "10.251.0.2"}}}}}}))
    extra = {"dcnet_presto_controller": True, "dcnet_ovs": True, "dcnet_controller_address": "127.0.0.1",
             "dcnet_controller_listen": f"127.0.0.1:{port}", "dcnet_controller_python": sys.executable,
             "dcnet_results": str(results), "dcnet_run": "run1", "dcnet_controller_keep": True}

    def play(*args):
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(PHYS, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
        r = subprocess.run([PLAYBOOK, "-i", str(inv), os.path.join(PHYS, "site.yml"), "-e", json.dumps(extra),
                            *args], env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
        return r.stdout

    ctl = results / "controller"
    play("--tags", "controller")
    pid = int((ctl / "controller.pid").read_text())
    try:
        plan = Plan(json.loads((ctl / "plan.json").read_text()))
        assert [(h["name"], h["mac"], h["port_host"]) for h in plan.hosts] == [
            ("h1", "02:dc:00:00:00:01", inventory.OFPP_LOCAL), ("h2", "02:dc:00:00:00:02", inventory.OFPP_LOCAL)]
        # the stop play ran (tags controller, gather) and kept it running
        assert (results / "run1" / "controller" / "plan.json").exists()
        (tmp_path / "ovs").mkdir()

        class RoleOVS(DummyOVS):
            """the hosts' bridges as the ovs role leaves them: uplink at
            port 2, the host's MAC, connected to the role's controller"""
            def controller_args(self, n):
                return ["--", "set", "bridge", f"b{n}", f"other-config:hwaddr=02:dc:00:00:00:{n:02x}",
                        "--", "set-controller", f"b{n}", f"tcp:127.0.0.1:{port}",
                        "--", "set", "controller", f"b{n}", "connection-mode=out-of-band", "max_backoff=1000"]

        o = RoleOVS(tmp_path / "ovs", [1, 2])
        try:
            st = client.wait_synced(str(ctl / "control.sock"), timeout=120)
            assert st["errors"] == [] and o.groups("b1") == {2: [1]}
            flows = o.ofctl("dump-flows", "b1")
            assert "in_port=LOCAL,dl_dst=02:dc:00:00:00:02 actions=group:2" in flows
            assert "dl_dst=02:dc:01:00:00:01 actions=set_field:02:dc:00:00:00:01->eth_dst,LOCAL" in flows
        finally:
            o.stop()
        # a second run stops the first controller and starts its own
        play("--tags", "controller", "-e", '{"dcnet_controller_keep": false}')
        assert not (ctl / "controller.pid").exists()
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    finally:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
