// SPDX-License-Identifier: GPL-2.0-only
/* KUnit tests of HTB's congestion signals (sch_htb_ecn.[ch]): the threshold
 * decision, the receive window a flow is held to, its encoding in a scaled
 * 16-bit window field, the parsing of the window scale option out of
 * untrusted TCP options, the packet parser, and the flow table with the
 * ACK handler on real skbs (IPv4 and IPv6, CHECKSUM_COMPLETE).
 */

#include <kunit/test.h>
#include <linux/skbuff.h>
#include <net/ip6_checksum.h>
#include "sch_htb_ecn.h"

static void htb_ecn_threshold(struct kunit *test)
{
	KUNIT_EXPECT_FALSE(test, htb_ecn_over(0, 30000));
	KUNIT_EXPECT_FALSE(test, htb_ecn_over(30000, 30000));
	KUNIT_EXPECT_TRUE(test, htb_ecn_over(30001, 30000));
	/* no threshold: never */
	KUNIT_EXPECT_FALSE(test, htb_ecn_over(U32_MAX, 0));
}

static void htb_ecn_rwnd_scales_to_threshold(struct kunit *test)
{
	/* at or below K: no limit */
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd(100000, 30000, 30000, 1448), U32_MAX);
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd(100000, 30000, 0, 1448), U32_MAX);
	/* twice K: half the window in flight */
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd(100000, 30000, 60000, 1448), 50000U);
	/* 4x K: a quarter */
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd(80000, 25000, 100000, 1448), 20000U);
	/* never below two segments, not even with nothing in flight */
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd(4000, 1000, 1000000, 1448), 2896U);
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd(0, 1000, 2000, 1448), 2896U);
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd(0, 1000, 2000, 0), 2U);
	/* no overflow: 4 GB in flight, backlog just over K */
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd(U32_MAX, U32_MAX - 1, U32_MAX, 1448),
			U32_MAX - 1);
}

static void htb_ecn_rwnd_monotone(struct kunit *test)
{
	u32 backlog, prev = U32_MAX;

	/* more backlog never gives a larger window */
	for (backlog = 30001; backlog < 3000000; backlog += 997) {
		u32 w = htb_ecn_rwnd(500000, 30000, backlog, 1448);

		KUNIT_EXPECT_LE(test, w, prev);
		KUNIT_EXPECT_GE(test, w, 2896U);
		prev = w;
	}
}

/* rwnd's memory: cut above the threshold, never raised there, grown by
 * about a segment per window below it, let go at the receiver's window
 */
static void htb_ecn_rwnd_held(struct kunit *test)
{
	const u32 mss = 1448, k = 15000, peer = 1 << 20;
	u32 w, i;

	/* not held, not over: nothing */
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd_update(0, 60000, 0, k, k, mss, peer), 0U);
	/* over: the share of a backlog of k */
	w = htb_ecn_rwnd_update(0, 60000, 0, k, 60000, mss, peer);
	KUNIT_EXPECT_EQ(test, w, k);
	/* still over, with a larger share: not raised */
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd_update(w, 60000, 0, k, 30000, mss, peer), w);
	/* deeper over: lowered, never below two segments */
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd_update(w, 3000, 0, k, 60000, mss, peer), 2 * mss);
	/* below: a window's worth of ACKs grows it by about one segment */
	for (i = 0; i < k / mss; i++)
		w = htb_ecn_rwnd_update(w, w, mss, k, 0, mss, peer);
	KUNIT_EXPECT_GE(test, w, k + mss - mss / 4);
	KUNIT_EXPECT_LE(test, w, k + mss);
	/* an ACK of nothing still moves it, by a byte */
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd_update(w, w, 0, k, 0, mss, peer), w + 1);
	/* grown to the receiver's window: let go */
	KUNIT_EXPECT_EQ(test, htb_ecn_rwnd_update(peer - 1, 0, mss, k, 0, mss, peer), 0U);
}

static void htb_ecn_window_field_encoding(struct kunit *test)
{
	/* unscaled */
	KUNIT_EXPECT_EQ(test, htb_ecn_window_field(65535, 20000, 0), 20000);
	/* rounds up: never advertises less than asked */
	KUNIT_EXPECT_EQ(test, htb_ecn_window_field(65535, 20001, 7), 157);
	KUNIT_EXPECT_EQ(test, htb_ecn_window_field(65535, 20096, 7), 157);
	/* never raises what the receiver advertised */
	KUNIT_EXPECT_EQ(test, htb_ecn_window_field(100, 20000, 7), 100);
	KUNIT_EXPECT_EQ(test, htb_ecn_window_field(100, U32_MAX, 14), 100);
	/* never a zero window, even for a zero request */
	KUNIT_EXPECT_EQ(test, htb_ecn_window_field(65535, 0, 7), 1);
	/* saturates at 16 bits */
	KUNIT_EXPECT_EQ(test, htb_ecn_window_field(65535, U32_MAX, 0), 65535);
	/* scale beyond RFC 7323's 14 is treated as 14 */
	KUNIT_EXPECT_EQ(test, htb_ecn_window_field(65535, 1 << 20, 20), 64);
	/* a zero window from the receiver stays zero */
	KUNIT_EXPECT_EQ(test, htb_ecn_window_field(0, 20000, 7), 0);
}

static void htb_ecn_wscale_option(struct kunit *test)
{
	/* mss, sackOK, ts, nop, wscale 7: what Linux sends on a SYN */
	static const u8 linux_syn[] = {
		2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7,
	};
	static const u8 no_ws[] = { 2, 4, 0x05, 0xb4, 1, 1, 4, 2 };
	static const u8 big_ws[] = { 3, 3, 30 };
	static const u8 eol_first[] = { 0, 3, 3, 7 };
	static const u8 bad_len0[] = { 8, 0, 3, 3, 7 };
	static const u8 bad_len1[] = { 8, 1, 3, 3, 7 };
	static const u8 overrun[] = { 2, 4, 0x05, 0xb4, 3, 3 };
	static const u8 ws_wrong_len[] = { 3, 4, 7, 0 };
	static const u8 lone_kind[] = { 1, 1, 1, 3 };

	KUNIT_EXPECT_EQ(test, htb_ecn_parse_wscale(linux_syn, sizeof(linux_syn)), 7);
	KUNIT_EXPECT_EQ(test, htb_ecn_parse_wscale(no_ws, sizeof(no_ws)), -1);
	KUNIT_EXPECT_EQ(test, htb_ecn_parse_wscale(big_ws, sizeof(big_ws)), 14);
	KUNIT_EXPECT_EQ(test, htb_ecn_parse_wscale(eol_first, sizeof(eol_first)), -1);
	KUNIT_EXPECT_EQ(test, htb_ecn_parse_wscale(bad_len0, sizeof(bad_len0)), -1);
	KUNIT_EXPECT_EQ(test, htb_ecn_parse_wscale(bad_len1, sizeof(bad_len1)), -1);
	KUNIT_EXPECT_EQ(test, htb_ecn_parse_wscale(overrun, sizeof(overrun)), -1);
	KUNIT_EXPECT_EQ(test, htb_ecn_parse_wscale(ws_wrong_len, sizeof(ws_wrong_len)), -1);
	KUNIT_EXPECT_EQ(test, htb_ecn_parse_wscale(lone_kind, sizeof(lone_kind)), -1);
	KUNIT_EXPECT_EQ(test, htb_ecn_parse_wscale(linux_syn, 0), -1);
}


/* ------------------------------------------------------ packets and ACKs */

#define T_LPORT		40000
#define T_RPORT		5001
#define T_CLASSID	0x10010
#define T_MSS		1448

struct t_pkt {
	bool	v6;
	bool	out;		/* sent by this host (else from the peer) */
	u8	flags;		/* TCPHDR_* */
	u32	seq, ack;
	u16	win;
	int	wscale;		/* option on a SYN, -1: none */
	u32	payload;
	u8	tos;
	u8	ipproto;	/* 0: TCP */
	bool	frag;
	u8	doff;		/* 0: from the options */
	u16	lport;		/* 0: T_LPORT */
	bool	mapped;		/* IPv6 with the IPv4 flow's v4-mapped addresses */
	bool	ae;		/* the AE flag (Accurate ECN) */
};

static void t_addrs(bool v6, bool out, struct in6_addr *src,
		    struct in6_addr *dst)
{
	struct in6_addr l, r;

	if (v6) {
		ipv6_addr_set(&l, htonl(0xfd000001), 0, 0, htonl(1));
		ipv6_addr_set(&r, htonl(0xfd000003), 0, 0, htonl(1));
	} else {
		ipv6_addr_set_v4mapped(htonl(0x0a000101), &l);
		ipv6_addr_set_v4mapped(htonl(0x0a000301), &r);
	}
	*src = out ? l : r;
	*dst = out ? r : l;
}

/* A packet as it arrives (network header at skb->data, CHECKSUM_COMPLETE
 * as a NIC would give it) or as it is enqueued
 */
static struct sk_buff *t_skb(struct kunit *test, const struct t_pkt *tp)
{
	unsigned int olen = tp->wscale >= 0 ? 4 : 0;
	unsigned int tcplen = sizeof(struct tcphdr) + olen + tp->payload;
	unsigned int nhlen = tp->v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	u16 lport = tp->lport ? : T_LPORT;
	struct in6_addr src, dst;
	struct sk_buff *skb;
	struct tcphdr *th;
	u8 *opt;

	skb = alloc_skb(64 + nhlen + tcplen, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, skb);
	skb_reserve(skb, 64);
	skb_reset_network_header(skb);
	t_addrs(tp->v6 && !tp->mapped, tp->out, &src, &dst);
	if (tp->v6) {
		struct ipv6hdr *ip6 = skb_put_zero(skb, nhlen);

		ip6->version = 6;
		ipv6_change_dsfield(ip6, 0, tp->tos);
		ip6->payload_len = htons(tcplen);
		ip6->nexthdr = tp->ipproto ? : IPPROTO_TCP;
		ip6->hop_limit = 64;
		ip6->saddr = src;
		ip6->daddr = dst;
		skb->protocol = htons(ETH_P_IPV6);
	} else {
		struct iphdr *iph = skb_put_zero(skb, nhlen);

		iph->version = 4;
		iph->ihl = 5;
		iph->tos = tp->tos;
		iph->tot_len = htons(nhlen + tcplen);
		iph->ttl = 64;
		iph->protocol = tp->ipproto ? : IPPROTO_TCP;
		iph->frag_off = tp->frag ? htons(IP_MF) : 0;
		iph->saddr = src.s6_addr32[3];
		iph->daddr = dst.s6_addr32[3];
		ip_send_check(iph);
		skb->protocol = htons(ETH_P_IP);
	}
	skb_set_transport_header(skb, nhlen);
	th = skb_put_zero(skb, tcplen);
	th->source = htons(tp->out ? lport : T_RPORT);
	th->dest = htons(tp->out ? T_RPORT : lport);
	th->seq = htonl(tp->seq);
	th->ack_seq = htonl(tp->ack);
	th->doff = tp->doff ? : (sizeof(*th) + olen) / 4;
	((u8 *)th)[12] |= tp->ae;
	((u8 *)th)[13] = tp->flags;
	th->window = htons(tp->win);
	if (olen) {
		opt = (u8 *)(th + 1);
		opt[0] = TCPOPT_NOP;
		opt[1] = TCPOPT_WINDOW;
		opt[2] = TCPOLEN_WINDOW;
		opt[3] = tp->wscale;
	}
	if (tp->v6)
		th->check = csum_ipv6_magic(&src, &dst, tcplen, IPPROTO_TCP,
					    csum_partial(th, tcplen, 0));
	else
		th->check = csum_tcpudp_magic(src.s6_addr32[3], dst.s6_addr32[3],
					      tcplen, IPPROTO_TCP,
					      csum_partial(th, tcplen, 0));
	skb->ip_summed = CHECKSUM_COMPLETE;
	skb->csum = csum_partial(skb->data, skb->len, 0);
	return skb;
}

/* The TCP checksum verifies, and CHECKSUM_COMPLETE's sum is the packet's */
static void t_check_sums(struct kunit *test, struct sk_buff *skb, bool v6)
{
	unsigned int nhlen = v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	unsigned int tcplen = skb->len - nhlen;
	const struct tcphdr *th = (void *)(skb->data + nhlen);
	__wsum sum = csum_partial(th, tcplen, 0);

	if (v6)
		KUNIT_EXPECT_EQ(test, csum_ipv6_magic(&ipv6_hdr(skb)->saddr,
						      &ipv6_hdr(skb)->daddr,
						      tcplen, IPPROTO_TCP, sum), 0);
	else
		KUNIT_EXPECT_EQ(test, csum_tcpudp_magic(ip_hdr(skb)->saddr,
							ip_hdr(skb)->daddr,
							tcplen, IPPROTO_TCP, sum), 0);
	KUNIT_EXPECT_EQ(test, csum_fold(skb->csum),
			csum_fold(csum_partial(skb->data, skb->len, 0)));
}

static const struct tcphdr *t_th(struct sk_buff *skb, bool v6)
{
	return (void *)(skb->data + (v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr)));
}

static void htb_ecn_parser(struct kunit *test)
{
	struct htb_ecn_pkt p;
	struct sk_buff *skb;
	int v6;

	for (v6 = 0; v6 <= 1; v6++) {
		struct t_pkt tp = { .v6 = v6, .out = true, .flags = TCPHDR_ACK,
				    .seq = 7, .wscale = -1, .payload = 100,
				    .tos = INET_ECN_ECT_0 };
		struct in6_addr src, dst;

		skb = t_skb(test, &tp);
		KUNIT_ASSERT_TRUE(test, htb_ecn_parse(skb, skb->protocol, &p));
		t_addrs(v6, true, &src, &dst);
		KUNIT_EXPECT_TRUE(test, ipv6_addr_equal(&p.src, &src));
		KUNIT_EXPECT_TRUE(test, ipv6_addr_equal(&p.dst, &dst));
		KUNIT_EXPECT_EQ(test, ntohs(p.th.source), T_LPORT);
		KUNIT_EXPECT_EQ(test, ntohl(p.th.seq), 7U);
		KUNIT_EXPECT_EQ(test, p.payload, 100U);
		KUNIT_EXPECT_EQ(test, p.dsfield & INET_ECN_MASK, INET_ECN_ECT_0);
		KUNIT_EXPECT_EQ(test, p.thoff, skb_transport_offset(skb));
		/* the wrong protocol for the header */
		KUNIT_EXPECT_FALSE(test, htb_ecn_parse(skb, htons(v6 ? ETH_P_IP : ETH_P_IPV6), &p));
		/* truncated: the header claims more than is there */
		skb_trim(skb, skb_transport_offset(skb) + 10);
		KUNIT_EXPECT_FALSE(test, htb_ecn_parse(skb, skb->protocol, &p));
		kfree_skb(skb);

		/* IPv6 with v4-mapped addresses is no IPv4 flow's packet */
		if (v6) {
			tp.mapped = true;
			skb = t_skb(test, &tp);
			KUNIT_EXPECT_FALSE(test, htb_ecn_parse(skb, skb->protocol, &p));
			kfree_skb(skb);
			tp.mapped = false;
		}

		tp.ipproto = IPPROTO_UDP;
		skb = t_skb(test, &tp);
		KUNIT_EXPECT_FALSE(test, htb_ecn_parse(skb, skb->protocol, &p));
		kfree_skb(skb);
		tp.ipproto = 0;
		tp.doff = 4;		/* below the 20-byte header */
		skb = t_skb(test, &tp);
		KUNIT_EXPECT_FALSE(test, htb_ecn_parse(skb, skb->protocol, &p));
		kfree_skb(skb);
		tp.doff = 15;		/* options beyond the packet */
		tp.payload = 0;
		skb = t_skb(test, &tp);
		KUNIT_EXPECT_FALSE(test, htb_ecn_parse(skb, skb->protocol, &p));
		kfree_skb(skb);
	}
	{
		struct t_pkt tp = { .out = true, .flags = TCPHDR_ACK, .wscale = -1,
				    .payload = 100, .frag = true };

		skb = t_skb(test, &tp);
		KUNIT_EXPECT_FALSE(test, htb_ecn_parse(skb, skb->protocol, &p));
		kfree_skb(skb);
	}
}

struct t_env {
	struct htb_ecn_table	*t;
	struct xarray		classes;
	struct htb_ecn_cls	cls;
};

static void t_env_init(struct kunit *test, struct t_env *e, u8 mode,
		       u32 flows, u32 ttl_ms)
{
	e->t = htb_ecn_table_alloc(flows, ttl_ms, 1);
	KUNIT_ASSERT_NOT_NULL(test, e->t);
	xa_init(&e->classes);
	memset(&e->cls, 0, sizeof(e->cls));
	e->cls.classid = T_CLASSID;
	e->cls.mode = mode;
	e->cls.thresh = 15000;
	KUNIT_ASSERT_EQ(test, xa_insert(&e->classes, T_CLASSID, &e->cls,
					GFP_KERNEL), 0);
}

static void t_env_fini(struct t_env *e)
{
	xa_destroy(&e->classes);
	kvfree(e->t);
}

/* a packet this host sends through the class */
static void t_out(struct kunit *test, struct t_env *e, struct t_pkt tp)
{
	struct htb_ecn_pkt p;
	struct sk_buff *skb;

	tp.out = true;
	skb = t_skb(test, &tp);
	KUNIT_ASSERT_TRUE(test, htb_ecn_parse(skb, skb->protocol, &p));
	local_bh_disable();
	htb_ecn_learn(e->t, T_CLASSID, skb, &p, jiffies);
	local_bh_enable();
	kfree_skb(skb);
}

/* a packet from the peer, through the ACK handler; the caller frees it */
static struct sk_buff *t_in(struct kunit *test, struct t_env *e,
			    struct t_pkt tp)
{
	struct sk_buff *skb;

	tp.out = false;
	skb = t_skb(test, &tp);
	rcu_read_lock();
	local_bh_disable();
	htb_ecn_ack(e->t, &e->classes, skb, jiffies);
	local_bh_enable();
	rcu_read_unlock();
	return skb;
}

/* handshake with window scale options @lws (ours) and @pws (the peer's),
 * -1 for none; @passive: the peer opens.  Then 40 segments of data.
 */
static void t_handshake(struct kunit *test, struct t_env *e, bool v6,
			int lws, int pws, bool passive)
{
	u8 ect = e->cls.mode == TC_HTB_ECN_ECE ? INET_ECN_ECT_0 : 0;
	int i;

	if (passive) {
		kfree_skb(t_in(test, e, (struct t_pkt){ .v6 = v6, .flags = TCPHDR_SYN,
							.seq = 99, .win = 64240, .wscale = pws }));
		t_out(test, e, (struct t_pkt){ .v6 = v6, .flags = TCPHDR_SYN | TCPHDR_ACK,
					       .seq = 0, .ack = 100, .win = 64240, .wscale = lws });
	} else {
		t_out(test, e, (struct t_pkt){ .v6 = v6, .flags = TCPHDR_SYN,
					       .seq = 0, .win = 64240, .wscale = lws });
		kfree_skb(t_in(test, e, (struct t_pkt){ .v6 = v6,
							.flags = TCPHDR_SYN | TCPHDR_ACK,
							.seq = 99, .ack = 1, .win = 64240,
							.wscale = pws }));
	}
	for (i = 0; i < 40; i++)
		t_out(test, e, (struct t_pkt){ .v6 = v6, .flags = TCPHDR_ACK,
					       .seq = 1 + i * T_MSS, .ack = 100,
					       .wscale = -1, .payload = T_MSS,
					       .tos = ect });
}

/* rwnd: the ACK's window, rewritten with the scale both SYNs agreed on */
static void htb_ecn_ack_rwnd_scales(struct kunit *test)
{
	static const struct {
		int lws, pws;
		bool passive;
		u8 shift;
	} cases[] = {
		{ 7, 7, false, 7 },	/* both scale */
		{ 7, 7, true, 7 },	/* both scale, the peer opened */
		{ -1, 7, false, 0 },	/* we did not offer: unscaled */
		{ -1, 7, true, 0 },	/* ... also when the peer opened */
		{ 7, -1, false, 0 },	/* the peer did not */
		{ 7, -1, true, 0 },
	};
	unsigned int i;
	int v6;

	for (v6 = 0; v6 <= 1; v6++) {
		for (i = 0; i < ARRAY_SIZE(cases); i++) {
			u32 snd_max = 1 + 40 * T_MSS, ack = 1 + T_MSS, rwnd;
			struct sk_buff *skb;
			struct t_env e;
			u16 want, win;

			win = 60000;
			if (cases[i].shift)
				win = 1000;

			t_env_init(test, &e, TC_HTB_ECN_RWND, 16, 10000);
			e.cls.backlog = 60000;
			t_handshake(test, &e, v6, cases[i].lws, cases[i].pws,
				    cases[i].passive);
			skb = t_in(test, &e, (struct t_pkt){ .v6 = v6, .flags = TCPHDR_ACK,
							     .seq = 100, .ack = ack, .win = win,
							     .wscale = -1 });
			rwnd = htb_ecn_rwnd(snd_max - ack, 15000, 60000, T_MSS);
			want = htb_ecn_window_field(win, rwnd, cases[i].shift);
			KUNIT_EXPECT_LT(test, want, win);
			KUNIT_EXPECT_EQ_MSG(test, ntohs(t_th(skb, v6)->window), want,
					    "v6 %d case %u", v6, i);
			KUNIT_EXPECT_EQ(test, atomic64_read(&e.cls.rwnd_rewrites), 1LL);
			t_check_sums(test, skb, v6);
			kfree_skb(skb);
			/* below the threshold, not held yet: untouched */
			e.cls.backlog = 1000;
			skb = t_in(test, &e, (struct t_pkt){ .v6 = v6, .flags = TCPHDR_ACK,
							     .seq = 100, .ack = ack + T_MSS,
							     .win = win, .wscale = -1 });
			KUNIT_EXPECT_GE(test, ntohs(t_th(skb, v6)->window), want);
			kfree_skb(skb);
			t_env_fini(&e);
		}
	}
}

/* a flow whose handshake was not seen is left alone by rwnd, and counted */
static void htb_ecn_ack_rwnd_unknown_scale(struct kunit *test)
{
	struct sk_buff *skb;
	struct t_env e;
	int i;

	t_env_init(test, &e, TC_HTB_ECN_RWND, 16, 10000);
	e.cls.backlog = 60000;
	for (i = 0; i < 10; i++)
		t_out(test, &e, (struct t_pkt){ .flags = TCPHDR_ACK, .seq = 1 + i * T_MSS,
						.wscale = -1, .payload = T_MSS });
	skb = t_in(test, &e, (struct t_pkt){ .flags = TCPHDR_ACK, .ack = 1 + T_MSS,
					     .win = 1000, .wscale = -1 });
	KUNIT_EXPECT_EQ(test, ntohs(t_th(skb, false)->window), 1000);
	KUNIT_EXPECT_EQ(test, atomic64_read(&e.cls.rwnd_rewrites), 0LL);
	/* ... and counted, over the threshold only */
	KUNIT_EXPECT_EQ(test, atomic64_read(&e.cls.rwnd_no_wscale), 1LL);
	KUNIT_EXPECT_EQ(test, atomic64_read(&e.cls.acks), 1LL);
	kfree_skb(skb);
	e.cls.backlog = 1000;
	kfree_skb(t_in(test, &e, (struct t_pkt){ .flags = TCPHDR_ACK, .ack = 1 + 2 * T_MSS,
						 .win = 1000, .wscale = -1 }));
	KUNIT_EXPECT_EQ(test, atomic64_read(&e.cls.rwnd_no_wscale), 1LL);
	KUNIT_EXPECT_EQ(test, atomic64_read(&e.cls.acks), 2LL);
	t_env_fini(&e);
}

/* ece: ECE on the ACKs of ECN-capable flows while over the threshold */
static void htb_ecn_ack_ece(struct kunit *test)
{
	struct sk_buff *skb;
	struct t_env e;
	int v6;

	for (v6 = 0; v6 <= 1; v6++) {
		t_env_init(test, &e, TC_HTB_ECN_ECE, 16, 10000);
		t_handshake(test, &e, v6, 7, 7, false);
		e.cls.backlog = 10000;
		skb = t_in(test, &e, (struct t_pkt){ .v6 = v6, .flags = TCPHDR_ACK,
						     .ack = 1 + T_MSS, .win = 1000, .wscale = -1 });
		KUNIT_EXPECT_FALSE(test, t_th(skb, v6)->ece);
		kfree_skb(skb);
		e.cls.backlog = 20000;
		skb = t_in(test, &e, (struct t_pkt){ .v6 = v6, .flags = TCPHDR_ACK,
						     .ack = 1 + 2 * T_MSS, .win = 1000,
						     .wscale = -1 });
		KUNIT_EXPECT_TRUE(test, t_th(skb, v6)->ece);
		KUNIT_EXPECT_EQ(test, ntohs(t_th(skb, v6)->window), 1000);
		KUNIT_EXPECT_EQ(test, atomic64_read(&e.cls.ece_marked), 1LL);
		t_check_sums(test, skb, v6);
		kfree_skb(skb);
		t_env_fini(&e);
	}
}

/* Is the TCP checksum of the segment whose TCP header is @th, up to the
 * end of @skb's linear data, right?
 */
static bool t_seg_sum_ok(struct sk_buff *skb, const struct tcphdr *th,
			 bool v6)
{
	unsigned int len = skb_tail_pointer(skb) - (u8 *)th;
	__wsum sum = csum_partial(th, len, 0);
	struct in6_addr src, dst;

	t_addrs(v6, false, &src, &dst);
	if (v6)
		return !csum_ipv6_magic(&src, &dst, len, IPPROTO_TCP, sum);
	return !csum_tcpudp_magic(src.s6_addr32[3], dst.s6_addr32[3], len,
				  IPPROTO_TCP, sum);
}

/* A chain that fraglist GRO built of @n ACKs with data from the peer:
 * the first segment at the head, the others on its frag_list, each with
 * its own headers before its data (pulled to its payload)
 */
static struct sk_buff *t_fraglist(struct kunit *test, bool v6, int n)
{
	unsigned int thlen = sizeof(struct tcphdr);
	struct sk_buff *head = NULL, **pp = NULL;
	int i;

	for (i = 0; i < n; i++) {
		struct sk_buff *seg;

		seg = t_skb(test, &(struct t_pkt){ .v6 = v6, .flags = TCPHDR_ACK,
						   .seq = 100 + i * 100,
						   .ack = 1 + T_MSS, .win = 1000,
						   .wscale = -1, .payload = 100 });
		seg->ip_summed = CHECKSUM_UNNECESSARY;
		if (!head) {
			head = seg;
			pp = &skb_shinfo(head)->frag_list;
			continue;
		}
		skb_pull(seg, skb_transport_offset(seg) + thlen);
		*pp = seg;
		pp = &seg->next;
		head->len += seg->len;
		head->data_len += seg->len;
		head->truesize += seg->truesize;
	}
	skb_shinfo(head)->gso_type = (v6 ? SKB_GSO_TCPV6 : SKB_GSO_TCPV4) |
				     SKB_GSO_FRAGLIST;
	skb_shinfo(head)->gso_size = 100;
	skb_shinfo(head)->gso_segs = n;
	return head;
}

/* ece on a fraglist-GRO chain: every segment gets ECE with its checksum
 * right (software segmentation sends each with its own header), and a
 * segment shared with another holder (a tap) is copied, not written
 */
static void htb_ecn_ack_fraglist(struct kunit *test)
{
	struct sk_buff *skb, *seg, *shared;
	struct t_env e;
	int v6, n;

	for (v6 = 0; v6 <= 1; v6++) {
		t_env_init(test, &e, TC_HTB_ECN_ECE, 16, 10000);
		t_handshake(test, &e, v6, 7, 7, false);
		e.cls.backlog = 20000;
		skb = t_fraglist(test, v6, 4);
		/* the second segment is also held elsewhere */
		shared = skb_get(skb_shinfo(skb)->frag_list);
		rcu_read_lock();
		local_bh_disable();
		htb_ecn_ack(e.t, &e.classes, skb, jiffies);
		local_bh_enable();
		rcu_read_unlock();
		KUNIT_EXPECT_EQ(test, atomic64_read(&e.cls.ece_marked), 1LL);
		KUNIT_EXPECT_TRUE(test, t_th(skb, v6)->ece);
		n = 1;
		skb_walk_frags(skb, seg) {
			const struct tcphdr *th = (void *)(seg->data - sizeof(*th));

			KUNIT_EXPECT_TRUE_MSG(test, th->ece, "segment %d v6 %d", n, v6);
			KUNIT_EXPECT_TRUE_MSG(test, t_seg_sum_ok(seg, th, v6),
					      "segment %d v6 %d", n, v6);
			KUNIT_EXPECT_EQ(test, ntohs(th->window), 1000);
			n++;
		}
		KUNIT_EXPECT_EQ(test, n, 4);
		/* the other holder's segment is as it arrived */
		KUNIT_EXPECT_PTR_NE(test, skb_shinfo(skb)->frag_list, shared);
		KUNIT_EXPECT_FALSE(test, ((struct tcphdr *)(shared->data -
					  sizeof(struct tcphdr)))->ece);
		kfree_skb(shared);
		kfree_skb(skb);
		t_env_fini(&e);
	}
}

/* ece leaves the ACKs of a flow that negotiated Accurate ECN alone (ECE
 * is a bit of its ACE counter there) and counts them; a SYN that asked
 * for AccECN answered by a classic SYN-ACK is classic ECN, whichever side
 * opened
 */
static void htb_ecn_ack_accecn(struct kunit *test)
{
	static const struct {
		bool	passive;
		bool	syn_ae;		/* the SYN: AE CWR ECE, else CWR ECE */
		u8	synack;		/* the SYN-ACK's CWR/ECE bits */
		bool	synack_ae;
		bool	accecn;
	} c[] = {
		{ false, true,  TCPHDR_CWR, false, true },	/* ACE 2 */
		{ false, true,  0,          true,  true },	/* ACE 4 */
		{ false, true,  TCPHDR_ECE, false, false },	/* classic */
		{ false, true,  TCPHDR_ECE, true,  false },	/* nonce */
		{ false, false, TCPHDR_CWR, false, false },	/* not asked */
		{ true,  true,  TCPHDR_CWR | TCPHDR_ECE, false, true },	/* 3 */
		{ true,  true,  TCPHDR_ECE, false, false },
		{ true,  false, TCPHDR_ECE, false, false },
	};
	u8 syn_ecn = TCPHDR_ECE | TCPHDR_CWR;
	struct sk_buff *skb;
	struct t_env e;
	int i, v6;

	for (v6 = 0; v6 <= 1; v6++) {
		for (i = 0; i < ARRAY_SIZE(c); i++) {
			struct t_pkt syn = { .v6 = v6, .win = 64240, .wscale = 7,
					     .flags = TCPHDR_SYN | syn_ecn,
					     .ae = c[i].syn_ae };
			struct t_pkt synack = { .v6 = v6, .win = 64240, .wscale = 7,
						.flags = TCPHDR_SYN | TCPHDR_ACK |
							 c[i].synack,
						.ae = c[i].synack_ae };
			int j;

			t_env_init(test, &e, TC_HTB_ECN_ECE, 16, 10000);
			if (c[i].passive) {
				syn.seq = 99;
				kfree_skb(t_in(test, &e, syn));
				synack.ack = 100;
				t_out(test, &e, synack);
			} else {
				t_out(test, &e, syn);
				synack.seq = 99;
				synack.ack = 1;
				kfree_skb(t_in(test, &e, synack));
			}
			for (j = 0; j < 4; j++)
				t_out(test, &e, (struct t_pkt){ .v6 = v6, .flags = TCPHDR_ACK,
								.seq = 1 + j * T_MSS,
								.ack = 100, .wscale = -1,
								.payload = T_MSS,
								.tos = INET_ECN_ECT_0 });
			e.cls.backlog = 20000;
			skb = t_in(test, &e, (struct t_pkt){ .v6 = v6, .flags = TCPHDR_ACK,
							     .ack = 1 + T_MSS, .win = 1000,
							     .wscale = -1 });
			KUNIT_EXPECT_EQ_MSG(test, (int)t_th(skb, v6)->ece, (int)!c[i].accecn,
					    "case %d v6 %d", i, v6);
			KUNIT_EXPECT_EQ_MSG(test, atomic64_read(&e.cls.accecn_skipped),
					    c[i].accecn ? 1LL : 0LL, "case %d v6 %d", i, v6);
			KUNIT_EXPECT_EQ_MSG(test, atomic64_read(&e.cls.ece_marked),
					    c[i].accecn ? 0LL : 1LL, "case %d v6 %d", i, v6);
			t_check_sums(test, skb, v6);
			kfree_skb(skb);
			t_env_fini(&e);
		}
	}
	/* the AccECN state costs no room: a flow's entry stays 72 bytes */
	kunit_info(test, "sizeof(struct htb_ecn_flow) %zu, bucket %zu",
		   sizeof(struct htb_ecn_flow), sizeof(struct htb_ecn_bucket));
	KUNIT_EXPECT_LE(test, sizeof(struct htb_ecn_flow), 72);
}

/* The peer's window scale comes from the SYN-ACK that answers our SYN
 * (it acknowledges the SYN exactly) and from no other: a forged SYN-ACK
 * before it, or any SYN-ACK after it, is ignored and counted.
 */
static void htb_ecn_ack_forged_synack(struct kunit *test)
{
	u32 snd_max = 1 + 40 * T_MSS, ack = 1 + T_MSS, rwnd;
	struct sk_buff *skb;
	struct t_env e;
	u16 want;
	int v6, i;

	for (v6 = 0; v6 <= 1; v6++) {
		t_env_init(test, &e, TC_HTB_ECN_RWND, 16, 10000);
		e.cls.backlog = 60000;
		t_out(test, &e, (struct t_pkt){ .v6 = v6, .flags = TCPHDR_SYN,
						.seq = 0, .win = 64240, .wscale = 7 });
		/* a forger who does not know our ISN: the wrong ACK */
		kfree_skb(t_in(test, &e, (struct t_pkt){ .v6 = v6,
							 .flags = TCPHDR_SYN | TCPHDR_ACK,
							 .seq = 5, .ack = 12345, .win = 64240,
							 .wscale = 14 }));
		/* the real answer */
		kfree_skb(t_in(test, &e, (struct t_pkt){ .v6 = v6,
							 .flags = TCPHDR_SYN | TCPHDR_ACK,
							 .seq = 99, .ack = 1, .win = 64240,
							 .wscale = 7 }));
		for (i = 0; i < 40; i++)
			t_out(test, &e, (struct t_pkt){ .v6 = v6, .flags = TCPHDR_ACK,
							.seq = 1 + i * T_MSS, .ack = 100,
							.wscale = -1, .payload = T_MSS });
		/* established: one who knows the ISN, and our IPv4 flow's
		 * addresses v4-mapped in IPv6, still change nothing
		 */
		kfree_skb(t_in(test, &e, (struct t_pkt){ .v6 = v6,
							 .flags = TCPHDR_SYN | TCPHDR_ACK,
							 .seq = 99, .ack = 1, .win = 64240,
							 .wscale = 14 }));
		if (!v6)
			kfree_skb(t_in(test, &e, (struct t_pkt){ .v6 = true, .mapped = true,
								 .flags = TCPHDR_SYN |
									  TCPHDR_ACK,
								 .seq = 99, .ack = 1,
								 .win = 64240,
								 .wscale = 14 }));
		KUNIT_EXPECT_EQ(test, atomic64_read(&e.t->synacks_ignored), 2LL);
		skb = t_in(test, &e, (struct t_pkt){ .v6 = v6, .flags = TCPHDR_ACK,
						     .seq = 100, .ack = ack, .win = 1000,
						     .wscale = -1 });
		rwnd = htb_ecn_rwnd(snd_max - ack, 15000, 60000, T_MSS);
		want = htb_ecn_window_field(1000, rwnd, 7);
		KUNIT_EXPECT_EQ_MSG(test, ntohs(t_th(skb, v6)->window), want, "v6 %d", v6);
		kfree_skb(skb);
		t_env_fini(&e);
	}
}

/* SYNs from the network never take a flow's entry */
static void htb_ecn_table_unsolicited_syns(struct kunit *test)
{
	struct htb_ecn_bucket *b;
	struct in6_addr l, r;
	struct t_env e;
	int i;

	t_env_init(test, &e, TC_HTB_ECN_RWND, 16, 10000);
	t_handshake(test, &e, false, 7, 7, false);
	for (i = 0; i < 2000; i++)
		kfree_skb(t_in(test, &e, (struct t_pkt){ .flags = TCPHDR_SYN,
							 .lport = 1 + i, .wscale = 7 }));
	t_addrs(false, true, &l, &r);
	b = htb_ecn_bucket(e.t, &l, &r, htons(T_LPORT), htons(T_RPORT));
	KUNIT_EXPECT_NOT_NULL(test, htb_ecn_find(b, &l, &r, htons(T_LPORT),
						 htons(T_RPORT)));
	KUNIT_EXPECT_EQ(test, atomic64_read(&e.t->evictions), 0LL);
	t_env_fini(&e);
}

static bool t_has_flow(struct t_env *e, u16 lport)
{
	struct htb_ecn_bucket *b;
	struct in6_addr l, r;

	t_addrs(false, true, &l, &r);
	b = htb_ecn_bucket(e->t, &l, &r, htons(lport), htons(T_RPORT));
	return htb_ecn_find(b, &l, &r, htons(lport), htons(T_RPORT));
}

/* SYN-ACKs this host sends in answer to a SYN flood take free and
 * half-open entries only: the live flows of a full bucket stay, nothing is
 * counted as an eviction, and what found no room is counted
 */
static void htb_ecn_table_synack_flood(struct kunit *test)
{
	struct t_env e;
	int i;

	/* one bucket of HTB_ECN_WAYS entries */
	t_env_init(test, &e, TC_HTB_ECN_RWND, HTB_ECN_WAYS, 10000);
	for (i = 0; i < HTB_ECN_WAYS; i++) {
		u16 lport = 100 + i;

		t_out(test, &e, (struct t_pkt){ .flags = TCPHDR_SYN, .lport = lport,
						.wscale = 7 });
		kfree_skb(t_in(test, &e, (struct t_pkt){ .flags = TCPHDR_SYN | TCPHDR_ACK,
							 .lport = lport, .seq = 99, .ack = 1,
							 .wscale = 7 }));
		t_out(test, &e, (struct t_pkt){ .flags = TCPHDR_ACK, .lport = lport,
						.seq = 1, .ack = 100, .wscale = -1,
						.payload = T_MSS });
	}
	for (i = 0; i < 100; i++) {
		u16 lport = 1000 + i;

		kfree_skb(t_in(test, &e, (struct t_pkt){ .flags = TCPHDR_SYN, .lport = lport,
							 .seq = 5, .wscale = 7 }));
		t_out(test, &e, (struct t_pkt){ .flags = TCPHDR_SYN | TCPHDR_ACK,
						.lport = lport, .ack = 6, .wscale = 7 });
	}
	for (i = 0; i < HTB_ECN_WAYS; i++)
		KUNIT_EXPECT_TRUE_MSG(test, t_has_flow(&e, 100 + i), "flow %d", i);
	KUNIT_EXPECT_EQ(test, atomic64_read(&e.t->evictions), 0LL);
	KUNIT_EXPECT_EQ(test, atomic64_read(&e.t->no_room), 100LL);
	t_env_fini(&e);

	/* one entry free: the half-open flows take turns in it, and a new
	 * flow of ours takes it from the last of them without an eviction
	 */
	t_env_init(test, &e, TC_HTB_ECN_RWND, HTB_ECN_WAYS, 10000);
	for (i = 0; i < HTB_ECN_WAYS - 1; i++)
		t_out(test, &e, (struct t_pkt){ .flags = TCPHDR_ACK, .lport = 100 + i,
						.seq = 1, .ack = 100, .wscale = -1,
						.payload = T_MSS });
	for (i = 0; i < 100; i++)
		t_out(test, &e, (struct t_pkt){ .flags = TCPHDR_SYN | TCPHDR_ACK,
						.lport = 1000 + i, .ack = 6, .wscale = 7 });
	KUNIT_EXPECT_TRUE(test, t_has_flow(&e, 1099));
	KUNIT_EXPECT_FALSE(test, t_has_flow(&e, 1098));
	KUNIT_EXPECT_EQ(test, atomic64_read(&e.t->no_room), 0LL);
	t_out(test, &e, (struct t_pkt){ .flags = TCPHDR_SYN, .lport = 200, .wscale = 7 });
	KUNIT_EXPECT_TRUE(test, t_has_flow(&e, 200));
	KUNIT_EXPECT_FALSE(test, t_has_flow(&e, 1099));
	for (i = 0; i < HTB_ECN_WAYS - 1; i++)
		KUNIT_EXPECT_TRUE(test, t_has_flow(&e, 100 + i));
	KUNIT_EXPECT_EQ(test, atomic64_read(&e.t->evictions), 0LL);
	t_env_fini(&e);
}

/* a full table evicts the least recently used flow, and counts it; a flow
 * idle beyond the ttl gives its entry up without counting
 */
static void htb_ecn_table_evictions(struct kunit *test)
{
	struct t_env e;
	int i;

	t_env_init(test, &e, TC_HTB_ECN_ECE, 16, 60000);
	for (i = 0; i < 40; i++)
		t_out(test, &e, (struct t_pkt){ .flags = TCPHDR_SYN, .lport = 1000 + i,
						.wscale = 7 });
	KUNIT_EXPECT_GE(test, atomic64_read(&e.t->evictions), 24LL);
	t_env_fini(&e);

	t_env_init(test, &e, TC_HTB_ECN_ECE, 16, 1);
	for (i = 0; i < 40; i++) {
		struct t_pkt tp = { .out = true, .flags = TCPHDR_SYN,
				    .lport = 1000 + i, .wscale = 7 };
		struct htb_ecn_pkt p;
		struct sk_buff *skb = t_skb(test, &tp);

		KUNIT_ASSERT_TRUE(test, htb_ecn_parse(skb, skb->protocol, &p));
		/* each packet a second after the one before */
		local_bh_disable();
		htb_ecn_learn(e.t, T_CLASSID, skb, &p, jiffies + i * HZ);
		local_bh_enable();
		kfree_skb(skb);
	}
	KUNIT_EXPECT_EQ(test, atomic64_read(&e.t->evictions), 0LL);
	t_env_fini(&e);
}

static struct kunit_case htb_ecn_test_cases[] = {
	KUNIT_CASE(htb_ecn_threshold),
	KUNIT_CASE(htb_ecn_rwnd_scales_to_threshold),
	KUNIT_CASE(htb_ecn_rwnd_monotone),
	KUNIT_CASE(htb_ecn_rwnd_held),
	KUNIT_CASE(htb_ecn_window_field_encoding),
	KUNIT_CASE(htb_ecn_wscale_option),
	KUNIT_CASE(htb_ecn_parser),
	KUNIT_CASE(htb_ecn_ack_rwnd_scales),
	KUNIT_CASE(htb_ecn_ack_rwnd_unknown_scale),
	KUNIT_CASE(htb_ecn_ack_ece),
	KUNIT_CASE(htb_ecn_ack_accecn),
	KUNIT_CASE(htb_ecn_ack_fraglist),
	KUNIT_CASE(htb_ecn_ack_forged_synack),
	KUNIT_CASE(htb_ecn_table_unsolicited_syns),
	KUNIT_CASE(htb_ecn_table_synack_flood),
	KUNIT_CASE(htb_ecn_table_evictions),
	{}
};

static struct kunit_suite htb_ecn_test_suite = {
	.name = "sch_htb_ecn",
	.test_cases = htb_ecn_test_cases,
};

kunit_test_suite(htb_ecn_test_suite);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("KUnit tests for HTB congestion signals");
MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);
