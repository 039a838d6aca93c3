"""python -m dcnet.controller --plan PLAN.json [--listen HOST:PORT]
[--state STATE.json] [--control SOCKET]

Presto's OpenFlow controller (dcnet/controller/app.py) on os-ken: listens
for the hosts' bridges (`ovs-vsctl set-controller BR tcp:HOST:PORT`),
writes its state to STATE.json and answers on the unix socket SOCKET."""
import argparse
import logging
import sys


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m dcnet.controller", description=__doc__.split("\n\n")[1])
    ap.add_argument("--plan", required=True, help="the declared topology (JSON, dcnet/controller/plan.py)")
    ap.add_argument("--listen", default="127.0.0.1:6653", help="OpenFlow listen address (HOST:PORT)")
    ap.add_argument("--state", help="write the controller's state here (JSON) after every change")
    ap.add_argument("--control", help="unix socket for queries and link reports")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    host, _, port = a.listen.rpartition(":")
    logging.basicConfig(level=logging.DEBUG if a.verbose else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from os_ken import cfg
    from os_ken.base import app_manager
    from os_ken.controller import controller  # noqa: F401  (registers the ofp-* options)

    from dcnet.controller import app
    cfg.CONF(args=[], project="os_ken", default_config_files=[])
    cfg.CONF.set_override("ofp_listen_host", host.strip("[]") or "127.0.0.1")
    cfg.CONF.set_override("ofp_tcp_listen_port", int(port))
    app.SETTINGS.update(plan=a.plan, state=a.state, control=a.control)
    app_manager.AppManager.run_apps(["dcnet.controller.app"])


if __name__ == "__main__":
    main()
