"""The traffic tool on the host's loopback (the host kernel has no
TCP_DEADLINE: deadlines are exercised in the guest)."""
import json
import os
import socket
import subprocess
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "testbed", "tools", "dltraffic")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


@pytest.fixture
def server():
    port = free_port()
    p = subprocess.Popen([TOOL, "server", "-B", "127.0.0.1", "-p", str(port)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.02)
    yield port
    p.terminate()
    assert p.wait(timeout=5) == 0


def lines(out):
    return [json.loads(l) for l in out.splitlines() if l.strip()]


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


def test_bad_arguments_exit_2():
    r = subprocess.run([TOOL, "flow", "--bytes", "zz"], capture_output=True, text=True)
    assert r.returncode == 2
