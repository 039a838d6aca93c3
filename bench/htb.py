#!/usr/bin/env python3
"""The HTB ECN bench.

This is the command; its code is dcnet.bench.htb (dcnet/bench/htb.py).
"""
from dcnet.bench.htb import main

if __name__ == "__main__":
    main()
