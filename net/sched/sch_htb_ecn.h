/* SPDX-License-Identifier: GPL-2.0-only */
/* Congestion signals of HTB rate limiters (CONFIG_NET_SCH_HTB_ECN).
 *
 * Kumar et al., "Low Latency Software Rate Limiters for Cloud Networks",
 * APNet 2017: a rate limiter adds milliseconds of queueing unless it
 * tells the sender.  A leaf class whose backlog exceeds a threshold K
 * signals congestion in one of three ways:
 *
 *  - ce:   CE-mark ECN-capable packets as they are enqueued (the paper's
 *          strawman; one RTT of feedback delay, TSO packets marked whole);
 *  - ece:  set ECE on the reverse-path ACKs of the class's flows as they
 *          arrive on the same device, so that the sender hears of the
 *          backlog within microseconds;
 *  - rwnd: lower the receive window in those ACKs to the flow's share of
 *          a backlog of K, for senders that are not ECN capable.
 *
 * These are the pure parts: decisions and window arithmetic, with no
 * locking and no packet access (sch_htb_ecn_kunit.c tests them).
 */
#ifndef _NET_SCHED_SCH_HTB_ECN_H
#define _NET_SCHED_SCH_HTB_ECN_H

#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <net/tcp.h>

/* Flows remembered per HTB qdisc for ece/rwnd (direct mapped, power of 2) */
#define HTB_ECN_FLOWS		1024
/* A remembered flow is forgotten after this long without a data packet */
#define HTB_ECN_FLOW_TTL	(10 * HZ)
/* Segment size assumed until the flow's data shows one */
#define HTB_ECN_DEFAULT_MSS	1448U

/* Does a class backlog of @backlog bytes call for a congestion signal? */
static inline bool htb_ecn_over(u32 backlog, u32 thresh)
{
	return thresh && backlog > thresh;
}

/* The window, in bytes, that a flow with @inflight bytes unacknowledged
 * may have when the class holds @backlog bytes against a threshold of
 * @thresh: every flow's window is scaled by thresh / backlog, so that the
 * flows together bring the backlog back to the threshold within a round
 * trip, each in proportion to what it has in flight (no flow count is
 * needed).  Never less than two segments; U32_MAX when the backlog is at
 * or below the threshold (no limit).
 */
static inline u32 htb_ecn_rwnd(u32 inflight, u32 thresh, u32 backlog, u32 mss)
{
	u64 w;

	if (!htb_ecn_over(backlog, thresh))
		return U32_MAX;
	w = div_u64((u64)inflight * thresh, backlog);
	return max_t(u64, w, 2ULL * max(mss, 1U));
}

/* The window, in bytes, that rwnd mode holds a flow to, updated on each
 * of its ACKs; @cur is the window so far, 0 while the flow is not held.
 * Above the threshold the window drops to the flow's share of a backlog
 * of @thresh (htb_ecn_rwnd()) and does not rise while the backlog stays
 * above it.  At or below the threshold it grows by @acked * @mss / @cur
 * (at least a byte): about one segment per round trip, TCP's congestion
 * avoidance.  Without this memory the sender, never told anything but a
 * small window, would send all of its congestion window as soon as the
 * backlog fell under the threshold, and the queue would swing between
 * the threshold and that window.  The flow is let go (0) once the
 * window is no smaller than the receiver's own, @peer bytes.
 */
static inline u32 htb_ecn_rwnd_update(u32 cur, u32 inflight, u32 acked,
				      u32 thresh, u32 backlog, u32 mss,
				      u32 peer)
{
	u64 w;

	if (htb_ecn_over(backlog, thresh)) {
		w = htb_ecn_rwnd(inflight, thresh, backlog, mss);
		return cur ? min_t(u32, cur, w) : w;
	}
	if (!cur)
		return 0;
	w = (u64)cur + max_t(u64, div_u64((u64)acked * max(mss, 1U), cur), 1);
	return w >= peer ? 0 : w;
}

/* The 16-bit window field that advertises at most @wnd bytes with a
 * window scale of @wscale, given that the receiver advertised @field.
 * Never raises the window, rounds up (never advertises less than @wnd)
 * and never writes a zero window, which would stall the sender into
 * persist probes.
 */
static inline u16 htb_ecn_window_field(u16 field, u32 wnd, u8 wscale)
{
	u32 f;

	wscale = min_t(u8, wscale, TCP_MAX_WSCALE);
	f = (u32)(((u64)wnd + (1ULL << wscale) - 1) >> wscale);
	f = clamp_t(u32, f, 1, 0xffff);
	return min_t(u32, f, field);
}

/* The window scale (RFC 7323) of a SYN or SYN-ACK's options, or -1 when
 * it has none.  @opt points at the options, @len bytes of them; anything
 * malformed ends the walk (the packet comes from the network).
 */
static inline int htb_ecn_parse_wscale(const u8 *opt, int len)
{
	while (len > 0) {
		u8 kind = opt[0], olen;

		if (kind == TCPOPT_EOL)
			break;
		if (kind == TCPOPT_NOP) {
			opt++;
			len--;
			continue;
		}
		if (len < 2)
			break;
		olen = opt[1];
		if (olen < 2 || olen > len)
			break;
		if (kind == TCPOPT_WINDOW && olen == TCPOLEN_WINDOW)
			return min_t(u8, opt[2], TCP_MAX_WSCALE);
		opt += olen;
		len -= olen;
	}
	return -1;
}

#endif /* _NET_SCHED_SCH_HTB_ECN_H */
