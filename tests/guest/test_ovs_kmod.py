"""Open vSwitch's own kernel-datapath testsuite (tests/system-kmod-testsuite,
the one `make check-kernel` runs) against this kernel's openvswitch module:
the flowcell tests of ovs-patches (keyword 'flowcell'), among them
"datapath - flowcell select group sprays a TCP flow in 64 KB cells", which
drives the Linux datapath's flowcell table with one TCP flow through a
flowcell select group.

It runs with DCNET_OVS_KMOD=1 (6 minutes or more in a TCG guest with a
debug kernel), and is skipped otherwise.  The testsuite comes from the OVS
build beside the install the other guest tests use (DCNET_OVS, by default
$BUILD/ovs-install: $BUILD/ovs and $BUILD/ovs-src); it runs in a scratch
directory, since the build is read-only in the guest.
"""
import os
import re
import shutil
import subprocess

import pytest

from dcnet import config
from dcnet.testbed import presto

TOP = os.path.dirname(os.path.abspath(presto.ovs_dir()))
OBJ = os.path.join(TOP, "ovs")
SUITE = os.path.join(OBJ, "tests", "system-kmod-testsuite")
SRC_SUITE = os.path.join(TOP, "ovs-src", "tests", "system-kmod-testsuite")
# Each must run and pass on this kernel (none may skip: the kernel has
# the flowcell algorithm).
EXPECTED = ["datapath - flowcell select group sprays a TCP flow in 64 KB cells"]


def suite():
    for path in (SUITE, SRC_SUITE):
        if os.path.exists(path):
            return path
    return None


pytestmark = [
    pytest.mark.skipif(not config.get("DCNET_OVS_KMOD"),
                       reason="OVS's kmod testsuite runs with DCNET_OVS_KMOD=1"),
    pytest.mark.skipif(suite() is None and not config.get("DCNET_REQUIRE_OVS"),
                       reason="no OVS build with its kmod testsuite (make ovs)"),
]


@pytest.mark.timeout(2500)
def test_kmod_testsuite_flowcell(tmp_path):
    work = tmp_path / "kmod"
    work.mkdir()
    tests = os.path.join(OBJ, "tests")
    for f in ("atconfig", "atlocal"):
        shutil.copy(os.path.join(tests, f), work / f)
    # A TCG guest with a debug kernel takes longer than OVS's 30 s to take
    # a kernel datapath down at ovs-vswitchd's exit.
    with open(work / "atlocal", "a") as f:
        f.write("OVS_CTL_TIMEOUT=300\nexport OVS_CTL_TIMEOUT\n")
    path = ":".join(os.path.join(OBJ, d) for d in
                    ("utilities", "vswitchd", "ovsdb", "vtep", "tests", "ipsec"))
    r = subprocess.run(["sh", suite(), "-C", str(work), f"AUTOTEST_PATH={path}",
                        "-k", "flowcell", "-j1"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=2400)
    out = r.stdout
    results = dict(re.findall(r"^\s*\d+: (.*?)\s+(ok|FAILED|skipped|expected failure)\b.*$",
                              out, re.M))
    log = work / "system-kmod-testsuite.log"
    tail = log.read_text()[-6000:] if log.exists() else out[-3000:]
    # what check_logs() objects to: the daemons' warnings and errors
    warns = "".join(f"{p.relative_to(work)}: {line}\n"
                    for p in sorted(work.glob("system-kmod-testsuite.dir/*/*.log"))
                    for line in p.read_text(errors="replace").splitlines()
                    if "|WARN|" in line or "|ERR|" in line or "|EMER|" in line)
    tail = warns[-4000:] + tail
    failed = [n for n, res in results.items() if res not in ("ok",)]
    assert not failed, f"OVS kmod tests not ok: {failed}\n{out[-2000:]}\n{tail}"
    missing = [n for n in EXPECTED if n not in results]
    assert not missing, f"OVS kmod tests did not run: {missing}\n{out[-3000:]}"
    assert r.returncode == 0, out[-3000:]
