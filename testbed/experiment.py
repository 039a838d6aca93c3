#!/usr/bin/env python3
"""Validate experiment files.

This is the command; its code is dcnet.testbed.experiment (dcnet/testbed/experiment.py).
"""
import sys

from dcnet.testbed.experiment import main

if __name__ == "__main__":
    sys.exit(main())
