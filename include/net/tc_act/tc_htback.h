/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __NET_TC_HTBACK_H
#define __NET_TC_HTBACK_H

#include <net/act_api.h>
#include <net/sch_generic.h>

/* What the ACK side of HTB's ecn_mode ece/rwnd did with a packet */
enum htb_ecn_rx_result {
	HTB_ECN_RX_SEEN,	/* a TCP packet, shown to the flow table */
	HTB_ECN_RX_NOT_TCP,	/* not TCP over IPv4/IPv6, or truncated */
	HTB_ECN_RX_NO_HTB,	/* the device's root qdisc is not HTB */
	HTB_ECN_RX_NO_TABLE,	/* no class in ecn_mode ece or rwnd */
	HTB_ECN_RX_NOT_INGRESS,	/* act_htback: outside tc ingress */
	__HTB_ECN_RX_MAX
};

/* sch_htb: the root qdisc @sch of the device @skb arrived on, under RCU */
int htb_ecn_rx(struct Qdisc *sch, struct sk_buff *skb);

/* per CPU, indexed by enum htb_ecn_rx_result */
struct tcf_htback_stats {
	u64	cnt[__HTB_ECN_RX_MAX];
};

struct tcf_htback {
	struct tc_action		common;
	struct tcf_htback_stats __percpu *stats;
};

#define to_htback(a) ((struct tcf_htback *)a)

#endif /* __NET_TC_HTBACK_H */
