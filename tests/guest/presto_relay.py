"""A two-port relay standing in for Presto's sender vSwitch and fabric.

Runs in the middle namespace of tests/guest/test_presto_gro.py: frames
from IN go to OUT and back unchanged, except TCP segments IN -> OUT,
which get the stamp the Presto sender writes into bytes 2-5 of the source
MAC, big endian: the tag 0xfcce, then the flowcell ID (1 + payload bytes
so far // 64 KB, as the Presto sender counts); they then take one of two
"paths":

  --mode none     both paths immediate
  --mode reorder  even flowcells are delayed by --delay-ms (the slow
                  path): the next flowcell overtakes them at the boundary
  --mode loss     no delay; packet --drop-index of flowcell --drop-cell
                  is dropped (a loss inside a flowcell)

Each path is FIFO, as a path of the fabric is.  Prints "ready" once both
ports are bound; stops on SIGTERM and prints what it did as JSON.
"""

import argparse
import collections
import json
import select
import signal
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SO_RCVBUFFORCE = 33
SOL_PACKET = 263
PACKET_STATISTICS = 6
CELL = 65536
STAMP_TAG = 0xfcce          # OVS_FLOWCELL_STAMP_TAG


def tcp_payload(frame):
    """(payload length, is TCP) of an Ethernet frame"""
    et = struct.unpack_from("!H", frame, 12)[0]
    if et == 0x0800:
        ihl = (frame[14] & 0xF) * 4
        if frame[23] != 6:
            return 0, False
        tot = struct.unpack_from("!H", frame, 16)[0]
        doff = (frame[14 + ihl + 12] >> 4) * 4
        return tot - ihl - doff, True
    if et == 0x86DD:
        if frame[20] != 6:
            return 0, False
        plen = struct.unpack_from("!H", frame, 18)[0]
        doff = (frame[14 + 40 + 12] >> 4) * 4
        return plen - doff, True
    return 0, False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("inp")
    ap.add_argument("out")
    ap.add_argument("--mode", choices=["none", "reorder", "loss"], default="none")
    ap.add_argument("--delay-ms", type=float, default=10.0)
    ap.add_argument("--drop-cell", type=int, default=3)
    ap.add_argument("--drop-index", type=int, default=10)
    ap.add_argument("--log", help="one line per TCP segment: cell, seq, length, path "
                    "(and, IPv6, the flow label in hex)")
    a = ap.parse_args()

    s_in = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s_in.bind((a.inp, 0))
    s_out = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s_out.bind((a.out, 0))
    # the whole transfer fits in the sockets' buffers: a slow relay delays
    # packets but never drops them (a drop here would be a real loss)
    for s in (s_in, s_out):
        s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    print("ready", flush=True)

    sent_bytes = 0
    per_cell = collections.Counter()
    slow = collections.deque()      # (release time, frame)
    st = {"tcp": 0, "delayed": 0, "dropped": 0, "cells": 0}
    delay = a.delay_ms / 1000.0
    log = open(a.log, "w") if a.log else None
    while not stop:
        timeout = 0.05
        if slow:
            timeout = max(0.0, min(timeout, slow[0][0] - time.monotonic()))
        try:
            r, _, _ = select.select([s_in, s_out], [], [], timeout)
        except InterruptedError:
            continue
        for s in r:
            frame, addr = s.recvfrom(65535)
            if addr[2] == PACKET_OUTGOING:
                continue
            if s is s_out:
                s_in.send(frame)
                continue
            plen, is_tcp = tcp_payload(frame)
            if not is_tcp:
                s_out.send(frame)
                continue
            # a segment belongs to the cell of its first byte; one without
            # payload (SYN, FIN, ACK) to that of the last byte sent, so
            # that it takes the same path as the data before it
            cell = 1 + (sent_bytes if plen else max(sent_bytes - 1, 0)) // CELL
            sent_bytes += plen
            st["tcp"] += 1
            st["cells"] = cell
            f = bytearray(frame)
            f[8:12] = struct.pack("!HH", STAMP_TAG, cell & 0xFFFF)
            idx = per_cell[cell]
            if log:
                off = 14 + ((frame[14] & 0xF) * 4 if frame[12:14] == b"\x08\x00" else 40)
                seq = struct.unpack_from("!I", frame, off + 4)[0]
                # IPv6: the flow label too (the receiver's GRO hashes it)
                label = (f" {struct.unpack_from('!I', frame, 14)[0] & 0xFFFFF:05x}"
                         if frame[12:14] == b"\x86\xdd" else "")
                log.write(f"{cell} {seq} {plen} {'slow' if cell % 2 == 0 else 'fast'}{label}\n")
            per_cell[cell] += 1
            if a.mode == "loss" and cell == a.drop_cell and idx == a.drop_index and plen:
                st["dropped"] += 1
                continue
            if a.mode == "reorder" and cell % 2 == 0:
                slow.append((time.monotonic() + delay, bytes(f)))
                st["delayed"] += 1
            else:
                s_out.send(bytes(f))
        now = time.monotonic()
        while slow and slow[0][0] <= now:
            s_out.send(slow.popleft()[1])
    while slow:
        s_out.send(slow.popleft()[1])
    # struct tpacket_stats: packets, drops (socket queue overflows)
    st["socket_drops"] = sum(struct.unpack("II", s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))[1]
                             for s in (s_in, s_out))
    if log:
        log.close()
    print(json.dumps(st), flush=True)


if __name__ == "__main__":
    sys.exit(main())
