// SPDX-License-Identifier: GPL-2.0-only
/* KUnit tests of Presto GRO's flush decision (include/net/presto_gro.h):
 * every branch of Algorithm 1 over crafted segment lists (real skbs on a
 * flow's list, the code the receive path runs), sequence number and
 * flowcell ID wrap, restarts of the sender's IDs and frames without a
 * stamp, the EWMA and timeout arithmetic, and the parser of
 * segments (BIG TCP aggregates included).
 */

#include <kunit/test.h>
#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/skbuff.h>
#include <linux/tcp.h>
#include <net/ipv6.h>
#include <net/presto_gro.h>
#include <net/tcp.h>

MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);

#define US	NSEC_PER_USEC
#define MSS	1448

static const struct presto_gro_params params = {
	.alpha = 2, .beta = 2, .timeout_min_us = 100, .timeout_max_us = 10000,
	.max_segs = 128,
};

struct pg_ctx {
	struct presto_gro_flow f;
	struct presto_gro_stats st;
	u64 ewma;
	struct list_head out;
};

static void pg_init(struct pg_ctx *c)
{
	memset(c, 0, sizeof(*c));
	INIT_LIST_HEAD(&c->f.segs);
	INIT_LIST_HEAD(&c->out);
}

/* a segment of @n MTU packets from @seq in flowcell @fc, arriving at @t */
static struct presto_gro_seg *pg_add(struct kunit *test, struct pg_ctx *c,
				     u32 seq, u32 n, u16 fc, u64 t)
{
	struct sk_buff *skb = alloc_skb(0, GFP_KERNEL);
	struct presto_gro_seg *s;

	KUNIT_ASSERT_NOT_NULL(test, skb);
	s = presto_gro_seg(skb);
	memset(s, 0, sizeof(*s));
	s->seq = seq;
	s->end_seq = seq + n * MSS;
	s->fcid = fc;
	s->arrival_ns = t;
	s->gro_count = n;
	presto_gro_flow_insert(&c->f, skb);
	return s;
}

static u64 pg_flush(struct pg_ctx *c, u64 now)
{
	return presto_gro_flow_flush(&c->f, &c->ewma, &params, now, &c->out,
				     &c->st, NULL);
}

/* sequence numbers of what went up, in order; frees the skbs */
static int pg_out(struct pg_ctx *c, u32 *seqs, int max)
{
	struct sk_buff *skb, *tmp;
	int n = 0;

	list_for_each_entry_safe(skb, tmp, &c->out, list) {
		if (n < max)
			seqs[n] = presto_gro_seg(skb)->seq;
		n++;
		skb_list_del_init(skb);
		kfree_skb(skb);
	}
	return n;
}

static void pg_free(struct pg_ctx *c)
{
	struct sk_buff *skb, *tmp;

	list_splice_tail_init(&c->f.segs, &c->out);
	list_for_each_entry_safe(skb, tmp, &c->out, list) {
		skb_list_del_init(skb);
		kfree_skb(skb);
	}
}

/* lines 3-5: the same flowcell goes up, expSeq advances */
static void pg_same_flowcell(struct kunit *test)
{
	struct pg_ctx c;
	u32 seqs[4];

	pg_init(&c);
	pg_add(test, &c, 1000, 4, 7, 0);
	pg_add(test, &c, 1000 + 4 * MSS, 4, 7, 1 * US);
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 2 * US), 0ULL);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 2);
	KUNIT_EXPECT_EQ(test, seqs[0], 1000U);
	KUNIT_EXPECT_EQ(test, seqs[1], 1000U + 4 * MSS);
	KUNIT_EXPECT_EQ(test, c.f.exp_seq, 1000U + 8 * MSS);
	KUNIT_EXPECT_EQ(test, c.f.last_fc, (u16)7);
	KUNIT_EXPECT_EQ(test, c.st.pushed_inorder, 2ULL);
	KUNIT_EXPECT_EQ(test, c.st.held, 0ULL);
	pg_free(&c);
}

/*
 * A flush moves at most its budget: a filled gap releases ten segments,
 * a budget of 4 moves the first four in order and asks to be called again
 * (returns now); the next flushes move the rest, still in order, and the
 * EWMA takes one sample, not one per call.
 */
static void pg_flush_budget(struct kunit *test)
{
	unsigned int budget;
	struct pg_ctx c;
	u32 seqs[10];
	int i, n = 0;

	pg_init(&c);
	pg_add(test, &c, 0, 1, 1, 0);
	pg_flush(&c, 0);
	pg_out(&c, seqs, 10);
	/* flowcell 2 arrives first, then the end of flowcell 1 */
	for (i = 1; i < 10; i++)
		pg_add(test, &c, (i + 1) * MSS, 1, 2, 10 * US);
	KUNIT_EXPECT_NE(test, pg_flush(&c, 10 * US), 0ULL);
	KUNIT_EXPECT_EQ(test, c.f.nsegs, 9U);
	pg_add(test, &c, MSS, 1, 1, 30 * US);
	budget = 4;
	KUNIT_EXPECT_EQ(test, presto_gro_flow_flush(&c.f, &c.ewma, &params,
						    40 * US, &c.out, &c.st,
						    &budget), 40 * US);
	KUNIT_EXPECT_EQ(test, budget, 0U);
	KUNIT_EXPECT_EQ(test, c.f.nsegs, 6U);
	n = pg_out(&c, seqs, 10);
	KUNIT_EXPECT_EQ(test, n, 4);
	for (i = 0; i < n; i++)
		KUNIT_EXPECT_EQ(test, seqs[i], (u32)(i + 1) * MSS);
	budget = 4;
	KUNIT_EXPECT_EQ(test, presto_gro_flow_flush(&c.f, &c.ewma, &params,
						    50 * US, &c.out, &c.st,
						    &budget), 50 * US);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 10), 4);
	KUNIT_EXPECT_EQ(test, seqs[0], 5U * MSS);
	budget = 4;
	KUNIT_EXPECT_EQ(test, presto_gro_flow_flush(&c.f, &c.ewma, &params,
						    60 * US, &c.out, &c.st,
						    &budget), 0ULL);
	KUNIT_EXPECT_EQ(test, budget, 2U);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 10), 2);
	KUNIT_EXPECT_EQ(test, seqs[0], 9U * MSS);
	KUNIT_EXPECT_EQ(test, seqs[1], 10U * MSS);
	KUNIT_EXPECT_EQ(test, c.f.nsegs, 0U);
	KUNIT_EXPECT_EQ(test, c.f.exp_seq, 11U * MSS);
	KUNIT_EXPECT_EQ(test, c.st.reorder_events, 1ULL);
	KUNIT_EXPECT_EQ(test, c.st.pushed_inorder, 11ULL);
	pg_free(&c);
}

/* lines 3-5 with a gap: a loss inside a flowcell goes up at once */
static void pg_loss_inside_flowcell(struct kunit *test)
{
	struct pg_ctx c;
	u32 seqs[4];

	pg_init(&c);
	pg_add(test, &c, 1000, 4, 7, 0);
	pg_flush(&c, 0);
	pg_out(&c, seqs, 4);
	/* packet 1000 + 4 * MSS lost; the rest of flowcell 7 arrives */
	pg_add(test, &c, 1000 + 5 * MSS, 3, 7, 10 * US);
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 10 * US), 0ULL);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 1);
	KUNIT_EXPECT_EQ(test, c.st.pushed_loss, 1ULL);
	KUNIT_EXPECT_EQ(test, c.f.exp_seq, 1000U + 8 * MSS);
	/* a retransmission below expSeq in the same flowcell: in order */
	pg_add(test, &c, 1000 + 4 * MSS, 1, 7, 20 * US);
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 20 * US), 0ULL);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 1);
	KUNIT_EXPECT_EQ(test, c.f.exp_seq, 1000U + 8 * MSS);
	KUNIT_EXPECT_EQ(test, c.st.pushed_loss, 1ULL);
	pg_free(&c);
}

/* lines 6-10: the next flowcell starting at expSeq goes up */
static void pg_next_flowcell_in_order(struct kunit *test)
{
	struct pg_ctx c;
	u32 seqs[4];

	pg_init(&c);
	pg_add(test, &c, 0, 4, 1, 0);
	pg_add(test, &c, 4 * MSS, 4, 2, 0);
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 0), 0ULL);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 2);
	KUNIT_EXPECT_EQ(test, c.f.last_fc, (u16)2);
	KUNIT_EXPECT_EQ(test, c.f.exp_seq, 8U * MSS);
	KUNIT_EXPECT_EQ(test, c.st.reorder_events, 0ULL);
	pg_free(&c);
}

/* line 15 then 7-10: flowcells swapped; the later one waits, the gap
 * fills, both go up in order and the wait feeds the EWMA
 */
static void pg_swapped_flowcells(struct kunit *test)
{
	struct pg_ctx c;
	u32 seqs[4];
	u64 d;

	pg_init(&c);
	pg_add(test, &c, 0, 4, 1, 0);
	pg_flush(&c, 0);
	pg_out(&c, seqs, 4);
	/* flowcell 3 arrives before flowcell 2 */
	pg_add(test, &c, 8 * MSS, 4, 3, 10 * US);
	d = pg_flush(&c, 10 * US);
	/* EWMA 0: alpha * EWMA clamps to timeout_min_us */
	KUNIT_EXPECT_EQ(test, d, 110ULL * US);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 0);
	KUNIT_EXPECT_EQ(test, c.st.held, 1ULL);
	KUNIT_EXPECT_EQ(test, c.f.nsegs, 1U);
	/* flowcell 2 arrives 40 us later */
	pg_add(test, &c, 4 * MSS, 4, 2, 50 * US);
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 50 * US), 0ULL);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 2);
	KUNIT_EXPECT_EQ(test, seqs[0], 4U * MSS);
	KUNIT_EXPECT_EQ(test, seqs[1], 8U * MSS);
	KUNIT_EXPECT_EQ(test, c.st.reorder_events, 1ULL);
	KUNIT_EXPECT_EQ(test, c.ewma, 40ULL * US);
	KUNIT_EXPECT_EQ(test, c.st.pushed_inorder, 3ULL);
	KUNIT_EXPECT_EQ(test, c.f.last_fc, (u16)3);
	pg_free(&c);
}

/* lines 11-14: a gap at a boundary that does not fill times out */
static void pg_boundary_timeout(struct kunit *test)
{
	struct pg_ctx c;
	u32 seqs[4];
	u64 d;

	pg_init(&c);
	c.ewma = 200 * US;		/* alpha * EWMA = 400 us */
	pg_add(test, &c, 0, 4, 1, 0);
	pg_flush(&c, 0);
	pg_out(&c, seqs, 4);
	pg_add(test, &c, 8 * MSS, 4, 3, 1000 * US);
	d = pg_flush(&c, 1000 * US);
	KUNIT_EXPECT_EQ(test, d, 1400ULL * US);
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 1399 * US), d);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 0);
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 1400 * US), 0ULL);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 1);
	KUNIT_EXPECT_EQ(test, c.st.pushed_timeout, 1ULL);
	KUNIT_EXPECT_EQ(test, c.f.last_fc, (u16)3);
	KUNIT_EXPECT_EQ(test, c.f.exp_seq, 12U * MSS);
	/* a loss is not reordering: the EWMA did not move */
	KUNIT_EXPECT_EQ(test, c.ewma, 200ULL * US);
	/* flowcell 2 arrives late: older flowcell, line 17 */
	pg_add(test, &c, 4 * MSS, 2, 2, 2000 * US);
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 2000 * US), 0ULL);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 1);
	KUNIT_EXPECT_EQ(test, c.st.pushed_old, 1ULL);
	KUNIT_EXPECT_EQ(test, c.f.last_fc, (u16)3);
	/* not yet up to the gap's end: no sample */
	KUNIT_EXPECT_EQ(test, c.ewma, 200ULL * US);
	KUNIT_EXPECT_EQ(test, c.st.late_fills, 0ULL);
	/* its last packets fill the gap, 1600 us after the held segment
	 * arrived: reordering without loss, a sample (200 + 1400 / 8 us)
	 */
	pg_add(test, &c, 6 * MSS, 2, 2, 2600 * US);
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 2600 * US), 0ULL);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 1);
	KUNIT_EXPECT_EQ(test, c.st.pushed_old, 2ULL);
	KUNIT_EXPECT_EQ(test, c.st.late_fills, 1ULL);
	KUNIT_EXPECT_EQ(test, c.st.reorder_events, 1ULL);
	KUNIT_EXPECT_EQ(test, c.ewma, 375ULL * US);
	/* once only */
	pg_add(test, &c, 6 * MSS, 2, 2, 2700 * US);
	pg_flush(&c, 2700 * US);
	pg_out(&c, seqs, 4);
	KUNIT_EXPECT_EQ(test, c.st.late_fills, 1ULL);
	KUNIT_EXPECT_EQ(test, c.ewma, 375ULL * US);
	pg_free(&c);
}

/* A gap filled 10 s late is one sample of at most timeout_max_us / alpha
 * (5000 us here): the EWMA moves by an eighth of that, and the next hold
 * is not pinned at timeout_max_us.
 */
static void pg_late_fill_bounded(struct kunit *test)
{
	struct pg_ctx c;
	u32 seqs[4];

	pg_init(&c);
	c.ewma = 200 * US;
	pg_add(test, &c, 0, 4, 1, 0);
	pg_flush(&c, 0);
	pg_out(&c, seqs, 4);
	pg_add(test, &c, 8 * MSS, 4, 3, 1000 * US);
	pg_flush(&c, 1000 * US);
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 1400 * US), 0ULL);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 1);
	KUNIT_EXPECT_EQ(test, c.st.pushed_timeout, 1ULL);
	pg_add(test, &c, 4 * MSS, 4, 2, 1000 * US + 10 * NSEC_PER_SEC);
	pg_flush(&c, 1000 * US + 10 * NSEC_PER_SEC);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 1);
	KUNIT_EXPECT_EQ(test, c.st.late_fills, 1ULL);
	KUNIT_EXPECT_EQ(test, c.ewma, 800ULL * US);
	KUNIT_EXPECT_EQ(test, presto_gro_timeout_ns(c.ewma, &params),
			1600ULL * US);
	/* the bound itself */
	KUNIT_EXPECT_EQ(test, presto_gro_sample_ns(U64_MAX, &params),
			5000ULL * US);
	KUNIT_EXPECT_EQ(test, presto_gro_sample_ns(40 * US, &params),
			40ULL * US);
	pg_free(&c);
}

/* a timed-out segment whose run merged a packet within EWMA / beta
 * is still held
 */
static void pg_recent_merge_holds(struct kunit *test)
{
	struct pg_ctx c;
	u32 seqs[4];

	pg_init(&c);
	c.ewma = 200 * US;		/* timeout 400 us, EWMA / beta 100 us */
	pg_add(test, &c, 0, 4, 1, 0);
	pg_flush(&c, 0);
	pg_out(&c, seqs, 4);
	pg_add(test, &c, 8 * MSS, 4, 3, 1000 * US);
	pg_flush(&c, 1000 * US);
	/* its flowcell keeps arriving: last merge at 1350 us */
	pg_add(test, &c, 12 * MSS, 2, 3, 1350 * US);
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 1400 * US), 1450ULL * US);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 0);
	KUNIT_EXPECT_EQ(test, c.st.held, 2ULL);
	/* a later flowcell's packet is not part of the run */
	pg_add(test, &c, 14 * MSS, 1, 4, 1440 * US);
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 1449 * US), 1450ULL * US);
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 1450 * US), 0ULL);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 3);
	KUNIT_EXPECT_EQ(test, seqs[0], 8U * MSS);
	KUNIT_EXPECT_EQ(test, seqs[1], 12U * MSS);
	KUNIT_EXPECT_EQ(test, seqs[2], 14U * MSS);
	KUNIT_EXPECT_EQ(test, c.st.pushed_timeout, 1ULL);
	KUNIT_EXPECT_EQ(test, c.st.pushed_inorder, 3ULL);
	pg_free(&c);
}

/* the hold never exceeds timeout_max_us after arrival */
static void pg_hold_capped(struct kunit *test)
{
	struct presto_gro_seg s = { .arrival_ns = 1000 * US };

	/* EWMA 1 s: alpha * EWMA and EWMA / beta both beyond the cap */
	KUNIT_EXPECT_EQ(test,
			presto_gro_deadline_ns(&s, 5000 * US, U64_MAX,
					       1000000ULL * US, &params),
			11000ULL * US);
	/* an older segment queued behind caps it earlier */
	KUNIT_EXPECT_EQ(test,
			presto_gro_deadline_ns(&s, 5000 * US, 400 * US,
					       1000000ULL * US, &params),
			10400ULL * US);
}

/* A newer segment that takes the head of the list (here a lower sequence
 * number of a flowcell between) does not renew the hold of the one queued
 * behind it: both go up timeout_max_us after the older one arrived.
 */
static void pg_hold_cap_per_segment(struct kunit *test)
{
	struct pg_ctx c;
	u32 seqs[4];

	pg_init(&c);
	c.ewma = 1000000ULL * US;	/* holds as long as the cap allows */
	pg_add(test, &c, 0, 4, 1, 0);
	pg_flush(&c, 0);
	pg_out(&c, seqs, 4);
	pg_add(test, &c, 12 * MSS, 4, 3, 1000 * US);
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 1000 * US), 11000ULL * US);
	pg_add(test, &c, 8 * MSS, 2, 2, 9000 * US);
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 9000 * US), 11000ULL * US);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 0);
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 11000 * US), 0ULL);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 2);
	KUNIT_EXPECT_EQ(test, seqs[0], 8U * MSS);
	KUNIT_EXPECT_EQ(test, seqs[1], 12U * MSS);
	KUNIT_EXPECT_EQ(test, c.st.pushed_timeout, 2ULL);
	pg_free(&c);
}

/* insertion keeps the list sorted, whatever the arrival order */
static void pg_sorted_insert(struct kunit *test)
{
	struct pg_ctx c;
	u32 seqs[4];

	pg_init(&c);
	pg_add(test, &c, 0, 1, 1, 0);
	pg_flush(&c, 0);
	pg_out(&c, seqs, 4);
	pg_add(test, &c, 3 * MSS, 1, 2, 1 * US);
	pg_add(test, &c, 1 * MSS, 1, 2, 2 * US);
	pg_add(test, &c, 2 * MSS, 1, 2, 3 * US);
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 3 * US), 0ULL);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 3);
	KUNIT_EXPECT_EQ(test, seqs[0], 1U * MSS);
	KUNIT_EXPECT_EQ(test, seqs[1], 2U * MSS);
	KUNIT_EXPECT_EQ(test, seqs[2], 3U * MSS);
	pg_free(&c);
}

/* sequence numbers and flowcell IDs wrap */
static void pg_wrap(struct kunit *test)
{
	struct pg_ctx c;
	u32 base = 0xffffffff - 2 * MSS + 1, seqs[4];

	KUNIT_EXPECT_TRUE(test, presto_gro_fc_after(0, 0xffff));
	KUNIT_EXPECT_TRUE(test, presto_gro_fc_after(2, 0xfffe));
	KUNIT_EXPECT_FALSE(test, presto_gro_fc_after(0xffff, 0));
	KUNIT_EXPECT_FALSE(test, presto_gro_fc_after(5, 5));

	pg_init(&c);
	pg_add(test, &c, base, 2, 0xffff, 0);	/* ends at 0 after wrap */
	pg_flush(&c, 0);
	pg_out(&c, seqs, 4);
	KUNIT_EXPECT_EQ(test, c.f.exp_seq, 0U);
	/* flowcell 1 (after 0 after 0xffff) first: held */
	pg_add(test, &c, 2 * MSS, 2, 1, 10 * US);
	KUNIT_EXPECT_NE(test, pg_flush(&c, 10 * US), 0ULL);
	pg_add(test, &c, 0, 2, 0, 20 * US);
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 20 * US), 0ULL);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 2);
	KUNIT_EXPECT_EQ(test, seqs[0], 0U);
	KUNIT_EXPECT_EQ(test, seqs[1], 2U * MSS);
	KUNIT_EXPECT_EQ(test, c.f.last_fc, (u16)1);
	KUNIT_EXPECT_EQ(test, c.st.reorder_events, 1ULL);
	pg_free(&c);
}

/* drain: everything goes up in order (limits, device down, off) */
static void pg_drain(struct kunit *test)
{
	struct pg_ctx c;
	u32 seqs[4];

	pg_init(&c);
	pg_add(test, &c, 0, 1, 1, 0);
	pg_flush(&c, 0);
	pg_out(&c, seqs, 4);
	pg_add(test, &c, 5 * MSS, 1, 3, 1 * US);
	pg_add(test, &c, 3 * MSS, 1, 2, 2 * US);
	KUNIT_EXPECT_NE(test, pg_flush(&c, 2 * US), 0ULL);
	presto_gro_flow_drain(&c.f, &c.out, &c.st);
	KUNIT_EXPECT_EQ(test, c.f.nsegs, 0U);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 2);
	KUNIT_EXPECT_EQ(test, seqs[0], 3U * MSS);
	KUNIT_EXPECT_EQ(test, seqs[1], 5U * MSS);
	KUNIT_EXPECT_EQ(test, c.st.pushed_evicted, 2ULL);
	KUNIT_EXPECT_EQ(test, c.f.exp_seq, 6U * MSS);
	KUNIT_EXPECT_EQ(test, c.f.last_fc, (u16)3);
	pg_free(&c);
}

/*
 * The sender's IDs restart at 0 (its flow state was evicted) while the
 * receiver's last flowcell is 500.  New data under the older ID is a
 * restart: flowcell 1, ahead of flowcell 0, is held at the gap as the
 * next flowcell rather than pushed up as old, and flowcell 0 fills it.
 * A genuinely late segment of an older flowcell (before expSeq) is still
 * old.
 */
static void pg_restart_resequences(struct kunit *test)
{
	struct pg_ctx c;
	u32 seqs[4];

	pg_init(&c);
	pg_add(test, &c, 0, 4, 500, 0);
	pg_flush(&c, 0);
	pg_out(&c, seqs, 4);
	/* flowcell 1 of the new run arrives before flowcell 0 */
	pg_add(test, &c, 8 * MSS, 4, 1, 10 * US);
	KUNIT_EXPECT_NE(test, pg_flush(&c, 10 * US), 0ULL);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 0);
	KUNIT_EXPECT_EQ(test, c.st.restarts, 1ULL);
	KUNIT_EXPECT_EQ(test, c.st.held, 1ULL);
	pg_add(test, &c, 4 * MSS, 4, 0, 30 * US);
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 30 * US), 0ULL);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 2);
	KUNIT_EXPECT_EQ(test, seqs[0], 4U * MSS);
	KUNIT_EXPECT_EQ(test, seqs[1], 8U * MSS);
	KUNIT_EXPECT_EQ(test, c.st.pushed_old, 0ULL);
	KUNIT_EXPECT_EQ(test, c.st.reorder_events, 1ULL);
	KUNIT_EXPECT_EQ(test, c.st.restarts, 1ULL);
	KUNIT_EXPECT_EQ(test, c.f.last_fc, (u16)1);
	/* a late copy of flowcell 0's data: old, no restart */
	pg_add(test, &c, 4 * MSS, 1, 0, 40 * US);
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 40 * US), 0ULL);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 1);
	KUNIT_EXPECT_EQ(test, c.st.pushed_old, 1ULL);
	KUNIT_EXPECT_EQ(test, c.st.restarts, 1ULL);
	KUNIT_EXPECT_EQ(test, c.f.last_fc, (u16)1);
	pg_free(&c);
}

/*
 * A frame without the stamp carries no ID: its MAC bytes are neither a
 * boundary nor an old flowcell.  In sequence it goes up and leaves the
 * flow's last flowcell alone; at a gap it is a loss inside the current
 * flowcell, pushed at once, not a hold.
 */
static void pg_untagged(struct kunit *test)
{
	struct pg_ctx c;
	u32 seqs[4];

	pg_init(&c);
	pg_add(test, &c, 0, 4, 7, 0);
	pg_add(test, &c, 4 * MSS, 4, 0x1234, 1 * US)->untagged = 1;
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 1 * US), 0ULL);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 2);
	KUNIT_EXPECT_EQ(test, c.f.last_fc, (u16)7);
	KUNIT_EXPECT_EQ(test, c.f.exp_seq, 8U * MSS);
	pg_add(test, &c, 12 * MSS, 4, 0x0001, 2 * US)->untagged = 1;
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 2 * US), 0ULL);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 1);
	KUNIT_EXPECT_EQ(test, c.st.pushed_loss, 1ULL);
	KUNIT_EXPECT_EQ(test, c.st.held, 0ULL);
	KUNIT_EXPECT_EQ(test, c.st.pushed_old, 0ULL);
	KUNIT_EXPECT_EQ(test, c.f.last_fc, (u16)7);
	pg_free(&c);
}

/*
 * A flow's ID forgotten (rebase: idle, or its first frames untagged): the
 * next tagged segment sets the ID base, whatever its ID.  Flowcell 3 at a
 * gap after last flowcell 500 is held as the next flowcell, not pushed up
 * as old, and flowcell 2 fills the gap.
 */
static void pg_rebase(struct kunit *test)
{
	struct pg_ctx c;
	u32 seqs[4];

	pg_init(&c);
	pg_add(test, &c, 0, 4, 2, 0)->untagged = 1;
	pg_flush(&c, 0);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 1);
	KUNIT_EXPECT_TRUE(test, c.f.rebase);
	c.f.last_fc = 500;
	pg_add(test, &c, 8 * MSS, 4, 3, 10 * US);
	KUNIT_EXPECT_NE(test, pg_flush(&c, 10 * US), 0ULL);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 0);
	KUNIT_EXPECT_FALSE(test, c.f.rebase);
	pg_add(test, &c, 4 * MSS, 4, 2, 20 * US);
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 20 * US), 0ULL);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 2);
	KUNIT_EXPECT_EQ(test, seqs[0], 4U * MSS);
	KUNIT_EXPECT_EQ(test, c.f.last_fc, (u16)3);
	KUNIT_EXPECT_EQ(test, c.st.pushed_old, 0ULL);
	KUNIT_EXPECT_EQ(test, c.st.restarts, 0ULL);
	pg_free(&c);
}

static u32 pg_list_bytes(struct pg_ctx *c)
{
	struct sk_buff *skb;
	u32 n = 0;

	list_for_each_entry(skb, &c->f.segs, list)
		n += skb->truesize;
	return n;
}

/* A flow counts the truesize of what it holds; what goes up leaves it. */
static void pg_held_bytes(struct kunit *test)
{
	struct pg_ctx c;
	u32 seqs[4];

	pg_init(&c);
	pg_add(test, &c, 0, 1, 1, 0);
	KUNIT_EXPECT_GT(test, c.f.bytes, 0U);
	pg_flush(&c, 0);
	pg_out(&c, seqs, 4);
	KUNIT_EXPECT_EQ(test, c.f.bytes, 0U);
	pg_add(test, &c, 4 * MSS, 1, 3, 1 * US);
	pg_add(test, &c, 3 * MSS, 1, 2, 2 * US);
	KUNIT_EXPECT_NE(test, pg_flush(&c, 2 * US), 0ULL);
	KUNIT_EXPECT_EQ(test, c.f.nsegs, 2U);
	KUNIT_EXPECT_EQ(test, c.f.bytes, pg_list_bytes(&c));
	/* the gap before flowcell 2 fills: all of it goes up */
	pg_add(test, &c, 1 * MSS, 2, 1, 3 * US);
	KUNIT_EXPECT_EQ(test, c.f.bytes, pg_list_bytes(&c));
	KUNIT_EXPECT_EQ(test, pg_flush(&c, 3 * US), 0ULL);
	KUNIT_EXPECT_EQ(test, pg_out(&c, seqs, 4), 3);
	KUNIT_EXPECT_EQ(test, c.f.bytes, 0U);
	/* held again, then drained */
	pg_add(test, &c, 9 * MSS, 1, 4, 4 * US);
	KUNIT_EXPECT_NE(test, pg_flush(&c, 4 * US), 0ULL);
	KUNIT_EXPECT_GT(test, c.f.bytes, 0U);
	presto_gro_flow_drain(&c.f, &c.out, &c.st);
	KUNIT_EXPECT_EQ(test, c.f.bytes, 0U);
	pg_out(&c, seqs, 4);
	pg_free(&c);
}

static void pg_ewma_timeout_arith(struct kunit *test)
{
	/* first sample initialises, then gain 1/8 both ways */
	KUNIT_EXPECT_EQ(test, presto_gro_ewma_update(0, 800), 800ULL);
	KUNIT_EXPECT_EQ(test, presto_gro_ewma_update(800, 1600), 900ULL);
	KUNIT_EXPECT_EQ(test, presto_gro_ewma_update(800, 0), 700ULL);
	KUNIT_EXPECT_EQ(test, presto_gro_ewma_update(800, 800), 800ULL);
	/* alpha * EWMA within the clamps */
	KUNIT_EXPECT_EQ(test, presto_gro_timeout_ns(300 * US, &params),
			600ULL * US);
	KUNIT_EXPECT_EQ(test, presto_gro_timeout_ns(10 * US, &params),
			100ULL * US);
	KUNIT_EXPECT_EQ(test, presto_gro_timeout_ns(20000 * US, &params),
			10000ULL * US);
	KUNIT_EXPECT_EQ(test, presto_gro_timeout_ns(U64_MAX / 2 + 1, &params),
			10000ULL * US);
}

/* A TCP segment of @payload bytes at the network header: IPv4, IPv6, or
 * IPv6 behind the hop-by-hop jumbo header; @big: the length field is 0
 * (BIG TCP), @gso: a GRO aggregate of 1448-byte segments.
 */
enum pg_l3 { PG_V4, PG_V6, PG_V6_JUMBO };

static struct sk_buff *pg_tcp_skb(struct kunit *test, enum pg_l3 l3,
				  u32 payload, bool big, bool gso)
{
	unsigned int hl = l3 == PG_V4 ? sizeof(struct iphdr) :
			  sizeof(struct ipv6hdr) +
			  (l3 == PG_V6_JUMBO ? sizeof(struct hop_jumbo_hdr) : 0);
	unsigned int len = hl + sizeof(struct tcphdr) + payload;
	struct sk_buff *skb = alloc_skb(len, GFP_KERNEL);
	struct tcphdr *th;

	KUNIT_ASSERT_NOT_NULL(test, skb);
	skb_put_zero(skb, len);
	skb_reset_network_header(skb);
	if (l3 == PG_V4) {
		struct iphdr *iph = ip_hdr(skb);

		skb->protocol = htons(ETH_P_IP);
		iph->version = 4;
		iph->ihl = 5;
		iph->protocol = IPPROTO_TCP;
		iph->tot_len = big ? 0 : htons(len);
		iph->saddr = htonl(0x0a000001);
		iph->daddr = htonl(0x0a000002);
	} else {
		struct ipv6hdr *ip6h = ipv6_hdr(skb);

		skb->protocol = htons(ETH_P_IPV6);
		ip6h->version = 6;
		ip6h->nexthdr = IPPROTO_TCP;
		ip6h->payload_len = big ? 0 : htons(len - sizeof(*ip6h));
		ip6h->saddr.s6_addr[15] = 1;
		ip6h->daddr.s6_addr[15] = 2;
		if (l3 == PG_V6_JUMBO) {
			struct hop_jumbo_hdr *jh = (void *)(ip6h + 1);

			ip6h->nexthdr = NEXTHDR_HOP;
			jh->nexthdr = IPPROTO_TCP;
			jh->tlv_type = IPV6_TLV_JUMBO;
			jh->tlv_len = 4;
			jh->jumbo_payload_len = htonl(len - sizeof(*ip6h));
		}
	}
	th = (struct tcphdr *)(skb->data + hl);
	th->source = htons(1000);
	th->dest = htons(80);
	th->seq = htonl(12345);
	th->doff = 5;
	th->ack = 1;
	if (gso) {
		skb_shinfo(skb)->gso_size = 1448;
		skb_shinfo(skb)->gso_segs = DIV_ROUND_UP(payload, 1448);
		skb_shinfo(skb)->gso_type = l3 == PG_V4 ? SKB_GSO_TCPV4 :
						       SKB_GSO_TCPV6;
	}
	return skb;
}

static void pg_parse_expect(struct kunit *test, enum pg_l3 l3, u32 payload,
			    bool big, bool gso, bool ok)
{
	struct sk_buff *skb = pg_tcp_skb(test, l3, payload, big, gso);
	struct presto_gro_key k;
	u32 seq = 0, len = 0;
	u8 flags = 0;

	KUNIT_EXPECT_EQ(test, presto_gro_parse(skb, &k, &seq, &len, &flags),
			ok);
	if (ok) {
		KUNIT_EXPECT_EQ(test, len, payload);
		KUNIT_EXPECT_EQ(test, seq, 12345U);
		KUNIT_EXPECT_EQ(test, flags, (u8)TCPHDR_ACK);
		KUNIT_EXPECT_EQ(test, k.sport, htons(1000));
		KUNIT_EXPECT_EQ(test, k.family,
				l3 == PG_V4 ? (u16)AF_INET : (u16)AF_INET6);
	}
	kfree_skb(skb);
}

/* BIG TCP aggregates (185000-byte GRO, payload beyond 64 KB) are parsed
 * with their real length, so they are resequenced, not pushed up ahead
 * of held segments; length 0 on a skb that is not an aggregate is not.
 */
static void pg_parse_big_tcp(struct kunit *test)
{
	pg_parse_expect(test, PG_V4, 1448, false, false, true);
	pg_parse_expect(test, PG_V6, 1448, false, false, true);
	pg_parse_expect(test, PG_V4, 45 * 1448, false, true, true);
	pg_parse_expect(test, PG_V4, 127 * 1448, true, true, true);
	pg_parse_expect(test, PG_V6, 127 * 1448, true, true, true);
	pg_parse_expect(test, PG_V6_JUMBO, 127 * 1448, true, true, true);
	/* length 0 outside GRO: not a segment */
	pg_parse_expect(test, PG_V4, 1448, true, false, false);
	pg_parse_expect(test, PG_V6, 1448, true, false, false);
	pg_parse_expect(test, PG_V6_JUMBO, 1448, true, false, false);
}

/* The same 4-tuple on two VLANs is two flows (the tag GRO left in
 * skb->vlan_tci is part of the key); untagged is a third.
 */
static void pg_parse_vlan(struct kunit *test)
{
	struct presto_gro_key k[3];
	u32 seq, len;
	u8 flags;
	int i;

	for (i = 0; i < 3; i++) {
		struct sk_buff *skb = pg_tcp_skb(test, PG_V4, 100, false,
						 false);

		if (i)
			__vlan_hwaccel_put_tag(skb, htons(ETH_P_8021Q), 10 * i);
		KUNIT_EXPECT_TRUE(test, presto_gro_parse(skb, &k[i], &seq,
							 &len, &flags));
		kfree_skb(skb);
	}
	KUNIT_EXPECT_EQ(test, k[0].vlan, (u16)0);
	KUNIT_EXPECT_EQ(test, k[1].vlan, (u16)10);
	KUNIT_EXPECT_EQ(test, k[2].vlan, (u16)20);
	KUNIT_EXPECT_NE(test, memcmp(&k[0], &k[1], sizeof(k[0])), 0);
	KUNIT_EXPECT_NE(test, memcmp(&k[1], &k[2], sizeof(k[0])), 0);
}

static struct kunit_case presto_gro_cases[] = {
	KUNIT_CASE(pg_same_flowcell),
	KUNIT_CASE(pg_flush_budget),
	KUNIT_CASE(pg_loss_inside_flowcell),
	KUNIT_CASE(pg_next_flowcell_in_order),
	KUNIT_CASE(pg_swapped_flowcells),
	KUNIT_CASE(pg_boundary_timeout),
	KUNIT_CASE(pg_late_fill_bounded),
	KUNIT_CASE(pg_recent_merge_holds),
	KUNIT_CASE(pg_hold_capped),
	KUNIT_CASE(pg_hold_cap_per_segment),
	KUNIT_CASE(pg_sorted_insert),
	KUNIT_CASE(pg_wrap),
	KUNIT_CASE(pg_drain),
	KUNIT_CASE(pg_restart_resequences),
	KUNIT_CASE(pg_untagged),
	KUNIT_CASE(pg_rebase),
	KUNIT_CASE(pg_held_bytes),
	KUNIT_CASE(pg_ewma_timeout_arith),
	KUNIT_CASE(pg_parse_big_tcp),
	KUNIT_CASE(pg_parse_vlan),
	{}
};

static struct kunit_suite presto_gro_suite = {
	.name = "presto_gro",
	.test_cases = presto_gro_cases,
};

kunit_test_suite(presto_gro_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit tests for Presto GRO");
