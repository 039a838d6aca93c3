"""Small traffic and netlink tools for test_htb_ecn.py, run in a namespace
as `python htb_tools.py CMD ...` (one process per tool, so that each sees
its namespace's sockets and netlink).

  serve PORT BYTES [-6] [--cc CC]   accept one connection, send BYTES, close
  fetch HOST PORT [-6]              connect, read to EOF; prints
                                    {"bytes": N, "fct_us": T}
  synstorm SRC DST COUNT [-6]       COUNT raw SYNs (random source ports,
                                    window scale option) from SRC to DST
  udpect DST COUNT [-6]             COUNT 1000-byte ECT(0) UDP datagrams
  tcpraw SRC DST SPORT DPORT SEQ ACK FLAGS COUNT [LEN [TOS]] [-6]
                                    COUNT raw TCP segments (FLAGS: the 9
                                    flag bits, AE 0x100; LEN payload bytes
                                    each, seq advancing; TOS the IP
                                    DS field; a SYN carries MSS and window
                                    scale 7), checksum 0 (the end hosts
                                    drop them unanswered)
  appstats IFNAME                   {classid: length of TCA_STATS_APP} of
                                    the classes of IFNAME (rtnetlink dump)
  badframes IFNAME DSTMAC           Ethernet frames that are no TCP packet
                                    an ACK path may use (truncated, foreign
                                    ethertype, fragments, IPv6 extension
                                    headers, v4-mapped) out of IFNAME
"""
import json
import os
import random
import socket
import struct
import sys
import time


def serve(port, nbytes, v6, cc):
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::" if v6 else "0.0.0.0", port))
    s.listen(8)
    print("ready", flush=True)
    c, _ = s.accept()
    if cc:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    buf = b"x" * 65536
    left = nbytes
    while left:
        left -= c.send(buf[:min(left, len(buf))])
    c.shutdown(socket.SHUT_WR)
    c.recv(1)
    c.close()


def fetch(host, port, v6):
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    t0 = time.monotonic()
    c = socket.socket(fam, socket.SOCK_STREAM)
    c.connect((host, port))
    n = 0
    while True:
        d = c.recv(1 << 16)
        if not d:
            break
        n += len(d)
    t = time.monotonic() - t0
    c.close()
    print(json.dumps({"bytes": n, "fct_us": int(t * 1e6)}), flush=True)


def syn_tcp(sport, dport):
    # SYN, window 64240, options: MSS 1460, NOP, window scale 7
    opts = struct.pack("!BBH", 2, 4, 1460) + struct.pack("!BBBB", 1, 3, 3, 7)
    return struct.pack("!HHIIBBHHH", sport, dport, random.getrandbits(32), 0,
                       (5 + len(opts) // 4) << 4, 0x02, 64240, 0, 0) + opts


def synstorm(src, dst, count, v6):
    if v6:
        s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_RAW)
        s.setsockopt(socket.IPPROTO_IPV6, 36, 1)        # IPV6_HDRINCL
        sa, da = socket.inet_pton(socket.AF_INET6, src), socket.inet_pton(socket.AF_INET6, dst)
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
        sa, da = socket.inet_aton(src), socket.inet_aton(dst)
    for i in range(count):
        tcp = syn_tcp(1024 + (i * 7919) % 60000, 1 + (i * 31) % 60000)
        if v6:
            ip = struct.pack("!IHBB", 6 << 28, len(tcp), 6, 64) + sa + da
        else:
            ip = struct.pack("!BBHHHBBH", 0x45, 0, 20 + len(tcp), 0, 0, 64, 6, 0) + sa + da
        s.sendto(ip + tcp, (dst, 0))
    print(json.dumps({"sent": count}), flush=True)


def tcpraw(src, dst, sport, dport, seq, ack, flags, count, plen, tos, v6):
    if v6:
        s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_RAW)
        s.setsockopt(socket.IPPROTO_IPV6, 36, 1)        # IPV6_HDRINCL
        sa, da = socket.inet_pton(socket.AF_INET6, src), socket.inet_pton(socket.AF_INET6, dst)
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
        sa, da = socket.inet_aton(src), socket.inet_aton(dst)
    opts = b""
    if flags & 0x02:
        opts = struct.pack("!BBH", 2, 4, 1460) + struct.pack("!BBBB", 1, 3, 3, 7)
    for i in range(count):
        tcp = struct.pack("!HHIIBBHHH", sport, dport, (seq + i * plen) % (1 << 32), ack,
                          (5 + len(opts) // 4) << 4 | (flags >> 8 & 1), flags & 0xff,
                          1000, 0, 0) + opts + b"d" * plen
        if v6:
            ip = struct.pack("!IHBB", 6 << 28 | tos << 20, len(tcp), 6, 64) + sa + da
        else:
            ip = struct.pack("!BBHHHBBH", 0x45, tos, 20 + len(tcp), 0, 0, 64, 6, 0) + sa + da
        s.sendto(ip + tcp, (dst, 0))
    print(json.dumps({"sent": count}), flush=True)


def udpect(dst, count, v6):
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    if v6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, 2)
    else:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 2)
    data = b"u" * 1000
    sent = 0
    for _ in range(count):
        try:
            s.sendto(data, (dst, 9))
            sent += 1
        except OSError:
            pass
    print(json.dumps({"sent": sent}), flush=True)


def tcp_hdr(doff=5, flags=0x10):
    return struct.pack("!HHIIBBHHH", 5001, 40000, 1, 1, doff << 4, flags, 1000, 0, 0)


def ip4(payload, proto=6, frag=0, ihl=5, tot=None):
    return struct.pack("!BBHHHBBH", 0x40 | ihl, 0, tot if tot is not None else 20 + len(payload),
                       0, frag, 64, proto, 0) + socket.inet_aton("10.0.3.1") + \
        socket.inet_aton("10.0.1.1") + payload


def ip6(payload, nexthdr=6, src="fd00:3::1", dst="fd00:1::1"):
    return struct.pack("!IHBB", 6 << 28, len(payload), nexthdr, 64) + \
        socket.inet_pton(socket.AF_INET6, src) + socket.inet_pton(socket.AF_INET6, dst) + payload


def badframes(ifname, dstmac):
    """Frames the ACK path must leave alone (and count), none a valid TCP
    packet: each (ethertype, payload)"""
    frames = [
        (0x88B5, b"\x00" * 46),                          # a local experimental ethertype
        (0x0800, b""),                                   # IPv4 without a header
        (0x0800, ip4(b"")[:12]),                          # half an IPv4 header
        (0x0800, ip4(tcp_hdr()[:6], tot=40)),             # TCP cut after 6 bytes
        (0x0800, ip4(tcp_hdr(), ihl=15)),                # IHL beyond the packet
        (0x0800, ip4(tcp_hdr(), frag=0x2000)),           # a first fragment (MF)
        (0x0800, ip4(tcp_hdr(), frag=0x0010)),           # a later fragment
        (0x0800, ip4(tcp_hdr(doff=15))),                 # TCP options beyond the packet
        (0x0800, ip4(tcp_hdr(doff=2))),                  # data offset below 20 bytes
        (0x86DD, ip6(b"")[:20]),                         # half an IPv6 header
        (0x86DD, ip6(b"\x06\x00" + b"\x00" * 6 + tcp_hdr(), nexthdr=0)),  # hop-by-hop first
        (0x86DD, ip6(tcp_hdr()[:10])),                    # TCP cut after 10 bytes
        (0x86DD, ip6(tcp_hdr(), src="::ffff:10.0.3.1", dst="::ffff:10.0.1.1")),  # v4-mapped
        (0x86DD, ip6(tcp_hdr(doff=15))),                 # TCP options beyond the packet
    ]
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    src = bytes.fromhex("020000000003")     # a local address: the frames' source is no matter
    dst = bytes.fromhex(dstmac.replace(":", ""))
    for etype, payload in frames:
        s.send(dst + src + struct.pack("!H", etype) + payload)
    print(json.dumps({"sent": len(frames)}), flush=True)


# rtnetlink constants
RTM_GETTCLASS, NLM_F_REQUEST, NLM_F_DUMP, NLMSG_DONE, NLMSG_ERROR = 42, 1, 0x300, 3, 2
TCA_STATS2, TCA_STATS_APP = 7, 4


def attrs(data):
    off = 0
    while off + 4 <= len(data):
        ln, typ = struct.unpack_from("=HH", data, off)
        if ln < 4:
            break
        yield typ & 0x3FFF, data[off + 4:off + ln]
        off += (ln + 3) & ~3


def appstats(ifname):
    ifindex = socket.if_nametoindex(ifname)
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    tcm = struct.pack("=BxxxiIII", socket.AF_UNSPEC, ifindex, 0, 0, 0)
    s.send(struct.pack("=IHHII", 16 + len(tcm), RTM_GETTCLASS, NLM_F_REQUEST | NLM_F_DUMP, 1, 0) + tcm)
    out = {}
    done = False
    while not done:
        buf = s.recv(1 << 16)
        off = 0
        while off + 16 <= len(buf):
            ln, typ, _fl, _seq, _pid = struct.unpack_from("=IHHII", buf, off)
            if typ in (NLMSG_DONE, NLMSG_ERROR):
                done = True
                break
            msg = buf[off + 16:off + ln]
            _fam, _ifi, handle, _par, _info = struct.unpack_from("=BxxxiIII", msg)
            for t, v in attrs(msg[20:]):
                if t == TCA_STATS2:
                    for t2, v2 in attrs(v):
                        if t2 == TCA_STATS_APP:
                            out[f"{handle >> 16:x}:{handle & 0xFFFF:x}"] = len(v2)
            off += (ln + 3) & ~3
    print(json.dumps(out), flush=True)


def dump(ifname, rtm):
    """The messages of an RTM_GET{QDISC,TCLASS} dump of ifname: (handle,
    attributes of the message) each"""
    ifindex = socket.if_nametoindex(ifname)
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    tcm = struct.pack("=BxxxiIII", socket.AF_UNSPEC, ifindex, 0, 0, 0)
    s.send(struct.pack("=IHHII", 16 + len(tcm), rtm, NLM_F_REQUEST | NLM_F_DUMP, 1, 0) + tcm)
    msgs = []
    done = False
    while not done:
        buf = s.recv(1 << 16)
        off = 0
        while off + 16 <= len(buf):
            ln, typ, _fl, _seq, _pid = struct.unpack_from("=IHHII", buf, off)
            if typ in (NLMSG_DONE, NLMSG_ERROR):
                done = True
                break
            msg = buf[off + 16:off + ln]
            _fam, ifi, handle, _par, _info = struct.unpack_from("=BxxxiIII", msg)
            if ifi == ifindex:
                msgs.append((handle, list(attrs(msg[20:]))))
            off += (ln + 3) & ~3
    return msgs


RTM_GETQDISC, TCA_KIND, TCA_OPTIONS = 38, 1, 2


def options(ifname):
    """The TCA_OPTIONS of each HTB qdisc and class of ifname, as the
    kernel sent them: hex of the nest's payload and its attributes'
    (type, length); and the length of each one's TCA_STATS_APP"""
    out = {}
    for what, rtm in (("qdisc", RTM_GETQDISC), ("class", RTM_GETTCLASS)):
        for handle, at in dump(ifname, rtm):
            d = dict(at)
            if d.get(TCA_KIND, b"").rstrip(b"\0") != b"htb":
                continue
            opt = d.get(TCA_OPTIONS, b"")
            app = None
            for t2, v2 in attrs(d.get(TCA_STATS2, b"")):
                if t2 == TCA_STATS_APP:
                    app = len(v2)
            out[f"{what} {handle >> 16:x}:{handle & 0xFFFF:x}"] = {
                "hex": opt.hex(), "attrs": [[t, len(v)] for t, v in attrs(opt)], "app": app}
    print(json.dumps(out), flush=True)


def flows(argv):
    """the flow tables as text (dcnet.htbflows)"""
    from dcnet import htbflows
    sys.exit(htbflows.main(argv, prog="htb_tools flows"))


def main(argv):
    v6 = "-6" in argv
    argv = [a for a in argv if a != "-6"]
    cmd = argv[0]
    if cmd == "serve":
        cc = argv[argv.index("--cc") + 1] if "--cc" in argv else None
        serve(int(argv[1]), int(argv[2]), v6, cc)
    elif cmd == "fetch":
        fetch(argv[1], int(argv[2]), v6)
    elif cmd == "synstorm":
        synstorm(argv[1], argv[2], int(argv[3]), v6)
    elif cmd == "tcpraw":
        n = [int(a, 0) for a in argv[3:]]
        tcpraw(argv[1], argv[2], *n[:6], n[6] if len(n) > 6 else 0, n[7] if len(n) > 7 else 0, v6)
    elif cmd == "udpect":
        udpect(argv[1], int(argv[2]), v6)
    elif cmd == "appstats":
        appstats(argv[1])
    elif cmd == "options":
        options(argv[1])
    elif cmd == "flows":
        flows(argv[1:])
    elif cmd == "badframes":
        badframes(argv[1], argv[2])
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main(sys.argv[1:])
