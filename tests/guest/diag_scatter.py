"""A diagnostic, not a test (pytest does not collect it): how often stock
TCP and the packet-scatter sender retransmit on test_fastlane_oob.py's
reordering-only path, for several netem reorder delays.  One JSON line
per transfer on stdout, all of them in $DCNET_OUT/diag.json.

    DCNET_KUNIT= .venv/bin/python scripts/vmrun.py --kernel $BUILD/obj-debug \
        --out OUT --clock real -- python tests/guest/diag_scatter.py 2,5,10,20 5

arguments: the delays in ms (comma separated), the runs per case.
"""
import json
import sys

from dcnet import config

from dcnet.warm import install_for_guest
install_for_guest()
import test_fastlane_oob as t
from dcnet.testbed.netlab import Lab, sh

out = config.get("DCNET_OUT")
lab = Lab(["h1", "h2"], prefix="oo")
KEYS = ("TcpRetransSegs", "TcpExtTCPLossProbes", "TcpExtTCPSackRecovery",
        "TcpExtTCPDSACKRecv", "TcpExtTCPFastLaneScatterHeld", "TcpExtTCPOFOQueue",
        "TcpExtTCPSACKReorder", "TcpExtTCPTSReorder", "TcpExtTCPRenoReorder")
res = []
for dl in sys.argv[1].split(","):
    sh(f"tc qdisc replace dev h2 root netem delay {dl}ms reorder 50% limit 10000", ns=lab.sw)
    for v6, sack, ts, vid in ((False, 1, 1, "v4"), (True, 1, 1, "v6"), (True, 1, 0, "v6-nots"),
                              (False, 0, 0, "v4-reno")):
        for mode in ("stock", "scatter"):
            for i in range(int(sys.argv[2])):
                if mode == "stock":
                    t.configure(lab, sack=sack, ts=ts)
                else:
                    t.configure(lab, ofo=(1, 1), scatter=(1, 0), sack=sack, ts=ts)
                info, pkts, d = t.run(lab, v6)
                r = dict(delay=dl, v=vid, mode=mode, i=i, reordering=info["reordering"],
                         **{k: d["h1"].get(k, 0) for k in KEYS})
                r["h2ofo"] = d["h2"]["TcpExtTCPOFOQueue"]
                print(json.dumps(r), flush=True)
                res.append(r)
with open(f"{out}/diag.json", "w") as f:
    json.dump(res, f)
lab.close()
