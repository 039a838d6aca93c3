#!/usr/bin/env python3
"""FastLane on the Clos testbed, across three runs.

This is the command; its code is dcnet.bench.fastlane_clos (dcnet/bench/fastlane_clos.py).
"""
from dcnet.bench.fastlane_clos import main

if __name__ == "__main__":
    main()
