#!/usr/bin/env python3
"""Send HTB qdisc and class requests with attributes tc would not send.

tc only puts the qdisc options (ecn_flows, ecn_flow_ttl) in a qdisc request
and the class options (ecn_thresh, ecn_mode) in a class request, so what the
kernel does with a misplaced or malformed attribute cannot be seen with tc.
This sends the request over rtnetlink itself, like tc: exit 0 on success,
2 with "Error: MESSAGE." on stderr when the kernel refuses it (the extack
message, and the attribute it points at when it names one).

    htb_nl.py [--expect TEXT] qdisc DEV HANDLE [ATTR VALUE]...
    htb_nl.py [--expect TEXT] class|class-change DEV PARENT CLASSID [ATTR VALUE]...
    htb_nl.py [--expect TEXT] htback [noopts] [HATTR VALUE]...

ATTR: ecn_thresh, ecn_mode (0 none, 1 ce, 2 ece, 3 rwnd), ecn_flows,
ecn_flow_ttl (ms), ecn_flow_evictions (dump only); "ecn_thresh64" sends
ecn_thresh as 8 bytes instead of 4.  class adds a class (as tc class add),
class-change changes one (tc class change).  With --expect, a refusal
whose message lacks TEXT exits 3 instead of 2.
htback adds an htback action (tc actions add action htback) whose options
are the HATTRs given: parms INDEX (struct tc_htback), parms_short INDEX
(10 bytes of it), seen (a dump-only counter), unknown (type 9); noopts
sends no options at all.
Handles are tc's (1:, 1:10).  The class is a 1 Mbit/s leaf.  Used by
tests/tdc/htb_ecn.json (copied next to tdc) and tests/guest/test_htb_ecn.py.
"""
import os
import socket
import struct
import sys

RTM_NEWQDISC, RTM_NEWTCLASS = 36, 40
NLM_F_REQUEST, NLM_F_ACK, NLM_F_EXCL, NLM_F_CREATE = 0x1, 0x4, 0x200, 0x400
NLMSG_ERROR = 2
NLM_F_ACK_TLVS = 0x200
NETLINK_CAP_ACK, NETLINK_EXT_ACK, SOL_NETLINK = 10, 11, 270
NLMSGERR_ATTR_MSG, NLMSGERR_ATTR_OFFS = 1, 2
TCA_KIND, TCA_OPTIONS = 1, 2
TCA_HTB_PARMS, TCA_HTB_INIT = 1, 2
# name: (attribute type, struct format of its payload)
ATTRS = {
    "ecn_thresh": (10, "=I"),
    "ecn_thresh64": (10, "=Q"),
    "ecn_mode": (11, "=B"),
    "ecn_flows": (12, "=I"),
    "ecn_flow_ttl": (13, "=I"),
    "ecn_flow_evictions": (17, "=Q"),
}
NLA_F_NESTED = 0x8000
RTM_NEWACTION, TCA_ACT_TAB, TCA_ACT_KIND, TCA_ACT_OPTIONS = 48, 1, 1, 2
# name: (TCA_HTBACK_* type, payload of VALUE)
HTBACK_ATTRS = {
    "parms": (2, lambda v: struct.pack("=IIiii", v, 0, 3, 0, 0)),      # index, pipe
    "parms_short": (2, lambda v: struct.pack("=IIiii", v, 0, 3, 0, 0)[:10]),
    "seen": (4, lambda v: struct.pack("=Q", v)),
    "unknown": (9, lambda v: struct.pack("=I", v)),
}


def htback_request(argv):
    """an RTM_NEWACTION for one htback action; (message, offsets)"""
    noopts = argv[:1] == ["noopts"]
    rest = argv[1:] if noopts else argv
    kind = nla(TCA_ACT_KIND, b"htback\0")
    # up to the options' payload: headers, TCA_ACT_TAB, the action's nest
    hdr = 16 + 4 + 4 + 4 + len(kind) + 4
    opts, where = b"", {}
    for name, value in zip(rest[::2], rest[1::2]):
        atype, enc = HTBACK_ATTRS[name]
        where[hdr + len(opts)] = name
        opts += nla(atype, enc(int(value, 0)))
    act = kind if noopts else kind + nla(TCA_ACT_OPTIONS | NLA_F_NESTED, opts)
    body = struct.pack("=BBH", socket.AF_UNSPEC, 0, 0)
    body += nla(TCA_ACT_TAB | NLA_F_NESTED, nla(1 | NLA_F_NESTED, act))
    flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL
    return struct.pack("=IHHII", 16 + len(body), RTM_NEWACTION, flags, 1, 0) + body, where


def handle(s):
    major, _, minor = s.partition(":")
    return (int(major or "0", 16) << 16) | int(minor or "0", 16)


def nla(atype, payload):
    n = 4 + len(payload)
    return struct.pack("=HH", n, atype) + payload + b"\0" * ((4 - n % 4) % 4)


def request(argv):
    """(netlink message, {offset in the message: attribute name})"""
    if argv[0] == "htback":
        return htback_request(argv[1:])
    kind, dev = argv[0], argv[1]
    ifindex = socket.if_nametoindex(dev)
    if kind == "qdisc":
        msgtype, parent, hnd, rest = RTM_NEWQDISC, 0xFFFFFFFF, handle(argv[2]), argv[3:]
        # struct tc_htb_glob: version 3, rate2quantum 10, defcls, debug, direct_pkts
        opts = nla(TCA_HTB_INIT, struct.pack("=IIIII", 3, 10, 0, 0, 0))
    elif kind in ("class", "class-change"):
        msgtype, parent, hnd, rest = RTM_NEWTCLASS, handle(argv[2]), handle(argv[3]), argv[4:]
        # struct tc_ratespec: cell_log, linklayer (1: ethernet), overhead,
        # cell_align, mpu, rate (bytes/s); then buffer, cbuffer, quantum,
        # level, prio of struct tc_htb_opt
        rate = struct.pack("=BBHhHI", 0, 1, 0, -1, 0, 125000)
        opts = nla(TCA_HTB_PARMS, rate + rate + struct.pack("=IIIII", 100000, 100000, 0, 0, 0))
    else:
        raise SystemExit(__doc__)
    hdr = 16 + 20 + len(nla(TCA_KIND, b"htb\0")) + 4      # up to the options' payload
    where = {}
    for name, value in zip(rest[::2], rest[1::2]):
        atype, fmt = ATTRS[name]
        where[hdr + len(opts)] = name
        opts += nla(atype, struct.pack(fmt, int(value, 0)))
    body = struct.pack("=BBHiIII", socket.AF_UNSPEC, 0, 0, ifindex, hnd, parent, 0)
    body += nla(TCA_KIND, b"htb\0") + nla(TCA_OPTIONS | NLA_F_NESTED, opts)
    flags = NLM_F_REQUEST | NLM_F_ACK
    if kind != "class-change":
        flags |= NLM_F_CREATE | NLM_F_EXCL
    return struct.pack("=IHHII", 16 + len(body), msgtype, flags, 1, 0) + body, where


def main(argv):
    expect = None
    if argv[:1] == ["--expect"]:
        expect, argv = argv[1], argv[2:]
    msg, where = request(argv)
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
    s.setsockopt(SOL_NETLINK, NETLINK_EXT_ACK, 1)
    s.setsockopt(SOL_NETLINK, NETLINK_CAP_ACK, 1)
    s.bind((0, 0))
    s.send(msg)
    data = s.recv(65536)
    length, mtype, flags = struct.unpack_from("=IHH", data)
    assert mtype == NLMSG_ERROR, mtype
    err = struct.unpack_from("=i", data, 16)[0]
    if err == 0:
        return 0
    text, offs = os.strerror(-err), None
    if flags & NLM_F_ACK_TLVS:
        pos = 16 + 4 + 16                   # error, the request's header
        while pos + 4 <= length:
            alen, atype = struct.unpack_from("=HH", data, pos)
            if alen < 4:
                break
            payload = data[pos + 4:pos + alen]
            if atype == NLMSGERR_ATTR_MSG:
                text = payload.rstrip(b"\0").decode()
            elif atype == NLMSGERR_ATTR_OFFS:
                offs = struct.unpack("=I", payload)[0]
            pos += (alen + 3) & ~3
    at = f" (attribute {where.get(offs, offs)})" if offs is not None else ""
    print(f"Error: {text}.{at}", file=sys.stderr)
    return 3 if expect is not None and expect not in text + at else 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
