// SPDX-License-Identifier: GPL-2.0-only
/* KUnit tests of FastLane's host side (include/net/tcp_fastlane.h): how
 * a notification's sequence range is judged against what the socket has
 * in flight, across sequence wraparound, the per-socket rate limit, and
 * the parsing of the quoted timestamp out of untrusted options.
 */

#include <kunit/test.h>
#include <net/ip.h>
#include <net/ip6_checksum.h>
#include <net/ipv6.h>
#include <linux/string.h>
#include <linux/sysctl.h>
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
	/* FastLane requires timestamps: negotiated, and in the quote */
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_opts_ok(true, true));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_opts_ok(false, true));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_opts_ok(true, false));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_opts_ok(false, false));
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

/* The quoted TSval, out of untrusted options */
static void fastlane_quoted_tsval(struct kunit *test)
{
	/* NOP NOP TS(10) 00000001 00000002 */
	static const u8 ok[] = { 1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2 };
	/* MSS, SACK-permitted, TS, window scale (a SYN's) */
	static const u8 syn[] = { 2, 4, 5, 0xb4, 4, 2, 8, 10, 0xde, 0xad,
				  0xbe, 0xef, 0, 0, 0, 0, 1, 3, 3, 7 };
	/* an experimental option only */
	static const u8 other[] = { 254, 6, 0xf9, 0x89, 0, 3, 1, 1 };
	/* a length that runs past the options, one below 2, a wrong one */
	static const u8 past[] = { 1, 8, 11, 0, 0, 0, 1, 0, 0, 0, 2 };
	static const u8 zero[] = { 4, 0, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2 };
	static const u8 bad[] = { 8, 6, 0, 0, 0, 1, 1, 1 };
	/* after an end-of-options */
	static const u8 eol[] = { 0, 0, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2 };
	u32 v = 0;

	KUNIT_EXPECT_TRUE(test, tcp_fastlane_parse_tsval(ok, sizeof(ok), &v));
	KUNIT_EXPECT_EQ(test, v, 1);
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_parse_tsval(syn, sizeof(syn), &v));
	KUNIT_EXPECT_EQ(test, v, 0xdeadbeef);
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_parse_tsval(other, sizeof(other), &v));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_parse_tsval(past, sizeof(past), &v));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_parse_tsval(zero, sizeof(zero), &v));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_parse_tsval(bad, sizeof(bad), &v));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_parse_tsval(eol, sizeof(eol), &v));
	/* truncated in the middle of the option */
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_parse_tsval(ok, sizeof(ok) - 1, &v));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_parse_tsval(ok, 0, &v));
}

/* Algorithm 1, its list walked in order of sequence as
 * tcp_xmit_retransmit_queue() walks the lost skbs: how many of @n notified
 * one-segment entries go, with @sim_retx in flight already
 */
static u32 bound_pass(u32 cwnd_entry, u32 max_retx, u32 sim_retx, int n)
{
	u32 bound = tcp_fastlane_bound_sim(cwnd_entry, max_retx), sent = 0;
	int i, k;

	for (i = 0; i < n; i++) {
		k = tcp_fastlane_retx_allowance(sim_retx, bound, i == 0, 1);
		if (!k)
			break;
		sim_retx += k;
		sent += k;
	}
	return sent;
}

static void fastlane_bound_sim(struct kunit *test)
{
	/* a window of 10 at entry: alpha 5 */
	KUNIT_EXPECT_EQ(test, tcp_fastlane_bound_sim(10, 1), 5);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_bound_sim(10, 0), 5);
	/* a retransmission dropped again: the bound halves (2.5: sim_retx
	 * 0, 1 and 2 are below it), then thirds (1.67)
	 */
	KUNIT_EXPECT_EQ(test, tcp_fastlane_bound_sim(10, 2), 3);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_bound_sim(10, 3), 2);
	/* 0.33: above no sim_retx but 0, so one resend still goes */
	KUNIT_EXPECT_EQ(test, tcp_fastlane_bound_sim(10, 15), 1);
	/* an odd window: alpha 3.5, no half segment lost */
	KUNIT_EXPECT_EQ(test, tcp_fastlane_bound_sim(7, 1), 4);
	/* a small window (alpha 1, or 0.5) and a resend dropped again:
	 * 0.5 or 0.25, still one resend in flight, as the paper's
	 * sim_retx < bound_sim allows (a floor made it 0: a notified
	 * segment above snd_una then waited for an ACK, at worst the
	 * receiver's delayed one)
	 */
	KUNIT_EXPECT_EQ(test, tcp_fastlane_bound_sim(2, 2), 1);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_bound_sim(1, 2), 1);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_retx_allowance(0, tcp_fastlane_bound_sim(2, 2),
							  false, 1), 1);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_retx_allowance(1, tcp_fastlane_bound_sim(2, 2),
							  false, 1), 0);
	/* ten notified at once: five go, lowest first */
	KUNIT_EXPECT_EQ(test, bound_pass(10, 1, 0, 10), 5);
	/* fewer notified than the bound: all */
	KUNIT_EXPECT_EQ(test, bound_pass(10, 1, 0, 3), 3);
	/* three in flight already: two more */
	KUNIT_EXPECT_EQ(test, bound_pass(10, 1, 3, 10), 2);
	/* the bound reached: only the lowest sequence, one segment */
	KUNIT_EXPECT_EQ(test, bound_pass(10, 1, 5, 10), 1);
	KUNIT_EXPECT_EQ(test, bound_pass(10, 15, 0, 10), 1);
	KUNIT_EXPECT_EQ(test, bound_pass(10, 15, 1, 10), 1);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_retx_allowance(9, 5, false, 4), 0);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_retx_allowance(9, 5, true, 4), 1);
	/* a multi-segment skb: what is left of the bound, within the window */
	KUNIT_EXPECT_EQ(test, tcp_fastlane_retx_allowance(1, 5, false, 10), 4);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_retx_allowance(1, 5, false, 2), 2);
	/* no room in the window: nothing, not even the lowest */
	KUNIT_EXPECT_EQ(test, tcp_fastlane_retx_allowance(0, 5, true, 0), 0);
	/* the pair: a held segment goes with a lone resend in flight, not
	 * beside new data or a second resend, nor when nothing is in flight
	 * (the bound or the lowest rule decide that)
	 */
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_pairs(1, 1));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_pairs(1, 0));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_pairs(2, 1));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_pairs(2, 2));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_pairs(0, 0));
}

/* the data-notification handler's decision
 * (tcp_fastlane_data()), from a valid notification for a segment in
 * flight, one thing changed at a time
 */
static struct tcp_fastlane_data_state data_ok(void)
{
	return (struct tcp_fastlane_data_state){
		.nf_tsval = 1000, .skb_tsval = 1000,
		.rate_count = 0, .cwnd = 10,
		.sacked = 0, .ca_state = TCP_CA_Open,
		.has_ts = true, .ts_ok = true,
		.found = true,
	};
}

/* a pure ACK's notification: a quoted timestamp within the last
 * @window ticks (wrapping included)
 */
static void fastlane_ack_verdict(struct kunit *test)
{
	struct tcp_fastlane_data_state s = data_ok();
	const u32 win = 1000;

	KUNIT_EXPECT_EQ(test, tcp_fastlane_ack_verdict(&s, 1000, win), TCP_FASTLANE_DATA_TAKE);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_ack_verdict(&s, 2000, win), TCP_FASTLANE_DATA_TAKE);
	/* older than the window, or from the future */
	KUNIT_EXPECT_EQ(test, tcp_fastlane_ack_verdict(&s, 2001, win), TCP_FASTLANE_DATA_STALE_TS);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_ack_verdict(&s, 999, win), TCP_FASTLANE_DATA_STALE_TS);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_ack_verdict(&s, 1000 + (1U << 31), win),
			TCP_FASTLANE_DATA_STALE_TS);
	/* the clock wrapped since */
	s.nf_tsval = U32_MAX - 10;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_ack_verdict(&s, 100, win), TCP_FASTLANE_DATA_TAKE);
	s.nf_tsval = 1000;
	/* the timestamp left out: refused before the budget */
	s.has_ts = false;
	s.rate_count = 1000;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_ack_verdict(&s, 1000, win), TCP_FASTLANE_DATA_BADOPTS);
	s.has_ts = true;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_ack_verdict(&s, 1000, win),
			TCP_FASTLANE_DATA_RATELIMITED);
	/* a connection without timestamps: refused, whatever the quote */
	s.rate_count = 0;
	s.ts_ok = false;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_ack_verdict(&s, 1000, win), TCP_FASTLANE_DATA_NOTS);
	s.has_ts = false;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_ack_verdict(&s, 5000, win), TCP_FASTLANE_DATA_NOTS);
}

/* A notification names one wire segment of an skb: MSS-aligned, one MSS
 * or the rest of the skb, never a split at any byte
 */
static void fastlane_one_segment(struct kunit *test)
{
	/* a TSO skb of 3 segments of 1440 and 500 bytes: [S, S + 3380) */
	const u32 S = 0xfffff000, end = S + 2 * 1440 + 500, mss = 1440;

	KUNIT_EXPECT_TRUE(test, tcp_fastlane_one_segment(S, end, mss, S, S + 1440));
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_one_segment(S, end, mss, S + 1440,
							 S + 2880));
	/* the last, short segment; the whole skb (sent as one, by TSO) */
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_one_segment(S, end, mss, S + 2880, end));
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_one_segment(S, end, mss, S, end));
	/* the rest of the skb from an aligned offset */
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_one_segment(S, end, mss, S + 1440, end));
	/* any byte: refused */
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_one_segment(S, end, mss, S + 1, S + 1441));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_one_segment(S, end, mss, S + 100, S + 101));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_one_segment(S, end, mss, S, S + 1));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_one_segment(S, end, mss, S, S + 1439));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_one_segment(S, end, mss, S, S + 1441));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_one_segment(S, end, mss, S + 2880, end - 1));
	/* beyond the skb, or before it */
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_one_segment(S, end, mss, S + 2880, end + 1));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_one_segment(S, end, mss, S - 1440, S));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_one_segment(S, end, mss, end, end + 1440));
	/* a one-segment skb (no MSS recorded): only all of it */
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_one_segment(S, S + 700, 0, S, S + 700));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_one_segment(S, S + 700, 0, S, S + 350));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_one_segment(S, S + 700, 0, S + 350, S + 700));
	/* with its FIN: the segment's bytes and the FIN */
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_one_segment(S, S + 701, 0, S, S + 701));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_one_segment(S, S + 701, 0, S, S + 700));
	/* a full last segment and a FIN: one MSS and one */
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_one_segment(S, S + 2881, mss, S + 1440,
							 S + 2881));
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_one_segment(S, S + 2881, mss, S, S + 1440));
	/* a FIN alone */
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_one_segment(S, S + 1, 0, S, S + 1));
}

/* The quoted ACK field: the connection's rcv_nxt when it sent the
 * segment, so within the window below rcv_nxt now (wraps included)
 */
static void fastlane_ack_field(struct kunit *test)
{
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_ack_ok(1000, 1000, 65535));
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_ack_ok(1000 - 65535, 1000, 65535));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_ack_ok(1000 - 65536, 1000, 65535));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_ack_ok(1001, 1000, 65535));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_ack_ok(1000 + (1U << 30), 1000, 65535));
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_ack_ok(U32_MAX - 10, 20, 65535));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_ack_ok(30, U32_MAX - 10, 65535));
}

static void fastlane_data_verdict(struct kunit *test)
{
	struct tcp_fastlane_data_state s = data_ok();

	KUNIT_EXPECT_EQ(test, tcp_fastlane_data_verdict(&s), TCP_FASTLANE_DATA_TAKE);
	/* a recovery already under way (SACK, RACK, notifications): joined */
	s.ca_state = TCP_CA_Recovery;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_data_verdict(&s), TCP_FASTLANE_DATA_TAKE);
	/* a timeout's recovery owns the queue */
	s.ca_state = TCP_CA_Loss;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_data_verdict(&s), TCP_FASTLANE_DATA_STALE);

	/* the quote without its timestamp: refused, before all else */
	s = data_ok();
	s.has_ts = false;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_data_verdict(&s), TCP_FASTLANE_DATA_BADOPTS);
	s.found = false;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_data_verdict(&s), TCP_FASTLANE_DATA_BADOPTS);
	/* a connection without timestamps cannot tell which transmission
	 * was dropped: refused, with or without one in the quote
	 */
	s = data_ok();
	s.ts_ok = false;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_data_verdict(&s), TCP_FASTLANE_DATA_NOTS);
	s.has_ts = false;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_data_verdict(&s), TCP_FASTLANE_DATA_NOTS);
	/* a notification of the resend itself is taken */
	s = data_ok();
	s.sacked = TCPCB_SACKED_RETRANS | TCPCB_LOST;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_data_verdict(&s), TCP_FASTLANE_DATA_TAKE);

	/* stale: gone from the queue, SACKed; stale by timestamp: resent
	 * since, sent before a timeout (its TSval is not the last
	 * transmission's: everything sent before a timeout is resent, or
	 * acknowledged by the time CA_Loss ends)
	 */
	s = data_ok();
	s.found = false;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_data_verdict(&s), TCP_FASTLANE_DATA_STALE);
	s = data_ok();
	s.sacked = TCPCB_SACKED_ACKED;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_data_verdict(&s), TCP_FASTLANE_DATA_STALE);
	s = data_ok();
	s.skb_tsval = 1001;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_data_verdict(&s), TCP_FASTLANE_DATA_STALE_TS);
	s.nf_tsval = 1002;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_data_verdict(&s), TCP_FASTLANE_DATA_STALE_TS);
	/* a transmission already notified: a copy or a replay, taken once
	 * (over the rate cap too: it marks nothing twice)
	 */
	s = data_ok();
	s.noted = true;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_data_verdict(&s), TCP_FASTLANE_DATA_STALE);
	s.rate_count = 1000;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_data_verdict(&s), TCP_FASTLANE_DATA_STALE);
	s.noted = false;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_data_verdict(&s), TCP_FASTLANE_DATA_RATELIMITED);

	/* not one segment of its skb: a bad sequence, not rate-limited */
	s = data_ok();
	s.misaligned = true;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_data_verdict(&s), TCP_FASTLANE_DATA_BADSEQ);
	s.rate_count = 2 * 10 + TCP_FASTLANE_BURST;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_data_verdict(&s), TCP_FASTLANE_DATA_BADSEQ);
	s.skb_tsval++;		/* stale first */
	KUNIT_EXPECT_EQ(test, tcp_fastlane_data_verdict(&s), TCP_FASTLANE_DATA_STALE_TS);

	/* the rate limit: 2 * cwnd + 16 per round trip, after every check */
	s = data_ok();
	s.rate_count = 2 * 10 + TCP_FASTLANE_BURST - 1;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_data_verdict(&s), TCP_FASTLANE_DATA_TAKE);
	s.rate_count++;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_data_verdict(&s), TCP_FASTLANE_DATA_RATELIMITED);
	s.skb_tsval++;		/* a stale one does not count as rate-limited */
	KUNIT_EXPECT_EQ(test, tcp_fastlane_data_verdict(&s), TCP_FASTLANE_DATA_STALE_TS);

	/* after the pass: resent within bound_sim; held beyond it, unless it
	 * is the lowest sequence; delivered meanwhile: nothing to do
	 */
	KUNIT_EXPECT_EQ(test, tcp_fastlane_after_pass(true, false, true),
			TCP_FASTLANE_AFTER_RESENT);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_after_pass(true, true, true),
			TCP_FASTLANE_AFTER_RESENT);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_after_pass(true, false, false),
			TCP_FASTLANE_AFTER_HELD);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_after_pass(true, true, false),
			TCP_FASTLANE_AFTER_SEND_LOWEST);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_after_pass(false, true, false),
			TCP_FASTLANE_AFTER_GONE);
}

/* A whole handled notification, as tcp_fastlane_act() and
 * tcp_fastlane_data() decide it: the range, then the verdict; for one
 * taken, the pass over ten notified segments at once with bound_sim 5
 * (the window at entry 10): which of them go now and which are held
 */
static void fastlane_data_handler_bound(struct kunit *test)
{
	struct tcp_fastlane_data_state s = data_ok();
	u32 snd_una = 0xfffff000, mss = 1000, i, sim_retx = 0, sent = 0;
	u32 bound = tcp_fastlane_bound_sim(10, 1);

	for (i = 0; i < 10; i++) {
		u32 seq = snd_una + i * mss;
		int n;

		KUNIT_EXPECT_EQ(test, tcp_fastlane_classify(seq, seq + mss, snd_una,
							    snd_una + 10 * mss),
				TCP_FASTLANE_IN_FLIGHT);
		s.rate_count = i;
		KUNIT_ASSERT_EQ(test, tcp_fastlane_data_verdict(&s), TCP_FASTLANE_DATA_TAKE);
		n = tcp_fastlane_retx_allowance(sim_retx, bound, i == 0, 1);
		sim_retx += n;
		sent += n;
		KUNIT_EXPECT_EQ(test, tcp_fastlane_after_pass(true, i == 0, n > 0),
				i < 5 ? TCP_FASTLANE_AFTER_RESENT : TCP_FASTLANE_AFTER_HELD);
	}
	KUNIT_EXPECT_EQ(test, sent, 5);
	/* beyond snd_nxt: never data to resend */
	KUNIT_EXPECT_EQ(test, tcp_fastlane_classify(snd_una + 10 * mss, snd_una + 11 * mss,
						    snd_una, snd_una + 10 * mss),
			TCP_FASTLANE_OUT_OF_WINDOW);
}

/* which notifications a socket's state sends where */
static void fastlane_state_kind(struct kunit *test)
{
	/* our SYN, with or without data (Fast Open client) */
	KUNIT_EXPECT_EQ(test, tcp_fastlane_kind(TCP_SYN_SENT, false, true),
			TCP_FASTLANE_KIND_SYN);
	/* a Fast Open child's SYN-ACK: resent by its request, also when the
	 * child was closed before the handshake completed
	 */
	KUNIT_EXPECT_EQ(test, tcp_fastlane_kind(TCP_SYN_RECV, true, true),
			TCP_FASTLANE_KIND_FASTOPEN_SYNACK);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_kind(TCP_FIN_WAIT1, true, true),
			TCP_FASTLANE_KIND_FASTOPEN_SYNACK);
	/* ... its data (and FIN, ACKs), by their range */
	KUNIT_EXPECT_EQ(test, tcp_fastlane_kind(TCP_SYN_RECV, true, false),
			TCP_FASTLANE_KIND_SEQ);
	/* SYN_RECV without Fast Open: nothing in flight yet */
	KUNIT_EXPECT_EQ(test, tcp_fastlane_kind(TCP_SYN_RECV, false, true),
			TCP_FASTLANE_KIND_STALE);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_kind(TCP_SYN_RECV, false, false),
			TCP_FASTLANE_KIND_STALE);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_kind(TCP_CLOSE, false, false),
			TCP_FASTLANE_KIND_STALE);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_kind(TCP_LISTEN, false, true),
			TCP_FASTLANE_KIND_STALE);
	/* a SYN notification for an established socket: its range decides
	 * (out of window)
	 */
	KUNIT_EXPECT_EQ(test, tcp_fastlane_kind(TCP_ESTABLISHED, false, true),
			TCP_FASTLANE_KIND_SEQ);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_kind(TCP_CLOSE_WAIT, false, false),
			TCP_FASTLANE_KIND_SEQ);
	KUNIT_EXPECT_EQ(test, tcp_fastlane_kind(TCP_LAST_ACK, false, false),
			TCP_FASTLANE_KIND_SEQ);
}

/* A notification over the rate cap leaves its segment marked lost; the
 * pacing timer's tcp_tsq_write() resends the lowest sequence only if the
 * notifications named it, it is still lost and not resent since, in the
 * recovery they drive, with no timeout since
 */
static void fastlane_deferred_resend(struct kunit *test)
{
	struct tcp_fastlane_data_state s = data_ok();

	/* over the cap: the verdict the handler marks lost and defers */
	s.rate_count = 2 * s.cwnd + TCP_FASTLANE_BURST;
	KUNIT_EXPECT_EQ(test, tcp_fastlane_data_verdict(&s), TCP_FASTLANE_DATA_RATELIMITED);
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_deferred_resend(true, true, true, false, true));
	/* a stock loss (no notification), or not lost (delivered or never
	 * marked): left to the window
	 */
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_deferred_resend(true, false, true, false, true));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_deferred_resend(true, true, false, false, true));
	/* resent since (ACKs, RACK, a notification within the next cap) */
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_deferred_resend(true, true, true, true, true));
	/* the recovery ended, or a timeout took over */
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_deferred_resend(false, true, true, false, true));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_deferred_resend(true, true, true, false, false));
	/* and the resend counts against the next round trip's cap: at the
	 * cap it waits again
	 */
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_within_rate(2 * 10 + TCP_FASTLANE_BURST, 10));
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_within_rate(0, 10));
}

static void fastlane_tail_push(struct kunit *test)
{
	/* the recovery's last retransmission is the tail, new data held */
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_tail_pushes(true, true, true, true, 1, 1));
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_tail_pushes(true, true, true, true, 3, 3));
	/* more lost segments to resend: not the last retransmission */
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_tail_pushes(true, true, true, true, 2, 1));
	/* no hold (the recovery is over), or nothing held */
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_tail_pushes(false, true, true, true, 1, 1));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_tail_pushes(true, false, true, true, 1, 1));
	/* the tail is no notified segment (a pushed one, or a segment after
	 * the loss still in flight), or it is not resent
	 */
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_tail_pushes(true, true, false, true, 1, 1));
	KUNIT_EXPECT_FALSE(test, tcp_fastlane_tail_pushes(true, true, true, false, 1, 0));
}

/* Write @v to a namespace's net.ipv4.tcp_fastlane (@knob) through the
 * sysctl's handler, as a write to /proc/sys would
 */
static int fastlane_knob_write(u8 *knob, const char *v)
{
	struct ctl_table t = {
		.procname	= "tcp_fastlane",
		.data		= knob,
		.maxlen		= sizeof(u8),
		.mode		= 0644,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	};
	char buf[4];
	size_t len = strscpy(buf, v, sizeof(buf));
	loff_t pos = 0;

	return proc_tcp_fastlane(&t, 1, buf, &len, &pos);
}

/* The hooks' static key counts the namespaces with the knob on: a
 * reference per namespace that turns it on, none for writing the same
 * value again, dropped when it turns it off (the last one after HZ)
 */
static void fastlane_static_key_counts(struct kunit *test)
{
	struct static_key *key = &tcp_fastlane_needed.key.key;
	u8 a = 0, b = 0;
	int base;

	flush_delayed_work(&tcp_fastlane_needed.work);
	base = static_key_count(key);
	KUNIT_ASSERT_EQ(test, fastlane_knob_write(&a, "1"), 0);
	KUNIT_EXPECT_EQ(test, a, 1);
	KUNIT_EXPECT_TRUE(test, tcp_fastlane_active());
	KUNIT_EXPECT_EQ(test, static_key_count(key), base + 1);
	KUNIT_ASSERT_EQ(test, fastlane_knob_write(&a, "1"), 0);
	KUNIT_EXPECT_EQ(test, static_key_count(key), base + 1);
	KUNIT_ASSERT_EQ(test, fastlane_knob_write(&b, "1"), 0);
	KUNIT_EXPECT_EQ(test, static_key_count(key), base + 2);
	/* out of range: refused, nothing counted */
	KUNIT_EXPECT_EQ(test, fastlane_knob_write(&b, "2"), -EINVAL);
	KUNIT_EXPECT_EQ(test, static_key_count(key), base + 2);
	KUNIT_ASSERT_EQ(test, fastlane_knob_write(&a, "0"), 0);
	KUNIT_ASSERT_EQ(test, fastlane_knob_write(&a, "0"), 0);
	KUNIT_EXPECT_EQ(test, static_key_count(key), base + 1);
	KUNIT_ASSERT_EQ(test, fastlane_knob_write(&b, "0"), 0);
	flush_delayed_work(&tcp_fastlane_needed.work);
	KUNIT_EXPECT_EQ(test, static_key_count(key), base);
	if (!base)
		KUNIT_EXPECT_FALSE(test, tcp_fastlane_active());
}

static struct kunit_case fastlane_tcp_cases[] = {
	KUNIT_CASE(fastlane_tail_push),
	KUNIT_CASE(fastlane_deferred_resend),
	KUNIT_CASE(fastlane_one_segment),
	KUNIT_CASE(fastlane_data_verdict),
	KUNIT_CASE(fastlane_ack_field),
	KUNIT_CASE(fastlane_ack_verdict),
	KUNIT_CASE(fastlane_data_handler_bound),
	KUNIT_CASE(fastlane_state_kind),
	KUNIT_CASE(fastlane_bound_sim),
	KUNIT_CASE(fastlane_quoted_tsval),
	KUNIT_CASE(fastlane_range_in_flight),
	KUNIT_CASE(fastlane_range_wraps),
	KUNIT_CASE(fastlane_range_pure_ack),
	KUNIT_CASE(fastlane_rate_limit),
	KUNIT_CASE(fastlane_required_options),
	KUNIT_CASE(fastlane_recovery_hold),
	KUNIT_CASE(fastlane_static_key_counts),
	{}
};

static struct kunit_suite fastlane_tcp_suite = {
	.name = "tcp_fastlane",
	.test_cases = fastlane_tcp_cases,
};

kunit_test_suite(fastlane_tcp_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit tests for FastLane in TCP");
