// SPDX-License-Identifier: GPL-2.0-only
/*
 * FastLane switch port: drop notifications
 *
 * A byte-limited FIFO, like the port of a shallow-buffered switch, that
 * tells the sources of the TCP packets it must drop (Zats et al.,
 * "FastLane: Making Short Flows Shorter with Agile Drop Notification",
 * SoCC 2015, Sec. 3.2):
 *
 *  - the notification is an ICMP error of an experimental type (IPv4:
 *    253, RFC 4727; IPv6: 100, RFC 4443) addressed to the packet's source
 *    and quoting its IP header and its whole TCP header, options included
 *    (include/net/fastlane.h), with the FastLane codepoint in its DSCP;
 *    the source's TCP takes it in its error handler;
 *  - it leaves through the port the packet came in on when the packet
 *    was bridged to this port (both ports of one bridge; the Ethernet
 *    addresses swapped, the packet's destination as its source), and is
 *    routed to the packet's source otherwise, from the address of the
 *    route back, as an ICMP error about it would be: when the port
 *    forwards at layer 3, when the packet was routed into the bridge
 *    this port belongs to, and when it was sent by this host;
 *  - it is built and sent here, not by icmp_send(): that one needs the
 *    packet's route (a bridged packet has none), sends from the context
 *    it is called in (this port's root lock held) and is capped by the
 *    host's ICMP rate limits (net.ipv4.icmp_msgs_per_sec, 1000 a second
 *    by default, and per destination), far below the paper's caps at a
 *    port of a few Gbit/s; the caps here are the paper's;
 *  - notifications, made here or elsewhere (FastLane ICMP errors with the
 *    codepoint), wait in a queue of their own, served at strict priority
 *    over data within a token bucket of 1% of the port's rate, and beyond
 *    it only when no data waits.  That queue holds 2.5% of the port's
 *    buffer; what does not fit is dropped, never notified;
 *  - mode quench, the paper's baseline (Sec. 2.2.1), sends an ICMP Source
 *    Quench (RFC 792) about an IPv4 drop instead, at the data's DSCP and
 *    priority and through the data's queues, with no caps.
 *
 * A notification is built under the root lock of the port that drops,
 * but it is sent from a BH work item: sending it from the enqueue path
 * would take the root lock of another port while holding this one's,
 * and two ports doing that to each other would deadlock.
 */

#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/if_arp.h>
#include <linux/if_bridge.h>
#include <linux/if_vlan.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/skbuff.h>
#include <linux/tcp.h>
#include <linux/workqueue.h>
#include <kunit/visibility.h>
#include <net/addrconf.h>
#include <net/ip.h>
#include <net/ip6_checksum.h>
#include <net/ip6_route.h>
#include <net/l3mdev.h>
#include <net/netlink.h>
#include <net/pkt_sched.h>
#include <net/route.h>
#include "sch_fastlane.h"

struct fastlane_sched_data {
	struct Qdisc		*sch;
	struct qdisc_skb_head	data;
	struct qdisc_skb_head	nfq;
	u32			data_backlog;
	u32			nf_backlog;
	u32			nf_limit;
	u32			ce_threshold;	/* bytes, 0: no marking */
	u8			dscp;
	u8			mode;		/* enum tc_fastlane_mode */
	u64			rate;		/* the port's, bytes/s */
	u64			nf_rate;	/* bytes/s, 0: no cap */
	u8			configured;	/* by init: the defaults are set */
	struct fastlane_tb	tb;
	struct sk_buff_head	pending;	/* to be sent by work */
	u32			pending_bytes;	/* their length (pending.lock) */
	struct work_struct	work;
	struct tc_fastlane_xstats stats;
};

#define FASTLANE_NF_BURST(q)	max_t(u32, (q)->nf_limit, 2 * 128)

struct fastlane_cb {
	int	iif;		/* the port the dropped packet came in on */
	int	l3mdev;		/* the VRF of the port that dropped it */
	u32	mark;		/* the mark of the route lookup */
	bool	l2;		/* leave through iif, not through a route */
};

static struct fastlane_cb *fastlane_cb(struct sk_buff *skb)
{
	BUILD_BUG_ON(sizeof(struct fastlane_cb) > sizeof(skb->cb));
	return (struct fastlane_cb *)skb->cb;
}

/* The length of the quote of @skb, its IP and TCP headers (with options)
 * at its network header, if a notification can be made of it, else 0: TCP
 * directly after an IPv4 header (of a whole datagram or of its first
 * fragment: later ones have no TCP header), or after an IPv6 header
 * without extension headers.
 */
static unsigned int fastlane_hdrlen(const struct sk_buff *skb, __be16 proto)
{
	int nhoff = skb_network_offset(skb);
	unsigned int iphlen;
	struct tcphdr _th;
	const struct tcphdr *th;

	switch (proto) {
	case htons(ETH_P_IP): {
		struct iphdr _iph;
		const struct iphdr *iph;

		iph = skb_header_pointer(skb, nhoff, sizeof(_iph), &_iph);
		if (!iph || iph->version != 4 || iph->ihl < 5 ||
		    iph->protocol != IPPROTO_TCP ||
		    (iph->frag_off & htons(IP_OFFSET)))
			return 0;
		iphlen = iph->ihl * 4;
		break;
	}
#if IS_ENABLED(CONFIG_IPV6)
	case htons(ETH_P_IPV6): {
		struct ipv6hdr _ip6h;
		const struct ipv6hdr *ip6h;

		ip6h = skb_header_pointer(skb, nhoff, sizeof(_ip6h), &_ip6h);
		if (!ip6h || ip6h->version != 6 ||
		    ip6h->nexthdr != IPPROTO_TCP)
			return 0;
		iphlen = sizeof(*ip6h);
		break;
	}
#endif
	default:
		return 0;
	}
	th = skb_header_pointer(skb, nhoff + iphlen, sizeof(_th), &_th);
	if (!th || !fastlane_quote_len(iphlen, th->doff))
		return 0;
	if (nhoff + fastlane_quote_len(iphlen, th->doff) > skb->len)
		return 0;
	return fastlane_quote_len(iphlen, th->doff);
}

/* Build an ICMP (ICMPv6) error of @type about @skb, which is about to be
 * dropped: an IPv4 or IPv6 header to the packet's source with the DS field
 * @dsfield, then the ICMP header and the first @qlen bytes of the packet
 * from its network header.  @l2: with an Ethernet header whose addresses
 * are those of @skb swapped, and finished (fastlane_finish()) with the
 * packet's destination as its source; else the route back gives it its
 * source address when it is sent.  NULL if no memory is at hand.
 */
static struct sk_buff *fastlane_icmp_build(const struct sk_buff *skb,
					   __be16 proto, unsigned int qlen,
					   u8 dsfield, u8 type, bool l2)
{
	unsigned int iphlen;
	struct sk_buff *nskb;
	u8 *quote;

	if (l2 && (!skb_mac_header_was_set(skb) ||
		   skb_mac_header_len(skb) < ETH_HLEN))
		return NULL;
	iphlen = proto == htons(ETH_P_IP) ? sizeof(struct iphdr) :
					    sizeof(struct ipv6hdr);
	nskb = alloc_skb(LL_MAX_HEADER + iphlen + 8 + qlen, GFP_ATOMIC);
	if (!nskb)
		return NULL;
	skb_reserve(nskb, LL_MAX_HEADER);
	skb_reset_network_header(nskb);
	skb_put_zero(nskb, iphlen + 8);
	skb_set_transport_header(nskb, iphlen);
	quote = skb_put(nskb, qlen);
	if (skb_copy_bits(skb, skb_network_offset(skb), quote, qlen)) {
		kfree_skb(nskb);
		return NULL;
	}
	nskb->protocol = proto;
	if (proto == htons(ETH_P_IP)) {
		const struct iphdr *q = (const struct iphdr *)quote;
		struct iphdr *iph = ip_hdr(nskb);

		iph->version = 4;
		iph->ihl = 5;
		iph->tos = dsfield;
		iph->ttl = IPDEFTTL;
		iph->protocol = IPPROTO_ICMP;
		iph->daddr = q->saddr;
		icmp_hdr(nskb)->type = type;
	} else {
		const struct ipv6hdr *q = (const struct ipv6hdr *)quote;
		struct ipv6hdr *ip6h = ipv6_hdr(nskb);

		ip6h->version = 6;
		ipv6_change_dsfield(ip6h, 0, dsfield);
		ip6h->nexthdr = IPPROTO_ICMPV6;
		ip6h->hop_limit = IPDEFTTL;
		ip6h->daddr = q->saddr;
		icmp6_hdr(nskb)->icmp6_type = type;
	}
	if (l2) {
		unsigned int maclen = skb_mac_header_len(skb);
		struct ethhdr *eth;

		if (proto == htons(ETH_P_IP))
			fastlane_finish(nskb, &((const struct iphdr *)quote)->daddr);
		else
			fastlane_finish(nskb, &((const struct ipv6hdr *)quote)->daddr);
		/* the Ethernet header with its VLAN tags (in the packet or
		 * offloaded), the addresses swapped
		 */
		if (maclen > ETH_HLEN + 2 * VLAN_HLEN)
			maclen = ETH_HLEN;
		eth = skb_push(nskb, maclen);
		memcpy(eth, skb_mac_header(skb), maclen);
		if (maclen == ETH_HLEN)
			eth->h_proto = proto;
		ether_addr_copy(eth->h_dest, eth_hdr(skb)->h_source);
		ether_addr_copy(eth->h_source, eth_hdr(skb)->h_dest);
		skb_reset_mac_header(nskb);
		nskb->protocol = eth->h_proto;
		if (skb_vlan_tag_present(skb))
			__vlan_hwaccel_put_tag(nskb, skb->vlan_proto,
					       skb_vlan_tag_get(skb));
	}
	return nskb;
}

/* Build the notification for @skb, which is about to be dropped: the
 * FastLane ICMP error with the codepoint @dscp (ECN not-ECT), quoting its
 * IP and TCP headers (fastlane_icmp_build()).  Returns NULL if @skb is not
 * TCP or no memory is at hand.
 */
VISIBLE_IF_KUNIT struct sk_buff *fastlane_notification(const struct sk_buff *skb,
						       u8 dscp, bool l2)
{
	__be16 proto = skb_protocol(skb, true);
	unsigned int qlen = fastlane_hdrlen(skb, proto);
	struct sk_buff *nskb;

	if (!qlen)
		return NULL;
	nskb = fastlane_icmp_build(skb, proto, qlen, dscp << 2,
				   proto == htons(ETH_P_IP) ? ICMP_FASTLANE :
							      ICMPV6_FASTLANE,
				   l2);
	if (nskb)
		nskb->priority = TC_PRIO_CONTROL;
	return nskb;
}
EXPORT_SYMBOL_IF_KUNIT(fastlane_notification);

/* Build the ICMP Source Quench (RFC 792) for @skb, which is about to be
 * dropped: the paper's baseline (Sec. 2.2.1).  It quotes the IP header and
 * the first 8 bytes of the datagram's data, and goes at the DSCP (ECN
 * not-ECT) and priority of the packet it stands for, as data.  NULL for
 * what no ICMP error may be sent about (RFC 1122, 3.2.2: a non-first
 * fragment, an ICMP error, a datagram to or from no single host), for
 * IPv6 (ICMPv6 has no Source Quench) and without memory.
 */
VISIBLE_IF_KUNIT struct sk_buff *fastlane_quench(const struct sk_buff *skb,
						 bool l2)
{
	__be16 proto = skb_protocol(skb, true);
	int nhoff = skb_network_offset(skb);
	const struct iphdr *iph;
	struct sk_buff *nskb;
	struct iphdr _iph;
	unsigned int qlen;

	if (proto != htons(ETH_P_IP))
		return NULL;
	iph = skb_header_pointer(skb, nhoff, sizeof(_iph), &_iph);
	if (!iph || iph->version != 4 || iph->ihl < 5 ||
	    (iph->frag_off & htons(IP_OFFSET)) ||
	    ipv4_is_zeronet(iph->saddr) || ipv4_is_multicast(iph->saddr) ||
	    ipv4_is_lbcast(iph->saddr) || ipv4_is_multicast(iph->daddr) ||
	    ipv4_is_lbcast(iph->daddr))
		return NULL;
	qlen = min_t(unsigned int, ntohs(iph->tot_len),
		     iph->ihl * 4 + FASTLANE_QUENCH_DATA);
	if (qlen < iph->ihl * 4 || nhoff + qlen > skb->len)
		return NULL;
	if (iph->protocol == IPPROTO_ICMP) {
		u8 _type;
		const u8 *type;

		type = skb_header_pointer(skb, nhoff + iph->ihl * 4,
					  sizeof(_type), &_type);
		if (!type || icmp_is_err(*type) || *type == ICMP_FASTLANE)
			return NULL;
	}
	nskb = fastlane_icmp_build(skb, proto, qlen,
				   iph->tos & ~INET_ECN_MASK,
				   ICMP_SOURCE_QUENCH, l2);
	if (nskb)
		nskb->priority = skb->priority;
	return nskb;
}
EXPORT_SYMBOL_IF_KUNIT(fastlane_quench);

/* Finish the notification @nskb (network header set) with the source
 * address @saddr (a __be32 or a struct in6_addr): its lengths and
 * checksums (ICMPv6's covers the addresses).
 */
VISIBLE_IF_KUNIT void fastlane_finish(struct sk_buff *nskb, const void *saddr)
{
	unsigned int len = skb_tail_pointer(nskb) - skb_transport_header(nskb);

	if (ip_hdr(nskb)->version == 4) {
		struct icmphdr *icmph = icmp_hdr(nskb);
		struct iphdr *iph = ip_hdr(nskb);

		iph->saddr = *(const __be32 *)saddr;
		iph->tot_len = htons(sizeof(*iph) + len);
		ip_send_check(iph);
		icmph->checksum = 0;
		icmph->checksum = csum_fold(csum_partial(icmph, len, 0));
	} else {
		struct icmp6hdr *icmp6h = icmp6_hdr(nskb);
		struct ipv6hdr *ip6h = ipv6_hdr(nskb);

		ip6h->saddr = *(const struct in6_addr *)saddr;
		ip6h->payload_len = htons(len);
		icmp6h->icmp6_cksum = 0;
		icmp6h->icmp6_cksum = csum_ipv6_magic(&ip6h->saddr, &ip6h->daddr,
						      len, IPPROTO_ICMPV6,
						      csum_partial(icmp6h, len, 0));
	}
}
EXPORT_SYMBOL_IF_KUNIT(fastlane_finish);

/* Is @skb a notification, for FastLane codepoint @dscp?  A FastLane ICMP
 * (ICMPv6) error, directly after its IP header, with the codepoint.  An
 * error of that type without it, or a packet that merely carries the
 * codepoint, is data, like any other.
 */
VISIBLE_IF_KUNIT bool fastlane_is_notification(const struct sk_buff *skb, u8 dscp)
{
	int nhoff = skb_network_offset(skb);
	unsigned int off;
	u8 _type;
	const u8 *type;

	switch (skb_protocol(skb, true)) {
	case htons(ETH_P_IP): {
		struct iphdr _iph;
		const struct iphdr *iph;

		iph = skb_header_pointer(skb, nhoff, sizeof(_iph), &_iph);
		if (!iph || iph->protocol != IPPROTO_ICMP || iph->ihl < 5 ||
		    (iph->frag_off & htons(IP_OFFSET)) ||
		    (ipv4_get_dsfield(iph) >> 2) != dscp)
			return false;
		off = nhoff + iph->ihl * 4;
		type = skb_header_pointer(skb, off, 1, &_type);
		return type && *type == ICMP_FASTLANE;
	}
	case htons(ETH_P_IPV6): {
		struct ipv6hdr _ip6h;
		const struct ipv6hdr *ip6h;

		ip6h = skb_header_pointer(skb, nhoff, sizeof(_ip6h), &_ip6h);
		if (!ip6h || ip6h->nexthdr != IPPROTO_ICMPV6 ||
		    (ipv6_get_dsfield(ip6h) >> 2) != dscp)
			return false;
		off = nhoff + sizeof(*ip6h);
		type = skb_header_pointer(skb, off, 1, &_type);
		return type && *type == ICMPV6_FASTLANE;
	}
	default:
		return false;
	}
}
EXPORT_SYMBOL_IF_KUNIT(fastlane_is_notification);

/* Route the notification @nskb back to the source of the packet it
 * stands for and finish it with the source address the route gives;
 * returns the route, or NULL.
 */
static struct dst_entry *fastlane_route(struct net *net, struct sk_buff *nskb,
					const struct fastlane_cb *cb)
{
	if (nskb->protocol == htons(ETH_P_IP)) {
		struct flowi4 fl4 = {
			.daddr = ip_hdr(nskb)->daddr,
			.flowi4_oif = cb->l3mdev,
			.flowi4_mark = cb->mark,
			.flowi4_proto = IPPROTO_ICMP,
			.fl4_icmp_type = icmp_hdr(nskb)->type,
		};
		struct rtable *rt = ip_route_output_key(net, &fl4);

		if (IS_ERR(rt))
			return NULL;
		fastlane_finish(nskb, &fl4.saddr);
		return &rt->dst;
	}
#if IS_ENABLED(CONFIG_IPV6)
	if (nskb->protocol == htons(ETH_P_IPV6)) {
		struct flowi6 fl6 = {
			.daddr = ipv6_hdr(nskb)->daddr,
			.flowi6_oif = cb->l3mdev,
			.flowi6_mark = cb->mark,
			.flowi6_proto = IPPROTO_ICMPV6,
			.fl6_icmp_type = ICMPV6_FASTLANE,
		};
		struct dst_entry *dst = ip6_route_output(net, NULL, &fl6);
		struct in6_addr saddr;

		if (dst->error ||
		    ipv6_dev_get_saddr(net, ip6_dst_idev(dst)->dev, &fl6.daddr,
				       0, &saddr)) {
			dst_release(dst);
			return NULL;
		}
		fastlane_finish(nskb, &saddr);
		return dst;
	}
#endif
	return NULL;
}

/* Send a notification on its way back: out of the port its packet came
 * in on (bridged ports), or along the route to its new destination.
 */
static void fastlane_send(struct net *net, struct sk_buff *nskb)
{
	struct fastlane_cb cb = *fastlane_cb(nskb);
	struct net_device *dev;
	struct dst_entry *dst;

	memset(nskb->cb, 0, sizeof(nskb->cb));
	if (cb.l2) {
		dev = dev_get_by_index_rcu(net, cb.iif);
		if (!dev || !(dev->flags & IFF_UP)) {
			kfree_skb(nskb);
			return;
		}
		nskb->dev = dev;
		dev_queue_xmit(nskb);
		return;
	}
	dst = fastlane_route(net, nskb, &cb);
	if (!dst) {
		kfree_skb(nskb);
		return;
	}
	skb_dst_set(nskb, dst);
	nskb->dev = dst->dev;
	if (nskb->protocol == htons(ETH_P_IP))
		ip_local_out(net, NULL, nskb);
#if IS_ENABLED(CONFIG_IPV6)
	else
		ip6_local_out(net, NULL, nskb);
#endif
}

/* Notifications sent per run of the work item: the hand-off can hold a
 * port's whole buffer of them (tens of thousands for a few MB), and one
 * BH section should not send them all; the rest go in the next run.
 */
#define FASTLANE_WORK_BUDGET	64

static void fastlane_work(struct work_struct *work)
{
	struct fastlane_sched_data *q = container_of(work, struct fastlane_sched_data,
						     work);
	struct net *net = dev_net(qdisc_dev(q->sch));
	struct sk_buff *nskb;
	int n;

	rcu_read_lock();
	for (n = 0; n < FASTLANE_WORK_BUDGET; n++) {
		spin_lock_bh(&q->pending.lock);
		nskb = __skb_dequeue(&q->pending);
		if (nskb)
			q->pending_bytes -= nskb->len;
		spin_unlock_bh(&q->pending.lock);
		if (!nskb)
			break;
		fastlane_send(net, nskb);
	}
	rcu_read_unlock();
	if (n == FASTLANE_WORK_BUDGET && skb_queue_len_lockless(&q->pending))
		queue_work(system_bh_wq, &q->work);
}

/* Was @skb, leaving through bridge port @dev, bridged to it: did it come
 * in on a port of the same bridge?  A packet routed into the bridge came
 * in on another device (its Ethernet header is the router's), and one
 * this host sent came in on none: their notifications are routed.
 * Called under rcu_read_lock_bh(), as the qdisc's enqueue is.
 */
static bool fastlane_bridged(const struct net_device *dev,
			     const struct sk_buff *skb)
{
	struct net_device *in, *br;

	if (!netif_is_bridge_port(dev) || dev->type != ARPHRD_ETHER ||
	    !skb->skb_iif)
		return false;
	in = dev_get_by_index_rcu(dev_net(dev), skb->skb_iif);
	if (!in || !netif_is_bridge_port(in))
		return false;
	br = netdev_master_upper_dev_get_rcu((struct net_device *)dev);
	return br && br == netdev_master_upper_dev_get_rcu(in);
}

/* Hand @nskb, the ICMP error about the dropped @skb, to the work that
 * sends it; false if it was dropped instead (and freed).
 */
static bool fastlane_handoff(struct Qdisc *sch, const struct sk_buff *skb,
			     struct sk_buff *nskb, bool l2)
{
	struct fastlane_sched_data *q = qdisc_priv(sch);
	struct net_device *dev = qdisc_dev(sch);
	struct fastlane_cb *cb;
	bool admitted;

	cb = fastlane_cb(nskb);
	cb->iif = skb->skb_iif;
	cb->l2 = l2;
	/* routed as an ICMP error about @skb would be (icmp_route_lookup()) */
	cb->l3mdev = l3mdev_master_ifindex_rcu(dev);
	cb->mark = IP4_REPLY_MARK(dev_net(dev), skb->mark);
#if IS_ENABLED(CONFIG_IPV6)
	if (skb_protocol(skb, true) == htons(ETH_P_IPV6))
		cb->mark = IP6_REPLY_MARK(dev_net(dev), skb->mark);
#endif
	/* the hand-off to the work is bounded by the port's buffer only:
	 * its drops are counted apart from the buffer cap's (nf_limit)
	 */
	spin_lock(&q->pending.lock);
	admitted = fastlane_pending_admit(q->pending_bytes, nskb->len,
					  READ_ONCE(sch->limit));
	if (admitted) {
		__skb_queue_tail(&q->pending, nskb);
		q->pending_bytes += nskb->len;
		q->stats.nf_pending_max = max(q->stats.nf_pending_max,
					      skb_queue_len(&q->pending));
	}
	spin_unlock(&q->pending.lock);
	if (!admitted) {
		q->stats.nf_pending_drops++;
		kfree_skb(nskb);
		return false;
	}
	queue_work(system_bh_wq, &q->work);
	return true;
}

/* @skb is dropped: tell its source, with a notification if it is TCP (a
 * notification is ICMP), or in mode quench with a Source Quench if it is
 * IPv4.
 */
static void fastlane_notify(struct Qdisc *sch, struct sk_buff *skb)
{
	struct fastlane_sched_data *q = qdisc_priv(sch);
	bool l2 = fastlane_bridged(qdisc_dev(sch), skb);
	struct sk_buff *nskb;

	if (q->mode == TC_FASTLANE_MODE_QUENCH) {
		nskb = fastlane_quench(skb, l2);
		if (!nskb)
			q->stats.quench_none++;
		else if (fastlane_handoff(sch, skb, nskb, l2))
			q->stats.quench_generated++;
		return;
	}
	nskb = fastlane_notification(skb, q->dscp, l2);
	if (!nskb)
		q->stats.nf_not_tcp++;
	else if (fastlane_handoff(sch, skb, nskb, l2))
		q->stats.nf_generated++;
}

static int fastlane_enqueue(struct sk_buff *skb, struct Qdisc *sch,
			    struct sk_buff **to_free)
{
	struct fastlane_sched_data *q = qdisc_priv(sch);
	unsigned int len = qdisc_pkt_len(skb);

	if (fastlane_is_notification(skb, q->dscp)) {
		if (q->nf_backlog + len > q->nf_limit) {
			q->stats.nf_cap_drops++;
			return qdisc_drop(skb, sch, to_free);
		}
		__qdisc_enqueue_tail(skb, &q->nfq);
		q->nf_backlog += len;
		q->stats.nf_queued++;
		q->stats.nf_backlog_max = max(q->stats.nf_backlog_max,
					      q->nf_backlog);
	} else {
		/* the notification buffer is carved out of the port's */
		if (q->data_backlog + len > READ_ONCE(sch->limit) - q->nf_limit) {
			fastlane_notify(sch, skb);
			return qdisc_drop(skb, sch, to_free);
		}
		/* DCTCP-style marking of what queues behind ce_threshold */
		if (q->ce_threshold && q->data_backlog > q->ce_threshold &&
		    INET_ECN_set_ce(skb))
			q->stats.ce_marked++;
		__qdisc_enqueue_tail(skb, &q->data);
		q->data_backlog += len;
	}
	sch->q.qlen++;
	qdisc_qstats_backlog_inc(sch, skb);
	return NET_XMIT_SUCCESS;
}

static struct sk_buff *fastlane_dequeue(struct Qdisc *sch)
{
	struct fastlane_sched_data *q = qdisc_priv(sch);
	struct sk_buff *skb = q->nfq.head;
	unsigned int len;

	if (skb) {
		len = qdisc_pkt_len(skb);
		fastlane_tb_refill(&q->tb, ktime_get_ns(), q->nf_rate,
				   FASTLANE_NF_BURST(q));
		if (fastlane_tb_conforms(&q->tb, q->nf_rate, len)) {
			fastlane_tb_charge(&q->tb, q->nf_rate, len);
		} else if (!q->data.head) {
			/* work conserving: idle capacity is free */
			q->stats.nf_sent_idle++;
		} else {
			skb = NULL;
		}
		if (skb) {
			skb = __qdisc_dequeue_head(&q->nfq);
			q->nf_backlog -= len;
			q->stats.nf_sent++;
			q->stats.nf_bytes += len;
			goto out;
		}
	}
	skb = __qdisc_dequeue_head(&q->data);
	if (!skb)
		return NULL;
	q->data_backlog -= qdisc_pkt_len(skb);
out:
	sch->q.qlen--;
	qdisc_qstats_backlog_dec(sch, skb);
	qdisc_bstats_update(sch, skb);
	return skb;
}

static void fastlane_reset(struct Qdisc *sch)
{
	struct fastlane_sched_data *q = qdisc_priv(sch);

	__qdisc_reset_queue(&q->data);
	__qdisc_reset_queue(&q->nfq);
	q->data_backlog = 0;
	q->nf_backlog = 0;
	sch->q.qlen = 0;
	sch->qstats.backlog = 0;
}

static const struct nla_policy fastlane_policy[TCA_FASTLANE_MAX + 1] = {
	[TCA_FASTLANE_LIMIT]	= NLA_POLICY_MIN(NLA_U32, 1),
	[TCA_FASTLANE_NF_LIMIT]	= { .type = NLA_U32 },
	[TCA_FASTLANE_RATE]	= { .type = NLA_U64 },
	[TCA_FASTLANE_NF_RATE]	= { .type = NLA_U64 },
	[TCA_FASTLANE_DSCP]	= NLA_POLICY_MAX(NLA_U8, 63),
	[TCA_FASTLANE_CE_THRESHOLD] = { .type = NLA_U32 },
	[TCA_FASTLANE_MODE]	= NLA_POLICY_MAX(NLA_U8, TC_FASTLANE_MODE_MAX),
};

/* The rate of the port @sch is the root qdisc of, in bytes/s, from its
 * link speed; 0 if unknown, or if @sch is a leaf (its rate is that of
 * the shaper above it, which it cannot see).  Under RTNL.
 */
static u64 fastlane_link_rate(struct Qdisc *sch)
{
	struct ethtool_link_ksettings ks;

	if (sch->parent != TC_H_ROOT ||
	    __ethtool_get_link_ksettings(qdisc_dev(sch), &ks) ||
	    ks.base.speed == SPEED_UNKNOWN || !ks.base.speed)
		return 0;
	return div_u64((u64)ks.base.speed * 1000000, 8);
}

/* After a change of the buffers (sch_tree_lock held): drop, oldest first,
 * what the new ones no longer hold, as fq_codel and fq do, and tell the
 * qdiscs above.  A data packet dropped here is a drop of the port's and is
 * notified, as at enqueue; a notification over nf_limit is a cap drop.
 */
static void fastlane_trim(struct Qdisc *sch)
{
	struct fastlane_sched_data *q = qdisc_priv(sch);
	unsigned int dropped = 0, dropped_len = 0, len;
	struct sk_buff *skb;

	rcu_read_lock();	/* fastlane_notify() routes, as at enqueue */
	while (q->data_backlog > sch->limit - q->nf_limit &&
	       (skb = __qdisc_dequeue_head(&q->data))) {
		len = qdisc_pkt_len(skb);
		q->data_backlog -= len;
		fastlane_notify(sch, skb);
		dropped++;
		dropped_len += len;
		qdisc_qstats_backlog_dec(sch, skb);
		qdisc_qstats_drop(sch);
		rtnl_kfree_skbs(skb, skb);
	}
	rcu_read_unlock();
	while (q->nf_backlog > q->nf_limit &&
	       (skb = __qdisc_dequeue_head(&q->nfq))) {
		len = qdisc_pkt_len(skb);
		q->nf_backlog -= len;
		q->stats.nf_cap_drops++;
		dropped++;
		dropped_len += len;
		qdisc_qstats_backlog_dec(sch, skb);
		qdisc_qstats_drop(sch);
		rtnl_kfree_skbs(skb, skb);
	}
	sch->q.qlen -= dropped;
	qdisc_tree_reduce_backlog(sch, dropped, dropped_len);
}

static int fastlane_change(struct Qdisc *sch, struct nlattr *opt,
			   struct netlink_ext_ack *extack)
{
	struct fastlane_sched_data *q = qdisc_priv(sch);
	struct nlattr *tb[TCA_FASTLANE_MAX + 1];
	u32 limit, nf_limit, ce_threshold;
	u64 rate, nf_rate;
	u8 dscp, mode;
	int err;

	/* tc does not set NLA_F_NESTED on TCA_OPTIONS */
	memset(tb, 0, sizeof(tb));
	if (opt) {
		err = nla_parse_nested_deprecated(tb, TCA_FASTLANE_MAX, opt,
						  fastlane_policy, extack);
		if (err < 0)
			return err;
	}

	limit = tb[TCA_FASTLANE_LIMIT] ? nla_get_u32(tb[TCA_FASTLANE_LIMIT]) :
					 READ_ONCE(sch->limit);
	if (tb[TCA_FASTLANE_RATE])
		rate = nla_get_u64(tb[TCA_FASTLANE_RATE]);
	else if (!q->configured)
		rate = fastlane_link_rate(sch);
	else
		rate = q->rate;
	/* the caps follow the buffer and the rate unless given */
	if (tb[TCA_FASTLANE_NF_LIMIT])
		nf_limit = nla_get_u32(tb[TCA_FASTLANE_NF_LIMIT]);
	else if (tb[TCA_FASTLANE_LIMIT] || !q->nf_limit)
		nf_limit = div_u64((u64)limit * FASTLANE_NF_LIMIT_PERMILLE, 1000);
	else
		nf_limit = q->nf_limit;
	if (tb[TCA_FASTLANE_NF_RATE]) {
		nf_rate = nla_get_u64(tb[TCA_FASTLANE_NF_RATE]);
	} else if (tb[TCA_FASTLANE_RATE] || !q->configured) {
		/* the paper's cap, never none by default */
		if (!rate) {
			NL_SET_ERR_MSG(extack,
				       "the port's rate is unknown: give rate (a shaper's leaf: the shaper's rate), or nf_rate 0 to run without a rate cap");
			return -EINVAL;
		}
		nf_rate = div_u64(rate * FASTLANE_NF_RATE_PERCENT, 100);
	} else {
		nf_rate = q->nf_rate;
	}
	dscp = tb[TCA_FASTLANE_DSCP] ? nla_get_u8(tb[TCA_FASTLANE_DSCP]) :
				       q->dscp;
	ce_threshold = tb[TCA_FASTLANE_CE_THRESHOLD] ?
		       nla_get_u32(tb[TCA_FASTLANE_CE_THRESHOLD]) :
		       q->ce_threshold;
	mode = tb[TCA_FASTLANE_MODE] ? nla_get_u8(tb[TCA_FASTLANE_MODE]) :
				       q->mode;

	if (nf_limit > limit) {
		NL_SET_ERR_MSG_ATTR(extack, tb[TCA_FASTLANE_NF_LIMIT],
				    "nf_limit larger than the port's buffer (limit)");
		return -EINVAL;
	}
	if (nf_limit == limit) {
		NL_SET_ERR_MSG_ATTR(extack, tb[TCA_FASTLANE_NF_LIMIT],
				    "nf_limit leaves no room for data in the port's buffer (limit)");
		return -EINVAL;
	}
	if (rate && nf_rate > rate) {
		NL_SET_ERR_MSG_ATTR(extack, tb[TCA_FASTLANE_NF_RATE],
				    "nf_rate larger than the port's rate");
		return -EINVAL;
	}
	if (ce_threshold >= limit) {
		NL_SET_ERR_MSG_ATTR(extack, tb[TCA_FASTLANE_CE_THRESHOLD],
				    "ce_threshold not below the port's buffer (limit)");
		return -EINVAL;
	}
	if (!dscp) {
		NL_SET_ERR_MSG_ATTR(extack, tb[TCA_FASTLANE_DSCP],
				    "dscp 0 is best effort: pick a codepoint of its own");
		return -EINVAL;
	}

	sch_tree_lock(sch);
	WRITE_ONCE(sch->limit, limit);
	q->nf_limit = nf_limit;
	q->rate = rate;
	q->nf_rate = nf_rate;
	q->dscp = dscp;
	q->ce_threshold = ce_threshold;
	q->mode = mode;
	q->configured = 1;
	fastlane_trim(sch);
	sch_tree_unlock(sch);
	return 0;
}

static int fastlane_init(struct Qdisc *sch, struct nlattr *opt,
			 struct netlink_ext_ack *extack)
{
	struct fastlane_sched_data *q = qdisc_priv(sch);

	q->sch = sch;
	skb_queue_head_init(&q->pending);
	INIT_WORK(&q->work, fastlane_work);
	sch->limit = FASTLANE_DEFAULT_LIMIT;
	q->nf_limit = div_u64((u64)sch->limit * FASTLANE_NF_LIMIT_PERMILLE, 1000);
	q->dscp = FASTLANE_DEFAULT_DSCP;
	q->tb.t_last = ktime_get_ns();
	q->tb.tokens = FASTLANE_NF_BURST(q);

	/* no options: the defaults, the caps on the port's rate */
	return fastlane_change(sch, opt, extack);
}

static void fastlane_destroy(struct Qdisc *sch)
{
	struct fastlane_sched_data *q = qdisc_priv(sch);

	cancel_work_sync(&q->work);
	skb_queue_purge(&q->pending);
	q->pending_bytes = 0;
}

static int fastlane_dump(struct Qdisc *sch, struct sk_buff *skb)
{
	struct fastlane_sched_data *q = qdisc_priv(sch);
	struct nlattr *opts;

	opts = nla_nest_start_noflag(skb, TCA_OPTIONS);
	if (!opts)
		goto nla_put_failure;
	if (nla_put_u32(skb, TCA_FASTLANE_LIMIT, READ_ONCE(sch->limit)) ||
	    nla_put_u32(skb, TCA_FASTLANE_NF_LIMIT, q->nf_limit) ||
	    nla_put_u64_64bit(skb, TCA_FASTLANE_RATE, q->rate,
			      TCA_FASTLANE_PAD) ||
	    nla_put_u64_64bit(skb, TCA_FASTLANE_NF_RATE, q->nf_rate,
			      TCA_FASTLANE_PAD) ||
	    nla_put_u8(skb, TCA_FASTLANE_DSCP, q->dscp) ||
	    nla_put_u32(skb, TCA_FASTLANE_CE_THRESHOLD, q->ce_threshold) ||
	    nla_put_u8(skb, TCA_FASTLANE_MODE, q->mode))
		goto nla_put_failure;
	return nla_nest_end(skb, opts);

nla_put_failure:
	return -1;
}

static int fastlane_dump_stats(struct Qdisc *sch, struct gnet_dump *d)
{
	struct fastlane_sched_data *q = qdisc_priv(sch);
	struct tc_fastlane_xstats st = q->stats;

	st.nf_backlog = q->nf_backlog;
	st.nf_pending = skb_queue_len_lockless(&q->pending);
	return gnet_stats_copy_app(d, &st, sizeof(st));
}

static struct Qdisc_ops fastlane_qdisc_ops __read_mostly = {
	.id		= "fastlane",
	.priv_size	= sizeof(struct fastlane_sched_data),
	.enqueue	= fastlane_enqueue,
	.dequeue	= fastlane_dequeue,
	.peek		= qdisc_peek_dequeued,
	.init		= fastlane_init,
	.reset		= fastlane_reset,
	.destroy	= fastlane_destroy,
	.change		= fastlane_change,
	.dump		= fastlane_dump,
	.dump_stats	= fastlane_dump_stats,
	.owner		= THIS_MODULE,
};
MODULE_ALIAS_NET_SCH("fastlane");

static int __init fastlane_module_init(void)
{
	return register_qdisc(&fastlane_qdisc_ops);
}

static void __exit fastlane_module_exit(void)
{
	unregister_qdisc(&fastlane_qdisc_ops);
}

module_init(fastlane_module_init);
module_exit(fastlane_module_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("FastLane switch port: drop notifications at strict priority");
