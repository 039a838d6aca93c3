"""The kernel's tc-testing (tdc) format for the FastLane qdisc:
tests/tdc/fastlane.json, each option, its defaults (the paper's caps),
and each error, with the project's tc.  tdc comes from the patched kernel
tree (tdc_tools.py); the test is skipped if there is none.

By hand, on a machine or guest running the patched kernel, as root:

    cd $BUILD/linux/tools/testing/selftests/tc-testing
    cp /path/to/repo/tests/tdc/fastlane.json tc-tests/qdiscs/
    ./tdc.py -p $BUILD/iproute2/tc/tc -f tc-tests/qdiscs/fastlane.json
"""
import json
import os

import pytest

from tdc_tools import run_tdc, tdc_dir

HERE = os.path.dirname(os.path.abspath(__file__))
OURS = os.path.join(os.path.dirname(HERE), "tdc", "fastlane.json")


def test_tdc_fastlane(tmp_path):
    src = tdc_dir()
    if not src:
        pytest.skip("no kernel tree with tools/testing/selftests/tc-testing")
    ok, out = run_tdc(src, tmp_path, [(OURS, "fastlane.json")], "tdc-fastlane.tap", 600)
    with open(OURS) as f:
        assert len(ok) == len(json.load(f)), out[-3000:]
