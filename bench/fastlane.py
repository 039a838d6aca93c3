#!/usr/bin/env python3
"""The FastLane bench.

This is the command; its code is dcnet.bench.fastlane (dcnet/bench/fastlane.py).
"""
from dcnet.bench.fastlane import main

if __name__ == "__main__":
    main()
