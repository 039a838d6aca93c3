"""Open vSwitch userspace (ovs-patches/): the series is well formed, and
OVS's own testsuite passes the tests of the flowcell select groups
(keyword 'flowcell': tests/odp.at, tests/ofp-print.at and
tests/ofproto-dpif.at, the last on the userspace datapath, with its
other_config keys and its fallback on a datapath without the algorithm) in the build
made by `make ovs` (scripts/ovs.sh)."""
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD") or os.path.join(
    os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "dcnet", "build")
PATCHES = os.path.join(ROOT, "ovs-patches")
# The tests the patches add, by name; each must run and pass.
EXPECTED = [
    "OVS datapath actions parsing and formatting - flowcell hash",
    "NXT_GROUP_MOD add - flowcell selection method",
    "ofproto-dpif - select group with flowcell selection method",
    "ofproto-dpif - select group with weighted flowcells",
    "ofproto-dpif - select group with dp_hash flowcell algorithm",
    "ofproto-dpif - flowcell select group syntax",
    "ofproto-dpif - flowcell group: one miss installs every slot",
    "ofproto-dpif - flowcell group: flowlets (set-flowcell gap)",
    "ofproto-dpif - flowcell settings from other_config",
    "ofproto-dpif - flowcell group on a datapath without flowcells",
]


def series():
    with open(os.path.join(PATCHES, "series")) as f:
        return [l.split()[0] for l in f if l.strip() and not l.startswith("#")]


def test_series_lists_every_patch_once():
    names = series()
    assert names, "ovs-patches/series is empty"
    assert len(names) == len(set(names))
    on_disk = sorted(f for f in os.listdir(PATCHES) if f.endswith(".patch"))
    assert sorted(names) == on_disk


@pytest.mark.parametrize("name", series())
def test_patch_has_subject_message_and_one_signoff(name):
    text = open(os.path.join(PATCHES, name)).read()
    head, _, rest = text.partition("\n\n")
    assert re.search(r"^Subject: \[PATCH\] \S", head, re.M), name
    body = rest.split("\n---\n", 1)[0]
    assert len(body.strip().splitlines()) >= 3, f"{name}: no commit message"
    # A backport of an upstream commit keeps upstream's sign-off chain and
    # adds one of ours after its "(cherry picked from commit ...)" line.
    picked = re.split(r"^\(cherry picked from commit [0-9a-f]{40}\)$", body, flags=re.M)
    if len(picked) > 1:
        assert re.search(r"^Signed-off-by: .+ <.+>$", picked[0], re.M), f"{name}: upstream's sign-off"
        body = picked[-1]
    assert len(re.findall(r"^Signed-off-by: .+ <.+>$", body, re.M)) == 1, name


def test_ovs_flowcell_testsuite():
    obj = os.path.join(BUILD, "ovs")
    if not os.path.exists(os.path.join(obj, "config.status")):
        pytest.skip(f"no Open vSwitch build in {obj}: run 'make ovs' "
                    "(scripts/ovs.sh) to build it and run these tests")
    # Rebuilds what changed (seconds when nothing did), then runs
    # make check TESTSUITEFLAGS='-k flowcell -jN' in the build.
    r = subprocess.run([os.path.join(ROOT, "scripts", "ovs.sh"), "check", "-k", "flowcell"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=1200, env=dict(os.environ, BUILD=BUILD))
    out = r.stdout
    results = dict(re.findall(r"^\s*\d+: (.*?)\s+(ok|FAILED|skipped|expected failure)\b.*$",
                              out, re.M))
    failed = [n for n, res in results.items() if res != "ok"]
    assert not failed, f"OVS tests failed: {failed}\n{out[-3000:]}"
    missing = [n for n in EXPECTED if n not in results]
    assert not missing, f"OVS tests did not run: {missing}\n{out[-3000:]}"
    assert r.returncode == 0, out[-3000:]
