/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause) */
/*
 * HTB's congestion signals (ecn_thresh, ecn_mode): the counters of a
 * class.
 *
 * A class that has an ecn_mode, or had one, appends struct
 * tc_htb_ecn_xstats to its struct tc_htb_xstats (linux/pkt_sched.h), at
 * TC_HTB_XSTATS_ECN_OFFSET (8-byte aligned): the length of the statistics
 * says whether they are there.  A class of stock HTB keeps the 20 bytes
 * of struct tc_htb_xstats.
 */
#ifndef _UAPI_LINUX_HTB_ECN_H
#define _UAPI_LINUX_HTB_ECN_H

#include <linux/types.h>

#define TC_HTB_XSTATS_ECN_OFFSET	24

struct tc_htb_ecn_xstats {
	__u64 ce_marked;	/* packets (segments) CE-marked */
	__u64 ece_marked;	/* ACKs given ECE */
	__u64 rwnd_rewrites;	/* ACK windows lowered */
	__u64 acks;		/* ACKs of the class's flows seen by htback */
	__u64 rwnd_no_wscale;	/* ACKs over ecn_thresh that rwnd left alone:
				 * the flow's SYN or SYN-ACK was not seen
				 * (its window scale is unknown)
				 */
};

#endif /* _UAPI_LINUX_HTB_ECN_H */
