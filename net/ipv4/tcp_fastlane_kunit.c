// SPDX-License-Identifier: GPL-2.0-only
/* KUnit tests of FastLane's host side (include/net/tcp_fastlane.h): how
 * a notification's sequence range is judged against what the socket has
 * in flight, across sequence wraparound, the per-socket rate limit, and
 * the parsing of the timeout-count option out of untrusted options.
 */

#include <kunit/test.h>
#include <net/tcp_fastlane.h>

static void fastlane_range_in_flight(struct kunit *test)
{
	/* snd_una 1000, snd_nxt 10000 */
	KUNIT_EXPECT_EQ(test, tcp_fastlane_classify(1000, 2448, 1000, 10000),
			TCP_FASTLANE_IN_FLIGHT);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_classify(8552, 10000, 1000, 10000),
			TCP_FASTLANE_IN_FLIGHT);
	/* acknowledged already */
	KUNIT_EXPECT_EQ(test, tcp_fastlane_classify(0, 1000, 1000, 10000),
			TCP_FASTLANE_OUT_OF_WINDOW);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_classify(999, 2447, 1000, 10000),
			TCP_FASTLANE_OUT_OF_WINDOW);
	/* beyond snd_nxt: never sent, must never be resent */
	KUNIT_EXPECT_EQ(test, tcp_fastlane_classify(9000, 10001, 1000, 10000),
			TCP_FASTLANE_OUT_OF_WINDOW);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_classify(20000, 21448, 1000, 10000),
			TCP_FASTLANE_OUT_OF_WINDOW);
	/* a range that ends before it starts (a forged length) */
	KUNIT_EXPECT_EQ(test, tcp_fastlane_classify(5000, 4000, 1000, 10000),
			TCP_FASTLANE_OUT_OF_WINDOW);
}

static void fastlane_range_wraps(struct kunit *test)
{
	u32 una = 0xfffff000, nxt = 0x00001000;

	KUNIT_EXPECT_EQ(test, tcp_fastlane_classify(0xfffffa00, 0x00000050, una, nxt),
			TCP_FASTLANE_IN_FLIGHT);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_classify(0x00000800, 0x00000e00, una, nxt),
			TCP_FASTLANE_IN_FLIGHT);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_classify(0xffffe000, 0xfffff5a8, una, nxt),
			TCP_FASTLANE_OUT_OF_WINDOW);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_classify(0x00000800, 0x00001400, una, nxt),
			TCP_FASTLANE_OUT_OF_WINDOW);
}

static void fastlane_range_pure_ack(struct kunit *test)
{
	/* no data: a pure ACK we sent at snd_nxt (or earlier, at snd_una) */
	KUNIT_EXPECT_EQ(test, tcp_fastlane_classify(10000, 10000, 1000, 10000),
			TCP_FASTLANE_PURE_ACK);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_classify(1000, 1000, 1000, 10000),
			TCP_FASTLANE_PURE_ACK);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_classify(10001, 10001, 1000, 10000),
			TCP_FASTLANE_OUT_OF_WINDOW);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_classify(999, 999, 1000, 10000),
			TCP_FASTLANE_OUT_OF_WINDOW);
	/* an idle connection: snd_una == snd_nxt */
	KUNIT_EXPECT_EQ(test, tcp_fastlane_classify(5000, 5000, 5000, 5000),
			TCP_FASTLANE_PURE_ACK);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_classify(5000, 6448, 5000, 5000),
			TCP_FASTLANE_OUT_OF_WINDOW);
}

static void fastlane_rate_limit(struct kunit *test)
{
	/* cwnd 10: 2 * 10 + 16 = 36 notifications a round trip */
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_within_rate(0, 10));
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_within_rate(35, 10));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_within_rate(36, 10));
	/* a window of 1 still takes a burst */
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_within_rate(17, 1));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_within_rate(18, 1));
}

static void fastlane_required_options(struct kunit *test)
{
	/* a connection with timestamps and the timeout count: both needed */
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_opts_ok(true, true, true, true));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_opts_ok(false, true, true, true));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_opts_ok(true, true, false, true));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_opts_ok(false, true, false, true));
	/* without timestamps negotiated, none is needed (nor harmful) */
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_opts_ok(false, false, true, true));
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_opts_ok(true, false, true, true));
	/* a connection that does not send the count (FastLane off) */
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_opts_ok(true, true, false, false));
}

static void fastlane_recovery_hold(struct kunit *test)
{
	/* in the recovery notifications entered, below its high_seq */
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_hold(true, 9000, 9000, 5000));
	/* snd_una at high_seq: over, even if a Reno socket is still in
	 * CA_Recovery (tcp_try_undo_recovery())
	 */
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_hold(true, 9000, 9000, 9000));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_hold(true, 9000, 9000, 9001));
	/* another recovery, or none */
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_hold(true, 12000, 9000, 5000));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_hold(false, 9000, 9000, 5000));
	/* sequence numbers wrap */
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_hold(true, 100, 100, 0xfffffff0));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_hold(true, 100, 100, 100));
}

static void fastlane_timeout_option(struct kunit *test)
{
	/* NOP NOP TS(10) NOP NOP EXP(6) FA57 0003 */
	static const u8 ok[] = { 1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2,
				 1, 1, 254, 6, 0xfa, 0x57, 0, 3 };
	/* Fast Open's experimental option: another ExID */
	static const u8 other[] = { 254, 6, 0xf9, 0x89, 0, 3, 1, 1 };
	/* a length that runs past the options, and one below 2 */
	static const u8 past[] = { 1, 254, 9, 0xfa, 0x57, 0, 3 };
	static const u8 zero[] = { 8, 0, 254, 6, 0xfa, 0x57, 0, 3 };
	/* after an end-of-options */
	static const u8 eol[] = { 0, 0, 254, 6, 0xfa, 0x57, 0, 3 };
	u16 c = 0;

	KUNIT_EXPECT_TRUE(test, tcp_fastlane_parse_timeouts(ok, sizeof(ok), &c));
	KUNIT_EXPECT_EQ(test, c, 3);
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_parse_timeouts(other, sizeof(other), &c));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_parse_timeouts(past, sizeof(past), &c));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_parse_timeouts(zero, sizeof(zero), &c));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_parse_timeouts(eol, sizeof(eol), &c));
	/* truncated in the middle of the option */
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_parse_timeouts(ok, sizeof(ok) - 1, &c));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_parse_timeouts(ok, 0, &c));
}

static struct kunit_case fastlane_tcp_cases[] = {
	KUNIT_CASE(fastlane_timeout_option),
	KUNIT_CASE(fastlane_range_in_flight),
	KUNIT_CASE(fastlane_range_wraps),
	KUNIT_CASE(fastlane_range_pure_ack),
	KUNIT_CASE(fastlane_rate_limit),
	KUNIT_CASE(fastlane_required_options),
	KUNIT_CASE(fastlane_recovery_hold),
	{}
};

static struct kunit_suite fastlane_tcp_suite = {
	.name = "tcp_fastlane",
	.test_cases = fastlane_tcp_cases,
};

kunit_test_suite(fastlane_tcp_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit tests for FastLane in TCP");
