"""MPTCP on the testbed: the hosts' setup (a server's own joins must not
hold its subflow budget) and the per-connection subflow counts the runner
records (dcnet/testbed/counters.py, from `ss -tni`), planned and parsed
without a guest."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dcnet.testbed import counters
from dcnet.testbed import fabric
from dcnet.testbed import report

CPORT = 20000

# `ss -tniH state established` at h1 (10.1.1.1), client of flow 3 to h9
# (10.3.1.1:5201): its data connection (first subflow from --cport 20003)
# with one fully established join and one still waiting for its fourth
# ACK, its control connection, and the server side of flow 7 (h5 -> h1)
SS = """\
0      0           10.1.1.1:20003 10.3.1.1:5201
\t cubic wscale:7,7 rto:260 rtt:56.2/3.1 mss:1448 cwnd:19 bytes_sent:900 bytes_acked:123456 segs_out:65 tcp-ulp-mptcp flags:Mmec token:0000(id:0)/4b5d998c(id:0) seq:32a9 sfseq:1 ssnoff:1fa5 maplen:0
0      0      10.1.1.2%eth0:53965 10.3.1.1:5201
\t cubic rto:208 rtt:5.5/11.0 mss:1448 cwnd:19 bytes_acked:11249 tcp-ulp-mptcp flags:Jjec token:d665678d(id:0)/4b5d998c(id:1) seq:32a9 sfseq:0 ssnoff:c892 maplen:0
0      0      10.1.1.3%eth0:35745 10.3.1.1:5201
\t cubic rto:204 rtt:0.013/0.006 mss:1448 cwnd:10 bytes_acked:1 tcp-ulp-mptcp flags:Jjc token:d665678d(id:0)/4b5d998c(id:2) seq:0 sfseq:0 ssnoff:3ed9 maplen:0
0      0           10.1.1.1:41000 10.3.1.1:5201
\t cubic rto:204 mss:1448 cwnd:10 bytes_acked:300 tcp-ulp-mptcp flags:Mmec token:0000(id:0)/0badc0de(id:0) seq:1 sfseq:1 ssnoff:1 maplen:0
0      0           10.1.1.1:5201 10.2.1.1:20007
\t cubic rto:204 mss:1448 cwnd:10 bytes_received:88752 tcp-ulp-mptcp flags:Mec token:0000(id:0)/d00d0001(id:0) seq:7e sfseq:fe89 ssnoff:8ea1 maplen:5c28
0      0           10.1.1.1:5201 10.2.1.2:45612
\t cubic rto:204 mss:1448 cwnd:10 bytes_received:1000 tcp-ulp-mptcp flags:Jec token:0000(id:1)/d00d0001(id:0) seq:7e sfseq:1 ssnoff:c653 maplen:2bf0
0      0           10.1.1.1:22 10.9.9.9:50000
\t cubic rto:204 mss:1448 cwnd:10 bytes_acked:5
"""
FLOWS = [dict(id=3, src="h1", dst="h9", kind="elephant", port=5201),
         dict(id=7, src="h5", dst="h1", kind="elephant", port=5201)]
IPS = {"h1": "10.1.1.1", "h9": "10.3.1.1", "h5": "10.2.1.1"}


def test_subflows_are_parsed_from_ss():
    sfs = counters.parse_mptcp_subflows(SS)
    assert len(sfs) == 6        # the plain TCP socket (no tcp-ulp-mptcp) is left out
    first = sfs[0]
    assert first["local"] == ["10.1.1.1", 20003] and first["peer"] == ["10.3.1.1", 5201]
    assert first["token"] == "4b5d998c" and not first["join"] and first["fully_established"]
    assert first["bytes_acked"] == 123456
    assert sfs[1]["local"] == ["10.1.1.2", 53965]          # "%eth0" dropped
    assert sfs[1]["join"] and sfs[1]["fully_established"] and sfs[1]["local_id"] == 1
    assert sfs[2]["join"] and not sfs[2]["fully_established"]   # no fourth ACK yet
    assert sfs[4]["bytes_received"] == 88752


def test_connections_are_grouped_by_token_and_named_by_flow():
    conns = {c["token"]: c for c in counters.mptcp_connections("h1", counters.parse_mptcp_subflows(SS),
                                                                FLOWS, CPORT, IPS)}
    assert set(conns) == {"4b5d998c", "0badc0de", "d00d0001"}
    d = conns["4b5d998c"]
    assert (d["role"], d["flow"], d["kind"]) == ("client", 3, "data")
    assert (d["subflows"], d["established"]) == (3, 2)
    assert d["bytes_acked"] == 123456 + 11249 + 1
    c = conns["0badc0de"]
    assert (c["role"], c["flow"], c["kind"], c["subflows"]) == ("client", 3, "control", 1)
    s = conns["d00d0001"]
    assert (s["role"], s["flow"], s["kind"], s["subflows"], s["established"]) == ("server", 7, "data", 2, 2)
    # a peer at another address is not the flow's
    other = counters.mptcp_connections("h1", counters.parse_mptcp_subflows(SS), FLOWS, CPORT,
                                       dict(IPS, h9="10.3.2.1"))
    assert {c["token"]: c["role"] for c in other}["4b5d998c"] is None


def test_summary_counts_data_connections_short_of_their_subflows():
    conns = counters.mptcp_connections("h1", counters.parse_mptcp_subflows(SS), FLOWS, CPORT, IPS)
    data = next(c for c in conns if c["token"] == "4b5d998c")
    full = dict(data, token="x", flow=4, subflows=8, established=8)
    samples = [dict(at_s=9.0, label="measured_start", conns=conns + [full]),
               dict(at_s=19.0, label="measured_end", conns=[full])]
    sm = counters.mptcp_summary(samples, 8)
    assert sm[0]["connections"] == 2            # client data connections only
    assert (sm[0]["min_subflows"], sm[0]["max_subflows"]) == (3, 8)
    assert (sm[0]["min_established"], sm[0]["max_established"]) == (2, 8)
    assert sm[0]["short"] == [[3, 2]]
    assert sm[1]["short"] == [] and sm[1]["min_established"] == 8
    assert "min_used" not in sm[0]
    # used: subflows that carried >= 1% of what the connection sent since
    later = dict(data, sf=[dict(x, bytes_acked=x["bytes_acked"] + grow) for x, grow in
                           zip(data["sf"], (1000000, 5000, 20000))])
    sm = counters.mptcp_summary([dict(at_s=9.0, label="a", conns=[data]),
                                 dict(at_s=19.0, label="b", conns=[later])], 8)
    assert (sm[1]["min_used"], sm[1]["max_used"]) == (2, 2)
    assert counters.mptcp_summary([], 8) == []
    # the report carries it, with the scheme's subflows as the goal
    meta = {"experiment": {"schemes": [{"name": "mptcp", "mode": "mptcp", "subflows": 4}]}}
    r = report.mptcp_subflows({"scheme": "mptcp", "mptcp_conns": samples}, meta)
    assert r["want"] == 4 and r["samples"][0]["short"] == [[3, 2]]
    assert report.mptcp_subflows({"scheme": "ecmp"}, meta) is None


def planned(mode="mptcp", subflows=8):
    t = fabric.Topology(kind="clos", spines=4, leaves=4, hosts_per_leaf=4)
    fab = fabric.Fabric.__new__(fabric.Fabric)
    fab.topo, fab.mode, fab.subflows = t, mode, subflows
    fab.hosts, fab.switches, fab.links = {}, [], []
    fab.down, fab.rates = set(), {}
    fab._plan()
    return fab


def test_mptcp_hosts_refuse_their_own_server_side_joins():
    fab = planned()
    h = fab.hosts["h6"]        # leaf 2, second host
    L = fab.mptcp_host_lines(h)
    assert L[0] == "mptcp limits set subflows 8 add_addr_accepted 8"
    extra = [f"10.2.2.{k}" for k in range(2, 9)]
    assert [x for x in L if x.startswith("mptcp endpoint")] == [f"mptcp endpoint add {a} subflow"
                                                               for a in extra]
    # from each extra address, a connect() to a client port fails at once
    assert [x for x in L if x.startswith("rule")] == [
        f"rule add from {a} ipproto tcp dport 20000-65534 unreachable pref 100" for a in extra]
    # the clients' joins go to server ports, below the range: iperf3's,
    # the sized flows', sockperf's; clients leave from --cport or the
    # ephemeral range, inside it
    from dcnet.testbed import run
    from dcnet.testbed import workloads
    lo, hi = fabric.MPTCP_CLIENT_PORTS
    assert max(workloads.BASE_PORT + 64, run.SIZED_PORT, run.SOCKPERF_PORT) < lo <= run.CPORT_BASE
    assert 32768 >= lo and hi >= 60999
    ecmp = planned(mode="ecmp")
    assert ecmp.mptcp_host_lines(ecmp.hosts["h6"]) == []
