#!/bin/sh
# In the guest: run testbed/tools/vtprobe twice from the tmpfs, through
# a 100 Mbit/s bottleneck (tbf, 64 KB) with a 1 ms round trip (netem).
# bench/determinism.py boots this several times and compares the lines.
set -e
TC=${DCNET_TC:-tc}
P=/tmp/vtprobe
cp testbed/tools/vtprobe $P
ip netns add vtc
ip link add vts type veth peer name vtc0 netns vtc
ip addr add 10.99.0.1/24 dev vts
ip link set vts up
ip -n vtc addr add 10.99.0.2/24 dev vtc0
ip -n vtc link set lo up
ip -n vtc link set vtc0 up
$TC -n vtc qdisc add dev vtc0 root tbf rate 100mbit burst 16k limit 64k
$TC qdisc add dev vts root netem delay 1ms
for run in 1 2; do
	echo "== run $run"
	$P 10.99.0.1 /var/run/netns/vtc
done
echo "== counters"
$TC -s -n vtc qdisc show dev vtc0 | sed -n 's/.*Sent \([0-9]*\) bytes \([0-9]*\) pkt (dropped \([0-9]*\).*/tbf_sent_bytes \1\ntbf_dropped \3/p'
