#!/usr/bin/env python3
"""What of a virtual-time guest repeats from one boot to the next.

This is the command (`python -m dcnet determinism`); its code is
dcnet.bench.determinism (dcnet/bench/determinism.py).
"""
import sys

from dcnet.bench.determinism import main

if __name__ == "__main__":
    sys.exit(main())
