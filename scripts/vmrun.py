#!/usr/bin/env python3
"""Boot a kernel and run a command in it.

This is the command; its code is dcnet.host.vmrun (dcnet/host/vmrun.py).
"""
from dcnet.host.vmrun import main

if __name__ == "__main__":
    main()
