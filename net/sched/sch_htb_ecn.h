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
#include <linux/pkt_sched.h>
#include <linux/ipv6.h>
#include <linux/jhash.h>
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
 * The flow table of ece/rwnd and the ACK handler.  No qdisc lock is
 * taken here: the table has a lock per bucket, a class's state is found
 * through an xarray under RCU and freed after a grace period, and the
 * counters are atomic.
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

static inline struct htb_ecn_table *htb_ecn_table_alloc(u32 flows, u32 ttl_ms,
							u32 seed)
{
	u32 n = flows / HTB_ECN_WAYS, i;
	struct htb_ecn_table *t;

	t = kvzalloc(struct_size(t, bucket, n), GFP_KERNEL_ACCOUNT);
	if (!t)
		return NULL;
	t->mask = n - 1;
	t->seed = seed;
	t->ttl = msecs_to_jiffies(ttl_ms);
	atomic64_set(&t->evictions, 0);
	atomic64_set(&t->synacks_ignored, 0);
	atomic64_set(&t->no_room, 0);
	for (i = 0; i < n; i++)
		spin_lock_init(&t->bucket[i].lock);
	return t;
}

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

static inline bool htb_ecn_parse(const struct sk_buff *skb, __be16 proto,
				 struct htb_ecn_pkt *p)
{
	unsigned int nhoff = skb_network_offset(skb), doff;
	const struct tcphdr *th;

	if (proto == htons(ETH_P_IP)) {
		struct iphdr _iph;
		const struct iphdr *iph;

		iph = skb_header_pointer(skb, nhoff, sizeof(_iph), &_iph);
		if (!iph || iph->version != 4 || iph->ihl < 5 ||
		    iph->protocol != IPPROTO_TCP || ip_is_fragment(iph))
			return false;
		ipv6_addr_set_v4mapped(iph->saddr, &p->src);
		ipv6_addr_set_v4mapped(iph->daddr, &p->dst);
		p->dsfield = ipv4_get_dsfield(iph);
		p->thoff = nhoff + iph->ihl * 4;
	} else if (proto == htons(ETH_P_IPV6)) {
		struct ipv6hdr _ip6h;
		const struct ipv6hdr *ip6h;

		ip6h = skb_header_pointer(skb, nhoff, sizeof(_ip6h), &_ip6h);
		if (!ip6h || ip6h->version != 6 || ip6h->nexthdr != IPPROTO_TCP)
			return false;
		/* IPv4 flows are keyed v4-mapped: an IPv6 packet with such an
		 * address is no packet of theirs (and no valid IPv6 packet)
		 */
		if (ipv6_addr_v4mapped(&ip6h->saddr) ||
		    ipv6_addr_v4mapped(&ip6h->daddr))
			return false;
		p->src = ip6h->saddr;
		p->dst = ip6h->daddr;
		p->dsfield = ipv6_get_dsfield(ip6h);
		p->thoff = nhoff + sizeof(*ip6h);
	} else {
		return false;
	}
	th = skb_header_pointer(skb, p->thoff, sizeof(p->th), &p->th);
	if (!th)
		return false;
	if (th != &p->th)
		p->th = *th;
	doff = p->th.doff * 4;
	if (doff < sizeof(struct tcphdr) || skb->len < p->thoff + doff)
		return false;
	p->payload = skb->len - p->thoff - doff;
	return true;
}

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

/* HTB_ECN_WS_NONE or _OFFERED (and the shift in *ws) of a SYN's options */
static inline u8 htb_ecn_syn_wscale(const struct sk_buff *skb,
				    const struct htb_ecn_pkt *p, u8 *ws)
{
	unsigned int olen = p->th.doff * 4 - sizeof(struct tcphdr);
	u8 opt[MAX_TCP_OPTION_SPACE];
	int s = -1;

	if (olen && !skb_copy_bits(skb, p->thoff + sizeof(struct tcphdr),
				   opt, olen))
		s = htb_ecn_parse_wscale(opt, olen);
	*ws = s < 0 ? 0 : s;
	return s < 0 ? HTB_ECN_WS_NONE : HTB_ECN_WS_OFFERED;
}

static inline struct htb_ecn_bucket *
htb_ecn_bucket(struct htb_ecn_table *t, const struct in6_addr *laddr,
	       const struct in6_addr *raddr, __be16 lport, __be16 rport)
{
	u32 h = jhash2(laddr->s6_addr32, 4, t->seed);

	h = jhash2(raddr->s6_addr32, 4, h);
	h = jhash_1word(((__force u32)lport << 16) | (__force u32)rport, h);
	return &t->bucket[h & t->mask];
}

#define HTB_ECN_KEY_EQ(f, la, ra, lp, rp)				\
	((f)->lport == (lp) && (f)->rport == (rp) &&			\
	 ipv6_addr_equal(&(f)->laddr, (la)) &&				\
	 ipv6_addr_equal(&(f)->raddr, (ra)))

static inline struct htb_ecn_flow *
htb_ecn_find(struct htb_ecn_bucket *b, const struct in6_addr *laddr,
	     const struct in6_addr *raddr, __be16 lport, __be16 rport)
{
	int i;

	for (i = 0; i < HTB_ECN_WAYS; i++) {
		struct htb_ecn_flow *f = &b->flow[i];

		if (f->in_use && HTB_ECN_KEY_EQ(f, laddr, raddr, lport, rport))
			return f;
	}
	return NULL;
}

/* The entry a new flow takes: a free one, else one idle longer than the
 * table's ttl, else the least recently used half-open one (our SYN-ACK
 * answered a SYN from the network, nothing since), else the least
 * recently used (an eviction).  A flow that is itself half-open
 * (@half_open) never pushes out one that is not: a SYN flood against a
 * listener makes this host send SYN-ACKs, and those must not evict the
 * live flows of the bucket.  NULL: no room for it.
 */
static inline struct htb_ecn_flow *htb_ecn_victim(struct htb_ecn_table *t,
						  struct htb_ecn_bucket *b,
						  unsigned long now,
						  bool half_open)
{
	struct htb_ecn_flow *lru = NULL, *lru_half = NULL;
	int i;

	for (i = 0; i < HTB_ECN_WAYS; i++) {
		struct htb_ecn_flow *f = &b->flow[i];

		if (!f->in_use || time_after_eq(now, f->stamp + t->ttl))
			return f;
		if (f->half_open) {
			if (!lru_half || time_before(f->stamp, lru_half->stamp))
				lru_half = f;
		} else if (!lru || time_before(f->stamp, lru->stamp)) {
			lru = f;
		}
	}
	if (lru_half)
		return lru_half;
	if (half_open)
		return NULL;
	atomic64_inc(&t->evictions);
	return lru;
}

/* A packet of class @classid leaves (enqueue, under the qdisc root lock):
 * learn its flow.  Only packets this host sends create entries: its SYNs,
 * SYN-ACKs and data, never what arrives from the network.
 */
static inline void htb_ecn_learn(struct htb_ecn_table *t, u32 classid,
				 const struct sk_buff *skb,
				 const struct htb_ecn_pkt *p, unsigned long now)
{
	struct htb_ecn_bucket *b;
	struct htb_ecn_flow *f;
	bool syn;
	u32 end;

	if (p->th.rst)
		return;
	b = htb_ecn_bucket(t, &p->src, &p->dst, p->th.source, p->th.dest);
	spin_lock(&b->lock);
	/* our SYN-ACK answers a SYN from the network, kept aside */
	syn = p->th.syn && p->th.ack && b->syn.in_use &&
	      HTB_ECN_KEY_EQ(&b->syn, &p->src, &p->dst, p->th.source,
			     p->th.dest);
	f = htb_ecn_find(b, &p->src, &p->dst, p->th.source, p->th.dest);
	/* a new flow, or a new connection on the same 4-tuple (a SYN-ACK
	 * retransmitted without a new SYN keeps what the first one learned)
	 */
	if (!f || (p->th.syn && (!p->th.ack || syn))) {
		if (!f)
			f = htb_ecn_victim(t, b, now, p->th.syn && p->th.ack);
		if (!f) {
			atomic64_inc(&t->no_room);
			spin_unlock(&b->lock);
			return;
		}
		memset(f, 0, sizeof(*f));
		f->laddr = p->src;
		f->raddr = p->dst;
		f->lport = p->th.source;
		f->rport = p->th.dest;
		f->in_use = 1;
	}
	/* a SYN-ACK of ours: half-open until we send anything else */
	f->half_open = p->th.syn && p->th.ack;
	if (p->th.syn) {
		u8 ws;

		f->local_wso = htb_ecn_syn_wscale(skb, p, &ws);
		if (!p->th.ack) {
			f->accecn_asked = htb_ecn_ace(&p->th) ==
					  HTB_ECN_ACE_ACCECN_SYN;
		} else {
			/* our SYN-ACK agrees to AccECN only if the SYN
			 * asked (the SYN unseen: it alone says so)
			 */
			f->accecn = (!syn || b->syn.accecn_asked) &&
				    htb_ecn_synack_accecn(htb_ecn_ace(&p->th));
		}
		if (syn) {
			f->peer_wso = b->syn.wso;
			f->peer_ws = b->syn.ws;
			b->syn.in_use = 0;
		}
	}
	f->classid = classid;
	f->stamp = now;
	end = ntohl(p->th.seq) + p->payload + p->th.syn + p->th.fin;
	if (!f->snd_max_ok || after(end, f->snd_max)) {
		f->snd_max = end;
		f->snd_max_ok = 1;
	}
	if (p->payload) {
		u32 mss = skb_is_gso(skb) ? skb_shinfo(skb)->gso_size : p->payload;

		f->mss = min_t(u32, max_t(u32, f->mss, mss), U16_MAX);
		f->ect = !!INET_ECN_is_capable(p->dsfield);
	}
	spin_unlock(&b->lock);
}

/* Rewrite 16 bits of the TCP header at @off (from th), keeping the
 * checksum right for every ip_summed state (inet_proto_csum_replace2():
 * CHECKSUM_COMPLETE's sum of the packet does not change).
 */
static inline bool htb_ecn_rewrite(struct sk_buff *skb, unsigned int thoff,
				   unsigned int off, __be16 to)
{
	struct tcphdr *th;
	__be16 *w;

	if (skb_ensure_writable(skb, thoff + sizeof(*th)))
		return false;
	th = (struct tcphdr *)(skb->data + thoff);
	w = (__be16 *)((u8 *)th + off);
	inet_proto_csum_replace2(&th->check, skb, *w, to, false);
	*w = to;
	return true;
}

/* The same rewrite in each segment that fraglist GRO (rx-gro-list,
 * SKB_GSO_FRAGLIST) chained behind @skb: the segments keep their own
 * headers, before their data, and software segmentation sends each with
 * its own (skb_segment_list(), which fixes up only NAT's addresses and
 * ports from the first).  GRO chains only segments whose flags and
 * window are the same (tcp_gro_receive()), so each gets what the first
 * got: (old & ~@mask) | @set, its checksum updated for its own
 * ip_summed.  A segment shared with a clone (a tap's copy of the packet)
 * is replaced by a private copy first, as skb_segment_list() does.
 * False if one could not be written.
 */
static inline bool htb_ecn_rewrite_list(struct sk_buff *skb,
					const struct htb_ecn_pkt *p,
					unsigned int off, __be16 mask,
					__be16 set)
{
	unsigned int thlen = p->th.doff * 4;
	struct sk_buff **pp, *seg;

	if (!skb_is_gso(skb) ||
	    !(skb_shinfo(skb)->gso_type & SKB_GSO_FRAGLIST) ||
	    !skb_has_frag_list(skb))
		return true;
	/* the list itself is ours to change */
	if (skb_unclone(skb, GFP_ATOMIC))
		return false;
	pp = &skb_shinfo(skb)->frag_list;
	while ((seg = *pp)) {
		struct tcphdr *th;
		__be16 *w, to;

		if (skb_shared(seg)) {
			struct sk_buff *n = skb_clone(seg, GFP_ATOMIC);

			if (!n)
				return false;
			n->next = seg->next;
			*pp = n;
			consume_skb(seg);
			seg = n;
		}
		if (skb_unclone(seg, GFP_ATOMIC))
			return false;
		pp = &seg->next;
		/* its TCP header ends where GRO left its data */
		if (skb_headroom(seg) < thlen)
			continue;
		th = (struct tcphdr *)(seg->data - thlen);
		if (th->source != p->th.source || th->dest != p->th.dest ||
		    th->doff != p->th.doff)
			continue;
		w = (__be16 *)((u8 *)th + off);
		to = (*w & ~mask) | set;
		inet_proto_csum_replace2(&th->check, seg, *w, to, false);
		*w = to;
	}
	return true;
}

/* What an ACK gets (htb_ecn_ack()) */
enum {
	HTB_ECN_PASS,
	HTB_ECN_SET_ECE,
	HTB_ECN_SET_WINDOW,
	HTB_ECN_NO_WSCALE,	/* rwnd would lower it: the scale is unknown */
	HTB_ECN_ACCECN,		/* ece would set ECE: an AccECN flow */
};

/* The decision for an ACK of flow @f whose class is @c, under the
 * bucket lock; *field is the window field to write for _SET_WINDOW.
 */
static inline int htb_ecn_ack_decide(struct htb_ecn_flow *f,
				     const struct htb_ecn_cls *c,
				     const struct htb_ecn_pkt *p, u16 *field)
{
	u8 mode = READ_ONCE(c->mode);
	u32 thresh = READ_ONCE(c->thresh), backlog = READ_ONCE(c->backlog);

	if (p->th.rst || !p->th.ack)
		return HTB_ECN_PASS;
	if (mode == TC_HTB_ECN_ECE) {
		/* only senders that negotiated ECN listen to ECE */
		if (!htb_ecn_over(backlog, thresh) || !f->ect || p->th.ece)
			return HTB_ECN_PASS;
		/* on an AccECN flow ECE is a bit of the ACE counter of CE
		 * marks (RFC 9768): setting it would miscount them
		 */
		if (f->accecn)
			return HTB_ECN_ACCECN;
		return HTB_ECN_SET_ECE;
	}
	if (mode == TC_HTB_ECN_RWND && f->snd_max_ok &&
	    f->local_wso != HTB_ECN_WS_UNKNOWN &&
	    f->peer_wso != HTB_ECN_WS_UNKNOWN) {
		u32 ack = ntohl(p->th.ack_seq), inflight, acked = 0;
		u16 win = ntohs(p->th.window), nfield;
		/* the peer's windows are scaled only if both SYNs said so */
		u8 ws = (f->local_wso == HTB_ECN_WS_OFFERED &&
			 f->peer_wso == HTB_ECN_WS_OFFERED) ? f->peer_ws : 0;

		/* an ACK outside what was sent is the peer's business */
		if (after(ack, f->snd_max))
			return HTB_ECN_PASS;
		if (f->rwnd && after(ack, f->snd_una))
			acked = ack - f->snd_una;
		if (!f->rwnd || after(ack, f->snd_una))
			f->snd_una = ack;
		inflight = f->snd_max - ack;
		f->rwnd = htb_ecn_rwnd_update(f->rwnd, inflight, acked, thresh,
					      backlog,
					      f->mss ? : HTB_ECN_DEFAULT_MSS,
					      (u32)win << ws);
		if (!f->rwnd)
			return HTB_ECN_PASS;
		nfield = htb_ecn_window_field(win, f->rwnd, ws);
		if (nfield >= win)
			return HTB_ECN_PASS;
		*field = nfield;
		return HTB_ECN_SET_WINDOW;
	}
	/* a flow whose SYN or SYN-ACK this class did not see (its SYNs
	 * classified elsewhere): its window cannot be read, say so
	 */
	if (mode == TC_HTB_ECN_RWND && htb_ecn_over(backlog, thresh))
		return HTB_ECN_NO_WSCALE;
	return HTB_ECN_PASS;
}

/* Is the SYN-ACK @p the answer to the SYN flow @f sent?  Only while the
 * peer's scale is unknown (the first answer: a later SYN-ACK, a
 * retransmission or a forgery, changes nothing), only for a flow whose
 * SYN this host was seen to send, and only if it acknowledges that SYN
 * exactly: anyone can send a SYN-ACK with the 4-tuple, and a wrong
 * scale would misread every later window of the flow (scale 14 for 7
 * reads a 15,000-byte window as 128 bytes).  Under the bucket lock.
 */
static inline bool htb_ecn_synack_ok(const struct htb_ecn_flow *f,
				     const struct htb_ecn_pkt *p)
{
	return f->local_wso != HTB_ECN_WS_UNKNOWN &&
	       f->peer_wso == HTB_ECN_WS_UNKNOWN && f->snd_max_ok &&
	       ntohl(p->th.ack_seq) == f->snd_max;
}

/* A packet arrived on the device (the htback action at tc ingress,
 * under RCU, no qdisc lock): a SYN says how the peer scales its window;
 * an ACK of a flow of a class in ecn_mode ece or rwnd whose backlog is
 * above the threshold gets ECE or a lower window.  @classes maps class
 * ids to struct htb_ecn_cls.  Returns false for a packet that is not
 * TCP over IPv4 or IPv6 (or is truncated), which it leaves alone.
 */
static inline bool htb_ecn_ack(struct htb_ecn_table *t, struct xarray *classes,
			       struct sk_buff *skb, unsigned long now)
{
	struct htb_ecn_bucket *b;
	struct htb_ecn_cls *c = NULL;
	struct htb_ecn_flow *f;
	struct htb_ecn_pkt p;
	int verdict = HTB_ECN_PASS;
	u16 field = 0;

	if (!htb_ecn_parse(skb, skb->protocol, &p))
		return false;
	if (!p.th.ack && !p.th.syn)
		return true;
	/* the flow as this host sent it: local and remote swapped */
	b = htb_ecn_bucket(t, &p.dst, &p.src, p.th.dest, p.th.source);
	spin_lock(&b->lock);
	f = htb_ecn_find(b, &p.dst, &p.src, p.th.dest, p.th.source);
	if (p.th.syn) {
		u8 ws, wso = htb_ecn_syn_wscale(skb, &p, &ws);

		if (p.th.ack) {
			/* the answer to our SYN */
			if (f && htb_ecn_synack_ok(f, &p)) {
				f->peer_wso = wso;
				f->peer_ws = ws;
				f->accecn = f->accecn_asked &&
					    htb_ecn_synack_accecn(htb_ecn_ace(&p.th));
			} else if (f) {
				atomic64_inc(&t->synacks_ignored);
			}
		} else if (!p.th.rst) {
			/* kept aside until we answer: it claims no flow */
			b->syn.laddr = p.dst;
			b->syn.raddr = p.src;
			b->syn.lport = p.th.dest;
			b->syn.rport = p.th.source;
			b->syn.wso = wso;
			b->syn.ws = ws;
			b->syn.in_use = 1;
			b->syn.accecn_asked = htb_ecn_ace(&p.th) ==
					      HTB_ECN_ACE_ACCECN_SYN;
		}
		goto out;
	}
	if (!f)
		goto out;
	c = xa_load(classes, f->classid);
	if (!c)
		goto out;
	f->stamp = now;
	atomic64_inc(&c->acks);
	verdict = htb_ecn_ack_decide(f, c, &p, &field);
out:
	spin_unlock(&b->lock);
	if (verdict == HTB_ECN_SET_ECE) {
		__be16 flags = *(__be16 *)((u8 *)&p.th + 12);
		__be16 ece = htons(TCPHDR_ECE);

		if (htb_ecn_rewrite(skb, p.thoff, 12, flags | ece) &&
		    htb_ecn_rewrite_list(skb, &p, 12, ece, ece))
			atomic64_inc(&c->ece_marked);
	} else if (verdict == HTB_ECN_SET_WINDOW) {
		if (htb_ecn_rewrite(skb, p.thoff, 14, htons(field)) &&
		    htb_ecn_rewrite_list(skb, &p, 14, htons(0xffff),
					 htons(field)))
			atomic64_inc(&c->rwnd_rewrites);
	} else if (verdict == HTB_ECN_NO_WSCALE) {
		atomic64_inc(&c->rwnd_no_wscale);
	} else if (verdict == HTB_ECN_ACCECN) {
		atomic64_inc(&c->accecn_skipped);
	}
	return true;
}

#endif /* _NET_SCHED_SCH_HTB_ECN_H */
