#!/usr/bin/env python3
"""A workload's flow list (also the Ansible playbook's).

This is the command; its code is dcnet.testbed.workloads (dcnet/testbed/workloads.py).
"""
from dcnet.testbed.workloads import main

if __name__ == "__main__":
    main()
