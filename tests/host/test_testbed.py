"""Host-side checks of the testbed's pure parts: workload definitions and
the report (schema, metrics).  The fabric itself is tested in the guest
(tests/guest/test_testbed.py)."""
import importlib.util
import json
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dcnet.testbed import report
from dcnet.testbed import workloads
from dcnet.wait import wait_until


def physical_collect():
    """testbed/physical/collect.py, the program the playbook runs on the
    controller, loaded from its file"""
    spec = importlib.util.spec_from_file_location(
        "collect", os.path.join(ROOT, "testbed", "physical", "collect.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def tcp_listening(port):
    """a socket listens on TCP port (IPv4 or IPv6) in this namespace"""
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = open(f).read().splitlines()[1:]
        except OSError:
            continue
        for r in rows:
            x = r.split()
            if x[3] == "0A" and int(x[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False

HOSTS = [f"h{i}" for i in range(1, 17)]


def test_stride_is_presto_stride():
    flows = workloads.generate("stride", HOSTS, stride=8, duration_s=5)
    assert [(f["src"], f["dst"]) for f in flows][:2] == [("h1", "h9"), ("h2", "h10")]
    assert [f["dst"] for f in flows][8] == "h1"


@pytest.mark.parametrize("seed", range(5))
def test_bijection_is_a_derangement(seed):
    flows = workloads.generate("bijection", HOSTS, seed=seed)
    assert sorted(f["dst"] for f in flows) == sorted(HOSTS)
    assert all(f["src"] != f["dst"] for f in flows)


@pytest.mark.parametrize("name", sorted(workloads.WORKLOADS))
def test_every_workload_has_unique_ports_per_destination(name):
    flows = workloads.generate(name, HOSTS, seed=3, duration_s=2, link_mbit=10, load=0.4, hosts_per_leaf=4)
    assert flows
    seen = set()
    for f in flows:
        if f["kind"] == "tree":     # an OLDI tree (oldi): runs at its parent, src = dst = the parent
            assert f["src"] == f["dst"] and f["src"] not in f["leaves"]
        else:
            assert f["src"] != f["dst"] and f["src"] in HOSTS and f["dst"] in HOSTS
        assert (f["dst"], f["port"]) not in seen
        seen.add((f["dst"], f["port"]))
    assert [f["id"] for f in flows] == list(range(len(flows)))


def test_partagg_sizes_and_mix():
    flows = workloads.generate("partagg", HOSTS, seed=1, duration_s=5, load=0.6, link_mbit=10)
    short = [f for f in flows if f["kind"] == "short"]
    long_ = [f for f in flows if f["kind"] == "long"]
    assert {f["bytes"] for f in short} <= {2048, 4096, 8192, 16384, 32768}
    assert {f["bytes"] for f in long_} == {1 << 20}
    frac = sum(f["bytes"] for f in short) / sum(f["bytes"] for f in flows)
    assert 0.04 < frac < 0.2, frac
    per_query = {}
    for f in short:
        per_query[f["query"]] = per_query.get(f["query"], 0) + f["bytes"]
    assert all(v <= 160 * 1024 for v in per_query.values())


def test_websearch_mean_size_matches_cdf():
    flows = workloads.generate("websearch", HOSTS, seed=2, duration_s=200, load=0.5, link_mbit=10)
    mean = sum(f["bytes"] for f in flows) / len(flows)
    assert 0.6 < mean / workloads.cdf_mean(workloads.WEBSEARCH_CDF) < 1.4


def raw_doc():
    flows = []
    for i, (s, d, bps) in enumerate([("h1", "h2", 8e6), ("h2", "h1", 4e6)]):
        flows.append(dict(id=i, src=s, dst=d, kind="elephant", bytes=int(bps * 10 / 8), duration_s=10.0,
                          tput_bps=bps, fct_us=None, intervals_bps=[bps] * 20, deadline_us=None,
                          met_deadline=None))
    port = dict(node="l1", dev="s1", kind="bfifo", sent_bytes=100, sent_packets=1, drops=3, marks=0, overlimits=0)
    meta = dict(platform="emulated", kernel="6.12.117-dcnet", hosts=["h1", "h2"], link_mbit=10,
                paper_link_mbit=10000, scale=0.001, started="2026-11-22T00:00:00Z", experiment={})
    runs = [dict(scheme=s, workload="stride", duration_s=10.0, flows=json.loads(json.dumps(flows)), ports=[port],
                 rtt_us=None, cpu={"guest": 0.5}) for s in ("optimal", "ecmp")]
    runs[1]["flows"][0]["tput_bps"] = 3e6
    return dict(meta=meta, runs=runs)


def test_report_metrics_and_schema(tmp_path):
    res = report.build(raw_doc(), str(tmp_path), plot=False)
    opt, ecmp = res["runs"]
    assert opt["elephant_mean_bps"] == pytest.approx(6e6)
    assert opt["jain"] == pytest.approx(144 / (2 * 80))
    assert ecmp["of_optimal"] == pytest.approx(3.5 / 6)
    assert ecmp["drops"] == 3
    report.validate(json.load(open(tmp_path / "results.json")), "results")
    assert "| ecmp | stride | 2 | 3.50 | 35% | 58% |" in (tmp_path / "report.md").read_text()


def test_report_mice_against_ecmp(tmp_path):
    """Presto Table 1: flows under 100 KB, each percentile against ECMP
    over the trees (l2ecmp) on the same workload; larger flows left out"""
    raw = raw_doc()
    base = raw["runs"][0]

    def sized(fcts):
        return [dict(id=i, src="h1", dst="h9", kind="trace", bytes=50 * 1024, duration_s=10.0, tput_bps=None,
                     fct_us=float(x), intervals_bps=[], deadline_us=None, met_deadline=None)
                for i, x in enumerate(fcts)] + \
            [dict(id=99, src="h1", dst="h9", kind="trace", bytes=200 * 1024, duration_s=10.0, tput_bps=None,
                  fct_us=9e9, intervals_bps=[], deadline_us=None, met_deadline=None)]
    raw["runs"] = [dict(base, scheme=s, workload="websearch", flows=sized([k * x for x in range(1, 101)]))
                   for s, k in (("optimal", 500), ("l2ecmp", 1000), ("presto", 800))]
    res = report.build(raw, str(tmp_path), plot=False)
    opt, l2, presto = res["runs"]
    assert l2["mice_fct"]["n"] == 100 and l2["mice_vs_ecmp"] is None
    assert opt["mice_vs_ecmp"]["against"] == "l2ecmp"
    assert opt["mice_vs_ecmp"]["p50_us"] == pytest.approx(-0.5)
    assert presto["mice_vs_ecmp"]["p99_us"] == pytest.approx(-0.2)
    md = (tmp_path / "report.md").read_text()
    assert "## Mice (< 100 KB) FCT against ECMP (Presto Table 1)" in md
    assert "| presto | websearch | 100 |" in md and "| -20% | -20% | -20% | -20% |" in md


def test_report_plots(tmp_path):
    """the papers' plots are written (the guest test builds its report
    without them: matplotlib's first import takes minutes in the debug guest)"""
    pytest.importorskip("matplotlib")
    report.build(raw_doc(), str(tmp_path), plot=True)
    pngs = sorted(p.name for p in tmp_path.glob("*.png"))
    assert "elephant_tput.png" in pngs, pngs
    assert all((tmp_path / p).stat().st_size > 1000 for p in pngs)


@pytest.mark.parametrize("breakage", ["no-flows", "negative-drops", "bad-platform", "missing-tput"])
def test_report_rejects_malformed_raw(tmp_path, breakage):
    raw = raw_doc()
    if breakage == "no-flows":
        raw["runs"][0]["flows"] = []
    elif breakage == "negative-drops":
        raw["runs"][0]["ports"][0]["drops"] = -1
    elif breakage == "bad-platform":
        raw["meta"]["platform"] = "simulated"
    else:
        del raw["runs"][0]["flows"][0]["tput_bps"]
    with pytest.raises(Exception, match="(?i)valid|required|minItems|minimum|non-empty|too short|is not one of"):
        report.build(raw, str(tmp_path), plot=False)


def test_sized_flow_schedules(tmp_path):
    """testbed/run.py turns sized flows into one `dltraffic sched` input
    per sender (start times in us, a shuffle's flows one after another),
    and a real dltraffic on loopback runs such a schedule"""
    import subprocess
    from dcnet.testbed import run as testbed_run

    class Fab:
        def ip(self, h, v6=False):
            return "127.0.0.1"
    hosts = [f"h{i}" for i in range(1, 5)]
    mice = workloads.generate("mice", hosts, count=3, duration_s=2)
    sch = testbed_run.sized_schedules(Fab(), mice)
    assert sorted(sch) == [(h, 0) for h in hosts]
    for (h, _lane), text in sch.items():
        lines = [x.split() for x in text.splitlines()]
        mine = [f for f in mice if f["src"] == h]
        assert [int(x[0]) for x in lines] == [f["id"] for f in mine]
        assert [int(x[3]) for x in lines] == [int(f["start_s"] * 1e6) for f in mine]
        assert all(x[1] == f"127.0.0.1:{testbed_run.SIZED_PORT}" and x[2] == "51200" for x in lines)
    shuf = workloads.generate("shuffle", hosts, bytes=1000)
    sch = testbed_run.sized_schedules(Fab(), shuf)
    assert all(x.split()[3] == "+" for t in sch.values() for x in t.splitlines())
    # two transfers at a time: two chains per sender, together every flow once
    assert sorted(sch) == sorted((h, lane) for h in hosts for lane in (0, 1))
    ids = sorted(int(x.split()[0]) for t in sch.values() for x in t.splitlines())
    assert ids == sorted(f["id"] for f in shuf)
    # the real tool, on loopback: every flow of the schedule reports its FCT
    tool = testbed_run.DLTRAFFIC
    if not os.path.exists(tool):
        pytest.skip("testbed/tools not built (make tools)")
    port = 39000 + os.getpid() % 1000
    srv = subprocess.Popen([tool, "server", "-p", str(port)], stdout=subprocess.DEVNULL)
    try:
        wait_until(lambda: tcp_listening(port) or srv.poll() is not None, 10, f"dltraffic server listens on :{port}")
        assert srv.poll() is None, f"dltraffic server exited ({srv.returncode})"
        text = f"a 127.0.0.1:{port} 20000 0\nb 127.0.0.1:{port} 3000 +\nc 127.0.0.1:{port} 5000 1000\n"
        out = subprocess.run([tool, "sched"], input=text, capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        got = {j["id"]: j for j in map(json.loads, out.stdout.splitlines())}
        assert sorted(got) == ["a", "b", "c"]
        assert got["a"]["bytes"] == 20000 and got["b"]["start_us"] >= got["a"]["end_us"]
        bad = subprocess.run([tool, "sched"], input="a b\n", capture_output=True, text=True, timeout=10)
        assert bad.returncode == 2 and "bad schedule line" in bad.stderr
    finally:
        srv.terminate()
        srv.wait()
    r = testbed_run.sized_record(mice[0], dict(bytes=51200, fct_us=400000))
    assert r["fct_us"] == 400000 and abs(r["tput_bps"] - 51200 * 8 / 0.4) < 1
    assert testbed_run.sized_record(mice[0], None)["fct_us"] is None


def workload_templates():
    """the workload role's Jinja templates, rendered as Ansible would
    (trim_blocks; the filters they use), undefined variables an error"""
    import jinja2
    tdir = os.path.join(ROOT, "testbed", "physical", "roles", "workload", "templates")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(tdir), trim_blocks=True,
                             undefined=jinja2.StrictUndefined)
    env.filters["quote"] = lambda s: "'" + str(s).replace("'", "'\"'\"'") + "'"
    env.filters["combine"] = lambda a, b: {**a, **b}
    env.filters["bool"] = bool
    return env


def test_physical_sized_flows(tmp_path):
    """the Ansible path: the clients template gives a sender's sized flows
    to one `dltraffic sched` (start times in us, a shuffle's in order) and
    its elephants to iperf3; the servers template starts one dltraffic
    server beside the iperf3 ones; collect.py reads the FCTs back"""
    import subprocess
    collect = physical_collect()

    hosts = ["h1", "h2", "h3"]
    flows = workloads.renumber(workloads.generate("stride", hosts, stride=1, duration_s=3) +
                               workloads.generate("mice", hosts, count=2, duration_s=3) +
                               workloads.generate("shuffle", hosts, bytes=1000))
    env = workload_templates()
    common = dict(dcnet_sysctl_all={"net.ipv4.tcp_ecn": 1}, dcnet_rundir_remote="/tmp/x", dcnet_piddir_remote="/tmp/p", dcnet_mode="tcp",
                  dcnet_sized_port=5200, dcnet_dltraffic_remote="/tmp/b/dltraffic", dcnet_tc="tc",
                  dcnet_dev="eth0", dcnet_sysctl={"net.ipv4.tcp_ecn": 1}, dcnet_sysctl_extra={},
                  dcnet_iperf3_interval=1, dcnet_iperf3_args="", dcnet_run_len=3,
                  dcnet_presto_gro=False, inventory_hostname="h1",
                  hostvars={h: {"dcnet_ip": f"10.9.0.{i}"} for i, h in enumerate(hosts, 1)})
    tx = [f for f in flows if f["src"] == "h1"]
    cl = env.get_template("clients.sh.j2").render(tx=tx, **common)
    assert subprocess.run(["sh", "-n"], input=cl, text=True).returncode == 0
    sched = cl.split("<<'EOF_SCHED'\n")[1].split("\nEOF_SCHED")[0].splitlines()
    sized = [f for f in tx if f.get("bytes")]
    assert [int(x.split()[0]) for x in sched] == [f["id"] for f in sized]
    for x, f in zip(sched, sized):
        _id, peer, nbytes, at = x.split()
        assert peer == f"10.9.0.{hosts.index(f['dst']) + 1}:5200" and int(nbytes) == f["bytes"]
        assert at == ("+" if f.get("start_s") is None else str(int(f["start_s"] * 1e6)))
    assert cl.count("iperf3 -c") == len([f for f in tx if not f.get("bytes")]) == 1
    sv = env.get_template("servers.sh.j2").render(rx=[f for f in flows if f["dst"] == "h1"], **common)
    assert subprocess.run(["sh", "-n"], input=sv, text=True).returncode == 0
    assert sv.count("iperf3 -s") == 1 and sv.count("dltraffic' server -p 5200") == 1
    # collect.py: h1's dltraffic records become the flows' FCTs; a flow
    # without a record is an error, not a zero
    hd = tmp_path / "h1"
    hd.mkdir()
    recs = [json.dumps(dict(type="flow", id=str(f["id"]), bytes=f["bytes"], fct_us=1000 + f["id"]))
            for f in sized[1:]]
    (hd / "sized.json").write_text("\n".join(["not json"] + recs) + "\n")
    (hd / "sized.rc").write_text("1\n")
    res = collect.sized_results(str(hd))
    got = [collect.flow_record(f, str(hd), res) for f in sized]
    assert got[0]["fct_us"] is None and "exit 1" in got[0]["error"]
    for f, r in zip(sized[1:], got[1:]):
        assert r["fct_us"] == 1000 + f["id"] and r["bytes"] == f["bytes"] and "error" not in r
        assert abs(r["tput_bps"] - f["bytes"] * 8 / r["duration_s"]) < 1e-6


def test_start_gate_holds_clients_then_starts_them_together():
    """run.StartGate: no client starts before the gate opens, all start
    within a short spread after it, a late client is not blocked, and
    stdin reaches the client."""
    import subprocess
    import time

    from dcnet.testbed import run

    gate = run.StartGate()
    stamp = ["python3", "-c", "import time; print(time.monotonic())"]
    procs = [subprocess.Popen(gate.argv(stamp), stdout=subprocess.PIPE, text=True) for _ in range(6)]
    cat = subprocess.Popen(gate.argv(["wc", "-c"]), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    time.sleep(1.0)
    assert all(p.poll() is None for p in procs + [cat])
    t_open = time.monotonic()
    assert gate.open() == 0
    starts = [float(p.communicate(timeout=30)[0]) for p in procs]
    assert min(starts) >= t_open
    assert max(starts) - min(starts) < 1.0
    cat.stdin.write("x" * 100000)
    cat.stdin.close()
    cat.stdin = None
    assert cat.communicate(timeout=30)[0].strip() == "100000"
    late = subprocess.run(gate.argv(["echo", "late"]), capture_output=True, text=True, timeout=30)
    assert late.stdout.strip() == "late"
    d = gate.dir
    gate.close()
    assert not os.path.exists(d)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("name", ["bijection", "random"])
def test_random_and_bijection_leave_the_senders_leaf(name, seed):
    """Presto Sec. 5: 'a random destination not in the same pod'"""
    flows = workloads.generate(name, HOSTS, seed=seed, hosts_per_leaf=4)
    leaf = {h: i // 4 for i, h in enumerate(HOSTS)}
    assert all(leaf[f["src"]] != leaf[f["dst"]] for f in flows)
    if name == "bijection":
        assert sorted(f["dst"] for f in flows) == sorted(HOSTS)


@pytest.mark.parametrize("count", [1, 2, 4])
def test_pairs_go_from_the_first_leaf_to_the_second(count):
    """Presto Fig. 4b: n pairs from L1's hosts to L2's, host i to host i"""
    flows = workloads.generate("pairs", HOSTS, count=count, hosts_per_leaf=4, duration_s=7)
    assert [(f["src"], f["dst"]) for f in flows] == [(HOSTS[i], HOSTS[4 + i]) for i in range(count)]
    assert all(f["kind"] == "elephant" and f["duration_s"] == 7 for f in flows)


@pytest.mark.parametrize("params,msg", [
    (dict(count=5, hosts_per_leaf=4), "count must be 1-4"),
    (dict(count=0, hosts_per_leaf=4), "count must be 1-4"),
    (dict(count=2), "at least two leaves"),
    (dict(count=2, hosts_per_leaf=16), "at least two leaves"),
])
def test_pairs_refuses_what_the_topology_cannot_hold(params, msg):
    with pytest.raises(ValueError, match=msg):
        workloads.generate("pairs", HOSTS, **params)


def test_shuffle_two_transfers_at_a_time():
    """Presto Sec. 5: 'Each host sends two flows at a time'"""
    flows = workloads.generate("shuffle", HOSTS, seed=1, bytes=1000)
    for h in HOSTS:
        mine = [f for f in flows if f["src"] == h]
        assert sorted(f["dst"] for f in mine) == sorted(d for d in HOSTS if d != h)
        for lane in (0, 1):
            orders = [f["order"] for f in mine if f["lane"] == lane]
            assert orders == list(range(len(orders)))
        assert {f["lane"] for f in mine} == {0, 1}


def test_fabric_rate_shapes_both_directions_of_leaf_spine_links():
    from dcnet.testbed import fabric
    fab = fabric.Fabric.__new__(fabric.Fabric)
    fab.topo = fabric.Topology(link_mbit=10, fabric_mbit=5)

    def rate(dev, host_nic=False):
        line = fab._port_qdisc(dev, host_nic)[1]
        return line.split(" rate ")[1].split()[0]
    assert rate("s1") == "5mbit"      # a leaf's port to a spine
    assert rate("l3") == "5mbit"      # a spine's port to a leaf
    assert rate("h2") == "10mbit"     # a leaf's port to a host
    assert rate("eth0", host_nic=True) == "10mbit"


def test_netem_limits_hold_the_delay_line_beside_the_buffer():
    """a delayed port's netem limit is the buffer (or the host NIC's 1000
    packets) plus its delay line: the delay must not shrink the buffer"""
    from dcnet.testbed import fabric
    fab = fabric.Fabric.__new__(fabric.Fabric)
    fab.topo = fabric.Topology(link_mbit=10, buffer_bytes=131072, delay_us=10000,
                               host_delay_us=50000)

    def leaf(dev, host_nic=False):
        return fab._port_qdisc(dev, host_nic)[2]
    # 10 Mbit/s x 50 ms = 62500 B = 42 MTU packets, twice (ACKs count as packets)
    assert fabric.Fabric.delay_line_packets(10, 50000) == 84
    assert "netem delay 50000us limit 1084" in leaf("eth0", host_nic=True)
    assert "netem delay 10000us limit %d" % (131072 // 1500 + 2 * 9) in leaf("s1")
    fab.topo = fabric.Topology(link_mbit=10)
    assert leaf("eth0", host_nic=True).endswith("pfifo limit 1000")
    assert leaf("s1").endswith("bfifo limit 131072")
    with pytest.raises(ValueError):
        fabric.Topology(host_delay_us=-1)


def test_sized_flows_leave_from_fixed_source_ports():
    """the runner gives each (host, lane) `dltraffic sched` a --sport-base
    below the kernel's ephemeral range and above iperf3's --cport, the two
    lanes of a shuffle disjoint, and refuses a lane it cannot cover"""
    from dcnet.testbed import run as testbed_run
    b0 = testbed_run.sched_sport_base(0, testbed_run.SPORT_LANE)
    b1 = testbed_run.sched_sport_base(1, 10)
    assert b1 - b0 == testbed_run.SPORT_LANE
    assert testbed_run.CPORT_BASE + 1000 <= b0
    assert b1 + testbed_run.SPORT_LANE - 1 < 32768
    for lane, n in ((0, testbed_run.SPORT_LANE + 1), (2, 1), (-1, 1)):
        with pytest.raises(ValueError):
            testbed_run.sched_sport_base(lane, n)
    src = open(os.path.join(os.path.dirname(testbed_run.__file__), "run.py")).read()
    assert '"--sport-base", str(sport)' in src


def test_physical_report_names_each_hosts_kernel_and_packages(tmp_path):
    """collect.py reads each host's dpkg-query lines (packages.txt, written by
    the clients template) into host_info; the report lists them per host"""
    collect = physical_collect()

    pk = collect.parse_packages("linux-image-6.12.118-dcnet 6.12.118-1~deb12u1+dcnet1\n"
                                "iproute2 6.1.0-3+dcnet1\nopenvswitch-switch 3.1.0-2+deb12u1+dcnet1\n"
                                "dpkg-query: no packages found matching dcnet-tools\n")
    assert pk == {"linux-image-6.12.118-dcnet": "6.12.118-1~deb12u1+dcnet1", "iproute2": "6.1.0-3+dcnet1",
                  "openvswitch-switch": "3.1.0-2+deb12u1+dcnet1"}
    tmpl = open(os.path.join(ROOT, "testbed", "physical", "roles", "workload", "templates",
                             "clients.sh.j2")).read()
    assert '> "$d/packages.txt"' in tmpl and "openvswitch-switch" in tmpl
    res = {"meta": {"platform": "physical", "kernel": "6.12.118-dcnet",
                    "host_info": {"h2": {"kernel": "6.1.0-50-cloud-amd64", "packages": {"iproute2": "6.1.0-3"}},
                                  "h1": {"kernel": "6.12.118-dcnet", "packages": pk}}},
           "runs": []}
    report.markdown(res, [], str(tmp_path))
    lines = (tmp_path / "report.md").read_text().split("\n")
    i = lines.index("## Hosts")
    assert lines[i + 2].startswith("| host | kernel | iproute2 | linux-image-6.12.118-dcnet | openvswitch-switch |")
    assert lines[i + 4] == ("| h1 | 6.12.118-dcnet | 6.1.0-3+dcnet1 | 6.12.118-1~deb12u1+dcnet1 | "
                            "3.1.0-2+deb12u1+dcnet1 |")
    assert lines[i + 5] == "| h2 | 6.1.0-50-cloud-amd64 | 6.1.0-3 | - | - |"


def test_physical_presto_gro(tmp_path):
    """the presto role's counters: with dcnet_presto_gro the clients
    template records `dcnet-presto-gro show DEV` before and after the
    traffic (only then); collect.py turns the three files into the host's
    settings and counters over the run; the report has a Presto GRO table;
    the role is wired into site.yml under its tag"""
    import subprocess
    import yaml
    collect = physical_collect()
    env = workload_templates()
    common = dict(dcnet_sysctl_all={}, dcnet_sysctl={}, dcnet_sysctl_extra={},
                  dcnet_rundir_remote="/tmp/x", dcnet_mode="tcp",
                  dcnet_sized_port=5200, dcnet_dltraffic_remote="/tmp/b/dltraffic", dcnet_tc="tc",
                  dcnet_dev="eth0", dcnet_iperf3_interval=1, dcnet_iperf3_args="", dcnet_run_len=3,
                  inventory_hostname="h1", hostvars={}, tx=[],
                  dcnet_presto_gro_cmd="dcnet-presto-gro", dcnet_presto_gro_dev="eth1")
    off = env.get_template("clients.sh.j2").render(dcnet_presto_gro=False, **common)
    assert "presto-gro" not in off
    on = env.get_template("clients.sh.j2").render(dcnet_presto_gro=True, **common)
    assert subprocess.run(["sh", "-n"], input=on, text=True).returncode == 0
    assert "dcnet-presto-gro show 'eth1' > \"$d/presto-gro-before.json\"" in on
    assert "dcnet-presto-gro show 'eth1' > \"$d/presto-gro-after.json\"" in on
    assert on.index("presto-gro-before") < on.index("sleep 3") < on.index("presto-gro-after")

    state = {"ifindex": 3, "ifname": "eth1", "enabled": 1, "timeout_max_us": 2000,
             "stats": {"held": 10, "pushed_inorder": 100, "reorder_events": 4, "flows": 2, "ewma_us": 30}}
    later = {**state, "stats": {"held": 25, "pushed_inorder": 160, "reorder_events": 9, "flows": 1, "ewma_us": 41}}
    rec = collect.presto_gro_record(state, state, later)
    assert rec == {"dev": "eth1", "settings": {"enabled": 1, "timeout_max_us": 2000},
                   "counters": {"held": 15, "pushed_inorder": 60, "reorder_events": 5, "flows": 1, "ewma_us": 41}}
    assert collect.presto_gro_record(None, None, None) is None
    hd = tmp_path / "run" / "h1"
    hd.mkdir(parents=True)
    for name, obj in (("config", state), ("before", state), ("after", later)):
        (hd / f"presto-gro-{name}.json").write_text(json.dumps(obj))
    (tmp_path / "run" / "experiment.json").write_text(json.dumps({"hosts": ["h1"], "duration_s": 1}))
    (tmp_path / "run" / "flows.json").write_text("[]")
    _exp, _hosts, info, _run = collect.collect_run(str(tmp_path / "run"))
    assert info["h1"]["presto_gro"] == rec

    res = {"meta": {"platform": "physical", "kernel": "6.12.118-dcnet",
                    "host_info": {"h1": {"kernel": "k", "presto_gro": rec}, "h2": {"kernel": "k"}}},
           "runs": []}
    report.markdown(res, [], str(tmp_path))
    lines = (tmp_path / "report.md").read_text().split("\n")
    i = lines.index("## Presto GRO (receive side, counters over the run)")
    assert lines[i + 4] == "| h1 | eth1 | 1 | 15 | 60 | - | - | 5 | - | - |"
    assert not lines[i + 5].startswith("| h2")

    phys = os.path.join(ROOT, "testbed", "physical")
    site = yaml.safe_load(open(os.path.join(phys, "site.yml")))
    play = [p for p in site if "presto" in p.get("tags", [])]
    assert len(play) == 1 and play[0]["roles"][0]["role"] == "presto"
    assert [p.get("tags") for p in site].index(["presto"]) < [p.get("tags") for p in site].index(["workload"])
    tasks = yaml.safe_load(open(os.path.join(phys, "roles", "presto", "tasks", "main.yml")))
    assert "enabled 1" in tasks[0]["ansible.builtin.raw"]
    defaults = yaml.safe_load(open(os.path.join(phys, "group_vars", "all.yml")))
    assert defaults["dcnet_presto_gro"] is False and defaults["dcnet_presto_gro_cmd"] == "dcnet-presto-gro"
