"""The kernel's tc-testing (tdc) suites for HTB: the stock one
(tc-tests/qdiscs/htb.json, which must still pass with the congestion
signals built in), tests/tdc/htb_ecn.json (each new option and error; misplaced and
malformed attributes through tests/guest/htb_nl.py, as tc sends none)
and tests/tdc/htback.json (the htback action, the ACK side of ece/rwnd:
its controls, clsact use and bad attributes), with the project's tc.  tdc comes from the patched kernel tree (the
newest ~/.cache/dcnet/*/linux, or DCNET_KSRC); the test is skipped if
there is none.

By hand, on a machine or guest running the patched kernel, as root:

    cd $BUILD/linux/tools/testing/selftests/tc-testing
    ./tdc.py -p $BUILD/iproute2/tc/tc -f tc-tests/qdiscs/htb.json \\
        /path/to/repo/tests/tdc/htb_ecn.json /path/to/repo/tests/tdc/htback.json
"""
import os

import pytest

from tdc_tools import run_tdc, tdc_dir

HERE = os.path.dirname(os.path.abspath(__file__))
OURS = os.path.join(os.path.dirname(HERE), "tdc", "htb_ecn.json")
ACK = os.path.join(os.path.dirname(HERE), "tdc", "htback.json")


def test_tdc_htb_suites(tmp_path):
    src = tdc_dir()
    if not src:
        pytest.skip("no kernel tree with tools/testing/selftests/tc-testing")
    ok, out = run_tdc(src, tmp_path, [(os.path.join(src, "tc-tests", "qdiscs", "htb.json"), "htb.json"),
                                      (OURS, "htb_ecn.json"), (ACK, "htback.json")],
                      "tdc-htb.tap", 900)
    # all 12 stock HTB tests and all of ours ran
    assert len(ok) >= 12 + 24 + 14, out[-3000:]
