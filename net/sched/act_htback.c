// SPDX-License-Identifier: GPL-2.0-only
/*
 * The ACK side of HTB's congestion signals.
 *
 * HTB leaf classes in ecn_mode ece or rwnd signal their backlog in the
 * ACKs of the flows they shape (He et al., "Low Latency Software Rate
 * Limiters for Cloud Networks", APNet 2017): those ACKs arrive on the
 * device whose root qdisc is the HTB.  This action, on that device's
 * ingress, hands each packet to the root HTB's flow table, which sets ECE
 * or lowers the receive window as the class's backlog asks:
 *
 *   tc qdisc add dev eth0 clsact
 *   tc filter add dev eth0 ingress matchall action htback
 *
 * It never drops: what it cannot use (not TCP over IPv4 or IPv6, a
 * device without HTB or without a class in ece/rwnd) passes unchanged
 * and is counted.
 */

#include <linux/module.h>
#include <linux/init.h>
#include <linux/kernel.h>
#include <linux/skbuff.h>
#include <linux/rtnetlink.h>
#include <linux/netdevice.h>
#include <net/netlink.h>
#include <net/pkt_sched.h>
#include <net/act_api.h>
#include <net/pkt_cls.h>
#include <uapi/linux/tc_act/tc_htback.h>
#include <net/tc_act/tc_htback.h>

static struct tc_action_ops act_htback_ops;

static int tcf_htback_act(struct sk_buff *skb, const struct tc_action *a,
			  struct tcf_result *res)
{
	struct tcf_htback *h = to_htback(a);
	int r;

	tcf_lastuse_update(&h->tcf_tm);
	tcf_action_update_bstats(&h->common, skb);

	if (unlikely(!skb_at_tc_ingress(skb)))
		r = HTB_ECN_RX_NOT_INGRESS;
	else
		r = htb_ecn_rx(rcu_dereference_bh(skb->dev->qdisc), skb);
	this_cpu_inc(h->stats->cnt[r]);
	return READ_ONCE(h->tcf_action);
}

static const struct nla_policy htback_policy[TCA_HTBACK_MAX + 1] = {
	[TCA_HTBACK_PARMS]	= NLA_POLICY_EXACT_LEN(sizeof(struct tc_htback)),
	[TCA_HTBACK_SEEN]	= { .type = NLA_REJECT },
	[TCA_HTBACK_NOT_TCP]	= { .type = NLA_REJECT },
	[TCA_HTBACK_NO_HTB]	= { .type = NLA_REJECT },
	[TCA_HTBACK_NO_TABLE]	= { .type = NLA_REJECT },
	[TCA_HTBACK_NOT_INGRESS] = { .type = NLA_REJECT },
};

static int tcf_htback_init(struct net *net, struct nlattr *nla,
			   struct nlattr *est, struct tc_action **a,
			   struct tcf_proto *tp, u32 flags,
			   struct netlink_ext_ack *extack)
{
	struct tc_action_net *tn = net_generic(net, act_htback_ops.net_id);
	bool bind = flags & TCA_ACT_FLAGS_BIND;
	struct nlattr *tb[TCA_HTBACK_MAX + 1];
	struct tcf_chain *goto_ch = NULL;
	struct tc_htback *parm;
	struct tcf_htback *h;
	int ret, err;
	u32 index;

	if (!nla) {
		NL_SET_ERR_MSG(extack, "htback: the action's options are missing");
		return -EINVAL;
	}
	err = nla_parse_nested(tb, TCA_HTBACK_MAX, nla, htback_policy, extack);
	if (err < 0)
		return err;
	if (NL_REQ_ATTR_CHECK(extack, nla, tb, TCA_HTBACK_PARMS)) {
		NL_SET_ERR_MSG(extack, "htback: TCA_HTBACK_PARMS is missing");
		return -EINVAL;
	}
	parm = nla_data(tb[TCA_HTBACK_PARMS]);
	index = parm->index;

	ret = tcf_idr_check_alloc(tn, &index, a, bind);
	if (ret < 0)
		return ret;
	if (ret && bind)
		return ACT_P_BOUND;
	if (ret && !(flags & TCA_ACT_FLAGS_REPLACE)) {
		tcf_idr_release(*a, bind);
		return -EEXIST;
	}
	if (ret) {
		ret = 0;	/* replaced */
	} else {
		ret = tcf_idr_create_from_flags(tn, index, est, a,
						&act_htback_ops, bind, flags);
		if (ret) {
			tcf_idr_cleanup(tn, index);
			return ret;
		}
		h = to_htback(*a);
		h->stats = alloc_percpu(struct tcf_htback_stats);
		if (!h->stats) {
			err = -ENOMEM;
			goto release_idr;
		}
		ret = ACT_P_CREATED;
	}

	err = tcf_action_check_ctrlact(parm->action, tp, &goto_ch, extack);
	if (err < 0)
		goto release_idr;

	h = to_htback(*a);
	spin_lock_bh(&h->tcf_lock);
	goto_ch = tcf_action_set_ctrlact(*a, parm->action, goto_ch);
	spin_unlock_bh(&h->tcf_lock);
	if (goto_ch)
		tcf_chain_put_by_act(goto_ch);
	return ret;

release_idr:
	tcf_idr_release(*a, bind);
	return err;
}

static int tcf_htback_dump(struct sk_buff *skb, struct tc_action *a,
			   int bind, int ref)
{
	unsigned char *b = skb_tail_pointer(skb);
	struct tcf_htback *h = to_htback(a);
	u64 sum[__HTB_ECN_RX_MAX] = {};
	struct tc_htback opt = {
		.index   = h->tcf_index,
		.refcnt  = refcount_read(&h->tcf_refcnt) - ref,
		.bindcnt = atomic_read(&h->tcf_bindcnt) - bind,
	};
	struct tcf_t t;
	int cpu, i;

	spin_lock_bh(&h->tcf_lock);
	opt.action = h->tcf_action;
	if (nla_put(skb, TCA_HTBACK_PARMS, sizeof(opt), &opt))
		goto nla_put_failure;
	tcf_tm_dump(&t, &h->tcf_tm);
	if (nla_put_64bit(skb, TCA_HTBACK_TM, sizeof(t), &t, TCA_HTBACK_PAD))
		goto nla_put_failure;
	spin_unlock_bh(&h->tcf_lock);

	for_each_possible_cpu(cpu) {
		const struct tcf_htback_stats *s = per_cpu_ptr(h->stats, cpu);

		for (i = 0; i < __HTB_ECN_RX_MAX; i++)
			sum[i] += READ_ONCE(s->cnt[i]);
	}
	for (i = 0; i < __HTB_ECN_RX_MAX; i++)
		if (nla_put_u64_64bit(skb, TCA_HTBACK_SEEN + i, sum[i],
				      TCA_HTBACK_PAD))
			goto trim;
	return skb->len;

nla_put_failure:
	spin_unlock_bh(&h->tcf_lock);
trim:
	nlmsg_trim(skb, b);
	return -1;
}

static void tcf_htback_cleanup(struct tc_action *a)
{
	free_percpu(to_htback(a)->stats);
}

static struct tc_action_ops act_htback_ops = {
	.kind		=	"htback",
	.id		=	TCA_ID_HTBACK,
	.owner		=	THIS_MODULE,
	.act		=	tcf_htback_act,
	.dump		=	tcf_htback_dump,
	.init		=	tcf_htback_init,
	.cleanup	=	tcf_htback_cleanup,
	.size		=	sizeof(struct tcf_htback),
};
MODULE_ALIAS_NET_ACT("htback");

static __net_init int htback_init_net(struct net *net)
{
	struct tc_action_net *tn = net_generic(net, act_htback_ops.net_id);

	return tc_action_net_init(net, tn, &act_htback_ops);
}

static void __net_exit htback_exit_net(struct list_head *net_list)
{
	tc_action_net_exit(net_list, act_htback_ops.net_id);
}

static struct pernet_operations htback_net_ops = {
	.init = htback_init_net,
	.exit_batch = htback_exit_net,
	.id   = &act_htback_ops.net_id,
	.size = sizeof(struct tc_action_net),
};

static int __init htback_init_module(void)
{
	BUILD_BUG_ON(TCA_HTBACK_NOT_INGRESS - TCA_HTBACK_SEEN !=
		     HTB_ECN_RX_NOT_INGRESS - HTB_ECN_RX_SEEN);
	return tcf_register_action(&act_htback_ops, &htback_net_ops);
}

static void __exit htback_cleanup_module(void)
{
	tcf_unregister_action(&act_htback_ops, &htback_net_ops);
}

module_init(htback_init_module);
module_exit(htback_cleanup_module);
MODULE_DESCRIPTION("The ACK side of HTB's ecn_mode ece and rwnd");
MODULE_LICENSE("GPL");
