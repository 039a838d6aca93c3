#!/usr/bin/env python3
"""The D2TCP bench.

This is the command; its code is dcnet.bench.d2tcp (dcnet/bench/d2tcp.py).
"""
from dcnet.bench.d2tcp import main

if __name__ == "__main__":
    main()
