"""The controller's control socket from another process (dcnet/controller/app.py)."""
import json
import socket


def request(path, req, timeout=60.0):
    """one request on the unix socket at path, its JSON reply; raises
    RuntimeError when the controller answers ok: false"""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall((json.dumps(req) + "\n").encode())
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    reply = json.loads(buf)
    if not reply.get("ok"):
        raise RuntimeError(f"controller: {reply.get('error')}")
    return reply


def state(path, timeout=60.0):
    return request(path, {"op": "state"}, timeout)["state"]


def link(path, a, b, mbit, timeout=60.0):
    """report a link's new rate (0: down); the reply's event says how
    many groups changed and whether every bridge acknowledged them"""
    return request(path, {"op": "link", "a": a, "b": b, "mbit": mbit, "timeout": timeout},
                   timeout + 10)["event"]


def wait_synced(path, timeout=120.0, poll=0.5):
    """wait until every bridge of the plan is connected and its last
    resync committed; returns the state, or raises TimeoutError naming
    the bridges still out of sync"""
    import time
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = state(path, timeout=min(30.0, timeout))
        except (OSError, ValueError):
            last = None
        if last and all(s["connected"] and s["synced"] for s in last["switches"].values()):
            return last
        if time.monotonic() >= deadline:
            behind = sorted(s["host"] for s in (last or {}).get("switches", {}).values()
                            if not (s["connected"] and s["synced"])) if last else "no answer"
            raise TimeoutError(f"not in sync with the controller after {timeout:g} s: {behind}")
        time.sleep(poll)


def main(argv=None):
    """python -m dcnet.controller.client SOCKET state | link A B MBIT | wait [SECONDS]"""
    import sys
    a = list(sys.argv[1:] if argv is None else argv)
    if len(a) == 2 and a[1] == "state":
        print(json.dumps(state(a[0]), indent=1, sort_keys=True))
    elif len(a) in (2, 3) and a[1] == "wait":
        try:
            st = wait_synced(a[0], float(a[2]) if len(a) == 3 else 120.0)
        except TimeoutError as e:
            sys.exit(f"controller: {e}")
        print(f"controller: {len(st['switches'])} bridges connected and in sync")
    elif len(a) == 5 and a[1] == "link":
        print(json.dumps(link(a[0], a[2], a[3], float(a[4]))))
    else:
        sys.exit(main.__doc__)


if __name__ == "__main__":
    main()
