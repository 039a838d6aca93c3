/* SPDX-License-Identifier: GPL-2.0-only */
/* FastLane switch ports (CONFIG_NET_SCH_FASTLANE).
 *
 * Zats et al., "FastLane: Making Short Flows Shorter with Agile Drop
 * Notification", SoCC 2015, Sec. 3.2: a switch port that must drop a TCP
 * packet tells its source instead, with an ICMP error of an experimental
 * type quoting the packet's IP and TCP headers (include/net/fastlane.h)
 * and carrying the FastLane codepoint.  Notifications travel at strict
 * priority, within 1% of a port's rate and 2.5% of its buffer.
 *
 * These are the pure parts: the notification token bucket, with no
 * locking (sch_fastlane_kunit.c tests it and the skb transform exported
 * to it).
 */
#ifndef _NET_SCHED_SCH_FASTLANE_H
#define _NET_SCHED_SCH_FASTLANE_H

#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/skbuff.h>
#include <net/dsfield.h>
#include <net/fastlane.h>
#include <net/inet_ecn.h>

/* Defaults: a shallow switch port of 128 KB, notifications within 2.5%
 * of it (3276 bytes) and 1% of the port's rate.
 */
#define FASTLANE_DEFAULT_LIMIT		(128 * 1024)
#define FASTLANE_NF_LIMIT_PERMILLE	25
#define FASTLANE_NF_RATE_PERCENT	1
/* The codepoint notifications carry unless configured otherwise */
#define FASTLANE_DEFAULT_DSCP		0x2d
/* RFC 792: a Source Quench quotes the IP header and 64 bits of the data */
#define FASTLANE_QUENCH_DATA		8

/* Token bucket of a port's notifications, in bytes.  @rate is in bytes
 * per second (0: no cap), @burst the most it may save up.
 */
struct fastlane_tb {
	s64	tokens;
	u64	t_last;
};

static inline void fastlane_tb_refill(struct fastlane_tb *tb, u64 now_ns,
				      u64 rate, u32 burst)
{
	u64 dt = now_ns - tb->t_last, add;

	tb->t_last = now_ns;
	if (!rate)
		return;
	if (tb->tokens >= burst) {
		tb->tokens = burst;
		return;
	}
	/* At most a second's worth, so that the quotient is at most @rate.
	 * rate * dt itself overflows u64 above 1.8e10 bytes/s (148 Gbit/s)
	 * for dt = 1 s: a 128-bit product (mul_u64_u64_div_u64()).
	 */
	dt = min_t(u64, dt, NSEC_PER_SEC);
	add = mul_u64_u64_div_u64(rate, dt, NSEC_PER_SEC);
	if (add >= burst - tb->tokens)
		tb->tokens = burst;
	else
		tb->tokens += add;
}

/* May a notification of @len bytes leave now, within the cap? */
static inline bool fastlane_tb_conforms(const struct fastlane_tb *tb,
					u64 rate, unsigned int len)
{
	return !rate || tb->tokens >= len;
}

static inline void fastlane_tb_charge(struct fastlane_tb *tb, u64 rate,
				      unsigned int len)
{
	if (rate)
		tb->tokens -= len;
}

/* May a notification of @len bytes join the @pending_bytes of those built
 * at a port and waiting to be sent (by its BH work)?  They are bounded by
 * the port's buffer, @limit bytes, for memory only: a notification that
 * is not handed off is a drop only the sender's RTO repairs, the very
 * timeout FastLane exists to avoid (1638 notifications of 80 bytes at a
 * 128 KB port; far more than a burst makes before the work runs).
 */
static inline bool fastlane_pending_admit(u32 pending_bytes, unsigned int len,
					  u32 limit)
{
	return len <= limit && pending_bytes <= limit - len;
}

#if IS_ENABLED(CONFIG_KUNIT)
/* sch_fastlane.c, exported to its KUnit tests only */
struct sk_buff *fastlane_notification(const struct sk_buff *skb, u8 dscp,
				      bool l2);
void fastlane_finish(struct sk_buff *nskb, const void *saddr);
bool fastlane_is_notification(const struct sk_buff *skb, u8 dscp);
struct sk_buff *fastlane_quench(const struct sk_buff *skb, bool l2);
#endif

#endif /* _NET_SCHED_SCH_FASTLANE_H */
