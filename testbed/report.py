#!/usr/bin/env python3
"""An experiment's report from its raw.json.

This is the command; its code is dcnet.testbed.report (dcnet/testbed/report.py).
"""
from dcnet.testbed.report import main

if __name__ == "__main__":
    main()
