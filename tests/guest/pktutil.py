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
