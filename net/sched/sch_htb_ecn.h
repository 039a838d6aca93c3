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
 * This header holds the pure parts, inline: decisions and window
 * arithmetic, with no locking and no packet access.  The flow table and
 * the ACK handler are in sch_htb_ecn.c.  sch_htb_ecn_kunit.c tests both.
 */
#ifndef _NET_SCHED_SCH_HTB_ECN_H
#define _NET_SCHED_SCH_HTB_ECN_H

#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/pkt_sched.h>
#include <linux/ipv6.h>
#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>
#include <net/inet_ecn.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/tcp.h>

/* Flows remembered per HTB qdisc for ece/rwnd, by default (tc qdisc ...
 * htb ... ecn_flows N: a power of 2 in [HTB_ECN_FLOWS_MIN, _MAX]), in
 * buckets of HTB_ECN_WAYS
 */
#define HTB_ECN_FLOWS		4096
#define HTB_ECN_FLOWS_MIN	16
#define HTB_ECN_FLOWS_MAX	(1U << 20)
#define HTB_ECN_WAYS		4
/* A flow idle this long may give its entry to another without counting
 * as an eviction (ecn_flow_ttl); an entry is never dropped for age alone
 */
#define HTB_ECN_FLOW_TTL_MS	10000
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

/* ------------------------------------------------------------------
 * The flow table of ece/rwnd (sch_htb_ecn.c)
 */

/* The ECN state of a class that has (had) an ecn_mode, freed with
 * kfree_rcu() after the class.  mode and thresh are written under the
 * qdisc root lock and read anywhere; backlog mirrors the class's leaf
 * backlog (written under the root lock at each enqueue and dequeue) for
 * the ACK path, which takes no qdisc lock.
 */
struct htb_ecn_cls {
	u32			classid;
	u32			thresh;
	u32			backlog;
	u8			mode;		/* enum tc_htb_ecn_mode */
	atomic64_t		ce_marked;	/* packets (segments) */
	atomic64_t		ece_marked;	/* ACKs */
	atomic64_t		rwnd_rewrites;	/* ACKs */
	atomic64_t		acks;		/* ACKs of its flows seen */
	atomic64_t		rwnd_no_wscale;	/* ACKs left: scale unknown */
	atomic64_t		accecn_skipped;	/* ACKs left: AccECN flow */
	struct rcu_head		rcu;
};

/* What a SYN said about window scaling (RFC 7323): scaling is in effect
 * only if both SYNs carried the option.
 */
enum {
	HTB_ECN_WS_UNKNOWN,	/* that SYN was not seen */
	HTB_ECN_WS_NONE,	/* seen, without the option */
	HTB_ECN_WS_OFFERED,	/* seen, with it */
};

/* A TCP flow that left through a class in ecn_mode ece or rwnd, seen from
 * this host: its ACKs come back with local and remote swapped.
 */
struct htb_ecn_flow {
	struct in6_addr		laddr;		/* IPv4: v4-mapped */
	struct in6_addr		raddr;
	__be16			lport;
	__be16			rport;
	u32			classid;
	u32			snd_max;	/* highest sequence sent + 1 */
	u32			snd_una;	/* highest ACK seen (rwnd) */
	u32			rwnd;		/* window held to, bytes; 0: none */
	unsigned long		stamp;		/* jiffies of the last packet */
	u16			mss;		/* largest segment sent */
	u8			peer_ws;	/* the peer's shift, if offered */
	u8			local_wso:2,	/* HTB_ECN_WS_* of our SYN */
				peer_wso:2,	/* ... and of the peer's */
				in_use:1,
				snd_max_ok:1,
				ect:1,		/* data sent ECN capable */
				half_open:1;	/* our SYN-ACK, nothing since */
	u8			accecn_asked:1,	/* our SYN asked for AccECN */
				accecn:1;	/* AccECN negotiated */
};

/* A SYN from the network, kept until this host answers it: its window
 * scale is needed if the SYN-ACK leaves through the class, and it may
 * not take the place of a flow (anyone can send SYNs).
 */
struct htb_ecn_syn {
	struct in6_addr		laddr;
	struct in6_addr		raddr;
	__be16			lport;
	__be16			rport;
	u8			wso;		/* HTB_ECN_WS_NONE or _OFFERED */
	u8			ws;
	u8			in_use:1,
				accecn_asked:1;	/* AE, CWR and ECE */
};

struct htb_ecn_bucket {
	spinlock_t		lock;		/* syn and flow[] */
	struct htb_ecn_syn	syn;
	struct htb_ecn_flow	flow[HTB_ECN_WAYS];
};

struct htb_ecn_table {
	u32			mask;		/* buckets - 1 */
	u32			seed;
	unsigned long		ttl;		/* jiffies */
	atomic64_t		evictions;	/* live flows pushed out */
	atomic64_t		synacks_ignored; /* not the answer to our SYN */
	atomic64_t		no_room;	/* half-open flows not learned */
	struct htb_ecn_bucket	bucket[];
};

/* The fields of a TCP packet that ece and rwnd need, from the network
 * header at skb_network_offset() on.  Only TCP directly over IPv4 (not a
 * fragment) or IPv6 (no extension headers) is looked at; everything is
 * read through skb_header_pointer(): ACKs come from the network.
 */
struct htb_ecn_pkt {
	struct in6_addr		src;
	struct in6_addr		dst;
	struct tcphdr		th;
	unsigned int		thoff;		/* from skb->data */
	u32			payload;	/* TCP payload bytes */
	u8			dsfield;
};

/* The ACE field of a TCP header (Accurate ECN, RFC 9768): AE (the low
 * bit of byte 12), CWR and ECE, as a 3-bit number
 */
static inline u8 htb_ecn_ace(const struct tcphdr *th)
{
	return (((const u8 *)th)[12] & 1) << 2 | th->cwr << 1 | th->ece;
}

/* A SYN asks for AccECN with AE, CWR and ECE all set (ACE 7) */
#define HTB_ECN_ACE_ACCECN_SYN	7

/* Does a SYN-ACK's ACE field, the answer to a SYN that asked for AccECN,
 * agree to it?  An AccECN server answers 2, 3, 4 or 6 (they echo the
 * SYN's IP-ECN field); 7 is reserved and taken as AccECN, as Linux's
 * AccECN client takes it.  0 is no ECN, 1 classic ECN and 5 the historic
 * ECN nonce, also classic.
 */
static inline bool htb_ecn_synack_accecn(u8 ace)
{
	return ace != 0 && ace != 1 && ace != 5;
}

/* sch_htb_ecn.c: the flow table and the ACK handler */
struct htb_ecn_table *htb_ecn_table_alloc(u32 flows, u32 ttl_ms, u32 seed);
bool htb_ecn_parse(const struct sk_buff *skb, __be16 proto,
		   struct htb_ecn_pkt *p);
void htb_ecn_learn(struct htb_ecn_table *t, u32 classid,
		   const struct sk_buff *skb, const struct htb_ecn_pkt *p,
		   unsigned long now);
bool htb_ecn_ack(struct htb_ecn_table *t, struct xarray *classes,
		 struct sk_buff *skb, unsigned long now);

#if IS_ENABLED(CONFIG_KUNIT)
struct htb_ecn_bucket *htb_ecn_bucket(struct htb_ecn_table *t,
				      const struct in6_addr *laddr,
				      const struct in6_addr *raddr,
				      __be16 lport, __be16 rport);
struct htb_ecn_flow *htb_ecn_find(struct htb_ecn_bucket *b,
				  const struct in6_addr *laddr,
				  const struct in6_addr *raddr,
				  __be16 lport, __be16 rport);
#endif

#endif /* _NET_SCHED_SCH_HTB_ECN_H */
