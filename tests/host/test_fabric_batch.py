"""Failover's route and FDB updates (dcnet/testbed/fabric.py batch_checked): a
deletion of what is already gone is no error, any other failure is, so a
failed step fails the run instead of being measured as if it worked."""
import os
import subprocess
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dcnet.testbed import fabric


def test_batch_errors_tolerates_only_deleting_what_is_gone():
    lines = ["route del 10.99.0.0/16", "route add 10.98.0.0/16 dev nonexist0",
             "route replace 10.97.0.0/16 dev lo", "fdb del 02:00:00:00:00:01 dev d0 master"]
    stderr = ("RTNETLINK answers: No such process\nCommand failed -:1\n"
              "Cannot find device \"nonexist0\"\nCommand failed -:2\n"
              "RTNETLINK answers: No such file or directory\nCommand failed -:4\n")
    assert fabric.batch_errors(stderr, lines) == [(lines[1], 'Cannot find device "nonexist0"')]
    # a deletion that fails for another reason is an error too
    assert fabric.batch_errors('Cannot find device "d0"\nCommand failed -:4\n', lines) == \
        [(lines[3], 'Cannot find device "d0"')]
    assert fabric.batch_errors("", lines) == []


@pytest.fixture
def ns():
    if os.geteuid() != 0:
        pytest.skip("needs root (a network namespace)")
    name = "dct-" + uuid.uuid4().hex[:8]
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        subprocess.run(["ip", "-n", name, "link", "add", "br0", "type", "bridge"], check=True)
        subprocess.run(["ip", "-n", name, "link", "add", "d0", "type", "veth", "peer", "name", "d1"], check=True)
        subprocess.run(["ip", "-n", name, "link", "set", "d0", "master", "br0"], check=True)
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name])


def test_batch_checked_in_a_namespace(ns):
    fabric.batch_checked("ip", ["route del 10.99.0.0/16", "route replace 10.97.0.0/16 dev lo"], ns=ns)
    assert "10.97.0.0/16" in subprocess.run(["ip", "-n", ns, "route", "show", "table", "main"],
                                            capture_output=True, text=True).stdout
    with pytest.raises(RuntimeError, match="nonexist0"):
        fabric.batch_checked("ip", ["route del 10.99.0.0/16", "route add 10.98.0.0/16 dev nonexist0",
                                    "route replace 10.96.0.0/16 dev lo"], ns=ns)
    # -force: the commands after the failed one still ran
    assert "10.96.0.0/16" in subprocess.run(["ip", "-n", ns, "route", "show"], capture_output=True,
                                            text=True).stdout
    fabric.batch_checked("bridge", ["fdb del 02:00:00:00:00:01 dev d0 master",
                                    "fdb replace 02:00:00:00:00:02 dev d0 master static"], ns=ns)
    with pytest.raises(RuntimeError, match="nope"):
        fabric.batch_checked("bridge", ["fdb replace 02:00:00:00:00:03 dev nope master static"], ns=ns)
