"""Presto's control plane: the declared topology and the tables computed
from it (plan.py), and the OpenFlow controller that installs them on the
hosts' bridges (app.py, run with `python -m dcnet.controller`).  The
emulated testbed (dcnet/testbed) and a physical cluster use the same
code."""
