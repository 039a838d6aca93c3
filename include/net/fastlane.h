/* SPDX-License-Identifier: GPL-2.0-only */
/* FastLane drop notifications on the wire (CONFIG_NET_SCH_FASTLANE,
 * CONFIG_TCP_FASTLANE).
 *
 * A FastLane switch port (net/sched/sch_fastlane.c) that drops a TCP
 * packet tells its source with an ICMP error of an experimental type
 * (RFC 4727 for IPv4, RFC 4443's private experimentation for IPv6) that
 * quotes the dropped packet's IP header and its whole TCP header, options
 * included: the quoted IP length gives the range that was lost, the
 * quoted timestamp which transmission of it.  The source takes it in its
 * TCP error handler (net/ipv4/tcp_fastlane.c).
 */
#ifndef _NET_FASTLANE_H
#define _NET_FASTLANE_H

#include <linux/icmp.h>
#include <linux/icmpv6.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>

/* RFC 4727, Sec. 7.1: ICMP types 253 and 254 are for experiments; FastLane
 * takes the first and leaves 254 to others.
 */
#define ICMP_FASTLANE		253
/* RFC 4443, Sec. 2.1: error types 100 and 101 are for private
 * experimentation; FastLane takes 100.
 */
#define ICMPV6_FASTLANE		100

/* The longest quote: an IPv4 header with 40 bytes of options and a TCP
 * header with 40 bytes of options (an IPv6 header quotes 40 + 60)
 */
#define FASTLANE_QUOTE_MAX	(60 + 60)

/* The length of the quote of a packet whose IP header (IPv4 options or
 * IPv6 extension headers included) is @iphlen bytes and whose TCP data
 * offset is @doff words: both headers whole, nothing of the payload (the
 * quoted IP length still says how much there was).  0 if @doff is not a
 * TCP header's.
 */
static inline unsigned int fastlane_quote_len(unsigned int iphlen, u8 doff)
{
	if (doff < sizeof(struct tcphdr) / 4)
		return 0;
	return iphlen + doff * 4;
}

#endif /* _NET_FASTLANE_H */
