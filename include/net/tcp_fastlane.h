/* SPDX-License-Identifier: GPL-2.0-only */
/* FastLane drop notifications at the source (CONFIG_TCP_FASTLANE).
 *
 * A FastLane switch port (net/sched/sch_fastlane.c) that drops a TCP
 * packet sends its headers back to the source instead: addresses
 * swapped, a DSCP codepoint set, the payload cut off, the original IP
 * length kept.  With net.ipv4.tcp_fastlane on, IPv4 and IPv6 accept such
 * a packet despite its length, and TCP hands it to the socket it names,
 * which retransmits at once (net/ipv4/tcp_fastlane.c).
 */
#ifndef _NET_TCP_FASTLANE_H
#define _NET_TCP_FASTLANE_H

#include <linux/skbuff.h>
#include <linux/types.h>
#include <net/net_namespace.h>

/* The codepoint notifications carry by default (sch_fastlane's too) */
#define TCP_FASTLANE_DEFAULT_DSCP	45

/* At most this many notifications per socket and round trip, beyond
 * twice the congestion window
 */
#define TCP_FASTLANE_BURST		16

/* Where a notification's sequence range falls for a socket */
enum tcp_fastlane_range {
	TCP_FASTLANE_IN_FLIGHT,		/* within [snd_una, snd_nxt) */
	TCP_FASTLANE_PURE_ACK,		/* no data at snd_nxt or below: an ACK */
	TCP_FASTLANE_OUT_OF_WINDOW,
};

/* Classify the notified range [seq, end_seq) of a socket whose
 * unacknowledged data is [snd_una, snd_nxt).  end_seq counts SYN and FIN.
 * Sequence numbers wrap: compared with before()/after() semantics.
 */
static inline enum tcp_fastlane_range
tcp_fastlane_classify(u32 seq, u32 end_seq, u32 snd_una, u32 snd_nxt)
{
	if (seq == end_seq) {
		/* a pure ACK sent no later than now, not before snd_una */
		if ((s32)(seq - snd_una) >= 0 && (s32)(seq - snd_nxt) <= 0)
			return TCP_FASTLANE_PURE_ACK;
		return TCP_FASTLANE_OUT_OF_WINDOW;
	}
	if ((s32)(end_seq - seq) < 0)
		return TCP_FASTLANE_OUT_OF_WINDOW;
	if ((s32)(seq - snd_una) >= 0 && (s32)(end_seq - snd_nxt) <= 0)
		return TCP_FASTLANE_IN_FLIGHT;
	return TCP_FASTLANE_OUT_OF_WINDOW;
}

/* The per-socket rate limit: may one more notification be taken in a
 * round trip that has seen @count, with a congestion window of @cwnd?
 */
static inline bool tcp_fastlane_within_rate(u32 count, u32 cwnd)
{
	return count < 2 * cwnd + TCP_FASTLANE_BURST;
}

#if IS_ENABLED(CONFIG_TCP_FASTLANE)

/* Is @dsfield (with @proto) a notification this netns takes? */
static inline bool tcp_fastlane_nf(const struct net *net, u8 dsfield,
				   u8 proto)
{
	return proto == IPPROTO_TCP &&
	       READ_ONCE(net->ipv4.sysctl_tcp_fastlane) &&
	       (dsfield >> 2) == READ_ONCE(net->ipv4.sysctl_tcp_fastlane_dscp);
}

bool tcp_fastlane_v4_rcv(struct net *net, struct sk_buff *skb);
void tcp_fastlane_rcv(struct net *net, struct sock *sk, struct sk_buff *skb,
		      u32 payload);
void tcp_fastlane_release(struct sock *sk);

#else

static inline bool tcp_fastlane_nf(const struct net *net, u8 dsfield,
				   u8 proto)
{
	return false;
}

static inline bool tcp_fastlane_v4_rcv(struct net *net, struct sk_buff *skb)
{
	return false;
}

static inline void tcp_fastlane_release(struct sock *sk)
{
}

#endif /* CONFIG_TCP_FASTLANE */
#endif /* _NET_TCP_FASTLANE_H */
