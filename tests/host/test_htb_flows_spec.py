"""HTB's flow-table dump: dcnet/htbflows.py speaks the numbers of the
"htb-ecn" generic netlink family's uapi header."""
import os
import re

from dcnet import htbflows

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UAPI = os.path.join(ROOT, "include", "uapi", "linux", "htb_ecn.h")


def enum_after(h, first):
    """{name: value} of the C enum whose first member is first"""
    body = h[h.rindex("{", 0, h.index(first)) + 1:].split("};", 1)[0]
    n, out = -1, {}
    for name, v in re.findall(r"^\s*([A-Z_][A-Z0-9_]*)(?:\s*=\s*(\d+))?,", body, re.M):
        n = int(v) if v else n + 1
        out[name] = n
    return out


def test_python_client_numbers_match_the_uapi_header():
    h = open(UAPI).read()
    assert '#define HTB_ECN_FAMILY_NAME\t"htb-ecn"' in h
    top = enum_after(h, "HTB_ECN_A_UNSPEC")
    flow = enum_after(h, "HTB_ECN_FLOW_A_UNSPEC")
    cmds = enum_after(h, "HTB_ECN_CMD_UNSPEC")
    ws = enum_after(h, "HTB_ECN_WSCALE_UNKNOWN")
    assert cmds["HTB_ECN_CMD_FLOWS_GET"] == htbflows.HTB_ECN_CMD_FLOWS_GET
    for name in ("IFINDEX", "HANDLE", "SIZE", "TTL_MS", "EVICTIONS", "FLOW"):
        assert top[f"HTB_ECN_A_{name}"] == getattr(htbflows, f"A_{name}"), name
    for name in ("FAMILY", "LADDR", "RADDR", "LPORT", "RPORT", "CLASSID", "WSCALE", "PEER_WS",
                 "MSS", "ECT", "RWND", "IDLE_MS"):
        assert flow[f"HTB_ECN_FLOW_A_{name}"] == getattr(htbflows, f"F_{name}"), name
    # flow_line() reads the window-scale state as unknown, off, on
    assert (ws["HTB_ECN_WSCALE_UNKNOWN"], ws["HTB_ECN_WSCALE_OFF"], ws["HTB_ECN_WSCALE_ON"]) == (0, 1, 2)
