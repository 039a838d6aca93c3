// SPDX-License-Identifier: GPL-2.0-only
/* KUnit tests of FastLane's host side (include/net/tcp_fastlane.h): how
 * a notification's sequence range is judged against what the socket has
 * in flight, across sequence wraparound, and the per-socket rate limit.
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

static struct kunit_case fastlane_tcp_cases[] = {
	KUNIT_CASE(fastlane_range_in_flight),
	KUNIT_CASE(fastlane_range_wraps),
	KUNIT_CASE(fastlane_range_pure_ack),
	KUNIT_CASE(fastlane_rate_limit),
	{}
};

static struct kunit_suite fastlane_tcp_suite = {
	.name = "tcp_fastlane",
	.test_cases = fastlane_tcp_cases,
};

kunit_test_suite(fastlane_tcp_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit tests for FastLane in TCP");
