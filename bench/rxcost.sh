#!/bin/sh
# In the guest: the receive path's cost per packet with HTB's ece/rwnd
# ACK side (the htback action) off, on another device in another
# namespace, a plain clsact action (gact pass) on the receiving device for
# reference, and htback on the receiving device beside an HTB with an ece
# class.  testbed/tools/rxcost sends TCP ACK frames into one end of a veth
# pair; the other end receives them in the same context.  In virtual time
# (scripts/vmrun.py --clock virtual, shift 0) ns/frame is instructions per
# frame.  Usage: bench/rxcost.sh [FRAMES [RUNS]]
set -e
N=${1:-20000}
RUNS=${2:-3}
TC=${DCNET_TC:-tc}
P=/tmp/rxcost
cp testbed/tools/rxcost $P
ip netns add rxa
ip netns add rxb
ip netns add rxo
ip -n rxa link add rxs type veth peer name rxr netns rxb
ip -n rxa link set rxs up
ip -n rxb link set rxr up
ip -n rxo link add dum0 type dummy
ip -n rxo link set dum0 up
ack() {	# the htback action on $2's ingress in namespace $1 (a kernel
	# without it, whose ACK side is a receive hook, goes on without)
	$TC -n "$1" qdisc add dev "$2" clsact
	$TC -n "$1" filter add dev "$2" ingress matchall action htback ||
		echo "no htback action: the ACK side is the kernel's own"
}
ece() {	# HTB with an ece class at the root of $2 in namespace $1
	$TC -n "$1" qdisc add dev "$2" root handle 1: htb default 10
	$TC -n "$1" class add dev "$2" parent 1: classid 1:10 htb rate 1gbit \
		ecn_thresh 30kb ecn_mode ece
}
measure() {
	ip netns exec rxa $P rxs 2000 >/dev/null	# warm up
	for r in $(seq "$RUNS"); do
		echo "$1 run $r: $(ip netns exec rxa $P rxs "$N")"
	done
}
# the guest settles after boot (its first seconds run other work beside
# the sender): wait, then send frames until two runs agree within 1%
sleep 5
prev=0
for i in $(seq 10); do
	cur=$(ip netns exec rxa $P rxs "$N" | awk '{print int($3)}')
	[ "$prev" -gt 0 ] && [ $((cur * 100 / prev)) -ge 99 ] && [ $((cur * 100 / prev)) -le 101 ] && break
	prev=$cur
done
measure off
ece rxo dum0
ack rxo dum0
measure other-netns
$TC -n rxb qdisc add dev rxr clsact
$TC -n rxb filter add dev rxr ingress matchall action gact pass
measure clsact-gact
$TC -n rxb qdisc del dev rxr clsact
ece rxb rxr
ack rxb rxr
measure on
$TC -s -n rxb filter show dev rxr ingress
# everything off again: the same as at the start
$TC -n rxb qdisc del dev rxr clsact
$TC -n rxb qdisc del dev rxr root
$TC -n rxo qdisc del dev dum0 clsact
$TC -n rxo qdisc del dev dum0 root
measure off-again
