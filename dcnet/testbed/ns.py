"""Network-namespace primitives, below every network builder: run a
command, run many ip/tc/bridge commands in one process (`-batch`), the argv
prefix that runs a command in a namespace, entering a namespace in this
thread (setns(2)), sysctls and the legacy ethtool offload switches.

dcnet.testbed.fabric, dcnet.testbed.presto and dcnet.testbed.netlab build
on these; this module imports nothing of the package.
"""
import ctypes
import fcntl
import os
import re
import socket
import struct
import subprocess
from contextlib import contextmanager

from dcnet import config

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)

def run(argv, input=None, check=True, timeout=300):
    p = subprocess.run(argv, input=input, text=True, capture_output=True, timeout=timeout)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({p.returncode}): {p.stderr.strip()[:2000]}")
    return p.stdout


def ns_exec(ns):
    """argv prefix that runs a command in network namespace ns: nsenter
    joins the namespace and execs the command, nothing else (`ip netns
    exec` also unshares the mount namespace and remounts /sys, which
    costs seconds per process in the debug guest).  /sys/class/net inside
    still shows the initial namespace's devices: ask `ip` instead."""
    return ["nsenter", f"--net=/run/netns/{ns}", "--"]


def batch(tool, lines, ns=None, force=False):
    """run many ip/tc/bridge commands in one process; force: go on past
    errors (and ignore them)"""
    if not lines:
        return ""
    if tool == "tc":        # the project's tc (fastlane, htb ecn_mode) when set
        tool = config.get("DCNET_TC")
    argv = [tool] + (["-n", ns] if ns else []) + (["-force"] if force else []) + ["-batch", "-"]
    if force:
        return subprocess.run(argv, input="\n".join(lines) + "\n", capture_output=True, text=True).stdout
    return run(argv, input="\n".join(lines) + "\n")


# What deleting something already gone gives: ip route del (ESRCH), bridge
# fdb del (ENOENT).  A failover step deletes what may have gone with the
# link; any other error means the step did not happen.
GONE = ("No such process", "No such file or directory")


def batch_errors(stderr, lines):
    """The commands of a `-force -batch` run that failed for another reason
    than deleting what is already gone: [(command, message)].  iproute2
    prints each command's error, then "Command failed -:N" (N: its line)."""
    bad, msg = [], []
    for line in stderr.splitlines():
        m = re.match(r"Command failed \S+:(\d+)$", line.strip())
        if not m:
            msg.append(line.strip())
            continue
        n = int(m.group(1))
        cmd = lines[n - 1] if 0 < n <= len(lines) else f"line {n}"
        text = " ".join(x for x in msg if x)
        words = cmd.split()
        if not (len(words) > 1 and words[1] == "del" and any(g in text for g in GONE)):
            bad.append((cmd, text))
        msg = []
    return bad


def batch_checked(tool, lines, ns=None):
    """run many ip/bridge commands in one process past their errors, and
    raise when one failed for another reason than deleting what is gone"""
    if not lines:
        return ""
    argv = [tool] + (["-n", ns] if ns else []) + ["-force", "-batch", "-"]
    p = subprocess.run(argv, input="\n".join(lines) + "\n", capture_output=True, text=True)
    bad = batch_errors(p.stderr, lines)
    if bad or (p.returncode != 0 and not p.stderr.strip()):
        raise RuntimeError(f"{' '.join(argv)}: " + ("; ".join(f"{c!r}: {m}" for c, m in bad)
                                                     or f"exit {p.returncode}"))
    return p.stdout


@contextmanager
def netns(name):
    """enter network namespace `name` in this thread (setns(2)); sockets
    created inside stay in it, /proc/sys/net opened inside is its own"""
    cur = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    fd = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {name}")
        yield
    finally:
        _libc.setns(cur, CLONE_NEWNET)
        os.close(fd)
        os.close(cur)


def sysctl(name, value):
    with open("/proc/sys/" + name.replace(".", "/"), "w") as f:
        f.write(str(value))


# legacy ethtool ioctls (struct ethtool_value {u32 cmd, data})
SIOCETHTOOL = 0x8946
ETHTOOL_STSO, ETHTOOL_SGSO, ETHTOOL_SGRO = 0x1f, 0x24, 0x2c


def ethtool_set(dev, cmd, on):
    val = ctypes.create_string_buffer(struct.pack("II", cmd, 1 if on else 0))
    ifr = struct.pack("16sP", dev.encode(), ctypes.addressof(val)) + b"\0" * 16
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        fcntl.ioctl(s.fileno(), SIOCETHTOOL, ifr)
