// SPDX-License-Identifier: GPL-2.0-only
/* KUnit tests of the pure parts of HTB's congestion signals
 * (sch_htb_ecn.h): the threshold decision, the receive window a flow is
 * held to, its encoding in a scaled 16-bit window field, and the parsing
 * of the window scale option out of untrusted TCP options.
 */

#include <kunit/test.h>
#include "sch_htb_ecn.h"

static void htb_ecn_threshold(struct kunit *test)
{
	KUNIT_EXPECT_FALSE(test, htb_ecn_over(0, 30000));
	KUNIT_EXPECT_FALSE(test, htb_ecn_over(30000, 30000));
	KUNIT_EXPECT_TRUE(test, htb_ecn_over(30001, 30000));
	/* no threshold: never */
	KUNIT_EXPECT_FALSE(test, htb_ecn_over(U32_MAX, 0));
}

static void htb_ecn_rwnd_scales_to_threshold(struct kunit *test)
{
	/* at or below K: no limit */
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd(100000, 30000, 30000, 1448), U32_MAX);
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd(100000, 30000, 0, 1448), U32_MAX);
	/* twice K: half the window in flight */
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd(100000, 30000, 60000, 1448), 50000U);
	/* 4x K: a quarter */
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd(80000, 25000, 100000, 1448), 20000U);
	/* never below two segments, not even with nothing in flight */
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd(4000, 1000, 1000000, 1448), 2896U);
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd(0, 1000, 2000, 1448), 2896U);
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd(0, 1000, 2000, 0), 2U);
	/* no overflow: 4 GB in flight, backlog just over K */
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd(U32_MAX, U32_MAX - 1, U32_MAX, 1448),
			U32_MAX - 1);
}

static void htb_ecn_rwnd_monotone(struct kunit *test)
{
	u32 backlog, prev = U32_MAX;

	/* more backlog never gives a larger window */
	for (backlog = 30001; backlog < 3000000; backlog += 997) {
		u32 w = htb_ecn_rwnd(500000, 30000, backlog, 1448);

		KUNIT_EXPECT_LE(test, w, prev);
		KUNIT_EXPECT_GE(test, w, 2896U);
		prev = w;
	}
}

/* rwnd's memory: cut above the threshold, never raised there, grown by
 * about a segment per window below it, let go at the receiver's window
 */
static void htb_ecn_rwnd_held(struct kunit *test)
{
	const u32 mss = 1448, k = 15000, peer = 1 << 20;
	u32 w, i;

	/* not held, not over: nothing */
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd_update(0, 60000, 0, k, k, mss, peer), 0U);
	/* over: the share of a backlog of k */
	w = htb_ecn_rwnd_update(0, 60000, 0, k, 60000, mss, peer);
	KUNIT_EXPECT_EQ(test, w, k);
	/* still over, with a larger share: not raised */
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd_update(w, 60000, 0, k, 30000, mss, peer), w);
	/* deeper over: lowered, never below two segments */
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd_update(w, 3000, 0, k, 60000, mss, peer), 2 * mss);
	/* below: a window's worth of ACKs grows it by about one segment */
	for (i = 0; i < k / mss; i++)
		w = htb_ecn_rwnd_update(w, w, mss, k, 0, mss, peer);
	KUNIT_EXPECT_GE(test, w, k + mss - mss / 4);
	KUNIT_EXPECT_LE(test, w, k + mss);
	/* an ACK of nothing still moves it, by a byte */
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd_update(w, w, 0, k, 0, mss, peer), w + 1);
	/* grown to the receiver's window: let go */
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd_update(peer - 1, 0, mss, k, 0, mss, peer), 0U);
}

static void htb_ecn_window_field_encoding(struct kunit *test)
{
	/* unscaled */
	KUNIT_EXPECT_EQ(test, htb_ecn_window_field(65535, 20000, 0), 20000);
	/* rounds up: never advertises less than asked */
	KUNIT_EXPECT_EQ(test, htb_ecn_window_field(65535, 20001, 7), 157);
	KUNIT_EXPECT_EQ(test, htb_ecn_window_field(65535, 20096, 7), 157);
	/* never raises what the receiver advertised */
	KUNIT_EXPECT_EQ(test, htb_ecn_window_field(100, 20000, 7), 100);
	KUNIT_EXPECT_EQ(test, htb_ecn_window_field(100, U32_MAX, 14), 100);
	/* never a zero window, even for a zero request */
	KUNIT_EXPECT_EQ(test, htb_ecn_window_field(65535, 0, 7), 1);
	/* saturates at 16 bits */
	KUNIT_EXPECT_EQ(test, htb_ecn_window_field(65535, U32_MAX, 0), 65535);
	/* scale beyond RFC 7323's 14 is treated as 14 */
	KUNIT_EXPECT_EQ(test, htb_ecn_window_field(65535, 1 << 20, 20), 64);
	/* a zero window from the receiver stays zero */
	KUNIT_EXPECT_EQ(test, htb_ecn_window_field(0, 20000, 7), 0);
}

static void htb_ecn_wscale_option(struct kunit *test)
{
	/* mss, sackOK, ts, nop, wscale 7: what Linux sends on a SYN */
	static const u8 linux_syn[] = {
		2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7,
	};
	static const u8 no_ws[] = { 2, 4, 0x05, 0xb4, 1, 1, 4, 2 };
	static const u8 big_ws[] = { 3, 3, 30 };
	static const u8 eol_first[] = { 0, 3, 3, 7 };
	static const u8 bad_len0[] = { 8, 0, 3, 3, 7 };
	static const u8 bad_len1[] = { 8, 1, 3, 3, 7 };
	static const u8 overrun[] = { 2, 4, 0x05, 0xb4, 3, 3 };
	static const u8 ws_wrong_len[] = { 3, 4, 7, 0 };
	static const u8 lone_kind[] = { 1, 1, 1, 3 };

	KUNIT_EXPECT_EQ(test, htb_ecn_parse_wscale(linux_syn, sizeof(linux_syn)), 7);
	KUNIT_EXPECT_EQ(test, htb_ecn_parse_wscale(no_ws, sizeof(no_ws)), -1);
	KUNIT_EXPECT_EQ(test, htb_ecn_parse_wscale(big_ws, sizeof(big_ws)), 14);
	KUNIT_EXPECT_EQ(test, htb_ecn_parse_wscale(eol_first, sizeof(eol_first)), -1);
	KUNIT_EXPECT_EQ(test, htb_ecn_parse_wscale(bad_len0, sizeof(bad_len0)), -1);
	KUNIT_EXPECT_EQ(test, htb_ecn_parse_wscale(bad_len1, sizeof(bad_len1)), -1);
	KUNIT_EXPECT_EQ(test, htb_ecn_parse_wscale(overrun, sizeof(overrun)), -1);
	KUNIT_EXPECT_EQ(test, htb_ecn_parse_wscale(ws_wrong_len, sizeof(ws_wrong_len)), -1);
	KUNIT_EXPECT_EQ(test, htb_ecn_parse_wscale(lone_kind, sizeof(lone_kind)), -1);
	KUNIT_EXPECT_EQ(test, htb_ecn_parse_wscale(linux_syn, 0), -1);
}

static struct kunit_case htb_ecn_test_cases[] = {
	KUNIT_CASE(htb_ecn_threshold),
	KUNIT_CASE(htb_ecn_rwnd_scales_to_threshold),
	KUNIT_CASE(htb_ecn_rwnd_monotone),
	KUNIT_CASE(htb_ecn_rwnd_held),
	KUNIT_CASE(htb_ecn_window_field_encoding),
	KUNIT_CASE(htb_ecn_wscale_option),
	{}
};

static struct kunit_suite htb_ecn_test_suite = {
	.name = "sch_htb_ecn",
	.test_cases = htb_ecn_test_cases,
};

kunit_test_suite(htb_ecn_test_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit tests for HTB congestion signals");
