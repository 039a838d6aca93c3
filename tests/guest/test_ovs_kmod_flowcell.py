"""Open vSwitch's own kernel-datapath testsuite (tests/system-traffic.at,
`make check-kernel`), keyword 'flowcell', against the openvswitch module
of the booted kernel: "datapath - flowcell select group" (ovs-patches 0015)
sets the flowcell table from other_config, sends 1 MB over TCP through a
flowcell group and reads the kernel's counters and flows back.

The testsuite is the one `scripts/ovs.sh build` generates in
$BUILD/ovs-src/tests (system-kmod-testsuite), run with the binaries of
$BUILD/ovs, its output in a temporary directory ($BUILD: the directory of
the OVS install the guest uses, DCNET_OVS or $BUILD/ovs-install).
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

from dcnet import config
from dcnet.testbed import presto

# The build beside the install the guest's other OVS tests use
# (DCNET_OVS, else $BUILD/ovs-install).
BUILD = os.path.dirname(os.path.normpath(presto.ovs_dir()))
OBJ = os.path.join(BUILD, "ovs")
TESTSUITE = os.path.join(BUILD, "ovs-src", "tests", "system-kmod-testsuite")
TEST = "datapath - flowcell select group"

pytestmark = pytest.mark.skipif(
    not os.path.exists(TESTSUITE) and not config.get("DCNET_REQUIRE_OVS"),
    reason="no Open vSwitch kernel testsuite: run scripts/ovs.sh build")


def test_ovs_system_kmod_flowcell():
    out = tempfile.mkdtemp(prefix="ovs-kmod-")
    try:
        # atconfig has absolute paths; atlocal's PYTHON3 is the host's,
        # replaced by this interpreter.
        shutil.copy(os.path.join(OBJ, "tests", "atconfig"), out)
        with open(os.path.join(OBJ, "tests", "atlocal")) as f:
            atlocal = f.read()
        atlocal = re.sub(r"^PYTHON3=.*$", f"PYTHON3='{sys.executable}'", atlocal, flags=re.M)
        with open(os.path.join(out, "atlocal"), "w") as f:
            f.write(atlocal)
        path = ":".join(os.path.join(OBJ, d) for d in ("utilities", "vswitchd", "ovsdb", "vtep", "tests"))
        p = subprocess.run(["sh", TESTSUITE, "-C", out, f"AUTOTEST_PATH={path}", "-k", "flowcell", "-j1"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1200)
        print(p.stdout)
        logs = ""
        # a failed test's directory keeps its log, named after the suite
        for log in sorted(glob.glob(os.path.join(out, "system-kmod-testsuite.dir", "*",
                                                 "system-kmod-testsuite.log"))):
            with open(log) as f:
                logs += f.read()[-12000:]
        m = re.search(r"^\s*\d+: %s\s+(\w+)" % re.escape(TEST), p.stdout, re.M)
        assert m, f"{TEST!r} did not run:\n{p.stdout[-3000:]}"
        assert m.group(1) == "ok", f"{TEST}: {m.group(1)}\n{logs}"
        assert p.returncode == 0, p.stdout[-3000:] + logs
    finally:
        shutil.rmtree(out, ignore_errors=True)
