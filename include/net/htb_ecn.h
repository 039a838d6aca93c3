/* SPDX-License-Identifier: GPL-2.0-only */
/* HTB congestion signals (CONFIG_NET_SCH_HTB_ECN): the receive-path hook
 * through which ecn_mode ece and rwnd see the ACKs of the flows an HTB
 * qdisc shapes, on the device it shapes.
 */
#ifndef _NET_HTB_ECN_H
#define _NET_HTB_ECN_H

#include <linux/jump_label.h>

struct sk_buff;

#ifdef CONFIG_NET_SCH_HTB_ECN
/* enabled while some HTB qdisc has a class in ecn_mode ece or rwnd */
DECLARE_STATIC_KEY_FALSE(htb_ecn_rx_needed);

void htb_ecn_rx(struct sk_buff *skb);
#endif

#endif /* _NET_HTB_ECN_H */
