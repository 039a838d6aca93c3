#!/bin/sh
cd /work/main
TC=/root/.cache/dcnet/build/iproute2/tc/tc
cp testbed/tools/vtprobe /tmp/vtprobe
ip netns add vtc
ip link add vts type veth peer name vtc0 netns vtc
ip addr add 10.99.0.1/24 dev vts
ip link set vts up
ip -n vtc addr add 10.99.0.2/24 dev vtc0
ip -n vtc link set lo up
ip -n vtc link set vtc0 up
$TC -n vtc qdisc add dev vtc0 root tbf rate 100mbit burst 16k limit 64k
$TC qdisc add dev vts root netem delay 1ms
mkdir -p /dcnet/out
for run in 1 2 3 4 5 6; do
	echo "== run $run"
	/tmp/vtprobe 10.99.0.1 /var/run/netns/vtc | grep -v "boot_id\|getrandom"
done > /dcnet/out/p.txt 2>&1
echo DETRUN-BEGIN > /dev/console
cat /dcnet/out/p.txt > /dev/console
echo DETRUN-END > /dev/console
