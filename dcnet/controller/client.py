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


def main(argv=None):
    """python -m dcnet.controller.client SOCKET state | link A B MBIT"""
    import sys
    a = list(sys.argv[1:] if argv is None else argv)
    if len(a) == 2 and a[1] == "state":
        print(json.dumps(state(a[0]), indent=1, sort_keys=True))
    elif len(a) == 5 and a[1] == "link":
        print(json.dumps(link(a[0], a[2], a[3], float(a[4]))))
    else:
        sys.exit(main.__doc__)


if __name__ == "__main__":
    main()
