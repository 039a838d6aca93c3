#!/bin/sh
n=${LOOPS:-3}; i=0; fail=0
while [ $i -lt $n ]; do
	i=$((i+1))
	PYTHONPATH=$PWD/scripts python -m pytest -p no:cacheprovider -q -s --timeout=600 \
		tests/guest/test_fastlane.py -k pending_hand_off > $DCNET_OUT/loop-$i.txt 2>&1 || fail=$((fail+1))
	echo "loop $i: $(grep -o '[0-9]* sent, [0-9]* dropped, [0-9]* notifications' $DCNET_OUT/loop-$i.txt | tr '\n' ' ') $(tail -1 $DCNET_OUT/loop-$i.txt)"
done
echo "failed $fail of $n"
