"""Presto GRO's settings and counters over its generic netlink family,
"presto-gro" (include/uapi/linux/presto_gro.h), with the standard library
only: the guest, the testbed and an operator's host need nothing else.
The kernel's own client does the same from the family's spec:

    tools/net/ynl/cli.py --spec Documentation/netlink/specs/presto-gro.yaml \\
        --do dev-get --json '{"ifindex": 2}'

Command line (`python -m dcnet presto-gro`; on a host with the dcnet-tools
package, `dcnet-presto-gro`):

    presto-gro [show [DEV]]              every device's state (or DEV's), JSON
    presto-gro set DEV KEY VALUE ...     enabled, alpha, beta, timeout_min_us,
                                         timeout_max_us, max_segs, max_bytes

A socket is bound to the network namespace it is opened in: open it
inside the namespace (`ip netns exec NS python -m dcnet presto-gro ...`,
or within dcnet.testbed.ns.netns()).
"""
import errno
import json
import os
import socket
import struct
import sys

NETLINK_GENERIC = 16
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
NLM_F_REQUEST, NLM_F_ACK, NLM_F_DUMP = 0x1, 0x4, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
SOL_NETLINK, NETLINK_CAP_ACK, NETLINK_EXT_ACK = 270, 10, 11
NLMSGERR_ATTR_MSG = 1
NLA_F_NESTED = 0x8000

FAMILY = "presto-gro"
CMD_DEV_GET, CMD_DEV_SET = 1, 2
A_IFINDEX = 1
# the settings: name, attribute, struct format
SETTINGS = [("enabled", 2, "B"), ("alpha", 3, "I"), ("beta", 4, "I"), ("timeout_min_us", 5, "I"),
            ("timeout_max_us", 6, "I"), ("max_segs", 7, "I"), ("max_bytes", 8, "I")]
A_STATS = 9
A_NAPIS = 10        # NAPI instances that hand their segments to Presto GRO
STATS = ["held", "pushed_inorder", "pushed_timeout", "pushed_loss", "pushed_old", "pushed_evicted",
         "reorder_events", "late_fills", "untagged", "restarts", "expired", "ewma_us", "flows",
         "held_bytes", "dropped"]


class NetlinkError(OSError):
    """a request the kernel refused: errno and its extack message"""

    def __init__(self, err, msg=""):
        super().__init__(err, os.strerror(err) + (f": {msg}" if msg else ""))
        self.extack = msg


def _attr(kind, payload):
    n = 4 + len(payload)
    return struct.pack("HH", n, kind) + payload + b"\0" * ((4 - n % 4) % 4)


def _attrs(buf):
    """{type: payload} of a run of attributes"""
    out, i = {}, 0
    while i + 4 <= len(buf):
        n, kind = struct.unpack_from("HH", buf, i)
        if n < 4:
            break
        out[kind & ~NLA_F_NESTED] = buf[i + 4:i + n]
        i += (n + 3) & ~3
    return out


def _uint(b):
    return struct.unpack("Q" if len(b) == 8 else "I" if len(b) == 4 else "B", b)[0]


class PrestoGro:
    """one socket of the family, in the current network namespace"""

    def __init__(self):
        self.sk = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
        self.sk.bind((0, 0))
        for opt in (NETLINK_CAP_ACK, NETLINK_EXT_ACK):
            self.sk.setsockopt(SOL_NETLINK, opt, 1)
        self.seq = 0
        try:
            reply = self._request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 0,
                                  _attr(CTRL_ATTR_FAMILY_NAME, FAMILY.encode() + b"\0"))
        except OSError as e:
            if e.errno != errno.ENOENT:
                raise
            reply = None
        if not reply:
            raise NetlinkError(errno.ENOENT, f"no generic netlink family {FAMILY!r} "
                               "(a kernel without CONFIG_NET_PRESTO_GRO)")
        self.family = struct.unpack("H", reply[0][CTRL_ATTR_FAMILY_ID][:2])[0]

    def close(self):
        self.sk.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _request(self, kind, cmd, flags, payload=b""):
        """send one request; its replies' attributes, a list of dicts"""
        self.seq += 1
        body = struct.pack("BBH", cmd, 1, 0) + payload
        self.sk.send(struct.pack("IHHII", 16 + len(body), kind, NLM_F_REQUEST | flags, self.seq, 0) + body)
        out = []
        while True:
            data = self.sk.recv(1 << 16)
            i = 0
            while i + 16 <= len(data):
                n, typ, fl, seq, _pid = struct.unpack_from("IHHII", data, i)
                msg = data[i + 16:i + n]
                i += (n + 3) & ~3
                if seq != self.seq:
                    continue
                if typ == NLMSG_DONE:
                    return out
                if typ == NLMSG_ERROR:
                    err = -struct.unpack_from("i", msg)[0]
                    if err == 0:
                        return out
                    text = ""
                    if fl & 0x200:          # NLM_F_ACK_TLVS, after the echoed header
                        text = _attrs(msg[4 + 16:]).get(NLMSGERR_ATTR_MSG, b"").rstrip(b"\0").decode()
                    raise NetlinkError(err, text)
                out.append(_attrs(msg[4:]))
                if not fl & 0x2 and not flags & NLM_F_DUMP:   # not NLM_F_MULTI
                    return out

    @staticmethod
    def _decode(a):
        d = {"ifindex": _uint(a[A_IFINDEX])}
        for name, attr, _fmt in SETTINGS:
            if attr in a:
                d[name] = _uint(a[attr])
        if A_NAPIS in a:
            d["napis"] = _uint(a[A_NAPIS])
        st = _attrs(a.get(A_STATS, b""))
        d["stats"] = {name: _uint(st[i + 1]) for i, name in enumerate(STATS) if i + 1 in st}
        return d

    def get(self, dev):
        """one device's settings and counters (dev: name or index)"""
        ifindex = dev if isinstance(dev, int) else socket.if_nametoindex(dev)
        r = self._request(self.family, CMD_DEV_GET, 0, _attr(A_IFINDEX, struct.pack("I", ifindex)))
        return self._decode(r[0])

    def dump(self):
        """every device of the namespace"""
        return [self._decode(a) for a in self._request(self.family, CMD_DEV_GET, NLM_F_DUMP)]

    def set(self, dev, **knobs):
        """change settings of dev (name or index): enabled, alpha, ..."""
        ifindex = dev if isinstance(dev, int) else socket.if_nametoindex(dev)
        known = {name: (attr, fmt) for name, attr, fmt in SETTINGS}
        payload = _attr(A_IFINDEX, struct.pack("I", ifindex))
        for k, v in knobs.items():
            if k not in known:
                raise ValueError(f"presto-gro: unknown setting {k!r} (one of {', '.join(known)})")
            attr, fmt = known[k]
            payload += _attr(attr, struct.pack(fmt, int(v)))
        self._request(self.family, CMD_DEV_SET, NLM_F_ACK, payload)


def flat(state):
    """a device's state as one dict of name -> number (settings and
    counters), as the sysfs files of earlier kernels named them"""
    d = {k: v for k, v in state.items() if k not in ("stats", "ifindex")}
    d.update(state.get("stats", {}))
    return d


def main(argv=None, prog="presto-gro"):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    try:
        with PrestoGro() as pg:
            if not argv or argv[0] == "show":
                names = {i: n for i, n in socket.if_nameindex()}
                rows = [pg.get(argv[1])] if len(argv) > 1 else pg.dump()
                for r in rows:
                    r["ifname"] = names.get(r["ifindex"])
                print(json.dumps(rows if len(argv) < 2 else rows[0], indent=1))
                return 0
            if argv[0] == "set" and len(argv) >= 4 and len(argv) % 2 == 0:
                kv = dict(zip(argv[2::2], argv[3::2]))
                try:
                    kv = {k: int(v, 0) for k, v in kv.items()}
                except ValueError:
                    print(f"{prog}: values are numbers: {' '.join(argv[2:])}", file=sys.stderr)
                    return 2
                pg.set(argv[1], **kv)
                return 0
    except (OSError, ValueError) as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 1
    print(f"usage: {prog} [show [DEV]] | set DEV KEY VALUE [KEY VALUE ...]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(prog=os.path.basename(sys.argv[0])))
