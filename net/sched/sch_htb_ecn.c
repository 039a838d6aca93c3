// SPDX-License-Identifier: GPL-2.0-only
/* The flow table of HTB's ecn_mode ece and rwnd (CONFIG_NET_SCH_HTB_ECN)
 * and the handler of the ACKs that come back through it.
 *
 * sch_htb learns the TCP flows that leave through a class in ece or rwnd
 * (htb_ecn_learn(), at enqueue under the qdisc root lock); the htback
 * action on the device's ingress shows it the packets that arrive
 * (htb_ecn_ack(), under RCU and no qdisc lock), and an ACK of such a flow
 * gets ECE or a lower window while the class's backlog exceeds its
 * threshold.  No qdisc lock is taken here: the table has a lock per
 * bucket, a class's state is found through an xarray under RCU and freed
 * after a grace period, and the counters are atomic.  The pure parts
 * (the decisions and the window arithmetic) are inline in sch_htb_ecn.h;
 * sch_htb_ecn_kunit.c tests both.
 */

#include <linux/jhash.h>
#include <linux/module.h>
#include <kunit/visibility.h>
#include "sch_htb_ecn.h"

struct htb_ecn_table *htb_ecn_table_alloc(u32 flows, u32 ttl_ms, u32 seed)
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
EXPORT_SYMBOL_GPL(htb_ecn_table_alloc);

bool htb_ecn_parse(const struct sk_buff *skb, __be16 proto,
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
EXPORT_SYMBOL_GPL(htb_ecn_parse);

/* HTB_ECN_WS_NONE or _OFFERED (and the shift in *ws) of a SYN's options */
static u8 htb_ecn_syn_wscale(const struct sk_buff *skb,
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

VISIBLE_IF_KUNIT struct htb_ecn_bucket *
htb_ecn_bucket(struct htb_ecn_table *t, const struct in6_addr *laddr,
	       const struct in6_addr *raddr, __be16 lport, __be16 rport)
{
	u32 h = jhash2(laddr->s6_addr32, 4, t->seed);

	h = jhash2(raddr->s6_addr32, 4, h);
	h = jhash_1word(((__force u32)lport << 16) | (__force u32)rport, h);
	return &t->bucket[h & t->mask];
}
EXPORT_SYMBOL_IF_KUNIT(htb_ecn_bucket);

#define HTB_ECN_KEY_EQ(f, la, ra, lp, rp)				\
	((f)->lport == (lp) && (f)->rport == (rp) &&			\
	 ipv6_addr_equal(&(f)->laddr, (la)) &&				\
	 ipv6_addr_equal(&(f)->raddr, (ra)))

VISIBLE_IF_KUNIT struct htb_ecn_flow *
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
EXPORT_SYMBOL_IF_KUNIT(htb_ecn_find);

/* The entry a new flow takes: a free one, else one idle longer than the
 * table's ttl, else the least recently used half-open one (our SYN-ACK
 * answered a SYN from the network, nothing since), else the least
 * recently used (an eviction).  A flow that is itself half-open
 * (@half_open) never pushes out one that is not: a SYN flood against a
 * listener makes this host send SYN-ACKs, and those must not evict the
 * live flows of the bucket.  NULL: no room for it.
 */
static struct htb_ecn_flow *htb_ecn_victim(struct htb_ecn_table *t,
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
void htb_ecn_learn(struct htb_ecn_table *t, u32 classid,
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
EXPORT_SYMBOL_GPL(htb_ecn_learn);

/* Rewrite 16 bits of the TCP header at @off (from th), keeping the
 * checksum right for every ip_summed state (inet_proto_csum_replace2():
 * CHECKSUM_COMPLETE's sum of the packet does not change).
 */
static bool htb_ecn_rewrite(struct sk_buff *skb, unsigned int thoff,
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
static bool htb_ecn_rewrite_list(struct sk_buff *skb,
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
static int htb_ecn_ack_decide(struct htb_ecn_flow *f,
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
static bool htb_ecn_synack_ok(const struct htb_ecn_flow *f,
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
bool htb_ecn_ack(struct htb_ecn_table *t, struct xarray *classes,
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
EXPORT_SYMBOL_GPL(htb_ecn_ack);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("HTB congestion signals: the flow table of ecn_mode ece and rwnd");
