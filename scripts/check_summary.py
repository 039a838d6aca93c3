#!/usr/bin/env python3
"""make check's summary.

This is the command; its code is dcnet.host.check_summary (dcnet/host/check_summary.py).
"""
import sys

from dcnet.host.check_summary import main

if __name__ == "__main__":
    sys.exit(main())
