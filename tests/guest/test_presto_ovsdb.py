"""The flowcell table's settings kept in OVSDB (ovs-patches 0013): the
Open_vSwitch table's other_config:flowcell-limit, flowcell-idle-msecs,
flowcell-seed and flowcell-gap-usecs reach the kernel datapath when
ovs-vswitchd starts and when they change, so they survive a restart of
ovs-vswitchd and a re-created datapath; a bad value is logged and that key
keeps its default.

One ovsdb-server and ovs-vswitchd (dcnet.testbed.presto.VSwitch) in a
network namespace of their own, whose kernel datapath "ovs-system" is read
back with `ovs-dpctl show`.
"""
import re
import subprocess
import time

import pytest

from dcnet import config
from dcnet.testbed import presto
from dcnet.testbed.ns import ns_exec


pytestmark = pytest.mark.skipif(not presto.have_ovs() and not config.get("DCNET_REQUIRE_OVS"),
                                reason="the patched Open vSwitch is not built (make ovs)")

KEYS = {"flowcell-limit": "1000", "flowcell-idle-msecs": "20000",
        "flowcell-seed": "5", "flowcell-gap-usecs": "250"}
CONFIGURED = "flowcell: flows:0 limit:1000 idle:20000ms seed:5 gap:250us"


class NsOnly:
    """what VSwitch needs of a fabric: the name of its namespace"""
    prefix = "tpo"

    def ns(self, node):
        return f"{self.prefix}-{node}"


@pytest.fixture
def vswitch():
    fab = NsOnly()
    ns = fab.ns(presto.VS)
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    subprocess.run(["ip", "netns", "add", ns], check=True)
    vs = presto.VSwitch(fab)
    vs.start()
    yield vs
    vs.stop()
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def dpctl(vs, *args):
    return vs._run([vs.prog["ovs-dpctl"], *args], ns=True)


def flowcell_line(vs):
    """the first flowcell line of `ovs-dpctl show` for ovs-system, or None"""
    try:
        out = dpctl(vs, "show", "ovs-system")
    except RuntimeError:
        return None         # no datapath (yet)
    m = re.search(r"^\s*(flowcell: .*)$", out, re.M)
    return m.group(1).strip() if m else None


def wait_line(vs, want, timeout=120):
    line = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = flowcell_line(vs)
        if line == want:
            return
        time.sleep(0.5)
    log = [l for l in vswitchd_log(vs).splitlines() if "flowcell" in l or "|WARN|" in l]
    raise AssertionError(f"ovs-system: {line!r}, expected {want!r}; ovs-vswitchd.log:\n"
                         + "\n".join(log[-20:]))


def running(pid):
    """pid exists and is not a zombie (the guest's init may not reap a
    daemon that --detach left to it)"""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def restart_vswitchd(vs, between=None):
    """stop ovs-vswitchd only (the kernel datapath stays), run between(),
    start it again"""
    pid = int(open(f"{vs.dir}/ovs-vswitchd.pid").read())
    vs._run([vs.prog["ovs-appctl"], "-t", f"{vs.dir}/ovs-vswitchd.{pid}.ctl", "exit"])
    for _ in range(600):
        if not running(pid):
            break
        time.sleep(0.1)
    else:
        raise AssertionError("ovs-vswitchd did not exit")
    if between:
        between()
    vs._run([vs.prog["ovs-vswitchd"], vs.db, f"--pidfile={vs.dir}/ovs-vswitchd.pid",
             "--detach", "--no-chdir", f"--log-file={vs.dir}/ovs-vswitchd.log"], ns=True)


def vswitchd_log(vs):
    return open(f"{vs.dir}/ovs-vswitchd.log").read()


def test_other_config_reaches_the_kernel_datapath_and_survives_restarts(vswitch):
    vs = vswitch
    sets = [f"other_config:{k}={v}" for k, v in KEYS.items()]
    vs.vsctl("set", "Open_vSwitch", ".", *sets)
    # The datapath exists once a bridge does; it takes the settings then.
    vs.vsctl("add-br", "br0")
    wait_line(vs, CONFIGURED)
    assert "ovs-system: flowcell table: limit 1000, idle 20000 ms, seed 5, gap 250 us" \
        in vswitchd_log(vs)

    # ovs-dpctl changes the kernel's table while ovs-vswitchd is down: the
    # restarted ovs-vswitchd sets OVSDB's values again.
    restart_vswitchd(vs, lambda: dpctl(vs, "set-flowcell", "ovs-system",
                                       "limit=7", "idle=30", "seed=0", "gap=0"))
    wait_line(vs, CONFIGURED)

    # A re-created datapath (the kernel's table at its defaults) too.
    restart_vswitchd(vs, lambda: dpctl(vs, "del-dp", "ovs-system"))
    wait_line(vs, CONFIGURED)

    # A bad value: logged, that key at its default, the others kept.
    vs.vsctl("set", "Open_vSwitch", ".", "other_config:flowcell-limit=2000000")
    wait_line(vs, "flowcell: flows:0 limit:8192 idle:20000ms seed:5 gap:250us")
    assert 'other_config:flowcell-limit: "2000000" is not an integer from 1 to 1048576, ' \
        'using 8192' in vswitchd_log(vs)

    # Without the keys the defaults come back.
    vs.vsctl("remove", "Open_vSwitch", ".", "other_config", *KEYS)
    wait_line(vs, "flowcell: flows:0 limit:8192 idle:10000ms")
