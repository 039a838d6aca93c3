"""Partial results out of a sealed guest.

A sealed guest (dcnet/host/sealed.py) hands its results to the host once, at
the end, over the serial console.  A run stopped before that (a timeout, a
hang) would leave nothing but the log, so a guest program that writes a
file of results so far (testbed/run.py's raw.partial.json after each cell)
also publishes it: one block on the console,

    DCNET-PARTIAL-BEGIN NAME LENGTH SHA256
    base64 of the gzip-compressed file, 76 columns
    DCNET-PARTIAL-END

written with one write(2) to /dev/console (the tty layer does not
interleave one write with another writer's).  When a run ends without its
results, the host keeps the last intact block of each NAME in the output
directory (scripts/vmrun.py); the console file it keeps shows where each
block was.  Outside a sealed guest (DCNET_SEALED unset) publish() does
nothing: DCNET_OUT is then the host's directory itself.
"""
import base64
import gzip
import hashlib
import os
import re

from dcnet import config

BEGIN, END = "DCNET-PARTIAL-BEGIN", "DCNET-PARTIAL-END"
CONSOLE = "/dev/console"
_HEAD = re.compile(rb"^" + BEGIN.encode() + rb" (\S+) (\d+) ([0-9a-f]{64})\r?$")


def valid_name(name):
    """a relative path inside the output directory"""
    return (bool(name) and not name.startswith("/") and "\\" not in name
            and all(p not in ("", ".", "..") for p in name.split("/")))


def block(name, data):
    """the console block that carries data (bytes) as NAME"""
    z = gzip.compress(data, mtime=0)
    return (f"\n{BEGIN} {name} {len(z)} {hashlib.sha256(z).hexdigest()}\n".encode()
            + base64.encodebytes(z) + f"{END}\n".encode())


def publish(path, name=None, console=None):
    """In a sealed guest: put the file at path, as it is now, on the console
    as NAME (default: its path relative to DCNET_OUT).  Returns whether it
    did."""
    if not config.get("DCNET_SEALED"):
        return False
    if name is None:
        name = os.path.relpath(path, config.get("DCNET_OUT") or os.path.dirname(path))
    if not valid_name(name):
        raise ValueError(f"partial result name {name!r}: not a path inside the output directory")
    with open(path, "rb") as f:
        buf = block(name, f.read())
    fd = os.open(console or CONSOLE, os.O_WRONLY | os.O_NOCTTY | os.O_APPEND)
    try:
        view = memoryview(buf)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    finally:
        os.close(fd)
    return True


def extract(data):
    """(files, rest): the last intact block of each name in console bytes
    data as {name: bytes}, and data with every block (intact or not)
    replaced by one line saying what it was."""
    files, out, lines = {}, [], data.split(b"\n")
    i = 0
    while i < len(lines):
        m = _HEAD.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        name, length, digest = m.group(1).decode(errors="replace"), int(m.group(2)), m.group(3).decode()
        j = i + 1
        while j < len(lines) and not lines[j].rstrip(b"\r") == END.encode() and not _HEAD.match(lines[j]):
            j += 1
        ended = j < len(lines) and lines[j].rstrip(b"\r") == END.encode()
        ok = False
        if ended and valid_name(name):
            try:
                z = base64.b64decode(b"".join(x.strip() for x in lines[i + 1:j]), validate=True)
                if len(z) == length and hashlib.sha256(z).hexdigest() == digest:
                    files[name] = gzip.decompress(z)
                    ok = True
            except (ValueError, OSError, EOFError):
                ok = False
        out.append(f"[partial result {name}: {length} bytes{'' if ok else ', damaged'}]".encode())
        i = j + 1 if ended else j
    return files, b"\n".join(out)


def keep(console, out):
    """Strip the blocks from the console file; with out, write the last
    intact one of each name there.  Returns the names written (or found)."""
    if not os.path.exists(console):
        return []
    with open(console, "rb") as f:
        data = f.read()
    if BEGIN.encode() not in data:
        return []
    files, rest = extract(data)
    with open(console, "wb") as f:
        f.write(rest)
    if out:
        for name, content in files.items():
            dst = os.path.join(out, name)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with open(dst, "wb") as f:
                f.write(content)
    return sorted(files)
