"""The traffic tool on the host's loopback (the host kernel has no
TCP_DEADLINE: deadlines are exercised in the guest)."""
import json
import os
import random
import socket
import subprocess
import time

import pytest

from dcnet.wait import wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "testbed", "tools", "dltraffic")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def free_port_base(n=3):
    """B such that ports B..B+n-1 can all be bound now. It is drawn below
    the ephemeral range, so that no connection the kernel numbers (a
    server's, a probe's) takes B+k between this check and its use."""
    lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    rng = random.Random()
    for _ in range(1000):
        base = rng.randrange(10000, lo - n)
        socks = []
        try:
            for k in range(n):
                s = socket.socket()
                socks.append(s)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("0.0.0.0", base + k))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    pytest.fail("no %d consecutive free ports below %d" % (n, lo))


# Waits are for events, not for a number of sleeps: a loaded host only makes
# them longer. The bound only turns a hang into a message.
WAIT_S = 30


def accepts(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


def wait_listening(port):
    """until a server accepts on 127.0.0.1:port"""
    wait_until(lambda: accepts(port), WAIT_S, "a listener on 127.0.0.1:%d" % port)


@pytest.fixture
def server():
    port = free_port()
    p = subprocess.Popen([TOOL, "server", "-B", "127.0.0.1", "-p", str(port)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_listening(port)
    yield port
    p.terminate()
    assert p.wait(timeout=5) == 0


def lines(out):
    return [json.loads(l) for l in out.splitlines() if l.strip()]


def complete_lines(out):
    """the records of a log still being written (not its partial last line)"""
    return lines(out[:out.rfind("\n") + 1])


def test_flow_reports_fct_and_bytes(server):
    r = subprocess.run([TOOL, "flow", "-c", "127.0.0.1", "-p", str(server), "--bytes", "2M",
                        "--id", "x"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    (f,) = [l for l in lines(r.stdout) if l["type"] == "flow"]
    assert f["bytes"] == 2_000_000 and f["id"] == "x" and f["met"] is None
    assert f["end_us"] - f["start_us"] == f["fct_us"] > 0


def test_fanin_one_record_per_leaf_and_query(server):
    leaves = ",".join([f"127.0.0.1:{server}"] * 3)
    r = subprocess.run([TOOL, "fanin", "--leaves", leaves, "--queries", "4", "--resp-bytes",
                        "10K-20K", "--seed", "1"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    recs = lines(r.stdout)
    flows = [l for l in recs if l["type"] == "flow"]
    queries = [l for l in recs if l["type"] == "query"]
    assert len(flows) == 12 and len(queries) == 4
    assert all(10_000 <= f["bytes"] <= 20_000 for f in flows)


def test_server_samples_each_response_until_acknowledged(tmp_path):
    """server --sample-ms: per response, samples of the sending socket from
    before the first byte until all are acknowledged, numbered per
    connection (the fanin root's query number)"""
    port = free_port()
    log = tmp_path / "server.jsonl"
    with open(log, "w") as out:
        p = subprocess.Popen([TOOL, "server", "-B", "127.0.0.1", "-p", str(port), "--sample-ms", "1"],
                             stdout=out, stderr=subprocess.PIPE)
        try:
            wait_listening(port)
            r = subprocess.run([TOOL, "fanin", "--leaves", f"127.0.0.1:{port}", "--queries", "3",
                                "--resp-bytes", "2M", "--seed", "1"], capture_output=True, text=True,
                               timeout=30)
            assert r.returncode == 0, r.stderr
            # The root has the last response; the leaf's sampler sees its
            # last ACK later (on a loaded host, much later): its final
            # sample is the one with everything acknowledged, after which
            # the sampler stops. Wait for that record itself.
            wait_until(lambda: any(x["type"] == "rsample" and x["resp"] == 2 and x["sent"] == 1
                                   and x["unacked"] == 0 and x["notsent"] == 0
                                   for x in complete_lines(log.read_text())),
                       WAIT_S, "response 2's all-acknowledged sample in the server's log")
        finally:
            p.terminate()
            assert p.wait(timeout=5) == 0
    s = [x for x in lines(log.read_text()) if x["type"] == "rsample"]
    assert sorted({x["resp"] for x in s}) == [0, 1, 2]
    for resp in range(3):
        mine = [x for x in s if x["resp"] == resp]
        assert mine[0]["sent"] == 0 and mine[0]["bytes"] == 2_000_000
        assert mine[-1]["sent"] == 1 and mine[-1]["unacked"] == 0 and mine[-1]["notsent"] == 0
        assert all(x["cwnd"] > 0 for x in mine)
        assert [x["t_us"] for x in mine] == sorted(x["t_us"] for x in mine)
        # the host's congestion control is not DCTCP/D2TCP
        assert all(x["alpha"] == -1 and x["d"] == -1 for x in mine)


def test_bad_arguments_exit_2():
    r = subprocess.run([TOOL, "flow", "--bytes", "zz"], capture_output=True, text=True)
    assert r.returncode == 2


@pytest.mark.parametrize("bad,why", [
    ("a 127.0.0.1:9 -1 0", 'BYTES "-1" is negative'),
    ("a 127.0.0.1:9 0 0", "BYTES is 0"),
    ("a 127.0.0.1:9 18446744073709551616 0", 'BYTES "18446744073709551616" overflows'),
    ("a 127.0.0.1:9 99999999999999999999999 0", "overflows"),
    ("a 127.0.0.1:9 +5 0", 'BYTES "+5" is not a decimal number'),
    ("a 127.0.0.1:9 5x 0", 'BYTES "5x" is not a decimal number'),
    ("a 127.0.0.1:9 100 0 junk", 'junk "junk" after the 4 fields'),
    ("a 127.0.0.1:9 100 0 1 2", 'junk "1 2" after the 4 fields'),
    ("a 127.0.0.1:9 100 -5", 'AT_US "-5" is negative'),
    ("a 127.0.0.1:9 100 1e6", 'AT_US "1e6" is not a decimal number'),
    ("a 127.0.0.1:9 100 18446744073709551616", 'AT_US "18446744073709551616" overflows'),
    ("a 127.0.0.1:9 100 18446744073709551615", "AT_US 18446744073709551615 overflows the clock"),
    ("a 127.0.0.1:9 100", "3 fields, not 4"),
    ("a :9 100 0", 'bad HOST[:PORT] ":9"'),
    ("a 127.0.0.1: 100 0", 'bad HOST[:PORT] "127.0.0.1:"'),
    ("a 127.0.0.1:0 100 0", 'bad port "0"'),
    ("a 127.0.0.1:65536 100 0", 'bad port "65536"'),
    ("a 127.0.0.1:http 100 0", 'bad port "http"'),
    ("x" * 64 + " 127.0.0.1:9 100 0", "ID longer than 63 characters"),
])
def test_sched_rejects_a_malformed_line_by_its_number(bad, why):
    """the good lines before it do not start: the whole schedule is checked
    first (port 9 on loopback would refuse them anyway)"""
    text = "first 127.0.0.1:9 100 0\n\n  \nsecond 127.0.0.1:9 100 +\n" + bad + "\nlast 127.0.0.1:9 1 0\n"
    r = subprocess.run([TOOL, "sched"], input=text, capture_output=True, text=True, timeout=10)
    assert r.returncode == 2, r.stderr
    assert "bad schedule line 5" in r.stderr and why in r.stderr, r.stderr
    assert r.stdout == ""


def test_sched_rejects_an_overlong_line():
    r = subprocess.run([TOOL, "sched"], input="a 127.0.0.1:9 1 0\nb " + "h" * 600 + " 1 0\n",
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and "bad schedule line 2" in r.stderr and "longer than" in r.stderr


def test_sched_takes_tabs_crlf_and_a_last_line_without_newline(server):
    text = f"a\t127.0.0.1:{server}  1000 0\r\nb 127.0.0.1:{server} 2000 +"
    r = subprocess.run([TOOL, "sched"], input=text, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    got = {j["id"]: j for j in lines(r.stdout)}
    assert got["a"]["bytes"] == 1000 and got["b"]["bytes"] == 2000


def test_sched_sport_base_fixes_each_flows_source_port(server):
    """--sport-base: flow k of the schedule (blank lines not counted)
    leaves from B + k, and its record says so, so the 5-tuple the fabric
    hashes is the same in every run"""
    base = free_port_base(3)
    text = (f"a 127.0.0.1:{server} 1000 0\n\nb 127.0.0.1:{server} 2000 +\n"
            f"c 127.0.0.1:{server} 3000 +\n")
    r = subprocess.run([TOOL, "sched", "--sport-base", str(base)], input=text,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    got = {j["id"]: j["sport"] for j in lines(r.stdout)}
    assert got == {"a": base, "b": base + 1, "c": base + 2}


def test_sched_without_sport_base_leaves_the_port_to_the_kernel(server):
    r = subprocess.run([TOOL, "sched"], input=f"a 127.0.0.1:{server} 1000 0\n",
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    (j,) = lines(r.stdout)
    lo, hi = (int(x) for x in open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
    assert lo <= j["sport"] <= hi


@pytest.mark.parametrize("args,why", [
    (["--sport-base", "0"], "--sport-base must be in 1-65535"),
    (["--sport-base", "65536"], "--sport-base must be in 1-65535"),
    (["--sport-base", "65535"], "needs source port 65536"),
])
def test_sched_sport_base_out_of_range_is_refused(args, why):
    r = subprocess.run([TOOL, "sched", *args], input="a 127.0.0.1:9 1 0\nb 127.0.0.1:9 1 0\n",
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and why in r.stderr, r.stderr


def test_fanin_sport_base_connects_leaf_k_from_base_plus_k(server):
    base = free_port_base(3)
    leaves = ",".join([f"127.0.0.1:{server}"] * 3)
    # enough queries that the root outlives any wait (it is killed below)
    p = subprocess.Popen([TOOL, "fanin", "--leaves", leaves, "--queries", "100000", "--resp-bytes",
                          "10K", "--interval-us", "20000", "--sport-base", str(base)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def ports():
            assert p.poll() is None, p.communicate()[1]
            out = subprocess.run(["ss", "-tnH", "state", "established", f"dport = :{server}"],
                                 capture_output=True, text=True).stdout
            seen = {int(l.split()[-2].rsplit(":", 1)[1]) for l in out.splitlines() if l.strip()}
            return seen if len(seen) >= 3 else None
        seen = wait_until(ports, WAIT_S, "three established connections to the leaf", interval=0.05)
        ss = seen
        assert seen == {base, base + 1, base + 2}, ss
    finally:
        p.kill()
        p.wait()
