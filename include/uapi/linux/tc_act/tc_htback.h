/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
#ifndef __UAPI_TC_HTBACK_H
#define __UAPI_TC_HTBACK_H

#include <linux/types.h>
#include <linux/pkt_cls.h>

/* The ACK side of HTB's ecn_mode ece and rwnd: an action on the ingress
 * of the device whose root qdisc is HTB, which lets the flow table of
 * that qdisc see (and rewrite) the ACKs of the flows it shapes.
 */
struct tc_htback {
	tc_gen;
};

enum {
	TCA_HTBACK_UNSPEC,
	TCA_HTBACK_TM,
	TCA_HTBACK_PARMS,
	TCA_HTBACK_PAD,
	TCA_HTBACK_SEEN,	/* u64: TCP packets shown to an HTB flow table
				 * (dump only)
				 */
	TCA_HTBACK_NOT_TCP,	/* u64: packets left alone: not TCP over IPv4
				 * or IPv6, fragments, IPv6 extension headers,
				 * truncated (dump only)
				 */
	TCA_HTBACK_NO_HTB,	/* u64: packets left alone: the device's root
				 * qdisc is not HTB (dump only)
				 */
	TCA_HTBACK_NO_TABLE,	/* u64: packets left alone: the root HTB has
				 * no class in ecn_mode ece or rwnd (dump only)
				 */
	TCA_HTBACK_NOT_INGRESS,	/* u64: packets left alone: the action ran
				 * outside tc ingress (dump only)
				 */
	__TCA_HTBACK_MAX
};
#define TCA_HTBACK_MAX (__TCA_HTBACK_MAX - 1)

#endif
