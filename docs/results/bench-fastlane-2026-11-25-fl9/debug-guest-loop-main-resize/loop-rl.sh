#!/bin/sh
# loop test_rate_limited_notification_is_not_a_timeout N times
n=${LOOPS:-10}
i=0; fail=0
while [ $i -lt $n ]; do
	i=$((i+1))
	PYTHONPATH=$PWD/scripts python -m pytest -p no:cacheprovider -q -s --timeout=600 \
		tests/guest/test_fastlane.py -k rate_limited_notification > $DCNET_OUT/loop-$i.txt 2>&1 || fail=$((fail+1))
	echo "loop $i: $(grep -o 'rate-limited loops.*' $DCNET_OUT/loop-$i.txt | grep -o "at the end.*" | grep -o "'TcpExtTCPTimeouts': [0-9]*\|'TcpExtTCPFastLaneTailPush': [0-9]*" | tr '\n' ' ') $(tail -1 $DCNET_OUT/loop-$i.txt)"
done
echo "failed $fail of $n"
