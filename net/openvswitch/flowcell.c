// SPDX-License-Identifier: GPL-2.0-only
/*
 * Presto flowcells in the Open vSwitch datapath (He et al., "Presto:
 * Edge-based Load Balancing for Fast Datacenter Networks", SIGCOMM 2015,
 * Sec. 3.1): the OVS_HASH_ALG_FLOWCELL dp_hash algorithm and its per-flow
 * state.  See flowcell.h and include/uapi/linux/openvswitch.h.
 */

#include <kunit/visibility.h>
#include <linux/etherdevice.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/jhash.h>
#include <linux/jiffies.h>
#include <linux/random.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/tcp.h>
#include <linux/timekeeping.h>
#include <net/ipv6.h>
#include <net/netlink.h>

#include "datapath.h"
#include "flow.h"
#include "flowcell.h"

static struct hlist_head *ovs_flowcell_bucket(struct ovs_flowcell_table *t,
					      const struct ovs_flowcell_key *key)
{
	u32 h = jhash2((const u32 *)key, sizeof(*key) / sizeof(u32), t->seed);

	return &t->buckets[h & (OVS_FLOWCELL_BUCKETS - 1)];
}

static void ovs_flowcell_unlink(struct ovs_flowcell_table *t,
				struct ovs_flowcell_flow *f)
{
	hlist_del(&f->hnode);
	list_del(&f->lru);
	t->count--;
}

static bool ovs_flowcell_is_idle(const struct ovs_flowcell_table *t,
				 const struct ovs_flowcell_flow *f,
				 unsigned long now)
{
	return time_after(now, f->last_used + t->idle);
}

/* A lower limit evicts the least recently used flows at once. */
VISIBLE_IF_KUNIT void ovs_flowcell_set_limits(struct ovs_flowcell_table *t,
					      u32 limit, u32 idle_msecs)
{
	struct ovs_flowcell_flow *f;

	t->limit = clamp_t(u32, limit, 1, OVS_FLOWCELL_LIMIT_MAX);
	t->idle_msecs = clamp_t(u32, idle_msecs, OVS_FLOWCELL_IDLE_MSECS_MIN,
				OVS_FLOWCELL_IDLE_MSECS_MAX);
	t->idle = max(msecs_to_jiffies(t->idle_msecs), 1UL);
	while (t->count > t->limit) {
		f = list_last_entry(&t->lru, struct ovs_flowcell_flow, lru);
		ovs_flowcell_unlink(t, f);
		kfree(f);
		t->stats.evictions++;
	}
}
EXPORT_SYMBOL_IF_KUNIT(ovs_flowcell_set_limits);

VISIBLE_IF_KUNIT struct ovs_flowcell_table *
ovs_flowcell_table_alloc(u32 limit, u32 idle_msecs)
{
	struct ovs_flowcell_table *t;

	t = kvzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return NULL;
	spin_lock_init(&t->lock);
	INIT_LIST_HEAD(&t->lru);
	t->seed = get_random_u32();
	ovs_flowcell_set_limits(t, limit, idle_msecs);
	return t;
}
EXPORT_SYMBOL_IF_KUNIT(ovs_flowcell_table_alloc);

/* The table must be unreachable (no packet, no work). */
VISIBLE_IF_KUNIT void ovs_flowcell_table_free(struct ovs_flowcell_table *t)
{
	struct ovs_flowcell_flow *f, *n;

	if (!t)
		return;
	list_for_each_entry_safe(f, n, &t->lru, lru)
		kfree(f);
	kvfree(t);
}
EXPORT_SYMBOL_IF_KUNIT(ovs_flowcell_table_free);

/* The start value of a new flow: random, or with a seed set
 * (OVS_FLOWCELL_ATTR_SEED) a hash of its addresses and ports (IPv4 ones are
 * v4-mapped, so they never equal IPv6 ones), which is the same in every
 * datapath and boot.  The input port and the conntrack zone are left out:
 * port numbers depend on the order in which ports were added.
 */
VISIBLE_IF_KUNIT u32 ovs_flowcell_start(const struct ovs_flowcell_table *t,
					const struct ovs_flowcell_key *key)
{
	u32 words[offsetof(struct ovs_flowcell_key, eth_type) / sizeof(u32)];

	BUILD_BUG_ON(offsetof(struct ovs_flowcell_key, eth_type) % sizeof(u32));
	if (!t->start_seed)
		return get_random_u32();
	memcpy(words, key, sizeof(words));
	return jhash2(words, ARRAY_SIZE(words), t->start_seed);
}
EXPORT_SYMBOL_IF_KUNIT(ovs_flowcell_start);

/* The state of the flow @key, moved to the head of the LRU list; a new one
 * (ID 0, no bytes, a new start) when there is none or it was idle, which
 * then reuses the least recently used flow's memory when the table is at
 * its limit.  NULL when the table is dying or memory is short.
 */
VISIBLE_IF_KUNIT struct ovs_flowcell_flow *
ovs_flowcell_find(struct ovs_flowcell_table *t,
		  const struct ovs_flowcell_key *key, unsigned long now,
		  u64 now_ns, gfp_t gfp, bool *created)
{
	struct hlist_head *head = ovs_flowcell_bucket(t, key);
	struct ovs_flowcell_flow *f;

	lockdep_assert_held(&t->lock);
	*created = false;
	hlist_for_each_entry(f, head, hnode) {
		if (memcmp(&f->key, key, sizeof(*key)))
			continue;
		if (ovs_flowcell_is_idle(t, f, now)) {
			/* Forgotten, though not yet collected. */
			t->stats.expired++;
			goto restart;
		}
		f->last_used = now;
		list_move(&f->lru, &t->lru);
		return f;
	}

	if (t->dying)
		return NULL;
	if (t->count >= t->limit && !list_empty(&t->lru)) {
		f = list_last_entry(&t->lru, struct ovs_flowcell_flow, lru);
		if (ovs_flowcell_is_idle(t, f, now))
			t->stats.expired++;
		else
			t->stats.evictions++;
		ovs_flowcell_unlink(t, f);
	} else {
		f = kmalloc(sizeof(*f), gfp);
		if (!f) {
			t->stats.alloc_fails++;
			return NULL;
		}
	}
	f->key = *key;
	hlist_add_head(&f->hnode, head);
	list_add(&f->lru, &t->lru);
	t->count++;
restart:
	f->start = ovs_flowcell_start(t, key);
	f->cell = 0;
	f->bytes = 0;
	f->last_used = now;
	f->last_ns = now_ns;
	list_move(&f->lru, &t->lru);
	*created = true;
	return f;
}
EXPORT_SYMBOL_IF_KUNIT(ovs_flowcell_find);

/* Frees up to @budget flows idle at @now, least recently used first;
 * returns how many.
 */
VISIBLE_IF_KUNIT unsigned int ovs_flowcell_expire(struct ovs_flowcell_table *t,
						  unsigned long now,
						  unsigned int budget)
{
	struct ovs_flowcell_flow *f;
	unsigned int n = 0;

	lockdep_assert_held(&t->lock);
	while (n < budget && !list_empty(&t->lru)) {
		f = list_last_entry(&t->lru, struct ovs_flowcell_flow, lru);
		if (!ovs_flowcell_is_idle(t, f, now))
			break;
		ovs_flowcell_unlink(t, f);
		kfree(f);
		n++;
	}
	t->stats.expired += n;
	return n;
}
EXPORT_SYMBOL_IF_KUNIT(ovs_flowcell_expire);

/* TCP payload bytes of a packet whose flow key is valid; 0 for anything
 * else (not TCP over IPv4/IPv6, a fragment, no payload).  The IP length
 * bounds the payload, so Ethernet padding is not payload; a GSO skb whose
 * IP length is 0 (BIG TCP) counts to its end.
 */
VISIBLE_IF_KUNIT u32 ovs_flowcell_payload(const struct sk_buff *skb,
					  const struct sw_flow_key *key)
{
	unsigned int nh = skb_network_offset(skb);
	unsigned int end = skb->len, th, l3;
	const struct tcphdr *tcph;
	struct tcphdr _tcph;

	if (key->ip.proto != IPPROTO_TCP || key->ip.frag != OVS_FRAG_TYPE_NONE)
		return 0;
	if (key->eth.type == htons(ETH_P_IP)) {
		const struct iphdr *iph;
		struct iphdr _iph;

		iph = skb_header_pointer(skb, nh, sizeof(_iph), &_iph);
		if (!iph)
			return 0;
		l3 = ntohs(iph->tot_len);
	} else if (key->eth.type == htons(ETH_P_IPV6)) {
		const struct ipv6hdr *ip6h;
		struct ipv6hdr _ip6h;

		ip6h = skb_header_pointer(skb, nh, sizeof(_ip6h), &_ip6h);
		if (!ip6h)
			return 0;
		l3 = ntohs(ip6h->payload_len);
		if (l3)
			l3 += sizeof(*ip6h);
	} else {
		return 0;
	}
	if (l3 && nh + l3 < end)
		end = nh + l3;
	if (!skb_transport_header_was_set(skb))
		return 0;
	th = skb_transport_offset(skb);
	if (th <= nh)
		return 0;
	tcph = skb_header_pointer(skb, th, sizeof(_tcph), &_tcph);
	if (!tcph)
		return 0;
	th += tcph->doff * 4;
	return end > th ? end - th : 0;
}
EXPORT_SYMBOL_IF_KUNIT(ovs_flowcell_payload);

static void ovs_flowcell_key_from(struct ovs_flowcell_key *fk,
				  const struct sw_flow_key *key)
{
	memset(fk, 0, sizeof(*fk));
	if (key->eth.type == htons(ETH_P_IP)) {
		ipv6_addr_set_v4mapped(key->ipv4.addr.src, &fk->src);
		ipv6_addr_set_v4mapped(key->ipv4.addr.dst, &fk->dst);
	} else {
		fk->src = key->ipv6.addr.src;
		fk->dst = key->ipv6.addr.dst;
	}
	fk->sport = key->tp.src;
	fk->dport = key->tp.dst;
	fk->eth_type = key->eth.type;
	fk->in_port = key->phy.in_port;
	fk->zone = key->ct_zone;
}

static unsigned long ovs_flowcell_gc_interval(const struct ovs_flowcell_table *t)
{
	return max(t->idle / 2, 1UL);
}

static void ovs_flowcell_gc(struct work_struct *work)
{
	struct ovs_flowcell_table *t;
	unsigned int n;

	t = container_of(to_delayed_work(work), struct ovs_flowcell_table, gc);
	spin_lock_bh(&t->lock);
	n = ovs_flowcell_expire(t, jiffies, OVS_FLOWCELL_GC_BUDGET);
	if (t->count && !t->dying)
		queue_delayed_work(system_power_efficient_wq, &t->gc,
				   n == OVS_FLOWCELL_GC_BUDGET ? 1 :
				   ovs_flowcell_gc_interval(t));
	spin_unlock_bh(&t->lock);
}

int ovs_flowcell_init(struct datapath *dp)
{
	dp->flowcell = ovs_flowcell_table_alloc(OVS_FLOWCELL_LIMIT_DEFAULT,
						OVS_FLOWCELL_IDLE_MSECS_DEFAULT);
	if (!dp->flowcell)
		return -ENOMEM;
	INIT_DELAYED_WORK(&dp->flowcell->gc, ovs_flowcell_gc);
	return 0;
}

/* The datapath is being destroyed: free the flows now, in process context;
 * packets still in flight find the table dying and take the L4 hash.
 */
void ovs_flowcell_stop(struct datapath *dp)
{
	struct ovs_flowcell_table *t = dp->flowcell;
	struct ovs_flowcell_flow *f, *n;
	LIST_HEAD(doomed);

	spin_lock_bh(&t->lock);
	t->dying = true;
	list_for_each_entry_safe(f, n, &t->lru, lru) {
		hlist_del(&f->hnode);
		list_move(&f->lru, &doomed);
	}
	t->count = 0;
	spin_unlock_bh(&t->lock);
	cancel_delayed_work_sync(&t->gc);
	list_for_each_entry_safe(f, n, &doomed, lru)
		kfree(f);
}

/* After an RCU grace period (or before the datapath was visible). */
void ovs_flowcell_free(struct datapath *dp)
{
	ovs_flowcell_table_free(dp->flowcell);
	dp->flowcell = NULL;
}

/* Writes the stamp into bytes 2-5 of the Ethernet source address of the
 * packet and of its flow key (as set_eth_addr()): the tag that tells the
 * receiver's Presto GRO the frame is stamped, then the low 16 bits of the
 * flowcell ID, both big endian.
 */
static int ovs_flowcell_stamp(struct sk_buff *skb, struct sw_flow_key *key,
			      u16 id)
{
	__be16 stamp[2] = { htons(OVS_FLOWCELL_STAMP_TAG), htons(id) };
	int err;

	err = skb_ensure_writable(skb, ETH_HLEN);
	if (unlikely(err))
		return err;
	skb_postpull_rcsum(skb, eth_hdr(skb), ETH_ALEN * 2);
	memcpy(eth_hdr(skb)->h_source + 2, stamp, sizeof(stamp));
	skb_postpush_rcsum(skb, eth_hdr(skb), ETH_ALEN * 2);
	memcpy(key->eth.src + 2, stamp, sizeof(stamp));
	return 0;
}

/* The flowcell hash of a packet into key->ovs_flow_hash; false when the
 * packet must take the L4 hash instead (counted as a fallback).
 */
bool ovs_flowcell_execute(struct datapath *dp, struct sk_buff *skb,
			  struct sw_flow_key *key, u32 basis)
{
	struct ovs_flowcell_table *t = dp->flowcell;
	struct ovs_flowcell_flow *f;
	struct ovs_flowcell_key fk;
	bool created, next;
	u32 len, hash;
	u64 now_ns;
	u16 id;

	len = ovs_key_mac_proto(key) == MAC_PROTO_ETHERNET ?
	      ovs_flowcell_payload(skb, key) : 0;
	spin_lock_bh(&t->lock);
	if (!len) {
		t->stats.fallbacks++;
		spin_unlock_bh(&t->lock);
		return false;
	}
	ovs_flowcell_key_from(&fk, key);
	/* The clock only matters to flowlets (a new flow's stamp is then 0,
	 * older than any gap_since_ns).
	 */
	now_ns = t->gap_ns ? ktime_get_ns() : 0;
	f = ovs_flowcell_find(t, &fk, jiffies, now_ns, GFP_ATOMIC, &created);
	if (!f) {
		t->stats.fallbacks++;
		spin_unlock_bh(&t->lock);
		return false;
	}
	/* A new flow's first packet starts flowcell 0 (its last_ns is now). */
	next = ovs_flowcell_decide(f, len, ovs_flowcell_size(basis), now_ns,
				   t->gap_ns, t->gap_since_ns);
	if (next || created)
		t->stats.cells++;
	if (next && t->gap_ns)
		t->stats.gap_cells++;
	t->stats.packets++;
	t->stats.bytes += len;
	hash = ovs_flowcell_hash(f);
	id = ovs_flowcell_id(f);
	if (created && !t->dying)
		queue_delayed_work(system_power_efficient_wq, &t->gc,
				   ovs_flowcell_gc_interval(t));
	spin_unlock_bh(&t->lock);

	/* Without a writable header the packet still takes its flowcell's
	 * path, unmarked.
	 */
	ovs_flowcell_stamp(skb, key, id);
	key->ovs_flow_hash = hash;
	return true;
}

size_t ovs_flowcell_msg_size(void)
{
	return nla_total_size(0) +			/* the nest */
	       4 * nla_total_size(sizeof(u32)) +	/* limit, idle, seed, gap */
	       9 * nla_total_size_64bit(sizeof(u64));	/* the counters */
}

int ovs_flowcell_fill(struct datapath *dp, struct sk_buff *skb)
{
	struct ovs_flowcell_table *t = dp->flowcell;
	struct ovs_flowcell_stats s;
	u32 limit, idle_msecs, seed, gap_us;
	struct nlattr *nest;
	u64 flows;

	spin_lock_bh(&t->lock);
	s = t->stats;
	flows = t->count;
	limit = t->limit;
	idle_msecs = t->idle_msecs;
	seed = t->start_seed;
	gap_us = t->gap_us;
	spin_unlock_bh(&t->lock);

	nest = nla_nest_start_noflag(skb, OVS_DP_ATTR_FLOWCELL);
	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u32(skb, OVS_FLOWCELL_ATTR_LIMIT, limit) ||
	    nla_put_u32(skb, OVS_FLOWCELL_ATTR_IDLE_MSECS, idle_msecs) ||
	    nla_put_u32(skb, OVS_FLOWCELL_ATTR_SEED, seed) ||
	    nla_put_u32(skb, OVS_FLOWCELL_ATTR_GAP_US, gap_us) ||
	    nla_put_u64_64bit(skb, OVS_FLOWCELL_ATTR_FLOWS, flows,
			      OVS_FLOWCELL_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, OVS_FLOWCELL_ATTR_PACKETS, s.packets,
			      OVS_FLOWCELL_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, OVS_FLOWCELL_ATTR_BYTES, s.bytes,
			      OVS_FLOWCELL_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, OVS_FLOWCELL_ATTR_CELLS, s.cells,
			      OVS_FLOWCELL_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, OVS_FLOWCELL_ATTR_EVICTIONS, s.evictions,
			      OVS_FLOWCELL_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, OVS_FLOWCELL_ATTR_EXPIRED, s.expired,
			      OVS_FLOWCELL_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, OVS_FLOWCELL_ATTR_ALLOC_FAILS, s.alloc_fails,
			      OVS_FLOWCELL_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, OVS_FLOWCELL_ATTR_FALLBACKS, s.fallbacks,
			      OVS_FLOWCELL_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, OVS_FLOWCELL_ATTR_GAP_CELLS, s.gap_cells,
			      OVS_FLOWCELL_ATTR_PAD)) {
		nla_nest_cancel(skb, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

#define OVS_FLOWCELL_READ_ONLY \
	{ .type = NLA_REJECT, .reject_message = "Read-only flowcell attribute" }

static const struct netlink_range_validation ovs_flowcell_limit_range = {
	.min = 1,
	.max = OVS_FLOWCELL_LIMIT_MAX,
};

static const struct netlink_range_validation ovs_flowcell_idle_range = {
	.min = OVS_FLOWCELL_IDLE_MSECS_MIN,
	.max = OVS_FLOWCELL_IDLE_MSECS_MAX,
};

static const struct netlink_range_validation ovs_flowcell_gap_range = {
	.min = 0,
	.max = OVS_FLOWCELL_GAP_US_MAX,
};

static const struct nla_policy ovs_flowcell_policy[OVS_FLOWCELL_ATTR_MAX + 1] = {
	[OVS_FLOWCELL_ATTR_PAD] = OVS_FLOWCELL_READ_ONLY,
	[OVS_FLOWCELL_ATTR_LIMIT] =
		NLA_POLICY_FULL_RANGE(NLA_U32, &ovs_flowcell_limit_range),
	[OVS_FLOWCELL_ATTR_IDLE_MSECS] =
		NLA_POLICY_FULL_RANGE(NLA_U32, &ovs_flowcell_idle_range),
	[OVS_FLOWCELL_ATTR_FLOWS] = OVS_FLOWCELL_READ_ONLY,
	[OVS_FLOWCELL_ATTR_PACKETS] = OVS_FLOWCELL_READ_ONLY,
	[OVS_FLOWCELL_ATTR_BYTES] = OVS_FLOWCELL_READ_ONLY,
	[OVS_FLOWCELL_ATTR_CELLS] = OVS_FLOWCELL_READ_ONLY,
	[OVS_FLOWCELL_ATTR_EVICTIONS] = OVS_FLOWCELL_READ_ONLY,
	[OVS_FLOWCELL_ATTR_EXPIRED] = OVS_FLOWCELL_READ_ONLY,
	[OVS_FLOWCELL_ATTR_ALLOC_FAILS] = OVS_FLOWCELL_READ_ONLY,
	[OVS_FLOWCELL_ATTR_FALLBACKS] = OVS_FLOWCELL_READ_ONLY,
	[OVS_FLOWCELL_ATTR_SEED] = { .type = NLA_U32 },
	[OVS_FLOWCELL_ATTR_GAP_US] =
		NLA_POLICY_FULL_RANGE(NLA_U32, &ovs_flowcell_gap_range),
	[OVS_FLOWCELL_ATTR_GAP_CELLS] = OVS_FLOWCELL_READ_ONLY,
};

/* OVS_DP_ATTR_FLOWCELL in OVS_DP_CMD_NEW and OVS_DP_CMD_SET: validated
 * strictly (unknown, read-only, short or out-of-range attributes are
 * refused with an extack message) before anything changes.  The nest need
 * not carry NLA_F_NESTED: Open vSwitch's netlink library does not set it.
 */
int ovs_flowcell_set(struct datapath *dp, const struct nlattr *attr,
		     struct netlink_ext_ack *extack)
{
	struct nlattr *tb[OVS_FLOWCELL_ATTR_MAX + 1];
	struct ovs_flowcell_table *t = dp->flowcell;
	u32 limit, idle_msecs;
	int err;

	err = __nla_parse(tb, OVS_FLOWCELL_ATTR_MAX, nla_data(attr),
			  nla_len(attr), ovs_flowcell_policy,
			  NL_VALIDATE_STRICT, extack);
	if (err)
		return err;

	spin_lock_bh(&t->lock);
	limit = tb[OVS_FLOWCELL_ATTR_LIMIT] ?
		nla_get_u32(tb[OVS_FLOWCELL_ATTR_LIMIT]) : t->limit;
	idle_msecs = tb[OVS_FLOWCELL_ATTR_IDLE_MSECS] ?
		nla_get_u32(tb[OVS_FLOWCELL_ATTR_IDLE_MSECS]) : t->idle_msecs;
	ovs_flowcell_set_limits(t, limit, idle_msecs);
	if (tb[OVS_FLOWCELL_ATTR_SEED])
		t->start_seed = nla_get_u32(tb[OVS_FLOWCELL_ATTR_SEED]);
	if (tb[OVS_FLOWCELL_ATTR_GAP_US]) {
		u32 gap_us = nla_get_u32(tb[OVS_FLOWCELL_ATTR_GAP_US]);

		/* Flowcell mode does not stamp flows: from 0, the gap counts
		 * from now (ovs_flowcell_decide()).
		 */
		if (gap_us && !t->gap_us)
			t->gap_since_ns = ktime_get_ns();
		t->gap_us = gap_us;
		t->gap_ns = ovs_flowcell_gap_ns(gap_us);
	}
	spin_unlock_bh(&t->lock);
	return 0;
}
