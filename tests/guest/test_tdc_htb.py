"""The kernel's tc-testing (tdc) suites for HTB: the stock one
(tc-tests/qdiscs/htb.json, which must still pass with the congestion
signals built in) and tests/tdc/htb_ecn.json (each new option and error),
with the project's tc.  tdc comes from the patched kernel tree (the
newest ~/.cache/dcnet/*/linux, or DCNET_KSRC); the test is skipped if
there is none.

By hand, on a machine or guest running the patched kernel, as root:

    cd $BUILD/linux/tools/testing/selftests/tc-testing
    ./tdc.py -p $BUILD/iproute2/tc/tc -f tc-tests/qdiscs/htb.json \\
        /path/to/repo/tests/tdc/htb_ecn.json
"""
import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
OURS = os.path.join(os.path.dirname(HERE), "tdc", "htb_ecn.json")


def tdc_dir():
    roots = [os.environ["DCNET_KSRC"]] if os.environ.get("DCNET_KSRC") else sorted(
        glob.glob(os.path.expanduser("~/.cache/dcnet/*/linux")), key=os.path.getmtime, reverse=True)
    for r in roots:
        d = os.path.join(r, "tools", "testing", "selftests", "tc-testing")
        if os.path.exists(os.path.join(d, "tdc.py")):
            return d
    return None


def test_tdc_htb_suites(tmp_path):
    src = tdc_dir()
    if not src:
        pytest.skip("no kernel tree with tools/testing/selftests/tc-testing")
    tc = os.environ.get("DCNET_TC")
    assert tc and os.path.exists(tc), "the patched tc was not built (make iproute2)"
    work = tmp_path / "tc-testing"
    shutil.copytree(src, work, ignore=shutil.ignore_patterns("tc-tests"))
    os.makedirs(work / "tc-tests" / "qdiscs")
    shutil.copy(os.path.join(src, "tc-tests", "qdiscs", "htb.json"), work / "tc-tests" / "qdiscs")
    shutil.copy(OURS, work / "tc-tests" / "qdiscs" / "htb_ecn.json")
    p = subprocess.run([sys.executable, "tdc.py", "-p", tc, "-f",
                        "tc-tests/qdiscs/htb.json", "tc-tests/qdiscs/htb_ecn.json"],
                       cwd=work, capture_output=True, text=True, timeout=900)
    out = p.stdout + p.stderr
    with open(os.path.join(os.environ["DCNET_OUT"], "tdc-htb.tap"), "w") as f:
        f.write(out)
    ok = re.findall(r"^ok \d+ (\w+)", out, re.M)
    bad = re.findall(r"^not ok \d+ .*$", out, re.M)
    print(f"tdc: {len(ok)} ok, {len(bad)} not ok")
    assert not bad, "\n".join(bad) + "\n" + out[-3000:]
    # all 12 stock HTB tests and all of ours ran
    assert len(ok) >= 12 + 15, out[-3000:]
