// SPDX-License-Identifier: GPL-2.0-only
/* KUnit tests of FastLane over multiple paths
 * (include/net/tcp_fastlane_ofo.h): the out-of-order-bytes option's
 * encoding, and its parsing out of untrusted options by
 * tcp_parse_options() itself (on forged segments); the plausibility
 * check, the paper's inflation rule (new against duplicate ACKs, ACKs
 * reordered among themselves, the receive window's clamp), what the
 * inflation adds to the congestion window, and the receiver's count of
 * the bytes it holds (overlaps, sequence wraparound), kept as its
 * out-of-order queue changes equal to a full recount.
 */

#include <kunit/test.h>
#include <linux/prandom.h>
#include <linux/skbuff.h>
#include <linux/string.h>
#include <linux/sysctl.h>
#include <net/tcp.h>
#include <net/tcp_fastlane_ofo.h>

MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);

/* A netns of which tcp_parse_options() reads the sysctls */
static struct net *ofo_net(struct kunit *test, bool on)
{
	struct net *net = kunit_kzalloc(test, sizeof(*net), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, net);
	net->ipv4.sysctl_tcp_fastlane_ofo = on;
	return net;
}

/* tcp_parse_options() on a segment whose TCP options are @opt (@len
 * bytes, zero padded to a multiple of 4: EOL), as for an established
 * connection, or a SYN if @syn.  What it left in tcp_options_received,
 * which held a byte count of an earlier segment before.
 */
static enum tcp_fl_ofo_opt ofo_parse(struct kunit *test, struct net *net,
				     const u8 *opt, int len, bool syn,
				     u32 *val, bool *unknown)
{
	struct tcp_options_received rx = {};
	int olen = ALIGN(len, 4);
	struct sk_buff *skb;
	struct tcphdr *th;

	KUNIT_ASSERT_LE(test, olen, MAX_TCP_OPTION_SPACE);
	skb = alloc_skb(sizeof(*th) + olen, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, skb);
	skb_reset_transport_header(skb);
	th = skb_put_zero(skb, sizeof(*th) + olen);
	memcpy(th + 1, opt, len);
	th->doff = (sizeof(*th) + olen) / 4;
	th->syn = syn;
	th->ack = !syn;
	rx.tstamp_ok = 1;
	rx.fl_ofo_saw = TCP_FL_OFO_VALUE;	/* stale */
	rx.fl_ofo_val = 0xdeadbeef;
	tcp_parse_options(net, skb, &rx, !syn, NULL);
	kfree_skb(skb);
	*val = rx.fl_ofo_saw == TCP_FL_OFO_VALUE ? rx.fl_ofo_val : 0;
	if (unknown)
		*unknown = rx.saw_unknown;
	return rx.fl_ofo_saw;
}

static void ofo_option_roundtrip(struct kunit *test)
{
	static const u32 vals[] = { 0, 1, 1448, 0x12345678, 0xffffffff };
	struct net *net = ofo_net(test, true);
	u8 opt[8];
	u32 v;
	int i;

	for (i = 0; i < ARRAY_SIZE(vals); i++) {
		tcp_fl_ofo_encode(opt, vals[i]);
		KUNIT_EXPECT_EQ(test, opt[0], 254);
		KUNIT_EXPECT_EQ(test, opt[1], 8);
		KUNIT_EXPECT_EQ(test, (opt[2] << 8) | opt[3], 0xFA0F);
		v = 0xdead;
		KUNIT_EXPECT_EQ(test, tcp_fl_ofo_decode(opt + 2, 8, &v),
				TCP_FL_OFO_VALUE);
		KUNIT_EXPECT_EQ(test, v, vals[i]);
		v = 0xdead;
		KUNIT_EXPECT_EQ(test, ofo_parse(test, net, opt, sizeof(opt),
						false, &v, NULL),
				TCP_FL_OFO_VALUE);
		KUNIT_EXPECT_EQ(test, v, vals[i]);
	}
	/* network byte order */
	tcp_fl_ofo_encode(opt, 0x01020304);
	KUNIT_EXPECT_EQ(test, opt[4], 1);
	KUNIT_EXPECT_EQ(test, opt[7], 4);
}

static void ofo_option_among_others(struct kunit *test)
{
	/* NOP NOP TS | an experimental option of another ExID (NOP NOP, 6
	 * bytes) | ours | NOP NOP SACK with one block
	 */
	static const u8 ack[] = {
		1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2,
		1, 1, 254, 6, 0xFA, 0x57, 0, 3,
		254, 8, 0xFA, 0x0F, 0, 0, 0x16, 0xA0,
		1, 1, 5, 10, 0, 0, 0, 0, 0, 0, 0, 0,
	};
	static const u8 syn[] = {
		2, 4, 5, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0,
		1, 3, 3, 7, 254, 4, 0xFA, 0x0F,
	};
	/* FastLane's option alone: not ours */
	static const u8 fl[] = { 1, 1, 254, 6, 0xFA, 0x57, 0, 3 };
	/* Fast Open's experimental option, then ours */
	static const u8 tfo[] = { 254, 4, 0xF9, 0x89,
				  254, 8, 0xFA, 0x0F, 0, 0, 0, 7 };
	/* timestamps alone: the stale value of an earlier segment goes */
	static const u8 ts[] = { 1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2 };
	struct net *net = ofo_net(test, true);
	bool unknown;
	u32 v = 0;

	KUNIT_EXPECT_EQ(test, ofo_parse(test, net, ack, sizeof(ack), false,
					&v, &unknown), TCP_FL_OFO_VALUE);
	KUNIT_EXPECT_EQ(test, v, 5792);
	KUNIT_EXPECT_EQ(test, ofo_parse(test, net, syn, sizeof(syn), true, &v,
					&unknown), TCP_FL_OFO_PERM);
	KUNIT_EXPECT_FALSE(test, unknown);
	KUNIT_EXPECT_EQ(test, ofo_parse(test, net, fl, sizeof(fl), false, &v,
					&unknown), TCP_FL_OFO_NONE);
	KUNIT_EXPECT_TRUE(test, unknown);
	KUNIT_EXPECT_EQ(test, ofo_parse(test, net, tfo, sizeof(tfo), false,
					&v, NULL), TCP_FL_OFO_VALUE);
	KUNIT_EXPECT_EQ(test, v, 7);
	KUNIT_EXPECT_EQ(test, ofo_parse(test, net, ts, sizeof(ts), false, &v,
					NULL), TCP_FL_OFO_NONE);
}

static void ofo_option_untrusted(struct kunit *test)
{
	/* truncated: the header ends in the middle of the option */
	static const u8 trunc[] = { 254, 8, 0xFA, 0x0F };
	/* our ExID with a length of neither 4 nor 8 */
	static const u8 len6[] = { 254, 6, 0xFA, 0x0F, 0, 1, 1, 1 };
	static const u8 len12[] = { 254, 12, 0xFA, 0x0F, 0, 0, 0, 1,
				    0, 0, 0, 0 };
	/* a zero length, EOL first */
	static const u8 zero[] = { 254, 0, 0xFA, 0x0F, 0, 0, 1, 0 };
	static const u8 eol[] = { 0, 0, 0, 0, 254, 8, 0xFA, 0x0F, 0, 0, 1, 0 };
	/* an option of length 3 too short to hold an ExID, then ours */
	static const u8 short3[] = { 254, 3, 0xFA, 254, 8, 0xFA, 0x0F,
				     0, 0, 0, 9 };
	/* two of ours: the first counts */
	static const u8 two[] = { 254, 8, 0xFA, 0x0F, 0, 0, 0, 1,
				  254, 8, 0xFA, 0x0F, 0, 0, 0, 2 };
	/* the offer on a segment that is not a SYN: reported as such (the
	 * ACK path ignores and counts it), a byte count on a SYN likewise
	 */
	static const u8 perm[] = { 254, 4, 0xFA, 0x0F };
	static const u8 val[] = { 254, 8, 0xFA, 0x0F, 0, 0, 0, 5 };
	struct net *net = ofo_net(test, true);
	struct net *off = ofo_net(test, false);
	bool unknown;
	u32 v = 0;

	KUNIT_EXPECT_EQ(test, ofo_parse(test, net, trunc, sizeof(trunc), false,
					&v, NULL), TCP_FL_OFO_NONE);
	KUNIT_EXPECT_EQ(test, ofo_parse(test, net, len6, sizeof(len6), false,
					&v, NULL), TCP_FL_OFO_MALFORMED);
	KUNIT_EXPECT_EQ(test, ofo_parse(test, net, len12, sizeof(len12), false,
					&v, NULL), TCP_FL_OFO_MALFORMED);
	KUNIT_EXPECT_EQ(test, ofo_parse(test, net, zero, sizeof(zero), false,
					&v, NULL), TCP_FL_OFO_NONE);
	KUNIT_EXPECT_EQ(test, ofo_parse(test, net, eol, sizeof(eol), false,
					&v, NULL), TCP_FL_OFO_NONE);
	KUNIT_EXPECT_EQ(test, ofo_parse(test, net, short3, sizeof(short3),
					false, &v, NULL), TCP_FL_OFO_VALUE);
	KUNIT_EXPECT_EQ(test, v, 9);
	KUNIT_EXPECT_EQ(test, ofo_parse(test, net, two, sizeof(two), false,
					&v, NULL), TCP_FL_OFO_VALUE);
	KUNIT_EXPECT_EQ(test, v, 1);
	KUNIT_EXPECT_EQ(test, ofo_parse(test, net, perm, sizeof(perm), false,
					&v, NULL), TCP_FL_OFO_PERM);
	KUNIT_EXPECT_EQ(test, ofo_parse(test, net, val, sizeof(val), true,
					&v, NULL), TCP_FL_OFO_VALUE);
	/* off in the netns: not looked at, an unknown option (for BPF) */
	KUNIT_EXPECT_EQ(test, ofo_parse(test, off, val, sizeof(val), false,
					&v, &unknown), TCP_FL_OFO_NONE);
	KUNIT_EXPECT_TRUE(test, unknown);
	KUNIT_EXPECT_EQ(test, ofo_parse(test, off, perm, sizeof(perm), true,
					&v, &unknown), TCP_FL_OFO_NONE);
	KUNIT_EXPECT_TRUE(test, unknown);
}

static void ofo_plausible(struct kunit *test)
{
	/* ack 1000, snd_nxt 11000: 10000 outstanding, at most 9999 held */
	KUNIT_EXPECT_TRUE(test, tcp_fl_ofo_plausible(0, 1000, 11000, 65535));
	KUNIT_EXPECT_TRUE(test, tcp_fl_ofo_plausible(9999, 1000, 11000,
						     65535));
	KUNIT_EXPECT_FALSE(test, tcp_fl_ofo_plausible(10000, 1000, 11000,
						      65535));
	/* beyond the receive window */
	KUNIT_EXPECT_TRUE(test, tcp_fl_ofo_plausible(4000, 1000, 11000, 4000));
	KUNIT_EXPECT_FALSE(test, tcp_fl_ofo_plausible(4001, 1000, 11000,
						      4000));
	/* "negative" values */
	KUNIT_EXPECT_FALSE(test, tcp_fl_ofo_plausible(0xffffffff, 1000, 11000,
						      0xffffffff));
	KUNIT_EXPECT_FALSE(test, tcp_fl_ofo_plausible(0x80000000, 1000, 11000,
						      0xffffffff));
	/* nothing outstanding: only 0 */
	KUNIT_EXPECT_TRUE(test, tcp_fl_ofo_plausible(0, 11000, 11000, 65535));
	KUNIT_EXPECT_FALSE(test, tcp_fl_ofo_plausible(1, 11000, 11000, 65535));
	/* across sequence wraparound */
	KUNIT_EXPECT_TRUE(test, tcp_fl_ofo_plausible(2999, 0xfffff000,
						     0xfffffbb8, 65535));
	KUNIT_EXPECT_TRUE(test, tcp_fl_ofo_plausible(3000, 0xfffffc00, 3000,
						     65535));
	KUNIT_EXPECT_FALSE(test, tcp_fl_ofo_plausible(4096, 0xfffffc00, 3000,
						      65535));
}

static void ofo_inflate_new_and_dup(struct kunit *test)
{
	u32 infl = 0;

	/* duplicate ACKs: the maximum of the value and the inflation */
	infl = tcp_fl_ofo_inflate(infl, 1448, false, 65535);
	KUNIT_EXPECT_EQ(test, infl, 1448);
	infl = tcp_fl_ofo_inflate(infl, 2896, false, 65535);
	KUNIT_EXPECT_EQ(test, infl, 2896);
	/* a new ACK: its value, even when smaller */
	infl = tcp_fl_ofo_inflate(infl, 1448, true, 65535);
	KUNIT_EXPECT_EQ(test, infl, 1448);
	/* a new ACK without the option (value 0): deflated */
	infl = tcp_fl_ofo_inflate(infl, 0, true, 65535);
	KUNIT_EXPECT_EQ(test, infl, 0);
	/* a new ACK can also inflate further */
	infl = tcp_fl_ofo_inflate(infl, 7240, true, 65535);
	KUNIT_EXPECT_EQ(test, infl, 7240);
}

static void ofo_inflate_bound(struct kunit *test)
{
	/* cwnd 10: at most 10 segments beyond it, SACKed ones aside */
	KUNIT_EXPECT_EQ(test, tcp_fl_ofo_bound(10, 1448, 0), 14480);
	KUNIT_EXPECT_EQ(test, tcp_fl_ofo_bound(10, 1448, 5), 21720);
	KUNIT_EXPECT_EQ(test, tcp_fl_ofo_extra(tcp_fl_ofo_bound(10, 1448, 5),
					       1448, 5), 10);
	KUNIT_EXPECT_EQ(test, tcp_fl_ofo_extra(tcp_fl_ofo_bound(1, 1448, 0),
					       1448, 0), 1);
	/* no overflow for absurd windows */
	KUNIT_EXPECT_EQ(test, tcp_fl_ofo_bound(U32_MAX, 1448, 7), U32_MAX);
	KUNIT_EXPECT_EQ(test, tcp_fl_ofo_bound(0, 0, 0), 0);
}

static void ofo_inflate_reordered_acks(struct kunit *test)
{
	/* The receiver sent duplicate ACKs saying 1448, 2896, 4344 held;
	 * they arrive as 1448, 4344, 2896: the late one must not deflate
	 */
	u32 infl = 0;

	infl = tcp_fl_ofo_inflate(infl, 1448, false, 65535);
	infl = tcp_fl_ofo_inflate(infl, 4344, false, 65535);
	infl = tcp_fl_ofo_inflate(infl, 2896, false, 65535);
	KUNIT_EXPECT_EQ(test, infl, 4344);
	/* a duplicate without the option neither */
	infl = tcp_fl_ofo_inflate(infl, 0, false, 65535);
	KUNIT_EXPECT_EQ(test, infl, 4344);
	/* the hole filled: the next new ACK says what is still held */
	infl = tcp_fl_ofo_inflate(infl, 1448, true, 65535);
	KUNIT_EXPECT_EQ(test, infl, 1448);
}

static void ofo_inflate_rwnd_clamp(struct kunit *test)
{
	u32 infl;

	infl = tcp_fl_ofo_inflate(0, 100000, true, 65535);
	KUNIT_EXPECT_EQ(test, infl, 65535);
	/* the window shrank: the kept inflation shrinks with it */
	infl = tcp_fl_ofo_inflate(infl, 0, false, 20000);
	KUNIT_EXPECT_EQ(test, infl, 20000);
	infl = tcp_fl_ofo_inflate(infl, 5000, false, 0);
	KUNIT_EXPECT_EQ(test, infl, 0);
}

static void ofo_cwnd_extra(struct kunit *test)
{
	/* whole segments only */
	KUNIT_EXPECT_EQ(test, tcp_fl_ofo_extra(1447, 1448, 0), 0);
	KUNIT_EXPECT_EQ(test, tcp_fl_ofo_extra(1448, 1448, 0), 1);
	KUNIT_EXPECT_EQ(test, tcp_fl_ofo_extra(10 * 1448 + 7, 1448, 0), 10);
	/* what Linux already leaves out of the packets in flight counts */
	KUNIT_EXPECT_EQ(test, tcp_fl_ofo_extra(10 * 1448, 1448, 4), 6);
	KUNIT_EXPECT_EQ(test, tcp_fl_ofo_extra(10 * 1448, 1448, 10), 0);
	KUNIT_EXPECT_EQ(test, tcp_fl_ofo_extra(10 * 1448, 1448, 30), 0);
	KUNIT_EXPECT_EQ(test, tcp_fl_ofo_extra(0, 1448, 0), 0);
	KUNIT_EXPECT_EQ(test, tcp_fl_ofo_extra(5000, 0, 0), 0);
}

static u32 ofo_sum_of(const u32 (*segs)[2], int n)
{
	u32 sum = 0, edge = 0;
	int i;

	for (i = 0; i < n; i++)
		sum = tcp_fl_ofo_sum(sum, &edge, i == 0, segs[i][0],
				     segs[i][1]);
	return sum;
}

static void ofo_receiver_sum(struct kunit *test)
{
	static const u32 disjoint[][2] = {
		{ 2000, 3000 }, { 4000, 5448 }, { 9000, 9001 },
	};
	static const u32 overlap[][2] = {
		{ 2000, 3000 }, { 2500, 3500 }, { 2600, 2700 }, { 3500, 4000 },
	};
	static const u32 wraps[][2] = {
		{ 0xfffffc00, 0x00000100 }, { 0x00000080, 0x00000200 },
		{ 0x00001000, 0x00001400 },
	};
	static const u32 inside[][2] = {
		{ 0, 30 }, { 15, 20 }, { 25, 40 },
	};

	KUNIT_EXPECT_EQ(test, ofo_sum_of(disjoint, 3), 1000 + 1448 + 1);
	KUNIT_EXPECT_EQ(test, ofo_sum_of(overlap, 4), 2000);
	KUNIT_EXPECT_EQ(test, ofo_sum_of(wraps, 3), 0x500 + 0x100 + 0x400);
	KUNIT_EXPECT_EQ(test, ofo_sum_of(disjoint, 0), 0);
	/* one inside its predecessor (coalesced over it): the next one's
	 * overlap with the outer one is counted twice
	 */
	KUNIT_EXPECT_EQ(test, ofo_sum_of(inside, 3), 30 + 0 + 15);
	KUNIT_EXPECT_EQ(test, tcp_fl_ofo_beyond(10, 0, 5), 0);
	KUNIT_EXPECT_EQ(test, tcp_fl_ofo_beyond(3, 0, 5), 2);
	KUNIT_EXPECT_EQ(test, tcp_fl_ofo_beyond(0, 2, 5), 3);
}

/* A receiver's out-of-order queue changed as tcp_data_queue_ofo(),
 * tcp_ofo_queue() and tcp_prune_ofo_queue() change it, with the hooks
 * they call: the kept count equals a full recount after every change.
 */
struct ofo_q {
	struct kunit *test;
	struct tcp_sock *tp;
	int n;
};

static struct sk_buff *ofo_q_skb(struct ofo_q *q, u32 seq, u32 end)
{
	struct sk_buff *skb = alloc_skb(0, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(q->test, skb);
	TCP_SKB_CB(skb)->seq = seq;
	TCP_SKB_CB(skb)->end_seq = end;
	return skb;
}

static void ofo_q_erase(struct ofo_q *q, struct sk_buff *skb)
{
	__tcp_fl_ofo_unlink(q->tp, skb);
	rb_erase(&skb->rbnode, &q->tp->out_of_order_queue);
	kfree_skb(skb);
	q->n--;
}

/* tcp_data_queue_ofo()'s placement of [seq, end), coalescing included */
static void ofo_q_add(struct ofo_q *q, u32 seq, u32 end)
{
	struct rb_root *root = &q->tp->out_of_order_queue;
	struct rb_node **p = &root->rb_node, *parent = NULL;
	struct sk_buff *skb, *skb1;

	while (*p) {
		parent = *p;
		skb1 = rb_to_skb(parent);
		if (before(seq, TCP_SKB_CB(skb1)->seq)) {
			p = &parent->rb_left;
			continue;
		}
		if (before(seq, TCP_SKB_CB(skb1)->end_seq)) {
			if (!after(end, TCP_SKB_CB(skb1)->end_seq))
				return;
			if (!after(seq, TCP_SKB_CB(skb1)->seq)) {
				skb = ofo_q_skb(q, seq, end);
				rb_replace_node(&skb1->rbnode, &skb->rbnode,
						root);
				__tcp_fl_ofo_grown(q->tp, skb,
						   TCP_SKB_CB(skb1)->end_seq);
				kfree_skb(skb1);
				goto merge_right;
			}
		} else if (TCP_SKB_CB(skb1)->end_seq == seq) {
			TCP_SKB_CB(skb1)->end_seq = end;
			__tcp_fl_ofo_grown(q->tp, skb1, seq);
			return;
		}
		p = &parent->rb_right;
	}
	skb = ofo_q_skb(q, seq, end);
	rb_link_node(&skb->rbnode, parent, p);
	rb_insert_color(&skb->rbnode, root);
	q->n++;
	__tcp_fl_ofo_linked(q->tp, skb);
merge_right:
	while ((skb1 = skb_rb_next(skb)) != NULL) {
		if (!after(end, TCP_SKB_CB(skb1)->seq) ||
		    before(end, TCP_SKB_CB(skb1)->end_seq))
			break;
		ofo_q_erase(q, skb1);
	}
}

static void ofo_receiver_kept_count(struct kunit *test)
{
	struct tcp_sock *tp = kunit_kzalloc(test, sizeof(*tp), GFP_KERNEL);
	struct ofo_q q = { .test = test, .tp = tp };
	struct rnd_state rnd;
	u32 rcv_nxt = 0xffff0000;	/* wraps on the way */
	struct sk_buff *skb;
	int i;

	KUNIT_ASSERT_NOT_NULL(test, tp);
	tp->out_of_order_queue = RB_ROOT;
	prandom_seed_state(&rnd, 42);
	for (i = 0; i < 4000; i++) {
		u32 r = prandom_u32_state(&rnd);
		u32 seq = rcv_nxt + 1 + r % 600, len = 1 + (r >> 10) % 40;

		switch ((r >> 20) % 8) {
		case 0:	/* in order: tcp_ofo_queue() takes the head */
			rcv_nxt += 1 + (r >> 24) % 100;
			while ((skb = skb_rb_first(&tp->out_of_order_queue)) &&
			       !after(TCP_SKB_CB(skb)->seq, rcv_nxt)) {
				if (after(TCP_SKB_CB(skb)->end_seq, rcv_nxt))
					rcv_nxt = TCP_SKB_CB(skb)->end_seq;
				ofo_q_erase(&q, skb);
			}
			break;
		case 1:	/* tcp_prune_ofo_queue(): from the tail */
			if (q.n > 30)
				ofo_q_erase(&q,
					    skb_rb_last(&tp->out_of_order_queue));
			break;
		default:
			ofo_q_add(&q, seq, seq + len);
		}
		KUNIT_ASSERT_EQ_MSG(test, tp->fl_ofo.rcv_bytes,
				    tcp_fl_ofo_recount(tp), "step %d", i);
	}
	/* a few neighbours per change, never the queue */
	KUNIT_EXPECT_LE(test, tp->fl_ofo.rcv_walk, 4000U * 3 * 3);
	while ((skb = skb_rb_first(&tp->out_of_order_queue))) {
		rb_erase(&skb->rbnode, &tp->out_of_order_queue);
		kfree_skb(skb);
	}
}

static int ofo_knob_write(u8 *knob, const char *v)
{
	struct ctl_table t = {
		.procname	= "tcp_fastlane_ofo",
		.data		= knob,
		.maxlen		= sizeof(u8),
		.mode		= 0644,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	};
	char buf[4];
	size_t len = strscpy(buf, v, sizeof(buf));
	loff_t pos = 0;

	return proc_tcp_fastlane_ofo(&t, 1, buf, &len, &pos);
}

/* tcp_fl_ofo_needed counts the knobs on (ofo and scatter, per namespace):
 * one reference for each that turns on, none for the same value again
 */
static void ofo_static_key_counts(struct kunit *test)
{
	struct static_key *key = &tcp_fl_ofo_needed.key;
	u8 ofo = 0, scatter = 0;
	int base = static_key_count(key);

	KUNIT_ASSERT_EQ(test, ofo_knob_write(&ofo, "1"), 0);
	KUNIT_ASSERT_EQ(test, ofo_knob_write(&ofo, "1"), 0);
	KUNIT_EXPECT_EQ(test, static_key_count(key), base + 1);
	KUNIT_ASSERT_EQ(test, ofo_knob_write(&scatter, "1"), 0);
	KUNIT_EXPECT_EQ(test, static_key_count(key), base + 2);
	KUNIT_EXPECT_EQ(test, ofo_knob_write(&scatter, "7"), -EINVAL);
	KUNIT_ASSERT_EQ(test, ofo_knob_write(&ofo, "0"), 0);
	KUNIT_ASSERT_EQ(test, ofo_knob_write(&ofo, "0"), 0);
	KUNIT_EXPECT_EQ(test, static_key_count(key), base + 1);
	KUNIT_ASSERT_EQ(test, ofo_knob_write(&scatter, "0"), 0);
	KUNIT_EXPECT_EQ(test, static_key_count(key), base);
}

static struct kunit_case fastlane_ofo_cases[] = {
	KUNIT_CASE(ofo_option_roundtrip),
	KUNIT_CASE(ofo_option_among_others),
	KUNIT_CASE(ofo_option_untrusted),
	KUNIT_CASE(ofo_plausible),
	KUNIT_CASE(ofo_inflate_new_and_dup),
	KUNIT_CASE(ofo_inflate_reordered_acks),
	KUNIT_CASE(ofo_inflate_bound),
	KUNIT_CASE(ofo_inflate_rwnd_clamp),
	KUNIT_CASE(ofo_cwnd_extra),
	KUNIT_CASE(ofo_receiver_sum),
	KUNIT_CASE(ofo_receiver_kept_count),
	KUNIT_CASE(ofo_static_key_counts),
	{}
};

/* The option's hooks are behind tcp_fl_ofo_needed, which a namespace
 * with the knob on holds: so does each test (its netns is a fake one)
 */
static int ofo_test_init(struct kunit *test)
{
	static_branch_inc(&tcp_fl_ofo_needed);
	return 0;
}

static void ofo_test_exit(struct kunit *test)
{
	static_branch_dec(&tcp_fl_ofo_needed);
}

static struct kunit_suite fastlane_ofo_suite = {
	.name = "tcp_fastlane_ofo",
	.init = ofo_test_init,
	.exit = ofo_test_exit,
	.test_cases = fastlane_ofo_cases,
};

kunit_test_suite(fastlane_ofo_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit tests for FastLane's out-of-order-bytes option");
