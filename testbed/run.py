#!/usr/bin/env python3
"""Run an experiment on the emulated fabric.

This is the command; its code is dcnet.testbed.run (dcnet/testbed/run.py).
"""
from dcnet.testbed.run import main

if __name__ == "__main__":
    main()
