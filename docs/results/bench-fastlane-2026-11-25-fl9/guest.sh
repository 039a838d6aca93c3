#!/bin/sh
# written by scripts/vmrun.py
export DCNET_OUT=/work/wt-fl9/docs/results/bench-fastlane-2026-11-25-fl9
export PATH=/work/wt-fl9/.venv/bin:$PATH
export DCNET_TC=/work/build-fl9/iproute2/tc/tc
export DCNET_SS=/work/build-fl9/iproute2/misc/ss
export DCNET_TIMEOUT_SCALE=5
cd /work/wt-fl9
echo "dcnet guest: $(uname -r) $(nproc) cpus" > /work/wt-fl9/docs/results/bench-fastlane-2026-11-25-fl9/guest.log
/work/wt-fl9/.venv/bin/python /work/wt-fl9/bench/fastlane.py --guest --duration 15 --rate-mbit 200 --incast-queries 20 --only incast --incast-n 48,80 --schemes tcp,tcp-rto10,tcp-fastlane > /tmp/dcnet-guest.log 2>&1
rc=$?
cat /tmp/dcnet-guest.log >> /work/wt-fl9/docs/results/bench-fastlane-2026-11-25-fl9/guest.log
dmesg > /work/wt-fl9/docs/results/bench-fastlane-2026-11-25-fl9/dmesg.txt 2>&1
echo $rc > /work/wt-fl9/docs/results/bench-fastlane-2026-11-25-fl9/status
