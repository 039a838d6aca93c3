/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause) */
/*
 * HTB's congestion signals (ecn_thresh, ecn_mode): the counters of a
 * class, and its flow tables over generic netlink.
 *
 * A class that has an ecn_mode, or had one, appends struct
 * tc_htb_ecn_xstats to its struct tc_htb_xstats (linux/pkt_sched.h), at
 * TC_HTB_XSTATS_ECN_OFFSET (8-byte aligned): the length of the statistics
 * says whether they are there.  A class of stock HTB keeps the 20 bytes
 * of struct tc_htb_xstats.
 *
 * HTB_ECN_CMD_FLOWS_GET dumps the flows that the HTB qdiscs of the
 * caller's network namespace remember, for CAP_NET_ADMIN in that
 * namespace's user namespace.  Each message is one qdisc's header and
 * the flows of some of its buckets (HTB_ECN_A_FLOW, nested, one per
 * flow); a qdisc with many flows takes many messages.  The dump resumes
 * where the last message ended, so a reader sees the table as it changes
 * (a flow may show twice or not at all); HTB_ECN_A_IFINDEX in the request
 * limits it to one device.
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
	__u64 accecn_skipped;	/* ACKs over ecn_thresh that ece left alone:
				 * the flow negotiated Accurate ECN, where
				 * ECE is a bit of the ACE counter
				 */
};

#define HTB_ECN_FAMILY_NAME	"htb-ecn"
#define HTB_ECN_FAMILY_VERSION	1

enum {
	HTB_ECN_A_UNSPEC,
	HTB_ECN_A_IFINDEX,	/* u32: the qdisc's device */
	HTB_ECN_A_HANDLE,	/* u32: the qdisc's handle */
	HTB_ECN_A_SIZE,		/* u32: entries of the table (ecn_flows) */
	HTB_ECN_A_TTL_MS,	/* u32: ecn_flow_ttl */
	HTB_ECN_A_EVICTIONS,	/* u64: live flows pushed out */
	HTB_ECN_A_FLOW,		/* nest: HTB_ECN_FLOW_A_*, one per flow */
	HTB_ECN_A_PAD,
	__HTB_ECN_A_MAX,
	HTB_ECN_A_MAX = __HTB_ECN_A_MAX - 1
};

/* What the flow's SYNs said about window scaling */
enum htb_ecn_wscale {
	HTB_ECN_WSCALE_UNKNOWN,	/* a SYN of the flow was not seen */
	HTB_ECN_WSCALE_OFF,	/* not in effect */
	HTB_ECN_WSCALE_ON,	/* in effect: HTB_ECN_FLOW_A_PEER_WS */
};

enum {
	HTB_ECN_FLOW_A_UNSPEC,
	HTB_ECN_FLOW_A_FAMILY,	/* u8: AF_INET or AF_INET6 */
	HTB_ECN_FLOW_A_LADDR,	/* binary: 4 or 16 bytes, this host's */
	HTB_ECN_FLOW_A_RADDR,	/* binary: the peer's */
	HTB_ECN_FLOW_A_LPORT,	/* u16, host order */
	HTB_ECN_FLOW_A_RPORT,	/* u16, host order */
	HTB_ECN_FLOW_A_CLASSID,	/* u32 */
	HTB_ECN_FLOW_A_WSCALE,	/* u8: enum htb_ecn_wscale */
	HTB_ECN_FLOW_A_PEER_WS,	/* u8: the peer's shift */
	HTB_ECN_FLOW_A_MSS,	/* u32: largest segment sent */
	HTB_ECN_FLOW_A_ECT,	/* u8: data sent ECN capable */
	HTB_ECN_FLOW_A_RWND,	/* u32: window held to, bytes; 0: none */
	HTB_ECN_FLOW_A_IDLE_MS,	/* u32: since the flow's last packet */
	__HTB_ECN_FLOW_A_MAX,
	HTB_ECN_FLOW_A_MAX = __HTB_ECN_FLOW_A_MAX - 1
};

enum {
	HTB_ECN_CMD_UNSPEC,
	HTB_ECN_CMD_FLOWS_GET,
	__HTB_ECN_CMD_MAX,
	HTB_ECN_CMD_MAX = __HTB_ECN_CMD_MAX - 1
};

#endif /* _UAPI_LINUX_HTB_ECN_H */
