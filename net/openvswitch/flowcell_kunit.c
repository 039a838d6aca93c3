// SPDX-License-Identifier: GPL-2.0-only
/* KUnit tests of Presto flowcells in the Open vSwitch datapath
 * (flowcell.c): the flowcell decision (boundaries, a packet that would
 * pass the size, full TSO skbs, packets larger than a flowcell, the 16-bit
 * ID wrap, consecutive hashes), the per-flow table (random start, LRU
 * eviction at the limit, idle expiry, a lowered limit, buckets sized from
 * the limit and rebuilt when it changes, a per-port share of the limit
 * against a flood from another port), the payload length
 * of a packet and the flowlet gap (below, at and above the gap, a wrapping clock, gap 0).
 */

#include <kunit/test.h>
#include <linux/etherdevice.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/jiffies.h>
#include <linux/skbuff.h>
#include <linux/tcp.h>
#include <net/ipv6.h>

#include "flow.h"
#include "flowcell.h"

MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);

#define SZ	65536U

static void flowcell_size_test(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, ovs_flowcell_size(0), 65536U);
	KUNIT_EXPECT_EQ(test, ovs_flowcell_size(4096), 4096U);
	KUNIT_EXPECT_TRUE(test, ovs_flowcell_size_valid(0));
	KUNIT_EXPECT_FALSE(test, ovs_flowcell_size_valid(1));
	KUNIT_EXPECT_FALSE(test, ovs_flowcell_size_valid(1023));
	KUNIT_EXPECT_TRUE(test, ovs_flowcell_size_valid(1024));
	KUNIT_EXPECT_TRUE(test, ovs_flowcell_size_valid(16 << 20));
	KUNIT_EXPECT_FALSE(test, ovs_flowcell_size_valid((16 << 20) + 1));
	KUNIT_EXPECT_FALSE(test, ovs_flowcell_size_valid(U32_MAX));
}

/* Four 16 KiB TSO skbs fill a 64 KiB flowcell exactly: the fifth starts
 * flowcell 1.
 */
static void flowcell_exactly_at_size_test(struct kunit *test)
{
	struct ovs_flowcell_flow f = { .start = 100 };
	int i;

	for (i = 0; i < 4; i++) {
		KUNIT_EXPECT_FALSE(test, ovs_flowcell_advance(&f, SZ / 4, SZ));
		KUNIT_EXPECT_EQ(test, f.cell, 0U);
	}
	KUNIT_EXPECT_EQ(test, f.bytes, SZ);
	KUNIT_EXPECT_TRUE(test, ovs_flowcell_advance(&f, SZ / 4, SZ));
	KUNIT_EXPECT_EQ(test, f.cell, 1U);
	KUNIT_EXPECT_EQ(test, f.bytes, SZ / 4);
	KUNIT_EXPECT_EQ(test, ovs_flowcell_id(&f), 1);
}

/* A packet that would take the flowcell past its size starts the next
 * one: one byte short leaves room for one more byte only.
 */
static void flowcell_one_short_test(struct kunit *test)
{
	struct ovs_flowcell_flow f = {};

	KUNIT_EXPECT_FALSE(test, ovs_flowcell_advance(&f, SZ - 1, SZ));
	KUNIT_EXPECT_TRUE(test, ovs_flowcell_advance(&f, 1448, SZ));
	KUNIT_EXPECT_EQ(test, f.cell, 1U);
	KUNIT_EXPECT_EQ(test, f.bytes, 1448U);
	f.bytes = SZ - 1;
	KUNIT_EXPECT_FALSE(test, ovs_flowcell_advance(&f, 1, SZ));
	KUNIT_EXPECT_EQ(test, f.cell, 1U);
	KUNIT_EXPECT_EQ(test, f.bytes, SZ);
	KUNIT_EXPECT_TRUE(test, ovs_flowcell_advance(&f, 1, SZ));
	KUNIT_EXPECT_EQ(test, f.cell, 2U);
	KUNIT_EXPECT_EQ(test, f.bytes, 1U);
}

/* Real TSO sizes: a full TSO skb (45 segments of 1448 bytes, 65160 bytes,
 * the most that fits the 64 KiB GSO limit) is one flowcell of its own, as
 * in the paper; a flow of 1448-byte segments puts 45 in a flowcell.
 */
static void flowcell_tso_sizes_test(struct kunit *test)
{
	struct ovs_flowcell_flow f = {};
	u32 cells = 0;
	int i;

	for (i = 0; i < 10; i++)
		cells += ovs_flowcell_advance(&f, 45 * 1448, SZ);
	KUNIT_EXPECT_EQ(test, f.cell, 9U);
	KUNIT_EXPECT_EQ(test, cells, 9U);
	KUNIT_EXPECT_EQ(test, f.bytes, 45 * 1448U);

	f = (struct ovs_flowcell_flow){};
	for (i = 0; i < 45; i++)
		KUNIT_EXPECT_FALSE(test, ovs_flowcell_advance(&f, 1448, SZ));
	KUNIT_EXPECT_EQ(test, f.bytes, 45 * 1448U);
	KUNIT_EXPECT_TRUE(test, ovs_flowcell_advance(&f, 1448, SZ));
	KUNIT_EXPECT_EQ(test, f.cell, 1U);

	/* A short skb after a partly full flowcell: it goes in if it fits. */
	f = (struct ovs_flowcell_flow){ .bytes = 30 * 1448 };
	KUNIT_EXPECT_FALSE(test, ovs_flowcell_advance(&f, 15 * 1448, SZ));
	KUNIT_EXPECT_TRUE(test, ovs_flowcell_advance(&f, 45 * 1448, SZ));
	KUNIT_EXPECT_EQ(test, f.cell, 1U);
}

/* A packet larger than a flowcell is one decision: it fills a flowcell
 * of its own (an empty one, or the next) and the next packet starts a new
 * one.
 */
static void flowcell_large_skb_test(struct kunit *test)
{
	struct ovs_flowcell_flow f = {};

	KUNIT_EXPECT_FALSE(test, ovs_flowcell_advance(&f, 200000, SZ));
	KUNIT_EXPECT_EQ(test, f.cell, 0U);
	KUNIT_EXPECT_TRUE(test, ovs_flowcell_advance(&f, 1, SZ));
	KUNIT_EXPECT_EQ(test, f.cell, 1U);
	KUNIT_EXPECT_TRUE(test, ovs_flowcell_advance(&f, 200000, SZ));
	KUNIT_EXPECT_EQ(test, f.cell, 2U);
	KUNIT_EXPECT_TRUE(test, ovs_flowcell_advance(&f, 200000, SZ));
	KUNIT_EXPECT_EQ(test, f.cell, 3U);
	/* The byte count saturates instead of wrapping. */
	f.bytes = U32_MAX - 10;
	KUNIT_EXPECT_TRUE(test, ovs_flowcell_advance(&f, 100, SZ));
	f.bytes = 0;
	KUNIT_EXPECT_FALSE(test, ovs_flowcell_advance(&f, U32_MAX, SZ));
	KUNIT_EXPECT_EQ(test, f.bytes, U32_MAX);
	KUNIT_EXPECT_TRUE(test, ovs_flowcell_advance(&f, U32_MAX, SZ));
	KUNIT_EXPECT_EQ(test, f.bytes, U32_MAX);
}

/* The hash is never 0, has bit 31 set, and consecutive flowcells take
 * consecutive values modulo 2^31, across every wrap.
 */
static void flowcell_hash_test(struct kunit *test)
{
	static const u32 starts[] = { 0, 1, 0x7fffffff, 0x80000000, U32_MAX };
	struct ovs_flowcell_flow f = {};
	u32 prev, h;
	int i, j;

	f.start = 0;
	KUNIT_EXPECT_EQ(test, ovs_flowcell_hash(&f), 0x80000000U);
	f.start = 0x7fffffff;
	KUNIT_EXPECT_EQ(test, ovs_flowcell_hash(&f), U32_MAX);
	f.cell = 1;
	KUNIT_EXPECT_EQ(test, ovs_flowcell_hash(&f), 0x80000000U);

	for (i = 0; i < ARRAY_SIZE(starts); i++) {
		f.start = starts[i];
		f.cell = 0;
		f.bytes = 0;
		prev = ovs_flowcell_hash(&f);
		for (j = 0; j < 8; j++) {
			f.bytes = SZ;
			ovs_flowcell_advance(&f, 1, SZ);
			h = ovs_flowcell_hash(&f);
			KUNIT_EXPECT_NE(test, h, 0U);
			KUNIT_EXPECT_TRUE(test, h & BIT(31));
			KUNIT_EXPECT_EQ(test, (h - prev) & 0x7fffffff, 1U);
			prev = h;
		}
	}
}

/* The receiver sees the low 16 bits of the ID: 0xffff is followed by 0,
 * while the hash keeps counting up.
 */
static void flowcell_id_wrap_test(struct kunit *test)
{
	struct ovs_flowcell_flow f = { .start = 12345, .cell = 0xfffe,
				       .bytes = SZ };
	u32 h;

	KUNIT_EXPECT_TRUE(test, ovs_flowcell_advance(&f, 1000, SZ));
	KUNIT_EXPECT_EQ(test, ovs_flowcell_id(&f), 0xffff);
	h = ovs_flowcell_hash(&f);
	f.bytes = SZ;
	KUNIT_EXPECT_TRUE(test, ovs_flowcell_advance(&f, 1000, SZ));
	KUNIT_EXPECT_EQ(test, ovs_flowcell_id(&f), 0);
	KUNIT_EXPECT_EQ(test, f.cell, 0x10000U);
	KUNIT_EXPECT_EQ(test, ovs_flowcell_hash(&f), h + 1);
	f.bytes = SZ;
	ovs_flowcell_advance(&f, 1000, SZ);
	KUNIT_EXPECT_EQ(test, ovs_flowcell_id(&f), 1);
}

static void key_of(struct ovs_flowcell_key *k, u32 n)
{
	memset(k, 0, sizeof(*k));
	ipv6_addr_set_v4mapped(htonl(0x0a000001), &k->src);
	ipv6_addr_set_v4mapped(htonl(0x0a000002), &k->dst);
	k->sport = htons(40000 + n);
	k->dport = htons(5001);
	k->eth_type = htons(ETH_P_IP);
	k->in_port = 1;
}

static struct ovs_flowcell_table *table(struct kunit *test, u32 limit,
					u32 idle_msecs)
{
	struct ovs_flowcell_table *t;

	t = ovs_flowcell_table_alloc(limit, idle_msecs);
	KUNIT_ASSERT_NOT_NULL(test, t);
	return t;
}

#define fc_nbuckets(t)	ovs_flowcell_table_buckets(t)

static u32 fc_count(struct ovs_flowcell_table *t)
{
	return atomic_read(&t->count);
}

static struct ovs_flowcell_stats fc_stats(struct ovs_flowcell_table *t)
{
	struct ovs_flowcell_stats s;

	ovs_flowcell_read_stats(t, &s);
	return s;
}

/* Looks @k up in its bucket, locked as the packet path locks it. */
static struct ovs_flowcell_flow *fc_find_ns(struct ovs_flowcell_table *t,
					    const struct ovs_flowcell_key *k,
					    unsigned long now, u64 now_ns,
					    bool *created)
{
	struct ovs_flowcell_bucket *b;
	struct ovs_flowcell_flow *f;

	*created = false;
	b = ovs_flowcell_lock(t, k);
	if (!b)
		return NULL;
	f = ovs_flowcell_find(t, b, k, now, now_ns, GFP_ATOMIC, created);
	ovs_flowcell_unlock(b);
	return f;
}

static struct ovs_flowcell_flow *fc_find(struct ovs_flowcell_table *t,
					 const struct ovs_flowcell_key *k,
					 unsigned long now, bool *created)
{
	return fc_find_ns(t, k, now, 0, created);
}

static struct ovs_flowcell_flow *find(struct ovs_flowcell_table *t, u32 n,
				      unsigned long now, bool *created)
{
	struct ovs_flowcell_key k;

	key_of(&k, n);
	return fc_find(t, &k, now, created);
}

static struct ovs_flowcell_flow *find_port(struct ovs_flowcell_table *t,
					   u32 n, u16 port, unsigned long now,
					   bool *created)
{
	struct ovs_flowcell_key k;

	key_of(&k, n);
	k.in_port = port;
	return fc_find(t, &k, now, created);
}

/* A new flow starts at ID 0 with a random start; the same flow finds its
 * state again, another flow gets its own.
 */
static void flowcell_table_find_test(struct kunit *test)
{
	struct ovs_flowcell_table *t = table(test, 64, 1000);
	struct ovs_flowcell_flow *a, *b;
	unsigned long now = jiffies;
	bool created, differ = false;
	u32 first = 0;
	int i;

	a = find(t, 0, now, &created);
	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_EXPECT_TRUE(test, created);
	KUNIT_EXPECT_EQ(test, a->cell, 0U);
	KUNIT_EXPECT_EQ(test, a->bytes, 0U);
	KUNIT_EXPECT_EQ(test, ovs_flowcell_hash(a), a->start | BIT(31));
	a->bytes = 5000;
	b = find(t, 0, now + 1, &created);
	KUNIT_EXPECT_PTR_EQ(test, a, b);
	KUNIT_EXPECT_FALSE(test, created);
	KUNIT_EXPECT_EQ(test, b->bytes, 5000U);
	b = find(t, 1, now + 1, &created);
	KUNIT_ASSERT_NOT_NULL(test, b);
	KUNIT_EXPECT_TRUE(test, created);
	KUNIT_EXPECT_PTR_NE(test, a, b);
	KUNIT_EXPECT_EQ(test, fc_count(t), 2U);

	/* Random starts: 64 flows do not all start at the same value. */
	for (i = 0; i < 64; i++) {
		b = find(t, 100 + i, now + 2, &created);
		KUNIT_ASSERT_NOT_NULL(test, b);
		if (!i)
			first = b->start;
		else if (b->start != first)
			differ = true;
	}
	KUNIT_EXPECT_TRUE(test, differ);
	KUNIT_EXPECT_EQ(test, fc_count(t), 64U);
	KUNIT_EXPECT_EQ(test, fc_stats(t).alloc_fails, 0ULL);
	ovs_flowcell_table_free(t);
}

/* With a seed, a flow's start is a hash of its addresses and ports: the
 * same in two tables (datapaths, boots) with the same seed, whatever the
 * input port, again after the flow expired; another seed moves it, other
 * flows get other starts.  Seed 0 draws random starts.
 */
static void flowcell_seeded_start_test(struct kunit *test)
{
	struct ovs_flowcell_table *a = table(test, 64, 1000);
	struct ovs_flowcell_table *b = table(test, 64, 1000);
	struct ovs_flowcell_flow *fa, *fb;
	bool created, moved = false, spread = false, random = false;
	unsigned long now = jiffies;
	struct ovs_flowcell_key k;
	u32 first = 0, start;
	int i;

	a->start_seed = 7;
	b->start_seed = 7;
	fa = find(a, 3, now, &created);
	KUNIT_ASSERT_NOT_NULL(test, fa);
	KUNIT_EXPECT_TRUE(test, created);
	fb = find(b, 3, now, &created);
	KUNIT_ASSERT_NOT_NULL(test, fb);
	KUNIT_EXPECT_EQ(test, fa->start, fb->start);
	start = fa->start;

	/* The input port does not count. */
	key_of(&k, 3);
	k.in_port = 9;
	k.zone = 2;
	KUNIT_EXPECT_EQ(test, ovs_flowcell_start(a, &k), start);

	/* Forgotten (idle) and seen again: the same start, ID 0. */
	fa->cell = 5;
	fa = find(a, 3, now + msecs_to_jiffies(1000) + 2, &created);
	KUNIT_ASSERT_NOT_NULL(test, fa);
	KUNIT_EXPECT_TRUE(test, created);
	KUNIT_EXPECT_EQ(test, fa->cell, 0U);
	KUNIT_EXPECT_EQ(test, fa->start, start);

	for (i = 0; i < 16; i++) {
		key_of(&k, 200 + i);
		a->start_seed = 7;
		if (!i)
			first = ovs_flowcell_start(a, &k);
		else if (ovs_flowcell_start(a, &k) != first)
			spread = true;
		a->start_seed = 8;
		if (ovs_flowcell_start(a, &k) != ovs_flowcell_start(b, &k))
			moved = true;
		a->start_seed = 0;
		if (ovs_flowcell_start(a, &k) != ovs_flowcell_start(a, &k))
			random = true;
	}
	KUNIT_EXPECT_TRUE(test, spread);
	KUNIT_EXPECT_TRUE(test, moved);
	KUNIT_EXPECT_TRUE(test, random);
	ovs_flowcell_table_free(a);
	ovs_flowcell_table_free(b);
}

/* At the limit a new flow evicts the least recently used one (reusing
 * its memory); a flow seen again is recent.
 */
static void flowcell_lru_eviction_test(struct kunit *test)
{
	struct ovs_flowcell_table *t = table(test, 4, 1000);
	unsigned long now = jiffies;
	bool created;
	int i;

	for (i = 0; i < 4; i++)
		KUNIT_ASSERT_NOT_NULL(test, find(t, i, now, &created));
	KUNIT_EXPECT_EQ(test, fc_count(t), 4U);
	find(t, 0, now + 1, &created);		/* 0 is recent again */
	KUNIT_EXPECT_FALSE(test, created);
	find(t, 4, now + 2, &created);		/* evicts 1 */
	KUNIT_EXPECT_TRUE(test, created);
	KUNIT_EXPECT_EQ(test, fc_count(t), 4U);
	KUNIT_EXPECT_EQ(test, fc_stats(t).evictions, 1ULL);
	KUNIT_EXPECT_EQ(test, fc_stats(t).expired, 0ULL);
	for (i = 0; i < 5; i++) {
		if (i == 1)
			continue;
		find(t, i, now + 3, &created);
		KUNIT_EXPECT_FALSE(test, created);
	}
	/* Seen in the order 0 2 3 4: 0 is the least recent now. */
	find(t, 1, now + 4, &created);		/* back, evicting 0 */
	KUNIT_EXPECT_TRUE(test, created);
	KUNIT_EXPECT_EQ(test, fc_stats(t).evictions, 2ULL);
	KUNIT_EXPECT_EQ(test, fc_count(t), 4U);
	find(t, 4, now + 5, &created);
	KUNIT_EXPECT_FALSE(test, created);
	find(t, 0, now + 5, &created);		/* evicts 2 */
	KUNIT_EXPECT_TRUE(test, created);
	KUNIT_EXPECT_EQ(test, fc_stats(t).evictions, 3ULL);
	find(t, 3, now + 6, &created);
	KUNIT_EXPECT_FALSE(test, created);
	find(t, 2, now + 6, &created);
	KUNIT_EXPECT_TRUE(test, created);
	ovs_flowcell_table_free(t);
}

/* Flows idle longer than the timeout are freed, least recently used
 * first; a flow seen again before its collection restarts.
 */
static void flowcell_idle_expiry_test(struct kunit *test)
{
	struct ovs_flowcell_table *t = table(test, 16, 100);
	unsigned long now = jiffies, idle = t->idle;
	struct ovs_flowcell_flow *f;
	bool created;
	int i;

	for (i = 0; i < 3; i++)
		find(t, i, now, &created);
	KUNIT_EXPECT_EQ(test, ovs_flowcell_expire(t, now + idle, 64), 0U);
	find(t, 0, now + idle / 2 + 1, &created);	/* 0 stays busy */
	KUNIT_EXPECT_EQ(test, ovs_flowcell_expire(t, now + idle + 1, 1), 1U);
	KUNIT_EXPECT_EQ(test, ovs_flowcell_expire(t, now + idle + 1, 64), 1U);
	KUNIT_EXPECT_EQ(test, fc_count(t), 1U);
	KUNIT_EXPECT_EQ(test, fc_stats(t).expired, 2ULL);

	/* Flow 0, idle but not collected, starts over when seen again. */
	f = find(t, 0, now + idle / 2 + 1, &created);
	f->cell = 7;
	f->bytes = 1000;
	f = find(t, 0, now + idle / 2 + 1 + idle + 1, &created);
	KUNIT_EXPECT_TRUE(test, created);
	KUNIT_EXPECT_EQ(test, f->cell, 0U);
	KUNIT_EXPECT_EQ(test, f->bytes, 0U);
	KUNIT_EXPECT_EQ(test, fc_count(t), 1U);
	KUNIT_EXPECT_EQ(test, fc_stats(t).expired, 3ULL);
	ovs_flowcell_table_free(t);
}

/* A lower limit evicts down to it at once, keeping the most recent. */
static void flowcell_set_limits_test(struct kunit *test)
{
	struct ovs_flowcell_table *t = table(test, 8, 1000);
	unsigned long now = jiffies;
	bool created;
	int i;

	for (i = 0; i < 8; i++)
		find(t, i, now + i, &created);
	KUNIT_EXPECT_EQ(test, ovs_flowcell_set_limits(t, 3, 1000), 0);
	KUNIT_EXPECT_EQ(test, fc_count(t), 3U);
	KUNIT_EXPECT_EQ(test, fc_stats(t).evictions, 5ULL);
	for (i = 5; i < 8; i++) {
		find(t, i, now + 8, &created);
		KUNIT_EXPECT_FALSE(test, created);
	}
	/* Out-of-range values are clamped. */
	KUNIT_EXPECT_EQ(test, ovs_flowcell_set_limits(t, 0, 0), 0);
	KUNIT_EXPECT_EQ(test, t->limit, 1U);
	KUNIT_EXPECT_EQ(test, t->idle_msecs, (u32)OVS_FLOWCELL_IDLE_MSECS_MIN);
	KUNIT_EXPECT_EQ(test, fc_count(t), 1U);
	ovs_flowcell_table_free(t);
}

/* The buckets follow the limit: a quarter of it, a power of two, so a
 * full table walks chains of about four flows whatever the limit.
 */
static void flowcell_table_sizing_test(struct kunit *test)
{
	static const u32 limits[] = { 1, 2048, 1 << 20 };
	static const u32 buckets[] = { 1, 512, 1 << 18 };
	struct ovs_flowcell_table *t;
	int i;

	for (i = 0; i < ARRAY_SIZE(limits); i++) {
		t = table(test, limits[i], 1000);
		KUNIT_EXPECT_EQ(test, fc_nbuckets(t), buckets[i]);
		ovs_flowcell_table_free(t);
	}
}

/* A limit that asks for more or fewer buckets moves every flow to new
 * buckets: the flows keep their state (start, ID, bytes); a lower limit
 * keeps the most recently used ones.
 */
static void flowcell_rebuild_test(struct kunit *test)
{
	struct ovs_flowcell_table *t = table(test, 64, 10000);
	struct ovs_flowcell_flow *f;
	unsigned long now = jiffies;
	u32 starts[40];
	bool created;
	int i;

	KUNIT_EXPECT_EQ(test, fc_nbuckets(t), 16U);
	for (i = 0; i < 40; i++) {
		f = find(t, i, now + i, &created);
		KUNIT_ASSERT_NOT_NULL(test, f);
		f->cell = i;
		f->bytes = 100 + i;
		starts[i] = f->start;
	}
	KUNIT_EXPECT_EQ(test, ovs_flowcell_set_limits(t, 1 << 20, 10000), 0);
	KUNIT_EXPECT_EQ(test, fc_nbuckets(t), 1U << 18);
	KUNIT_EXPECT_EQ(test, fc_count(t), 40U);
	for (i = 0; i < 40; i++) {
		f = find(t, i, now + 40 + i, &created);
		KUNIT_ASSERT_NOT_NULL(test, f);
		KUNIT_EXPECT_FALSE(test, created);
		KUNIT_EXPECT_EQ(test, f->cell, (u32)i);
		KUNIT_EXPECT_EQ(test, f->bytes, 100U + i);
		KUNIT_EXPECT_EQ(test, f->start, starts[i]);
	}
	/* Down to 8 flows in 2 buckets: 32 to 39 were seen last. */
	KUNIT_EXPECT_EQ(test, ovs_flowcell_set_limits(t, 8, 10000), 0);
	KUNIT_EXPECT_EQ(test, fc_nbuckets(t), 2U);
	KUNIT_EXPECT_EQ(test, fc_count(t), 8U);
	KUNIT_EXPECT_EQ(test, fc_stats(t).evictions, 32ULL);
	for (i = 32; i < 40; i++) {
		f = find(t, i, now + 80, &created);
		KUNIT_ASSERT_NOT_NULL(test, f);
		KUNIT_EXPECT_FALSE(test, created);
		KUNIT_EXPECT_EQ(test, f->cell, (u32)i);
	}
	ovs_flowcell_table_free(t);
}

/* A port holds at most its share of the limit, and never fewer than 64
 * flows (the whole limit when it is smaller).
 */
static void flowcell_port_limit_test(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, ovs_flowcell_port_limit(8192, 50), 4096U);
	KUNIT_EXPECT_EQ(test, ovs_flowcell_port_limit(8192, 100), 8192U);
	KUNIT_EXPECT_EQ(test, ovs_flowcell_port_limit(8192, 1), 81U);
	KUNIT_EXPECT_EQ(test, ovs_flowcell_port_limit(100, 10), 64U);
	KUNIT_EXPECT_EQ(test, ovs_flowcell_port_limit(4, 50), 4U);
	KUNIT_EXPECT_EQ(test, ovs_flowcell_port_limit(1, 1), 1U);
	KUNIT_EXPECT_EQ(test, ovs_flowcell_port_limit(OVS_FLOWCELL_LIMIT_MAX,
						      100),
			(u32)OVS_FLOWCELL_LIMIT_MAX);
}

static void flood(struct ovs_flowcell_table *t, u16 port, u32 base, int n,
		  unsigned long now)
{
	struct ovs_flowcell_key k;
	bool created;
	int i;

	for (i = 0; i < n; i++) {
		key_of(&k, i);
		k.in_port = port;
		k.dst.s6_addr32[3] = htonl(base + i);
		fc_find(t, &k, now + i / 1000, &created);
	}
}

/* A victim flow from in_port 1 keeps its flowcell state (same start, same
 * ID, no restart) while in_port 2 opens 10,000 new flows, more than the
 * limit: the flood takes state from its own flows only, at its share of
 * the limit and, with a share of 100%, at the limit.
 */
static void flowcell_port_isolation_test(struct kunit *test)
{
	struct ovs_flowcell_table *t = table(test, OVS_FLOWCELL_LIMIT_DEFAULT,
					     10000);
	struct ovs_flowcell_stats s;
	struct ovs_flowcell_flow *f;
	unsigned long now = jiffies;
	bool created;
	u32 start;

	f = find_port(t, 0, 1, now, &created);
	KUNIT_ASSERT_NOT_NULL(test, f);
	f->cell = 5;
	f->bytes = 1000;
	start = f->start;

	flood(t, 2, 0x0b000000, 10000, now + 1);
	s = fc_stats(t);
	KUNIT_EXPECT_EQ(test, atomic_read(&t->ports[2]), 4096);
	KUNIT_EXPECT_EQ(test, fc_count(t), 4097U);
	KUNIT_EXPECT_EQ(test, s.port_evictions + s.port_refused, 10000ULL - 4096);
	KUNIT_EXPECT_GT(test, s.port_evictions, 0ULL);
	KUNIT_EXPECT_EQ(test, s.evictions, 0ULL);
	f = find_port(t, 0, 1, now + 11, &created);
	KUNIT_ASSERT_NOT_NULL(test, f);
	KUNIT_EXPECT_FALSE(test, created);
	KUNIT_EXPECT_EQ(test, f->cell, 5U);
	KUNIT_EXPECT_EQ(test, f->bytes, 1000U);
	KUNIT_EXPECT_EQ(test, f->start, start);

	/* One port may fill the table: it then takes its own flows, or
	 * is refused; in_port 1's flow stays.
	 */
	KUNIT_EXPECT_EQ(test, ovs_flowcell_set_port_share(t, 100), 0);
	flood(t, 2, 0x0c000000, 10000, now + 12);
	s = fc_stats(t);
	KUNIT_EXPECT_EQ(test, fc_count(t), (u32)OVS_FLOWCELL_LIMIT_DEFAULT);
	KUNIT_EXPECT_GT(test, s.evictions, 0ULL);
	f = find_port(t, 0, 1, now + 23, &created);
	KUNIT_ASSERT_NOT_NULL(test, f);
	KUNIT_EXPECT_FALSE(test, created);
	KUNIT_EXPECT_EQ(test, f->cell, 5U);
	KUNIT_EXPECT_EQ(test, f->start, start);
	/* A new flow of a third port finds no room: refused, not evicting. */
	KUNIT_EXPECT_NULL(test, find_port(t, 1, 3, now + 23, &created));
	KUNIT_EXPECT_EQ(test, fc_stats(t).refused, s.refused + 1);
	KUNIT_EXPECT_EQ(test, fc_stats(t).evictions, s.evictions);

	/* A lower share evicts the flood's oldest flows at once. */
	KUNIT_EXPECT_EQ(test, ovs_flowcell_set_port_share(t, 50), 0);
	KUNIT_EXPECT_LE(test, atomic_read(&t->ports[2]), 4096);
	f = find_port(t, 0, 1, now + 24, &created);
	KUNIT_ASSERT_NOT_NULL(test, f);
	KUNIT_EXPECT_FALSE(test, created);
	ovs_flowcell_table_free(t);
}

/* eth + IPv4/IPv6 + TCP (doff 8) + @payload bytes + @pad bytes of
 * Ethernet padding, with its flow key.
 */
static struct sk_buff *make_pkt(struct kunit *test, struct sw_flow_key *key,
				bool v6, u8 proto, unsigned int payload,
				unsigned int pad)
{
	unsigned int iphlen = v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	unsigned int thlen = 32;
	struct sk_buff *skb;
	struct tcphdr *th;
	struct ethhdr *eth;

	skb = alloc_skb(128 + payload + pad, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, skb);
	eth = skb_put_zero(skb, ETH_HLEN);
	eth->h_proto = htons(v6 ? ETH_P_IPV6 : ETH_P_IP);
	skb_reset_mac_header(skb);
	skb_set_network_header(skb, ETH_HLEN);
	if (v6) {
		struct ipv6hdr *ip6h = skb_put_zero(skb, iphlen);

		ip6h->version = 6;
		ip6h->payload_len = htons(thlen + payload);
		ip6h->nexthdr = proto;
	} else {
		struct iphdr *iph = skb_put_zero(skb, iphlen);

		iph->version = 4;
		iph->ihl = 5;
		iph->tot_len = htons(iphlen + thlen + payload);
		iph->protocol = proto;
	}
	skb_set_transport_header(skb, ETH_HLEN + iphlen);
	th = skb_put_zero(skb, thlen);
	th->doff = thlen / 4;
	skb_put_zero(skb, payload + pad);

	memset(key, 0, sizeof(*key));
	key->mac_proto = MAC_PROTO_ETHERNET;
	key->eth.type = eth->h_proto;
	key->ip.proto = proto;
	key->ip.frag = OVS_FRAG_TYPE_NONE;
	return skb;
}

static void flowcell_payload_test(struct kunit *test)
{
	struct sw_flow_key *key = kunit_kzalloc(test, sizeof(*key), GFP_KERNEL);
	struct sk_buff *skb;

	KUNIT_ASSERT_NOT_NULL(test, key);
	skb = make_pkt(test, key, false, IPPROTO_TCP, 1000, 0);
	KUNIT_EXPECT_EQ(test, ovs_flowcell_payload(skb, key), 1000U);
	key->ip.frag = OVS_FRAG_TYPE_FIRST;
	KUNIT_EXPECT_EQ(test, ovs_flowcell_payload(skb, key), 0U);
	kfree_skb(skb);

	/* A pure ACK padded to the Ethernet minimum carries no payload. */
	skb = make_pkt(test, key, false, IPPROTO_TCP, 0, 6);
	KUNIT_EXPECT_EQ(test, ovs_flowcell_payload(skb, key), 0U);
	kfree_skb(skb);
	skb = make_pkt(test, key, false, IPPROTO_TCP, 10, 20);
	KUNIT_EXPECT_EQ(test, ovs_flowcell_payload(skb, key), 10U);
	kfree_skb(skb);

	skb = make_pkt(test, key, true, IPPROTO_TCP, 1400, 0);
	KUNIT_EXPECT_EQ(test, ovs_flowcell_payload(skb, key), 1400U);
	/* IPv6 payload length 0 (BIG TCP): up to the end of the skb. */
	ipv6_hdr(skb)->payload_len = 0;
	KUNIT_EXPECT_EQ(test, ovs_flowcell_payload(skb, key), 1400U);
	kfree_skb(skb);

	skb = make_pkt(test, key, true, IPPROTO_UDP, 1400, 0);
	KUNIT_EXPECT_EQ(test, ovs_flowcell_payload(skb, key), 0U);
	kfree_skb(skb);
}

#define GAP	(100ULL * NSEC_PER_USEC)

/* Flowlets: a packet less than or exactly the gap after the previous one
 * continues the flowlet, one a nanosecond more starts the next; each
 * packet restarts the clock.
 */
static void flowcell_gap_boundary_test(struct kunit *test)
{
	struct ovs_flowcell_flow f = { .start = 7, .last_ns = 1000000 };
	u64 t = 1000000;

	KUNIT_EXPECT_EQ(test, ovs_flowcell_gap_ns(100), GAP);
	KUNIT_EXPECT_EQ(test, ovs_flowcell_gap_ns(OVS_FLOWCELL_GAP_US_MAX),
			10ULL * NSEC_PER_SEC);
	t += GAP - 1;				/* below */
	KUNIT_EXPECT_FALSE(test, ovs_flowcell_decide(&f, 1448, SZ, t, GAP, 0));
	KUNIT_EXPECT_EQ(test, f.cell, 0U);
	KUNIT_EXPECT_EQ(test, f.last_ns, t);
	t += GAP;				/* at */
	KUNIT_EXPECT_FALSE(test, ovs_flowcell_decide(&f, 1448, SZ, t, GAP, 0));
	KUNIT_EXPECT_EQ(test, f.cell, 0U);
	KUNIT_EXPECT_EQ(test, f.bytes, 2 * 1448U);
	t += GAP + 1;				/* above */
	KUNIT_EXPECT_TRUE(test, ovs_flowcell_decide(&f, 1448, SZ, t, GAP, 0));
	KUNIT_EXPECT_EQ(test, f.cell, 1U);
	KUNIT_EXPECT_EQ(test, f.bytes, 1448U);
	KUNIT_EXPECT_EQ(test, ovs_flowcell_hash(&f), (7U + 1) | BIT(31));
	KUNIT_EXPECT_EQ(test, ovs_flowcell_id(&f), 1);
	t += 10 * NSEC_PER_SEC;			/* far above */
	KUNIT_EXPECT_TRUE(test, ovs_flowcell_decide(&f, 1448, SZ, t, GAP, 0));
	KUNIT_EXPECT_EQ(test, f.cell, 2U);
	/* Many packets within the gap: one flowlet, however long. */
	t += GAP;
	KUNIT_EXPECT_FALSE(test, ovs_flowcell_decide(&f, 1448, SZ, t, GAP, 0));
	KUNIT_EXPECT_EQ(test, f.cell, 2U);
}

/* The flowcell size does not end a flowlet: 100 MB in 64 KB TSO skbs
 * 10 us apart stay in flowlet 0 (the byte count saturates).
 */
static void flowcell_gap_ignores_size_test(struct kunit *test)
{
	struct ovs_flowcell_flow f = {};
	u64 t = 0;
	int i;

	for (i = 0; i < 1600; i++) {
		t += 10 * NSEC_PER_USEC;
		KUNIT_EXPECT_FALSE(test, ovs_flowcell_decide(&f, SZ, SZ, t,
							     GAP, 0));
	}
	KUNIT_EXPECT_EQ(test, f.cell, 0U);
	KUNIT_EXPECT_EQ(test, f.bytes, 1600 * SZ);
	f.bytes = U32_MAX - 10;
	t += 10 * NSEC_PER_USEC;
	KUNIT_EXPECT_FALSE(test, ovs_flowcell_decide(&f, SZ, SZ, t, GAP, 0));
	KUNIT_EXPECT_EQ(test, f.bytes, U32_MAX);
	KUNIT_EXPECT_EQ(test, f.cell, 0U);
}

/* The clock difference is taken modulo 2^64: across a wrap a short pause
 * continues the flowlet and a long one starts the next.  A stamp slightly
 * before the previous one (read on another CPU) continues it.  The
 * flowlet ID wraps at 16 bits like a flowcell's.  The gap was set (@since)
 * before the wrap, and so is the same modulo 2^64.
 */
static void flowcell_gap_wrap_test(struct kunit *test)
{
	struct ovs_flowcell_flow f = { .last_ns = U64_MAX - 10,
				       .cell = 0xffff };
	u64 since = U64_MAX - 20;

	KUNIT_EXPECT_FALSE(test, ovs_flowcell_decide(&f, 1, SZ, 5, GAP,
						     since));
	KUNIT_EXPECT_EQ(test, f.cell, 0xffffU);
	KUNIT_EXPECT_EQ(test, f.last_ns, 5ULL);
	f.last_ns = U64_MAX - 10;
	KUNIT_EXPECT_TRUE(test, ovs_flowcell_decide(&f, 1, SZ, GAP, GAP,
						    since));
	KUNIT_EXPECT_EQ(test, f.cell, 0x10000U);
	KUNIT_EXPECT_EQ(test, ovs_flowcell_id(&f), 0);
	/* Backwards by a microsecond: no new flowlet. */
	KUNIT_EXPECT_FALSE(test, ovs_flowcell_decide(&f, 1, SZ,
						     GAP - NSEC_PER_USEC,
						     GAP, since));
	KUNIT_EXPECT_EQ(test, f.cell, 0x10000U);
}

/* Gap 0 is the stock flowcell decision, whatever the time between
 * packets: the same cells and bytes as ovs_flowcell_advance(), and the
 * flow is not stamped (the datapath does not read the clock then).
 */
static void flowcell_gap_off_test(struct kunit *test)
{
	struct ovs_flowcell_flow a = { .start = 3 }, b = { .start = 3 };
	u64 t = 0;
	int i;

	for (i = 0; i < 100; i++) {
		t += (i & 1) ? NSEC_PER_SEC : 1;
		KUNIT_EXPECT_EQ(test, ovs_flowcell_decide(&a, 20000, SZ, t, 0, 0),
				ovs_flowcell_advance(&b, 20000, SZ));
		KUNIT_EXPECT_EQ(test, a.cell, b.cell);
		KUNIT_EXPECT_EQ(test, a.bytes, b.bytes);
		KUNIT_EXPECT_EQ(test, a.last_ns, 0ULL);
	}
	/* 20000-byte packets: three to a flowcell, the fourth starts the
	 * next one.
	 */
	KUNIT_EXPECT_EQ(test, a.cell, 33U);
}

/* A new flow's state stamps its first packet's time, so that packet does
 * not start a flowlet; a flow found again keeps its stamp for the decision.
 */
static void flowcell_gap_find_test(struct kunit *test)
{
	struct ovs_flowcell_table *t = table(test, 64, 1000);
	struct ovs_flowcell_flow *f;
	struct ovs_flowcell_key k;
	unsigned long now = jiffies;
	bool created;

	key_of(&k, 0);
	f = fc_find_ns(t, &k, now, 5 * GAP, &created);
	KUNIT_ASSERT_NOT_NULL(test, f);
	KUNIT_EXPECT_TRUE(test, created);
	KUNIT_EXPECT_EQ(test, f->last_ns, 5 * GAP);
	KUNIT_EXPECT_FALSE(test, ovs_flowcell_decide(f, 1448, SZ, 5 * GAP,
						     GAP, 0));
	f = fc_find_ns(t, &k, now, 7 * GAP, &created);
	KUNIT_EXPECT_FALSE(test, created);
	KUNIT_EXPECT_EQ(test, f->last_ns, 5 * GAP);
	KUNIT_EXPECT_TRUE(test, ovs_flowcell_decide(f, 1448, SZ, 7 * GAP,
						    GAP, 0));
	KUNIT_EXPECT_EQ(test, f->cell, 1U);
	ovs_flowcell_table_free(t);
}

/* A gap set on a running datapath (at @since) counts from then: a flow
 * last stamped before (never, in flowcell mode: 0; or in an earlier
 * flowlet period) continues its flowcell within the gap after @since,
 * however long it was idle, and starts the next one after a pause of more
 * than the gap from there.  A stamp newer than @since is used as it is.
 */
static void flowcell_gap_since_test(struct kunit *test)
{
	struct ovs_flowcell_flow f = { .start = 9 };
	u64 since = 10 * NSEC_PER_SEC;

	/* Flowcell mode: 5 packets of SZ / 4, the second flowcell begun. */
	KUNIT_EXPECT_FALSE(test, ovs_flowcell_decide(&f, SZ / 4, SZ, 0, 0, 0));
	KUNIT_EXPECT_FALSE(test, ovs_flowcell_decide(&f, SZ / 4, SZ, 0, 0, 0));
	KUNIT_EXPECT_FALSE(test, ovs_flowcell_decide(&f, SZ / 4, SZ, 0, 0, 0));
	KUNIT_EXPECT_FALSE(test, ovs_flowcell_decide(&f, SZ / 4, SZ, 0, 0, 0));
	KUNIT_EXPECT_TRUE(test, ovs_flowcell_decide(&f, SZ / 4, SZ, 0, 0, 0));
	KUNIT_EXPECT_EQ(test, f.cell, 1U);
	KUNIT_EXPECT_EQ(test, f.last_ns, 0ULL);
	/* The gap set at 10 s: exactly the gap later, the same flowcell. */
	KUNIT_EXPECT_FALSE(test, ovs_flowcell_decide(&f, 1448, SZ, since + GAP,
						     GAP, since));
	KUNIT_EXPECT_EQ(test, f.cell, 1U);
	KUNIT_EXPECT_EQ(test, f.last_ns, since + GAP);
	KUNIT_EXPECT_TRUE(test, ovs_flowcell_decide(&f, 1448, SZ,
						    since + 2 * GAP + 1,
						    GAP, since));
	KUNIT_EXPECT_EQ(test, f.cell, 2U);
	KUNIT_EXPECT_EQ(test, ovs_flowcell_hash(&f), (9U + 2) | BIT(31));
	/* Set back to 0 (not stamped), set again at 20 s: 10 s since the
	 * last stamp, but only the gap since the set.
	 */
	KUNIT_EXPECT_FALSE(test, ovs_flowcell_decide(&f, 1448, SZ, 0, 0, 0));
	since = 20 * NSEC_PER_SEC;
	KUNIT_EXPECT_FALSE(test, ovs_flowcell_decide(&f, 1448, SZ, since + GAP,
						     GAP, since));
	KUNIT_EXPECT_EQ(test, f.cell, 2U);
	/* A stamp after @since is the flow's own: a pause counts from it. */
	KUNIT_EXPECT_FALSE(test, ovs_flowcell_decide(&f, 1448, SZ,
						     since + 2 * GAP,
						     GAP, since));
	KUNIT_EXPECT_TRUE(test, ovs_flowcell_decide(&f, 1448, SZ,
						    since + 3 * GAP + 1,
						    GAP, since));
	KUNIT_EXPECT_EQ(test, f.cell, 3U);
}

static struct kunit_case openvswitch_flowcell_cases[] = {
	KUNIT_CASE(flowcell_size_test),
	KUNIT_CASE(flowcell_exactly_at_size_test),
	KUNIT_CASE(flowcell_one_short_test),
	KUNIT_CASE(flowcell_tso_sizes_test),
	KUNIT_CASE(flowcell_large_skb_test),
	KUNIT_CASE(flowcell_hash_test),
	KUNIT_CASE(flowcell_id_wrap_test),
	KUNIT_CASE(flowcell_table_find_test),
	KUNIT_CASE(flowcell_seeded_start_test),
	KUNIT_CASE(flowcell_lru_eviction_test),
	KUNIT_CASE(flowcell_idle_expiry_test),
	KUNIT_CASE(flowcell_set_limits_test),
	KUNIT_CASE(flowcell_table_sizing_test),
	KUNIT_CASE(flowcell_rebuild_test),
	KUNIT_CASE(flowcell_port_limit_test),
	KUNIT_CASE(flowcell_port_isolation_test),
	KUNIT_CASE(flowcell_payload_test),
	KUNIT_CASE(flowcell_gap_boundary_test),
	KUNIT_CASE(flowcell_gap_ignores_size_test),
	KUNIT_CASE(flowcell_gap_wrap_test),
	KUNIT_CASE(flowcell_gap_off_test),
	KUNIT_CASE(flowcell_gap_find_test),
	KUNIT_CASE(flowcell_gap_since_test),
	{}
};

static struct kunit_suite openvswitch_flowcell_suite = {
	.name = "openvswitch_flowcell",
	.test_cases = openvswitch_flowcell_cases,
};

kunit_test_suite(openvswitch_flowcell_suite);

MODULE_DESCRIPTION("KUnit tests for Open vSwitch flowcells (Presto)");
MODULE_LICENSE("GPL");
