#!/usr/bin/env python3
"""The guest test files split over VMs.

This is the command; its code is dcnet.host.guest_shards (dcnet/host/guest_shards.py).
"""
import sys

from dcnet.host.guest_shards import main

if __name__ == "__main__":
    sys.exit(main())
