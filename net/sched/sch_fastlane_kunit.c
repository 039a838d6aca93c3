// SPDX-License-Identifier: GPL-2.0-only
/* KUnit tests of FastLane's switch side (sch_fastlane.c): the ICMP error
 * that tells the source of a packet about to be dropped, for IPv4 and
 * IPv6, routed and bridged, and the token bucket that caps notifications.
 */

#include <kunit/test.h>
#include <linux/etherdevice.h>
#include <linux/icmp.h>
#include <linux/icmpv6.h>
#include <linux/if_vlan.h>
#include <linux/tcp.h>
#include <net/ip.h>
#include <net/ip6_checksum.h>
#include <net/pkt_sched.h>
#include "sch_fastlane.h"

MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);

#define NF_DSCP		0x2d
#define PAYLOAD		100
/* NOP, NOP, timestamps: a 12-byte option block (doff 8) */
static const u8 tcp_opts[12] = { 1, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 9 };
static const u8 mac_a[ETH_ALEN] = { 0x02, 0, 0, 0, 0, 0xa };
static const u8 mac_b[ETH_ALEN] = { 0x02, 0, 0, 0, 0, 0xb };

static void fill_tcp(struct tcphdr *th)
{
	memset(th, 0, sizeof(*th));
	th->source = htons(40000);
	th->dest = htons(5001);
	th->seq = htonl(0x12345678);
	th->ack_seq = htonl(0x9abcdef0);
	th->doff = (sizeof(*th) + sizeof(tcp_opts)) / 4;
	th->ack = 1;
	th->window = htons(512);
	th->check = htons(0xbeef);	/* stale in a notification anyway */
	memcpy(th + 1, tcp_opts, sizeof(tcp_opts));
}

/* eth + IPv4 (or IPv6) + TCP with options + PAYLOAD bytes */
static struct sk_buff *make_pkt(struct kunit *test, bool v6, u8 tos, u8 proto)
{
	unsigned int iphlen = v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	unsigned int thlen = sizeof(struct tcphdr) + sizeof(tcp_opts);
	struct sk_buff *skb = alloc_skb(256 + PAYLOAD, GFP_KERNEL);
	struct ethhdr *eth;

	KUNIT_ASSERT_NOT_NULL(test, skb);
	skb_reserve(skb, 32);
	eth = skb_put(skb, ETH_HLEN);
	ether_addr_copy(eth->h_source, mac_a);
	ether_addr_copy(eth->h_dest, mac_b);
	eth->h_proto = htons(v6 ? ETH_P_IPV6 : ETH_P_IP);
	skb_reset_mac_header(skb);
	skb_set_network_header(skb, ETH_HLEN);
	skb->protocol = eth->h_proto;
	if (v6) {
		struct ipv6hdr *ip6h = skb_put_zero(skb, iphlen);

		ip6h->version = 6;
		ipv6_change_dsfield(ip6h, 0, tos);
		ip6h->payload_len = htons(thlen + PAYLOAD);
		ip6h->nexthdr = proto;
		ip6h->hop_limit = 63;
		ip6h->saddr.s6_addr32[0] = htonl(0xfd000000);
		ip6h->saddr.s6_addr32[3] = htonl(1);
		ip6h->daddr.s6_addr32[0] = htonl(0xfd000000);
		ip6h->daddr.s6_addr32[3] = htonl(2);
	} else {
		struct iphdr *iph = skb_put_zero(skb, iphlen);

		iph->version = 4;
		iph->ihl = 5;
		iph->tos = tos;
		iph->tot_len = htons(iphlen + thlen + PAYLOAD);
		iph->frag_off = htons(IP_DF);
		iph->ttl = 63;
		iph->protocol = proto;
		iph->saddr = htonl(0x0a000001);
		iph->daddr = htonl(0x0a000102);
		ip_send_check(iph);
	}
	skb_set_transport_header(skb, ETH_HLEN + iphlen);
	fill_tcp(skb_put(skb, thlen));
	memset(skb_put(skb, PAYLOAD), 0x5a, PAYLOAD);
	return skb;
}

/* IPv4 (IPv6) header of a notification, then 8 bytes of ICMP error */
#define NF_V4_HDRS	(20 + 8)
#define NF_V6_HDRS	(40 + 8)
/* the quote: the IP header and the TCP header with its 12 option bytes */
#define QUOTE_V4	(20 + 32)
#define QUOTE_V6	(40 + 32)

/* @n quotes the IP and TCP headers of @skb byte for byte, at @off */
static void expect_quote(struct kunit *test, struct sk_buff *n,
			 unsigned int off, struct sk_buff *skb, unsigned int len)
{
	KUNIT_ASSERT_EQ(test, n->len, off + len);
	KUNIT_EXPECT_EQ(test, memcmp(n->data + off, skb_network_header(skb), len),
			0);
}

/* The ICMP (ICMPv6) checksum of the finished notification @n verifies */
static bool nf_csum_ok(struct sk_buff *n)
{
	unsigned int len = skb_tail_pointer(n) - skb_transport_header(n);
	__wsum csum = csum_partial(skb_transport_header(n), len, 0);

	if (ip_hdr(n)->version == 4)
		return csum_fold(csum) == 0;
	return csum_ipv6_magic(&ipv6_hdr(n)->saddr, &ipv6_hdr(n)->daddr, len,
			       IPPROTO_ICMPV6, csum) == 0;
}

/* The quote: both headers whole, the payload never */
static void fastlane_test_quote_len(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, fastlane_quote_len(20, 8), 52);
	KUNIT_EXPECT_EQ(test, fastlane_quote_len(40, 5), 60);
	/* the longest: 40 bytes of IPv4 options and 40 of TCP options */
	KUNIT_EXPECT_EQ(test, fastlane_quote_len(60, 15), FASTLANE_QUOTE_MAX);
	/* a data offset below a TCP header's: no quote */
	KUNIT_EXPECT_EQ(test, fastlane_quote_len(20, 4), 0);
	KUNIT_EXPECT_EQ(test, fastlane_quote_len(40, 0), 0);
	/* an ICMP error must fit in 576 bytes (RFC 1812), ICMPv6 in 1280 */
	KUNIT_EXPECT_LE(test, 60 + 8 + FASTLANE_QUOTE_MAX, 576);
}

/* What a port takes for a notification: a FastLane ICMP error with the
 * codepoint; not one of another type, not one without the codepoint, not
 * a TCP segment with the codepoint
 */
static void fastlane_test_classify(struct kunit *test)
{
	int v6;

	for (v6 = 0; v6 <= 1; v6++) {
		struct sk_buff *skb = make_pkt(test, v6, NF_DSCP << 2, IPPROTO_TCP);
		struct sk_buff *n;

		KUNIT_EXPECT_FALSE(test, fastlane_is_notification(skb, NF_DSCP));
		n = fastlane_notification(skb, NF_DSCP, false);
		KUNIT_ASSERT_NOT_NULL(test, n);
		KUNIT_EXPECT_TRUE(test, fastlane_is_notification(n, NF_DSCP));
		KUNIT_EXPECT_FALSE(test, fastlane_is_notification(n, NF_DSCP + 1));
		/* another ICMP error type, with the codepoint */
		if (v6)
			icmp6_hdr(n)->icmp6_type = ICMPV6_DEST_UNREACH;
		else
			icmp_hdr(n)->type = ICMP_DEST_UNREACH;
		KUNIT_EXPECT_FALSE(test, fastlane_is_notification(n, NF_DSCP));
		kfree_skb(n);
		/* the type, without the codepoint */
		n = fastlane_notification(skb, 0x0a, false);
		KUNIT_ASSERT_NOT_NULL(test, n);
		KUNIT_EXPECT_FALSE(test, fastlane_is_notification(n, NF_DSCP));
		kfree_skb(n);
		kfree_skb(skb);
	}
}

/* An IPv4 first fragment is quoted as it is; a later one has no TCP
 * header to quote
 */
static void fastlane_test_first_fragment(struct kunit *test)
{
	struct sk_buff *skb = make_pkt(test, false, 0, IPPROTO_TCP);
	struct sk_buff *n;

	ip_hdr(skb)->frag_off = htons(IP_MF);
	ip_send_check(ip_hdr(skb));
	n = fastlane_notification(skb, NF_DSCP, false);
	KUNIT_ASSERT_NOT_NULL(test, n);
	KUNIT_EXPECT_EQ(test, ip_hdr(n)->frag_off, 0);
	expect_quote(test, n, NF_V4_HDRS, skb, QUOTE_V4);
	kfree_skb(n);
	ip_hdr(skb)->frag_off = htons(IP_MF | 185);
	ip_send_check(ip_hdr(skb));
	KUNIT_EXPECT_NULL(test, fastlane_notification(skb, NF_DSCP, false));
	kfree_skb(skb);
}

static void fastlane_test_ipv4_routed(struct kunit *test)
{
	struct sk_buff *skb = make_pkt(test, false, INET_ECN_ECT_0, IPPROTO_TCP);
	const struct iphdr *o = ip_hdr(skb);
	__be32 router = htonl(0x0a0000fe);
	struct sk_buff *n;
	struct iphdr *iph;

	n = fastlane_notification(skb, NF_DSCP, false);
	KUNIT_ASSERT_NOT_NULL(test, n);
	/* IP header, ICMP error, the quote: nothing of the payload */
	expect_quote(test, n, NF_V4_HDRS, skb, QUOTE_V4);
	KUNIT_EXPECT_EQ(test, n->protocol, htons(ETH_P_IP));
	KUNIT_EXPECT_EQ(test, n->priority, TC_PRIO_CONTROL);
	iph = ip_hdr(n);
	KUNIT_EXPECT_EQ(test, iph->protocol, IPPROTO_ICMP);
	KUNIT_EXPECT_EQ(test, iph->daddr, o->saddr);
	/* the codepoint; not ECN capable, whatever the packet was */
	KUNIT_EXPECT_EQ(test, iph->tos, NF_DSCP << 2);
	KUNIT_EXPECT_EQ(test, iph->ttl, IPDEFTTL);
	KUNIT_EXPECT_EQ(test, skb_transport_offset(n), 20);
	KUNIT_EXPECT_EQ(test, icmp_hdr(n)->type, ICMP_FASTLANE);
	KUNIT_EXPECT_EQ(test, icmp_hdr(n)->code, 0);
	/* the route back gives its source address, then it is finished */
	fastlane_finish(n, &router);
	KUNIT_EXPECT_EQ(test, iph->saddr, router);
	KUNIT_EXPECT_EQ(test, ntohs(iph->tot_len), NF_V4_HDRS + QUOTE_V4);
	KUNIT_EXPECT_EQ(test, ip_fast_csum(iph, iph->ihl), 0);
	KUNIT_EXPECT_TRUE(test, nf_csum_ok(n));
	/* the quote is the packet's, its length and checksum included */
	expect_quote(test, n, NF_V4_HDRS, skb, QUOTE_V4);
	KUNIT_EXPECT_TRUE(test, fastlane_is_notification(n, NF_DSCP));
	KUNIT_EXPECT_FALSE(test, fastlane_is_notification(skb, NF_DSCP));
	kfree_skb(n);
	kfree_skb(skb);
}

static void fastlane_test_ipv4_bridged(struct kunit *test)
{
	struct sk_buff *skb = make_pkt(test, false, 0, IPPROTO_TCP);
	struct sk_buff *n = fastlane_notification(skb, NF_DSCP, true);
	struct ethhdr *eth;

	KUNIT_ASSERT_NOT_NULL(test, n);
	KUNIT_EXPECT_EQ(test, n->len, ETH_HLEN + NF_V4_HDRS + QUOTE_V4);
	eth = eth_hdr(n);
	KUNIT_EXPECT_TRUE(test, ether_addr_equal(eth->h_dest, mac_a));
	KUNIT_EXPECT_TRUE(test, ether_addr_equal(eth->h_source, mac_b));
	KUNIT_EXPECT_EQ(test, eth->h_proto, htons(ETH_P_IP));
	KUNIT_EXPECT_EQ(test, skb_network_offset(n), ETH_HLEN);
	/* finished here: from the packet's destination, to its source */
	KUNIT_EXPECT_EQ(test, ip_hdr(n)->saddr, ip_hdr(skb)->daddr);
	KUNIT_EXPECT_EQ(test, ip_hdr(n)->daddr, ip_hdr(skb)->saddr);
	KUNIT_EXPECT_EQ(test, ip_fast_csum(ip_hdr(n), 5), 0);
	KUNIT_EXPECT_TRUE(test, nf_csum_ok(n));
	KUNIT_EXPECT_EQ(test, ip_hdr(n)->tos, NF_DSCP << 2);
	KUNIT_EXPECT_TRUE(test, fastlane_is_notification(n, NF_DSCP));
	kfree_skb(n);
	kfree_skb(skb);
}

/* a bridged notification keeps the VLAN tag of the
 * frame it stands for, offloaded or in the frame
 */
static void fastlane_test_vlan_kept(struct kunit *test)
{
	struct sk_buff *skb = make_pkt(test, false, 0, IPPROTO_TCP);
	struct sk_buff *n, *tagged;
	struct vlan_ethhdr *veth;
	unsigned int iplen;

	__vlan_hwaccel_put_tag(skb, htons(ETH_P_8021Q), 42);
	n = fastlane_notification(skb, NF_DSCP, true);
	KUNIT_ASSERT_NOT_NULL(test, n);
	KUNIT_EXPECT_TRUE(test, skb_vlan_tag_present(n));
	KUNIT_EXPECT_EQ(test, skb_vlan_tag_get(n), 42);
	KUNIT_EXPECT_EQ(test, n->vlan_proto, htons(ETH_P_8021Q));
	KUNIT_EXPECT_EQ(test, eth_hdr(n)->h_proto, htons(ETH_P_IP));
	kfree_skb(n);

	/* the tag in the frame: 802.1Q, VID 7 */
	iplen = skb->len - ETH_HLEN;
	tagged = alloc_skb(64 + skb->len + VLAN_HLEN, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, tagged);
	skb_reserve(tagged, 32);
	veth = skb_put(tagged, VLAN_ETH_HLEN);
	ether_addr_copy(veth->h_source, mac_a);
	ether_addr_copy(veth->h_dest, mac_b);
	veth->h_vlan_proto = htons(ETH_P_8021Q);
	veth->h_vlan_TCI = htons(7);
	veth->h_vlan_encapsulated_proto = htons(ETH_P_IP);
	skb_put_data(tagged, skb_network_header(skb), iplen);
	skb_reset_mac_header(tagged);
	skb_set_network_header(tagged, VLAN_ETH_HLEN);
	skb_set_transport_header(tagged, VLAN_ETH_HLEN + 20);
	tagged->protocol = htons(ETH_P_8021Q);
	n = fastlane_notification(tagged, NF_DSCP, true);
	KUNIT_ASSERT_NOT_NULL(test, n);
	KUNIT_EXPECT_EQ(test, n->len, VLAN_ETH_HLEN + NF_V4_HDRS + QUOTE_V4);
	KUNIT_EXPECT_EQ(test, skb_network_offset(n), VLAN_ETH_HLEN);
	veth = (struct vlan_ethhdr *)skb_mac_header(n);
	KUNIT_EXPECT_TRUE(test, ether_addr_equal(veth->h_dest, mac_a));
	KUNIT_EXPECT_TRUE(test, ether_addr_equal(veth->h_source, mac_b));
	KUNIT_EXPECT_EQ(test, veth->h_vlan_proto, htons(ETH_P_8021Q));
	KUNIT_EXPECT_EQ(test, veth->h_vlan_TCI, htons(7));
	KUNIT_EXPECT_EQ(test, veth->h_vlan_encapsulated_proto, htons(ETH_P_IP));
	KUNIT_EXPECT_EQ(test, ip_hdr(n)->saddr, ip_hdr(skb)->daddr);
	kfree_skb(n);
	kfree_skb(tagged);
	kfree_skb(skb);
}

static void fastlane_test_ipv6(struct kunit *test)
{
	struct sk_buff *skb = make_pkt(test, true, INET_ECN_CE, IPPROTO_TCP);
	const struct ipv6hdr *o = ipv6_hdr(skb);
	struct in6_addr router = o->daddr;
	struct ipv6hdr *ip6h;
	struct sk_buff *n;

	router.s6_addr32[3] = htonl(0xfe);
	n = fastlane_notification(skb, NF_DSCP, false);
	KUNIT_ASSERT_NOT_NULL(test, n);
	expect_quote(test, n, NF_V6_HDRS, skb, QUOTE_V6);
	ip6h = ipv6_hdr(n);
	KUNIT_EXPECT_EQ(test, ip6h->nexthdr, IPPROTO_ICMPV6);
	KUNIT_EXPECT_TRUE(test, ipv6_addr_equal(&ip6h->daddr, &o->saddr));
	KUNIT_EXPECT_EQ(test, ipv6_get_dsfield(ip6h), NF_DSCP << 2);
	KUNIT_EXPECT_EQ(test, icmp6_hdr(n)->icmp6_type, ICMPV6_FASTLANE);
	KUNIT_EXPECT_EQ(test, icmp6_hdr(n)->icmp6_code, 0);
	fastlane_finish(n, &router);
	KUNIT_EXPECT_TRUE(test, ipv6_addr_equal(&ip6h->saddr, &router));
	KUNIT_EXPECT_EQ(test, ntohs(ip6h->payload_len), 8 + QUOTE_V6);
	KUNIT_EXPECT_TRUE(test, nf_csum_ok(n));
	expect_quote(test, n, NF_V6_HDRS, skb, QUOTE_V6);
	KUNIT_EXPECT_TRUE(test, fastlane_is_notification(n, NF_DSCP));
	kfree_skb(n);
	kfree_skb(skb);
}

static void fastlane_test_refuses_what_is_not_tcp(struct kunit *test)
{
	struct sk_buff *skb;

	/* UDP */
	skb = make_pkt(test, false, 0, IPPROTO_UDP);
	KUNIT_EXPECT_NULL(test, fastlane_notification(skb, NF_DSCP, false));
	KUNIT_EXPECT_FALSE(test, fastlane_is_notification(skb, 0));
	kfree_skb(skb);
	/* an IPv6 extension header before TCP */
	skb = make_pkt(test, true, 0, NEXTHDR_HOP);
	KUNIT_EXPECT_NULL(test, fastlane_notification(skb, NF_DSCP, false));
	kfree_skb(skb);
	/* a non-first IPv4 fragment has no TCP header */
	skb = make_pkt(test, false, 0, IPPROTO_TCP);
	ip_hdr(skb)->frag_off = htons(185);
	KUNIT_EXPECT_NULL(test, fastlane_notification(skb, NF_DSCP, false));
	kfree_skb(skb);
	/* a TCP header whose options run past the packet */
	skb = make_pkt(test, false, 0, IPPROTO_TCP);
	tcp_hdr(skb)->doff = 15;
	skb_trim(skb, skb_transport_offset(skb) + 40);
	KUNIT_EXPECT_NULL(test, fastlane_notification(skb, NF_DSCP, false));
	/* ... or a data offset below the header's size */
	tcp_hdr(skb)->doff = 4;
	KUNIT_EXPECT_NULL(test, fastlane_notification(skb, NF_DSCP, false));
	kfree_skb(skb);
	/* bridged, but without an Ethernet header to swap */
	skb = make_pkt(test, false, 0, IPPROTO_TCP);
	skb->mac_header = (typeof(skb->mac_header))~0U;
	KUNIT_EXPECT_NULL(test, fastlane_notification(skb, NF_DSCP, true));
	kfree_skb(skb);
	/* a notification is never notified: it is ICMP */
	skb = make_pkt(test, false, 0, IPPROTO_TCP);
	{
		struct sk_buff *n = fastlane_notification(skb, NF_DSCP, false);

		KUNIT_ASSERT_NOT_NULL(test, n);
		KUNIT_EXPECT_NULL(test, fastlane_notification(n, NF_DSCP, false));
		kfree_skb(n);
	}
	kfree_skb(skb);
}

/* The paper's caps, not the host's ICMP rate limit: 1% of a 10 Gbit/s
 * port lets 156250 notifications of 80 bytes a second go at priority,
 * where icmp_msgs_per_sec (1000 a second) would have capped them
 */
static void fastlane_test_tb_not_icmp_ratelimit(struct kunit *test)
{
	const u64 rate = div_u64(10000000000ULL / 8 * FASTLANE_NF_RATE_PERCENT, 100);
	const u32 burst = div_u64((u64)FASTLANE_DEFAULT_LIMIT *
				  FASTLANE_NF_LIMIT_PERMILLE, 1000);
	struct fastlane_tb tb = { .tokens = 0, .t_last = 0 };
	u64 now = 0;
	u32 sent = 0;

	KUNIT_EXPECT_EQ(test, burst, 3276);
	/* one every 8 us for a second */
	while (now < NSEC_PER_SEC) {
		now += 8 * NSEC_PER_USEC;
		fastlane_tb_refill(&tb, now, rate, burst);
		if (fastlane_tb_conforms(&tb, rate, 80)) {
			fastlane_tb_charge(&tb, rate, 80);
			sent++;
		}
	}
	KUNIT_EXPECT_GE(test, sent, 125000);
	KUNIT_EXPECT_LE(test, sent, 156250);
}

static void fastlane_test_tb_caps_rate(struct kunit *test)
{
	/* 1% of 10 Mbit/s: 12500 bytes/s, a burst of 3276 bytes */
	struct fastlane_tb tb = { .tokens = 3276, .t_last = 0 };
	const u64 rate = 12500;
	int sent = 0, i;

	/* the burst goes at once: 3276 / 80 = 40 notifications */
	for (i = 0; i < 100; i++) {
		fastlane_tb_refill(&tb, 0, rate, 3276);
		if (!fastlane_tb_conforms(&tb, rate, 80))
			break;
		fastlane_tb_charge(&tb, rate, 80);
		sent++;
	}
	KUNIT_EXPECT_EQ(test, sent, 40);
	/* then 12500 bytes a second: 100 ms buys 1250 bytes */
	fastlane_tb_refill(&tb, 100 * NSEC_PER_MSEC, rate, 3276);
	KUNIT_EXPECT_EQ(test, tb.tokens, 3276 - 40 * 80 + 1250);
	/* never more than the burst, however long the idle time */
	fastlane_tb_refill(&tb, 1000 * NSEC_PER_SEC, rate, 3276);
	KUNIT_EXPECT_EQ(test, tb.tokens, 3276);
	/* no cap: always conforms, nothing charged */
	tb.tokens = 0;
	KUNIT_EXPECT_TRUE(test, fastlane_tb_conforms(&tb, 0, 1500));
	fastlane_tb_charge(&tb, 0, 1500);
	KUNIT_EXPECT_EQ(test, tb.tokens, 0);
}

/* Explicit notification rates of fast ports: no overflow of rate * dt */
static void fastlane_test_tb_fast_ports(struct kunit *test)
{
	struct fastlane_tb tb = { .tokens = 0, .t_last = 0 };
	const u32 burst = 3276;

	/* 200 Gbit/s: 25e9 bytes/s, a second idle refills the burst */
	fastlane_tb_refill(&tb, NSEC_PER_SEC, 25000000000ULL, burst);
	KUNIT_EXPECT_EQ(test, tb.tokens, burst);
	/* 25e9 * 737869763 wraps u64 just above 2^64 (to 1.29e9) */
	tb.tokens = 0;
	tb.t_last = 0;
	fastlane_tb_refill(&tb, 737869763, 25000000000ULL, burst);
	KUNIT_EXPECT_EQ(test, tb.tokens, burst);
	/* ~147.6 Gbit/s: 18446744074 * 1e9 wraps to 2.9e8 */
	tb.tokens = 0;
	tb.t_last = 0;
	fastlane_tb_refill(&tb, NSEC_PER_SEC, 18446744074ULL, burst);
	KUNIT_EXPECT_EQ(test, tb.tokens, burst);
	/* 400 Gbit/s, 1 us idle: 50000 bytes, capped at the burst */
	tb.tokens = 0;
	tb.t_last = 0;
	fastlane_tb_refill(&tb, NSEC_PER_USEC, 50000000000ULL, burst);
	KUNIT_EXPECT_EQ(test, tb.tokens, burst);
	/* 400 Gbit/s, 10 ns idle: 500 bytes, exactly */
	tb.tokens = 0;
	tb.t_last = 0;
	fastlane_tb_refill(&tb, 10, 50000000000ULL, burst);
	KUNIT_EXPECT_EQ(test, tb.tokens, 500);
	/* the largest rate: a nanosecond of it, capped at the burst */
	tb.tokens = 0;
	tb.t_last = 0;
	fastlane_tb_refill(&tb, 1, U64_MAX, burst);
	KUNIT_EXPECT_EQ(test, tb.tokens, burst);
	/* small rates stay exact: 1% of 200 Mbit/s, 250000 bytes/s */
	tb.tokens = 0;
	tb.t_last = 0;
	fastlane_tb_refill(&tb, NSEC_PER_MSEC, 250000, burst);
	KUNIT_EXPECT_EQ(test, tb.tokens, 250);
	/* 12500 bytes/s for 79 us: 0.9875 bytes, rounded down */
	tb.tokens = 0;
	tb.t_last = 0;
	fastlane_tb_refill(&tb, 79 * NSEC_PER_USEC, 12500, burst);
	KUNIT_EXPECT_EQ(test, tb.tokens, 0);
	/* then 80 us more: 1 byte */
	fastlane_tb_refill(&tb, 159 * NSEC_PER_USEC, 12500, burst);
	KUNIT_EXPECT_EQ(test, tb.tokens, 1);
}

/* How many notifications of @len bytes join the hand-off queue of a port
 * of @limit bytes before the work sends any
 */
static u32 pending_fit(u32 len, u32 limit)
{
	u32 bytes = 0, n = 0;

	while (n < 100000 && fastlane_pending_admit(bytes, len, limit)) {
		bytes += len;
		n++;
	}
	return n;
}

static void fastlane_test_pending_bounded_by_buffer(struct kunit *test)
{
	struct sk_buff *skb = make_pkt(test, false, 0, IPPROTO_TCP);
	struct sk_buff *n = fastlane_notification(skb, NF_DSCP, false);
	u32 len;

	KUNIT_ASSERT_NOT_NULL(test, n);
	/* IPv4 and ICMP, quoting IPv4, TCP and 12 bytes of options: 80 */
	len = n->len;
	KUNIT_EXPECT_EQ(test, len, 80);
	/* no count limit: the port's buffer in bytes */
	KUNIT_EXPECT_EQ(test, pending_fit(len, 128 * 1024), 1638);
	KUNIT_EXPECT_EQ(test, pending_fit(len, 64 * 1024), 819);
	KUNIT_EXPECT_EQ(test, pending_fit(len, 2600), 32);
	/* exactly full, one byte short, and a notification above the buffer */
	KUNIT_EXPECT_TRUE(test, fastlane_pending_admit(2600 - len, len, 2600));
	KUNIT_EXPECT_FALSE(test, fastlane_pending_admit(2600 - len + 1, len, 2600));
	KUNIT_EXPECT_FALSE(test, fastlane_pending_admit(0, len, len - 1));
	KUNIT_EXPECT_TRUE(test, fastlane_pending_admit(0, len, len));
	/* no wrap near the top of u32 */
	KUNIT_EXPECT_FALSE(test, fastlane_pending_admit(U32_MAX - 10, len, U32_MAX));
	KUNIT_EXPECT_TRUE(test, fastlane_pending_admit(U32_MAX - len, len, U32_MAX));
	kfree_skb(n);
	kfree_skb(skb);
}

/* Mode quench: an RFC 792 Source Quench quoting the IP header and the
 * first 8 bytes of the datagram, at the packet's DSCP (not-ECT) and
 * priority, type 4 code 0, not a notification at any port
 */
static void fastlane_test_quench_ipv4(struct kunit *test)
{
	struct sk_buff *skb = make_pkt(test, false, (10 << 2) | INET_ECN_ECT_0,
				       IPPROTO_TCP);
	__be32 router = htonl(0x0a0000fe);
	struct sk_buff *n;
	struct iphdr *iph;

	skb->priority = 4;
	n = fastlane_quench(skb, false);
	KUNIT_ASSERT_NOT_NULL(test, n);
	expect_quote(test, n, NF_V4_HDRS, skb, 20 + FASTLANE_QUENCH_DATA);
	iph = ip_hdr(n);
	KUNIT_EXPECT_EQ(test, iph->protocol, IPPROTO_ICMP);
	KUNIT_EXPECT_EQ(test, iph->daddr, ip_hdr(skb)->saddr);
	KUNIT_EXPECT_EQ(test, iph->tos, 10 << 2);
	KUNIT_EXPECT_EQ(test, n->priority, 4);
	KUNIT_EXPECT_EQ(test, icmp_hdr(n)->type, ICMP_SOURCE_QUENCH);
	KUNIT_EXPECT_EQ(test, icmp_hdr(n)->code, 0);
	KUNIT_EXPECT_EQ(test, icmp_hdr(n)->un.gateway, 0);
	fastlane_finish(n, &router);
	KUNIT_EXPECT_EQ(test, ntohs(iph->tot_len), NF_V4_HDRS + 28);
	KUNIT_EXPECT_EQ(test, ip_fast_csum(iph, iph->ihl), 0);
	KUNIT_EXPECT_TRUE(test, nf_csum_ok(n));
	/* the TCP ports and sequence, nothing more of the segment */
	KUNIT_EXPECT_EQ(test, memcmp(n->data + NF_V4_HDRS + 20,
				     skb_transport_header(skb), 8), 0);
	KUNIT_EXPECT_FALSE(test, fastlane_is_notification(n, NF_DSCP));
	KUNIT_EXPECT_FALSE(test, fastlane_is_notification(n, 10));
	/* an ICMP error is never quenched (RFC 1122, 3.2.2) */
	KUNIT_EXPECT_NULL(test, fastlane_quench(n, false));
	kfree_skb(n);

	/* bridged: Ethernet addresses swapped, from the packet's destination */
	n = fastlane_quench(skb, true);
	KUNIT_ASSERT_NOT_NULL(test, n);
	KUNIT_EXPECT_EQ(test, n->len, ETH_HLEN + NF_V4_HDRS + 28);
	KUNIT_EXPECT_TRUE(test, ether_addr_equal(eth_hdr(n)->h_dest, mac_a));
	KUNIT_EXPECT_EQ(test, ip_hdr(n)->saddr, ip_hdr(skb)->daddr);
	KUNIT_EXPECT_TRUE(test, nf_csum_ok(n));
	kfree_skb(n);
	kfree_skb(skb);

	/* any IPv4 datagram, not only TCP */
	skb = make_pkt(test, false, 0, IPPROTO_UDP);
	n = fastlane_quench(skb, false);
	KUNIT_ASSERT_NOT_NULL(test, n);
	expect_quote(test, n, NF_V4_HDRS, skb, 28);
	kfree_skb(n);
	kfree_skb(skb);
}

/* What no Source Quench is made of: IPv6 (ICMPv6 has none), non-first
 * fragments, ICMP errors (FastLane's included), broadcast and multicast,
 * a truncated header; a short datagram is quoted as far as it goes
 */
static void fastlane_test_quench_refuses(struct kunit *test)
{
	struct sk_buff *skb, *n;

	skb = make_pkt(test, true, 0, IPPROTO_TCP);
	KUNIT_EXPECT_NULL(test, fastlane_quench(skb, false));
	kfree_skb(skb);

	skb = make_pkt(test, false, 0, IPPROTO_TCP);
	ip_hdr(skb)->frag_off = htons(IP_MF | 185);
	KUNIT_EXPECT_NULL(test, fastlane_quench(skb, false));
	ip_hdr(skb)->frag_off = htons(IP_MF);
	n = fastlane_quench(skb, false);
	KUNIT_EXPECT_NOT_NULL(test, n);
	kfree_skb(n);
	ip_hdr(skb)->frag_off = 0;
	n = fastlane_notification(skb, NF_DSCP, false);
	KUNIT_ASSERT_NOT_NULL(test, n);
	KUNIT_EXPECT_NULL(test, fastlane_quench(n, false));
	kfree_skb(n);
	ip_hdr(skb)->daddr = htonl(0xe0000001);
	KUNIT_EXPECT_NULL(test, fastlane_quench(skb, false));
	ip_hdr(skb)->daddr = htonl(0xffffffff);
	KUNIT_EXPECT_NULL(test, fastlane_quench(skb, false));
	ip_hdr(skb)->daddr = htonl(0x0a000102);
	ip_hdr(skb)->saddr = 0;
	KUNIT_EXPECT_NULL(test, fastlane_quench(skb, false));
	ip_hdr(skb)->saddr = htonl(0x0a000001);
	/* 4 bytes of data: quoted as they are */
	ip_hdr(skb)->tot_len = htons(24);
	n = fastlane_quench(skb, false);
	KUNIT_ASSERT_NOT_NULL(test, n);
	KUNIT_EXPECT_EQ(test, n->len, NF_V4_HDRS + 24);
	kfree_skb(n);
	/* an IP length below the header's, or a packet shorter than it */
	ip_hdr(skb)->tot_len = htons(16);
	KUNIT_EXPECT_NULL(test, fastlane_quench(skb, false));
	ip_hdr(skb)->tot_len = htons(1500);
	skb_trim(skb, ETH_HLEN + 24);
	KUNIT_EXPECT_NULL(test, fastlane_quench(skb, false));
	kfree_skb(skb);
}

static struct kunit_case fastlane_cases[] = {
	KUNIT_CASE(fastlane_test_quench_ipv4),
	KUNIT_CASE(fastlane_test_quench_refuses),
	KUNIT_CASE(fastlane_test_pending_bounded_by_buffer),
	KUNIT_CASE(fastlane_test_ipv4_routed),
	KUNIT_CASE(fastlane_test_ipv4_bridged),
	KUNIT_CASE(fastlane_test_ipv6),
	KUNIT_CASE(fastlane_test_refuses_what_is_not_tcp),
	KUNIT_CASE(fastlane_test_tb_caps_rate),
	KUNIT_CASE(fastlane_test_tb_fast_ports),
	KUNIT_CASE(fastlane_test_quote_len),
	KUNIT_CASE(fastlane_test_classify),
	KUNIT_CASE(fastlane_test_tb_not_icmp_ratelimit),
	KUNIT_CASE(fastlane_test_first_fragment),
	KUNIT_CASE(fastlane_test_vlan_kept),
	{}
};

static struct kunit_suite fastlane_suite = {
	.name = "sch_fastlane",
	.test_cases = fastlane_cases,
};

kunit_test_suite(fastlane_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit tests for the FastLane qdisc");
