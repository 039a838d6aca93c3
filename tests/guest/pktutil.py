"""Packet helpers the guest tests share."""
import struct


def inet_csum(data):
    """the Internet checksum (RFC 1071) of data: 0 over a header or a
    pseudo-header and segment whose checksum field is right"""
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


# FastLane notifications: ICMP errors of an experimental type (IPv4: RFC
# 4727; IPv6: RFC 4443 private experimentation) quoting the dropped
# packet's IP and TCP headers (include/net/fastlane.h)
ICMP_FASTLANE = 253
ICMPV6_FASTLANE = 100


def fastlane_error(v6, src, dst, quote, dscp=45, ttl=64, itype=None):
    """the IP packet (no Ethernet header) of a FastLane notification from
    src to dst quoting quote (the dropped packet's IP header and TCP header
    with options), its checksums right; itype: another ICMP type"""
    import socket
    if v6:
        s, d = socket.inet_pton(socket.AF_INET6, src), socket.inet_pton(socket.AF_INET6, dst)
        icmp = struct.pack("!BBHI", ICMPV6_FASTLANE if itype is None else itype, 0, 0, 0) + bytes(quote)
        c = inet_csum(s + d + struct.pack("!I3xB", len(icmp), 58) + icmp)
        icmp = icmp[:2] + struct.pack("!H", c) + icmp[4:]
        return struct.pack("!IHBB", (6 << 28) | (dscp << 22), len(icmp), 58, ttl) + s + d + icmp
    icmp = struct.pack("!BBHI", ICMP_FASTLANE if itype is None else itype, 0, 0, 0) + bytes(quote)
    icmp = icmp[:2] + struct.pack("!H", inet_csum(icmp)) + icmp[4:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, dscp << 2, 20 + len(icmp), 0, 0, ttl, 1, 0,
                     socket.inet_aton(src), socket.inet_aton(dst))
    return ip[:10] + struct.pack("!H", inet_csum(ip)) + ip[12:] + icmp


def fastlane_quote_of(ip, v6):
    """(outer header length, quote) of IP packet ip if it is a FastLane
    notification, else None"""
    if v6:
        if len(ip) < 48 or ip[6] != 58 or ip[40] != ICMPV6_FASTLANE:
            return None
        return 40, ip[48:]
    ihl = (ip[0] & 15) * 4
    if len(ip) < ihl + 8 or ip[9] != 1 or ip[ihl] != ICMP_FASTLANE:
        return None
    return ihl, ip[ihl + 8:]
