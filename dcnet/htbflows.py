"""The flow tables of HTB's ecn_mode ece and rwnd, dumped over the
"htb-ecn" generic netlink family (include/uapi/linux/htb_ecn.h), with the
standard library only.  The dump is for CAP_NET_ADMIN in the namespace
(the tables name every flow) and shows the namespace's qdiscs: run it
inside the namespace (`ip netns exec NS python -m dcnet htb-flows`).

Command line (`python -m dcnet htb-flows`):

    htb-flows [DEV] [--stats]    per qdisc a header line, then one line per
                                 flow; --stats: the number of messages too
"""
import json
import os
import socket
import struct
import sys

NLM_F_REQUEST, NLM_F_DUMP = 1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3


def attrs(data):
    off = 0
    while off + 4 <= len(data):
        ln, typ = struct.unpack_from("=HH", data, off)
        if ln < 4:
            break
        yield typ & 0x3FFF, data[off + 4:off + ln]
        off += (ln + 3) & ~3


# the "htb-ecn" generic netlink family (include/uapi/linux/htb_ecn.h)
NETLINK_GENERIC, GENL_ID_CTRL, CTRL_CMD_GETFAMILY = 16, 0x10, 3
CTRL_ATTR_FAMILY_ID, CTRL_ATTR_FAMILY_NAME = 1, 2
HTB_ECN_CMD_FLOWS_GET = 1
(A_IFINDEX, A_HANDLE, A_SIZE, A_TTL_MS, A_EVICTIONS, A_FLOW) = range(1, 7)
(F_FAMILY, F_LADDR, F_RADDR, F_LPORT, F_RPORT, F_CLASSID, F_WSCALE, F_PEER_WS, F_MSS, F_ECT,
 F_RWND, F_IDLE_MS) = range(1, 13)


def genl_family(s, name):
    req = struct.pack("=BBxx", CTRL_CMD_GETFAMILY, 1) + nla(CTRL_ATTR_FAMILY_NAME, name.encode() + b"\0")
    s.send(struct.pack("=IHHII", 16 + len(req), GENL_ID_CTRL, NLM_F_REQUEST, 1, 0) + req)
    buf = s.recv(65536)
    ln, typ = struct.unpack_from("=IH", buf)
    if typ == NLMSG_ERROR:
        err = -struct.unpack_from("=i", buf, 16)[0]
        raise OSError(err, f"{name}: {os.strerror(err)}")
    return struct.unpack("=H", dict(attrs(buf[20:ln]))[CTRL_ATTR_FAMILY_ID][:2])[0]


def nla(atype, payload):
    n = 4 + len(payload)
    return struct.pack("=HH", n, atype) + payload + b"\0" * ((4 - n % 4) % 4)


def flow_dump(ifindex=0, bufsize=65536):
    """The flow tables of this namespace's HTB qdiscs: (messages, [{header,
    flows: [...]}, ...] in the order received, one entry per message)"""
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
    fam = genl_family(s, "htb-ecn")
    req = struct.pack("=BBxx", HTB_ECN_CMD_FLOWS_GET, 1)
    if ifindex:
        req += nla(A_IFINDEX, struct.pack("=I", ifindex))
    s.send(struct.pack("=IHHII", 16 + len(req), fam, NLM_F_REQUEST | NLM_F_DUMP, 2, 0) + req)
    msgs = []
    while True:
        # at least the size of the dump's skbs (up to the largest buffer
        # this socket received into): a shorter recv() truncates them
        buf = s.recv(bufsize)
        off = 0
        while off + 16 <= len(buf):
            ln, typ = struct.unpack_from("=IH", buf, off)
            if typ == NLMSG_DONE:
                return msgs
            if typ == NLMSG_ERROR:
                err = -struct.unpack_from("=i", buf, off + 16)[0]
                raise OSError(err, f"htb-ecn flows-get: {os.strerror(err)}")
            m = {"flows": []}
            for t, v in attrs(buf[off + 20:off + ln]):
                if t == A_FLOW:
                    m["flows"].append({k: v2 for k, v2 in attrs(v)})
                elif t in (A_IFINDEX, A_HANDLE, A_SIZE, A_TTL_MS):
                    m[t] = struct.unpack("=I", v)[0]
                elif t == A_EVICTIONS:
                    m[t] = struct.unpack("=Q", v)[0]
            msgs.append(m)
            off += (ln + 3) & ~3


def flow_line(f):
    fam = f[F_FAMILY][0]
    af = socket.AF_INET if fam == socket.AF_INET else socket.AF_INET6
    la, ra = (socket.inet_ntop(af, f[k]) for k in (F_LADDR, F_RADDR))
    lp, rp = (struct.unpack("=H", f[k])[0] for k in (F_LPORT, F_RPORT))
    if af == socket.AF_INET6:
        la, ra = f"[{la}]", f"[{ra}]"
    cid = struct.unpack("=I", f[F_CLASSID])[0]
    ws = f[F_WSCALE][0]
    wtxt = ("wscale unknown", "wscale off", f"wscale {f[F_PEER_WS][0]}")[ws] if ws < 3 else f"wscale ?{ws}"
    u32 = lambda k: struct.unpack("=I", f[k])[0]
    return (f"  {la}:{lp} {ra}:{rp} class {cid >> 16:x}:{cid & 0xFFFF:x} {wtxt}"
            f" mss {u32(F_MSS)} ect {f[F_ECT][0]} rwnd {u32(F_RWND)} idle_ms {u32(F_IDLE_MS)}")


def main(argv=None, prog="htb-flows"):
    """the flow tables as text: per qdisc a header line, then a line per
    flow; --stats: also the number of messages, as JSON on the last line"""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    ifindex = socket.if_nametoindex(argv[0]) if argv and not argv[0].startswith("-") else 0
    try:
        msgs = flow_dump(ifindex)
    except OSError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 1
    tables = {}
    for m in msgs:
        t = tables.setdefault((m[A_IFINDEX], m[A_HANDLE]), {"hdr": m, "lines": []})
        t["lines"] += [flow_line(f) for f in m["flows"]]
    for (ifi, handle), t in tables.items():
        h = t["hdr"]
        try:
            name = socket.if_indextoname(ifi)
        except OSError:
            name = f"if{ifi}"
        print(f"dev {name} handle {handle >> 16:x}: size {h[A_SIZE]} ttl_ms {h[A_TTL_MS]}"
              f" entries {len(t['lines'])} evictions {h[A_EVICTIONS]}")
        for line in t["lines"]:
            print(line)
    if "--stats" in argv:
        print(json.dumps({"messages": len(msgs)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
