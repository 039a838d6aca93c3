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
#include <linux/list_sort.h>
#include <linux/log2.h>
#include <linux/percpu.h>
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

/* Buckets for @limit flows: a quarter of it, rounded up to a power of
 * two, so that a full table walks chains of about four flows.
 */
VISIBLE_IF_KUNIT u32 ovs_flowcell_nbuckets(u32 limit)
{
	u32 n = DIV_ROUND_UP(clamp_t(u32, limit, 1, OVS_FLOWCELL_LIMIT_MAX),
			     OVS_FLOWCELL_BUCKET_DEPTH);

	return min_t(u32, roundup_pow_of_two(n), OVS_FLOWCELL_BUCKETS_MAX);
}
EXPORT_SYMBOL_IF_KUNIT(ovs_flowcell_nbuckets);

static struct ovs_flowcell_buckets *ovs_flowcell_buckets_alloc(u32 n)
{
	struct ovs_flowcell_buckets *tb;
	u32 i;

	tb = kmalloc(sizeof(*tb), GFP_KERNEL_ACCOUNT);
	if (!tb)
		return NULL;
	tb->b = kvcalloc(n, sizeof(*tb->b), GFP_KERNEL_ACCOUNT);
	if (!tb->b) {
		kfree(tb);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		spin_lock_init(&tb->b[i].lock);
		INIT_LIST_HEAD(&tb->b[i].lru);
	}
	tb->mask = n - 1;
	tb->seed = get_random_u32();
	return tb;
}

static void ovs_flowcell_buckets_free(struct ovs_flowcell_buckets *tb)
{
	if (!tb)
		return;
	kvfree(tb->b);
	kfree(tb);
}

static u32 ovs_flowcell_index(const struct ovs_flowcell_buckets *tb,
			      const struct ovs_flowcell_key *key)
{
	return jhash2((const u32 *)key, sizeof(*key) / sizeof(u32),
		      tb->seed) & tb->mask;
}

static struct ovs_flowcell_buckets *
ovs_flowcell_buckets_locked(struct ovs_flowcell_table *t)
{
	return rcu_dereference_protected(t->buckets,
					 lockdep_is_held(&t->mutex));
}

#if IS_ENABLED(CONFIG_KUNIT)
VISIBLE_IF_KUNIT u32 ovs_flowcell_table_buckets(struct ovs_flowcell_table *t)
{
	u32 n;

	mutex_lock(&t->mutex);
	n = ovs_flowcell_buckets_locked(t)->mask + 1;
	mutex_unlock(&t->mutex);
	return n;
}
EXPORT_SYMBOL_IF_KUNIT(ovs_flowcell_table_buckets);
#endif

#define ovs_flowcell_count_bh(t, field, n)				\
	do {								\
		struct ovs_flowcell_pcpu_stats *p_;			\
									\
		p_ = this_cpu_ptr((t)->stats);				\
		u64_stats_update_begin(&p_->syncp);			\
		p_->s.field += (n);					\
		u64_stats_update_end(&p_->syncp);			\
	} while (0)

/* Outside the packet path and the bucket locks (process context). */
#define ovs_flowcell_count(t, field, n)					\
	do {								\
		local_bh_disable();					\
		ovs_flowcell_count_bh(t, field, n);			\
		local_bh_enable();					\
	} while (0)

VISIBLE_IF_KUNIT void ovs_flowcell_read_stats(struct ovs_flowcell_table *t,
					      struct ovs_flowcell_stats *s)
{
	const struct ovs_flowcell_pcpu_stats *p;
	struct ovs_flowcell_stats c;
	unsigned int start;
	int cpu;

	memset(s, 0, sizeof(*s));
	for_each_possible_cpu(cpu) {
		p = per_cpu_ptr(t->stats, cpu);
		do {
			start = u64_stats_fetch_begin(&p->syncp);
			c = p->s;
		} while (u64_stats_fetch_retry(&p->syncp, start));
		s->packets += c.packets;
		s->bytes += c.bytes;
		s->cells += c.cells;
		s->evictions += c.evictions;
		s->expired += c.expired;
		s->alloc_fails += c.alloc_fails;
		s->fallbacks += c.fallbacks;
		s->gap_cells += c.gap_cells;
		s->refused += c.refused;
		s->port_evictions += c.port_evictions;
		s->port_refused += c.port_refused;
	}
}
EXPORT_SYMBOL_IF_KUNIT(ovs_flowcell_read_stats);

static atomic_t *ovs_flowcell_port(struct ovs_flowcell_table *t, u16 in_port)
{
	return &t->ports[in_port % OVS_FLOWCELL_PORT_SLOTS];
}

/* The flows one input port may hold: @share percent of @limit, and at
 * least OVS_FLOWCELL_PORT_MIN (the whole limit, when it is smaller).
 */
VISIBLE_IF_KUNIT u32 ovs_flowcell_port_limit(u32 limit, u32 share)
{
	return max_t(u32, div_u64((u64)limit * share, 100),
		     min_t(u32, limit, OVS_FLOWCELL_PORT_MIN));
}
EXPORT_SYMBOL_IF_KUNIT(ovs_flowcell_port_limit);

/* A flow unlinked from its bucket leaves the table. */
static void ovs_flowcell_forget(struct ovs_flowcell_table *t,
				struct ovs_flowcell_flow *f)
{
	atomic_dec(ovs_flowcell_port(t, f->key.in_port));
	atomic_dec(&t->count);
	kfree(f);
}

/* One more flow unless @max are there already. */
static bool ovs_flowcell_take(atomic_t *v, int max)
{
	int old = atomic_read(v);

	do {
		if (old >= max)
			return false;
	} while (!atomic_try_cmpxchg(v, &old, old + 1));
	return true;
}

static bool ovs_flowcell_is_idle(const struct ovs_flowcell_table *t,
				 const struct ovs_flowcell_flow *f,
				 unsigned long now)
{
	return time_after(now, f->last_used + READ_ONCE(t->idle));
}

/* Most recent first. */
static int ovs_flowcell_cmp_recent(void *priv, const struct list_head *a,
				   const struct list_head *b)
{
	const struct ovs_flowcell_flow *fa, *fb;

	fa = list_entry(a, struct ovs_flowcell_flow, node);
	fb = list_entry(b, struct ovs_flowcell_flow, node);
	return time_before(fa->last_used, fb->last_used);
}

/* Moves every flow into a new set of buckets sized for @limit, evicting
 * the least recently used ones over it (and over the share of their input
 * port) first.  Packets that meet a bucket
 * emptied here, before the new buckets are in place, take the L4 hash
 * (counted as fallbacks); nothing is looked up in a half-moved table.
 */
static int ovs_flowcell_rebuild(struct ovs_flowcell_table *t, u32 limit,
				u32 port_limit)
{
	struct ovs_flowcell_buckets *old, *new;
	u64 evicted = 0, port_evicted = 0;
	struct ovs_flowcell_flow *f, *n;
	LIST_HEAD(all);
	u32 i;

	new = ovs_flowcell_buckets_alloc(ovs_flowcell_nbuckets(limit));
	if (!new)
		return -ENOMEM;
	old = ovs_flowcell_buckets_locked(t);
	WRITE_ONCE(t->limit, limit);
	WRITE_ONCE(t->port_limit, port_limit);
	for (i = 0; i <= old->mask; i++) {
		struct ovs_flowcell_bucket *b = &old->b[i];

		spin_lock_bh(&b->lock);
		b->moved = true;
		list_splice_tail_init(&b->lru, &all);
		spin_unlock_bh(&b->lock);
		if (!(i & 1023))
			cond_resched();
	}
	list_sort(NULL, &all, ovs_flowcell_cmp_recent);
	list_for_each_entry_safe_reverse(f, n, &all, node) {
		if (atomic_read(&t->count) > limit)
			evicted++;
		else if (atomic_read(ovs_flowcell_port(t, f->key.in_port)) >
			 port_limit)
			port_evicted++;
		else
			continue;
		list_del(&f->node);
		ovs_flowcell_forget(t, f);
	}
	if (evicted)
		ovs_flowcell_count(t, evictions, evicted);
	if (port_evicted)
		ovs_flowcell_count(t, port_evictions, port_evicted);
	/* Oldest first, so that each bucket ends most recent first. */
	list_for_each_entry_safe_reverse(f, n, &all, node)
		list_move(&f->node, &new->b[ovs_flowcell_index(new, &f->key)].lru);
	rcu_assign_pointer(t->buckets, new);
	synchronize_rcu();
	ovs_flowcell_buckets_free(old);
	return 0;
}

/* A lower limit evicts the least recently used flows at once; a limit
 * that asks for another number of buckets moves the flows to new ones.
 * Nothing changes when the new buckets cannot be allocated.  May sleep.
 */
static int __ovs_flowcell_set_limits(struct ovs_flowcell_table *t, u32 limit,
				     u32 idle_msecs)
{
	u32 i, port_limit, busiest = 0;
	int err = 0;

	lockdep_assert_held(&t->mutex);
	limit = clamp_t(u32, limit, 1, OVS_FLOWCELL_LIMIT_MAX);
	idle_msecs = clamp_t(u32, idle_msecs, OVS_FLOWCELL_IDLE_MSECS_MIN,
			     OVS_FLOWCELL_IDLE_MSECS_MAX);
	port_limit = ovs_flowcell_port_limit(limit, t->port_share);
	for (i = 0; i < OVS_FLOWCELL_PORT_SLOTS; i++)
		busiest = max_t(u32, busiest, atomic_read(&t->ports[i]));
	if (ovs_flowcell_nbuckets(limit) !=
	    ovs_flowcell_buckets_locked(t)->mask + 1 ||
	    atomic_read(&t->count) > limit || busiest > port_limit) {
		err = ovs_flowcell_rebuild(t, limit, port_limit);
	} else {
		WRITE_ONCE(t->limit, limit);
		WRITE_ONCE(t->port_limit, port_limit);
	}
	if (err)
		return err;
	WRITE_ONCE(t->idle_msecs, idle_msecs);
	WRITE_ONCE(t->idle, max(msecs_to_jiffies(idle_msecs), 1UL));
	return 0;
}

#if IS_ENABLED(CONFIG_KUNIT)
/* A port's share of the limit, in percent (1 to 100); a lower one evicts
 * the least recently used flows of the ports now over it.  May sleep.
 */
VISIBLE_IF_KUNIT int ovs_flowcell_set_port_share(struct ovs_flowcell_table *t,
						 u32 share)
{
	u32 old;
	int err;

	mutex_lock(&t->mutex);
	old = t->port_share;
	t->port_share = clamp_t(u32, share, 1, 100);
	err = __ovs_flowcell_set_limits(t, t->limit, t->idle_msecs);
	if (err)
		t->port_share = old;
	mutex_unlock(&t->mutex);
	return err;
}
EXPORT_SYMBOL_IF_KUNIT(ovs_flowcell_set_port_share);
#endif

VISIBLE_IF_KUNIT int ovs_flowcell_set_limits(struct ovs_flowcell_table *t,
					     u32 limit, u32 idle_msecs)
{
	int err;

	mutex_lock(&t->mutex);
	err = __ovs_flowcell_set_limits(t, limit, idle_msecs);
	mutex_unlock(&t->mutex);
	return err;
}
EXPORT_SYMBOL_IF_KUNIT(ovs_flowcell_set_limits);

static void ovs_flowcell_gc(struct work_struct *work);

VISIBLE_IF_KUNIT struct ovs_flowcell_table *
ovs_flowcell_table_alloc(u32 limit, u32 idle_msecs)
{
	struct ovs_flowcell_buckets *tb;
	struct ovs_flowcell_table *t;
	int cpu;

	t = kzalloc(sizeof(*t), GFP_KERNEL_ACCOUNT);
	if (!t)
		return NULL;
	t->stats = alloc_percpu_gfp(struct ovs_flowcell_pcpu_stats,
				    GFP_KERNEL_ACCOUNT);
	if (!t->stats)
		goto err;
	for_each_possible_cpu(cpu)
		u64_stats_init(&per_cpu_ptr(t->stats, cpu)->syncp);
	limit = clamp_t(u32, limit, 1, OVS_FLOWCELL_LIMIT_MAX);
	tb = ovs_flowcell_buckets_alloc(ovs_flowcell_nbuckets(limit));
	if (!tb)
		goto err;
	RCU_INIT_POINTER(t->buckets, tb);
	t->port_share = OVS_FLOWCELL_PORT_SHARE_DEFAULT;
	mutex_init(&t->mutex);
	INIT_DELAYED_WORK(&t->gc, ovs_flowcell_gc);
	ovs_flowcell_set_limits(t, limit, idle_msecs);
	return t;
err:
	free_percpu(t->stats);
	kfree(t);
	return NULL;
}
EXPORT_SYMBOL_IF_KUNIT(ovs_flowcell_table_alloc);

/* The table must be unreachable (no packet, no work). */
VISIBLE_IF_KUNIT void ovs_flowcell_table_free(struct ovs_flowcell_table *t)
{
	struct ovs_flowcell_buckets *tb;
	struct ovs_flowcell_flow *f, *n;
	u32 i;

	if (!t)
		return;
	tb = rcu_dereference_protected(t->buckets, true);
	for (i = 0; i <= tb->mask; i++)
		list_for_each_entry_safe(f, n, &tb->b[i].lru, node)
			kfree(f);
	ovs_flowcell_buckets_free(tb);
	mutex_destroy(&t->mutex);
	free_percpu(t->stats);
	kfree(t);
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

/* The bucket of @key, locked, inside an RCU read-side section; NULL when
 * a rebuild emptied it (the packet then takes the L4 hash).
 */
VISIBLE_IF_KUNIT struct ovs_flowcell_bucket *
ovs_flowcell_lock(struct ovs_flowcell_table *t,
		  const struct ovs_flowcell_key *key)
{
	struct ovs_flowcell_buckets *tb;
	struct ovs_flowcell_bucket *b;

	rcu_read_lock();
	tb = rcu_dereference(t->buckets);
	b = &tb->b[ovs_flowcell_index(tb, key)];
	spin_lock_bh(&b->lock);
	if (unlikely(b->moved)) {
		spin_unlock_bh(&b->lock);
		rcu_read_unlock();
		return NULL;
	}
	return b;
}
EXPORT_SYMBOL_IF_KUNIT(ovs_flowcell_lock);

VISIBLE_IF_KUNIT void ovs_flowcell_unlock(struct ovs_flowcell_bucket *b)
{
	spin_unlock_bh(&b->lock);
	rcu_read_unlock();
}
EXPORT_SYMBOL_IF_KUNIT(ovs_flowcell_unlock);

/* The flow of @b whose memory a new flow of @in_port may take, unlinked:
 * the bucket's least recently used flow if it is idle (of any port, unless
 * @own_only), else the least recently used flow of @in_port.  The flows
 * of other ports are never taken while they are active.
 */
static struct ovs_flowcell_flow *
ovs_flowcell_victim(struct ovs_flowcell_table *t, struct ovs_flowcell_bucket *b,
		    u16 in_port, unsigned long now, bool own_only,
		    bool table_full)
{
	struct ovs_flowcell_flow *f;

	if (list_empty(&b->lru))
		return NULL;
	f = list_last_entry(&b->lru, struct ovs_flowcell_flow, node);
	if (ovs_flowcell_is_idle(t, f, now) &&
	    (!own_only || f->key.in_port == in_port)) {
		ovs_flowcell_count_bh(t, expired, 1);
		goto found;
	}
	list_for_each_entry_reverse(f, &b->lru, node) {
		if (f->key.in_port != in_port)
			continue;
		if (ovs_flowcell_is_idle(t, f, now))
			ovs_flowcell_count_bh(t, expired, 1);
		else if (table_full)
			ovs_flowcell_count_bh(t, evictions, 1);
		else
			ovs_flowcell_count_bh(t, port_evictions, 1);
		goto found;
	}
	return NULL;
found:
	list_del(&f->node);
	return f;
}

/* Memory for a new flow of @key in the locked bucket @b.  Under the limit
 * and under its port's share: a new allocation.  Otherwise the memory of
 * a flow ovs_flowcell_victim() picks in @b or, when @b has none, in one of
 * the next OVS_FLOWCELL_PROBES buckets that is not busy (a trylock: the
 * packet path never waits for a second lock).  A port at its share takes
 * only its own flows, so a port that opens many flows cannot take the
 * state of another port's active flows.  NULL when there is no room
 * (refused) or no memory.  No list of every flow is kept: eviction order
 * is the LRU order of a bucket, not of the table.
 */
static struct ovs_flowcell_flow *
ovs_flowcell_new(struct ovs_flowcell_table *t, struct ovs_flowcell_bucket *b,
		 const struct ovs_flowcell_key *key, unsigned long now, gfp_t gfp)
{
	struct ovs_flowcell_buckets *tb = rcu_dereference(t->buckets);
	atomic_t *port = ovs_flowcell_port(t, key->in_port);
	struct ovs_flowcell_bucket *nb;
	struct ovs_flowcell_flow *f;
	u32 i, idx = b - tb->b;
	bool port_full, table_full;

	port_full = !ovs_flowcell_take(port, READ_ONCE(t->port_limit));
	if (port_full) {
		table_full = atomic_read(&t->count) >= READ_ONCE(t->limit);
	} else {
		table_full = !ovs_flowcell_take(&t->count,
						READ_ONCE(t->limit));
		if (!table_full) {
			f = kmalloc(sizeof(*f), gfp);
			if (f)
				return f;
			atomic_dec(&t->count);
			atomic_dec(port);
			ovs_flowcell_count_bh(t, alloc_fails, 1);
			return NULL;
		}
	}
	f = ovs_flowcell_victim(t, b, key->in_port, now, port_full,
				table_full);
	for (i = 1; !f && i <= OVS_FLOWCELL_PROBES && i <= tb->mask; i++) {
		nb = &tb->b[(idx + i) & tb->mask];
		if (!spin_trylock(&nb->lock))
			continue;
		if (!nb->moved)
			f = ovs_flowcell_victim(t, nb, key->in_port, now,
						port_full, table_full);
		spin_unlock(&nb->lock);
	}
	if (!f) {
		if (!port_full)
			atomic_dec(port);
		if (table_full)
			ovs_flowcell_count_bh(t, refused, 1);
		else
			ovs_flowcell_count_bh(t, port_refused, 1);
		return NULL;
	}
	/* The flow taken leaves its port (@key's own, when it is full). */
	if (!port_full)
		atomic_dec(ovs_flowcell_port(t, f->key.in_port));
	return f;
}

/* The state of the flow @key in its locked bucket @b, moved to the head of
 * the bucket's LRU list; a new one (ID 0, no bytes, a new start) when
 * there is none or it was idle.  NULL when the table is dying, full with
 * no flow to take near @b, or memory is short.
 */
VISIBLE_IF_KUNIT struct ovs_flowcell_flow *
ovs_flowcell_find(struct ovs_flowcell_table *t, struct ovs_flowcell_bucket *b,
		  const struct ovs_flowcell_key *key, unsigned long now,
		  u64 now_ns, gfp_t gfp, bool *created)
{
	struct ovs_flowcell_flow *f;

	lockdep_assert_held(&b->lock);
	*created = false;
	list_for_each_entry(f, &b->lru, node) {
		if (memcmp(&f->key, key, sizeof(*key)))
			continue;
		if (ovs_flowcell_is_idle(t, f, now)) {
			/* Forgotten, though not yet collected. */
			ovs_flowcell_count_bh(t, expired, 1);
			goto restart;
		}
		f->last_used = now;
		list_move(&f->node, &b->lru);
		return f;
	}

	if (READ_ONCE(t->dying))
		return NULL;
	f = ovs_flowcell_new(t, b, key, now, gfp);
	if (!f)
		return NULL;
	f->key = *key;
	list_add(&f->node, &b->lru);
restart:
	f->start = ovs_flowcell_start(t, key);
	f->cell = 0;
	f->bytes = 0;
	f->last_used = now;
	f->last_ns = now_ns;
	list_move(&f->node, &b->lru);
	*created = true;
	return f;
}
EXPORT_SYMBOL_IF_KUNIT(ovs_flowcell_find);

/* Frees up to @budget flows idle at @now, from the least recently used
 * end of each bucket, going on where the previous call stopped; returns
 * how many.  May sleep.
 */
VISIBLE_IF_KUNIT unsigned int ovs_flowcell_expire(struct ovs_flowcell_table *t,
						  unsigned long now,
						  unsigned int budget)
{
	struct ovs_flowcell_buckets *tb;
	struct ovs_flowcell_bucket *b;
	struct ovs_flowcell_flow *f;
	unsigned int n = 0;
	u32 i, idx;

	mutex_lock(&t->mutex);
	tb = ovs_flowcell_buckets_locked(t);
	idx = t->gc_next & tb->mask;
	for (i = 0; i <= tb->mask && n < budget; i++) {
		idx = (t->gc_next + i) & tb->mask;
		b = &tb->b[idx];
		spin_lock_bh(&b->lock);
		while (n < budget && !list_empty(&b->lru)) {
			f = list_last_entry(&b->lru, struct ovs_flowcell_flow,
					    node);
			if (!ovs_flowcell_is_idle(t, f, now))
				break;
			list_del(&f->node);
			ovs_flowcell_forget(t, f);
			n++;
		}
		spin_unlock_bh(&b->lock);
		if (!(i & 1023))
			cond_resched();
	}
	t->gc_next = idx;
	mutex_unlock(&t->mutex);
	if (n)
		ovs_flowcell_count(t, expired, n);
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
	return max(READ_ONCE(t->idle) / 2, 1UL);
}

static void ovs_flowcell_gc(struct work_struct *work)
{
	struct ovs_flowcell_table *t;
	unsigned int n;

	t = container_of(to_delayed_work(work), struct ovs_flowcell_table, gc);
	n = ovs_flowcell_expire(t, jiffies, OVS_FLOWCELL_GC_BUDGET);
	if (atomic_read(&t->count) && !READ_ONCE(t->dying))
		queue_delayed_work(system_power_efficient_wq, &t->gc,
				   n == OVS_FLOWCELL_GC_BUDGET ? 1 :
				   ovs_flowcell_gc_interval(t));
}

int ovs_flowcell_init(struct datapath *dp)
{
	dp->flowcell = ovs_flowcell_table_alloc(OVS_FLOWCELL_LIMIT_DEFAULT,
						OVS_FLOWCELL_IDLE_MSECS_DEFAULT);
	if (!dp->flowcell)
		return -ENOMEM;
	return 0;
}

/* The datapath is being destroyed: free the flows now, in process context;
 * packets still in flight find the table dying and take the L4 hash.  A
 * packet that saw the table alive under a bucket lock (and may have queued
 * the collector) is done once that bucket is emptied here.
 */
void ovs_flowcell_stop(struct datapath *dp)
{
	struct ovs_flowcell_table *t = dp->flowcell;
	struct ovs_flowcell_buckets *tb;
	struct ovs_flowcell_flow *f, *n;
	LIST_HEAD(doomed);
	u32 i;

	mutex_lock(&t->mutex);
	WRITE_ONCE(t->dying, true);
	tb = ovs_flowcell_buckets_locked(t);
	for (i = 0; i <= tb->mask; i++) {
		spin_lock_bh(&tb->b[i].lock);
		list_splice_init(&tb->b[i].lru, &doomed);
		spin_unlock_bh(&tb->b[i].lock);
	}
	atomic_set(&t->count, 0);
	for (i = 0; i < OVS_FLOWCELL_PORT_SLOTS; i++)
		atomic_set(&t->ports[i], 0);
	mutex_unlock(&t->mutex);
	cancel_delayed_work_sync(&t->gc);
	list_for_each_entry_safe(f, n, &doomed, node)
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
	struct ovs_flowcell_pcpu_stats *stats;
	struct ovs_flowcell_bucket *b;
	struct ovs_flowcell_flow *f;
	struct ovs_flowcell_key fk;
	u64 now_ns, gap_ns;
	bool created, next;
	u32 len, hash;
	u16 id;

	len = ovs_key_mac_proto(key) == MAC_PROTO_ETHERNET ?
	      ovs_flowcell_payload(skb, key) : 0;
	if (!len)
		goto fallback;
	ovs_flowcell_key_from(&fk, key);
	/* The clock only matters to flowlets (a new flow's stamp is then 0,
	 * older than any gap_since_ns).
	 */
	gap_ns = READ_ONCE(t->gap_ns);
	now_ns = gap_ns ? ktime_get_ns() : 0;
	b = ovs_flowcell_lock(t, &fk);
	if (!b)
		goto fallback;
	f = ovs_flowcell_find(t, b, &fk, jiffies, now_ns, GFP_ATOMIC, &created);
	if (!f) {
		ovs_flowcell_unlock(b);
		goto fallback;
	}
	/* A new flow's first packet starts flowcell 0 (its last_ns is now). */
	next = ovs_flowcell_decide(f, len, ovs_flowcell_size(basis), now_ns,
				   gap_ns, READ_ONCE(t->gap_since_ns));
	hash = ovs_flowcell_hash(f);
	id = ovs_flowcell_id(f);
	if (created && !READ_ONCE(t->dying))
		queue_delayed_work(system_power_efficient_wq, &t->gc,
				   ovs_flowcell_gc_interval(t));
	ovs_flowcell_unlock(b);

	stats = this_cpu_ptr(t->stats);
	u64_stats_update_begin(&stats->syncp);
	if (next || created)
		stats->s.cells++;
	if (next && gap_ns)
		stats->s.gap_cells++;
	stats->s.packets++;
	stats->s.bytes += len;
	u64_stats_update_end(&stats->syncp);

	/* Without a writable header the packet still takes its flowcell's
	 * path, unmarked.
	 */
	ovs_flowcell_stamp(skb, key, id);
	key->ovs_flow_hash = hash;
	return true;

fallback:
	ovs_flowcell_count_bh(t, fallbacks, 1);
	return false;
}

size_t ovs_flowcell_msg_size(void)
{
	return nla_total_size(0) +			/* the nest */
	       5 * nla_total_size(sizeof(u32)) +	/* limit, idle, seed, gap,
							 * port share
							 */
	       12 * nla_total_size_64bit(sizeof(u64));	/* the counters */
}

int ovs_flowcell_fill(struct datapath *dp, struct sk_buff *skb)
{
	struct ovs_flowcell_table *t = dp->flowcell;
	struct ovs_flowcell_stats s;
	u32 limit, idle_msecs, seed, gap_us, share;
	struct nlattr *nest;
	u64 flows;

	ovs_flowcell_read_stats(t, &s);
	flows = atomic_read(&t->count);
	limit = READ_ONCE(t->limit);
	idle_msecs = READ_ONCE(t->idle_msecs);
	seed = READ_ONCE(t->start_seed);
	gap_us = READ_ONCE(t->gap_us);
	share = READ_ONCE(t->port_share);

	nest = nla_nest_start_noflag(skb, OVS_DP_ATTR_FLOWCELL);
	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u32(skb, OVS_FLOWCELL_ATTR_LIMIT, limit) ||
	    nla_put_u32(skb, OVS_FLOWCELL_ATTR_IDLE_MSECS, idle_msecs) ||
	    nla_put_u32(skb, OVS_FLOWCELL_ATTR_SEED, seed) ||
	    nla_put_u32(skb, OVS_FLOWCELL_ATTR_GAP_US, gap_us) ||
	    nla_put_u32(skb, OVS_FLOWCELL_ATTR_PORT_SHARE, share) ||
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
			      OVS_FLOWCELL_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, OVS_FLOWCELL_ATTR_REFUSED, s.refused,
			      OVS_FLOWCELL_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, OVS_FLOWCELL_ATTR_PORT_EVICTIONS,
			      s.port_evictions, OVS_FLOWCELL_ATTR_PAD) ||
	    nla_put_u64_64bit(skb, OVS_FLOWCELL_ATTR_PORT_REFUSED,
			      s.port_refused, OVS_FLOWCELL_ATTR_PAD)) {
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
	[OVS_FLOWCELL_ATTR_REFUSED] = OVS_FLOWCELL_READ_ONLY,
	[OVS_FLOWCELL_ATTR_PORT_SHARE] = NLA_POLICY_RANGE(NLA_U32, 1, 100),
	[OVS_FLOWCELL_ATTR_PORT_EVICTIONS] = OVS_FLOWCELL_READ_ONLY,
	[OVS_FLOWCELL_ATTR_PORT_REFUSED] = OVS_FLOWCELL_READ_ONLY,
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
	u32 limit, idle_msecs, old_share;
	int err;

	err = __nla_parse(tb, OVS_FLOWCELL_ATTR_MAX, nla_data(attr),
			  nla_len(attr), ovs_flowcell_policy,
			  NL_VALIDATE_STRICT, extack);
	if (err)
		return err;

	mutex_lock(&t->mutex);
	old_share = t->port_share;
	if (tb[OVS_FLOWCELL_ATTR_PORT_SHARE])
		t->port_share = nla_get_u32(tb[OVS_FLOWCELL_ATTR_PORT_SHARE]);
	limit = tb[OVS_FLOWCELL_ATTR_LIMIT] ?
		nla_get_u32(tb[OVS_FLOWCELL_ATTR_LIMIT]) : t->limit;
	idle_msecs = tb[OVS_FLOWCELL_ATTR_IDLE_MSECS] ?
		nla_get_u32(tb[OVS_FLOWCELL_ATTR_IDLE_MSECS]) : t->idle_msecs;
	err = __ovs_flowcell_set_limits(t, limit, idle_msecs);
	if (err) {
		t->port_share = old_share;
		mutex_unlock(&t->mutex);
		NL_SET_ERR_MSG_ATTR(extack, attr,
				    "No memory for the flowcell table's buckets");
		return err;
	}
	if (tb[OVS_FLOWCELL_ATTR_SEED])
		WRITE_ONCE(t->start_seed,
			   nla_get_u32(tb[OVS_FLOWCELL_ATTR_SEED]));
	if (tb[OVS_FLOWCELL_ATTR_GAP_US]) {
		u32 gap_us = nla_get_u32(tb[OVS_FLOWCELL_ATTR_GAP_US]);

		/* Flowcell mode does not stamp flows: from 0, the gap counts
		 * from now (ovs_flowcell_decide()).
		 */
		if (gap_us && !t->gap_us)
			WRITE_ONCE(t->gap_since_ns, ktime_get_ns());
		WRITE_ONCE(t->gap_us, gap_us);
		WRITE_ONCE(t->gap_ns, ovs_flowcell_gap_ns(gap_us));
	}
	mutex_unlock(&t->mutex);
	return 0;
}
