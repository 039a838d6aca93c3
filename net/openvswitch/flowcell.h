/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Presto flowcells in the Open vSwitch datapath: the OVS_HASH_ALG_FLOWCELL
 * dp_hash algorithm (see include/uapi/linux/openvswitch.h).
 *
 * Per TCP flow the datapath counts payload bytes; once the current flowcell
 * holds the flowcell size, the next packet (a TSO/GSO skb counts once)
 * starts the next flowcell.  The hash of a flowcell is (start + ID) with
 * bit 31 set, so a dp_hash select group walks its buckets flowcell by
 * flowcell.  The state lives in a bounded table per datapath: a hash of
 * flows sized from the limit, each bucket with its own lock and its own
 * LRU list, a limit with eviction inside the bucket, a share of the limit
 * per input port (a port's new flows take the state of its own flows only)
 * and an idle timeout enforced by a delayed work.
 *
 * Flowlet mode (OVS_FLOWCELL_ATTR_GAP_US set): the flowcell size is
 * ignored and a flow starts its next flowcell (a flowlet) when its previous
 * data packet is more than the gap old, the flowlet switching baseline of
 * the Presto paper (Sec. 5, Fig. 13).
 */

#ifndef OVS_FLOWCELL_H
#define OVS_FLOWCELL_H 1

#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/in6.h>
#include <linux/list.h>
#include <linux/minmax.h>
#include <linux/mutex.h>
#include <linux/netlink.h>
#include <linux/rcupdate.h>
#include <linux/spinlock.h>
#include <linux/u64_stats_sync.h>
#include <linux/time64.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <uapi/linux/openvswitch.h>

struct datapath;
struct netlink_ext_ack;
struct nlattr;
struct sk_buff;
struct sw_flow_key;

/* The flow a flowcell state belongs to.  Compared with memcmp() and hashed
 * as u32 words, so always zero-filled before use.
 */
struct ovs_flowcell_key {
	struct in6_addr src;		/* IPv4: ::ffff:a.b.c.d */
	struct in6_addr dst;
	__be16 sport;
	__be16 dport;
	__be16 eth_type;
	u16 in_port;
	u16 zone;			/* conntrack zone */
	u16 pad;
};

struct ovs_flowcell_flow {
	struct list_head node;		/* bucket->lru, most recent first */
	struct ovs_flowcell_key key;
	unsigned long last_used;	/* jiffies of the last data packet */
	u64 last_ns;			/* ktime_get_ns() of the same, flowlets */
	u32 start;			/* drawn when the flow is new */
	u32 cell;			/* flowcell ID */
	u32 bytes;			/* payload bytes in the current flowcell */
};

struct ovs_flowcell_stats {
	u64 packets;
	u64 bytes;
	u64 cells;
	u64 evictions;
	u64 expired;
	u64 alloc_fails;
	u64 fallbacks;
	u64 gap_cells;			/* flowlets started by the gap */
	u64 refused;			/* new flows with no room near them */
	u64 port_evictions;		/* taken by their port, at its share */
	u64 port_refused;		/* new flows of a port at its share */
};

struct ovs_flowcell_pcpu_stats {
	struct ovs_flowcell_stats s;
	struct u64_stats_sync syncp;
};

/* A full table holds about this many flows per bucket. */
#define OVS_FLOWCELL_BUCKET_DEPTH	4
#define OVS_FLOWCELL_BUCKETS_MAX	\
	(OVS_FLOWCELL_LIMIT_MAX / OVS_FLOWCELL_BUCKET_DEPTH)
/* Buckets next to its own a new flow may take a flow from at the limit. */
#define OVS_FLOWCELL_PROBES		8
/* Input ports whose flows are counted apart (port numbers modulo this). */
#define OVS_FLOWCELL_PORT_SLOTS		1024
/* A port may always hold this many flows (or the whole limit if smaller). */
#define OVS_FLOWCELL_PORT_MIN		64
/* Idle flows freed per run of the garbage collector. */
#define OVS_FLOWCELL_GC_BUDGET	4096

struct ovs_flowcell_bucket {
	spinlock_t lock;		/* lru and moved */
	bool moved;			/* emptied by a rebuild: do not use */
	struct list_head lru;		/* its flows, most recent first */
};

struct ovs_flowcell_buckets {
	u32 mask;			/* number of buckets - 1 */
	u32 seed;			/* of the buckets' hash */
	struct ovs_flowcell_bucket *b;
};

/* The packet path takes one bucket lock (a trylock on a neighbour when a
 * new flow finds the table full) and writes per-CPU counters; nothing
 * shared by every flow is written per packet.  The mutex serialises what
 * walks every bucket: a rebuild (the limit changed), the garbage
 * collector and teardown.
 */
struct ovs_flowcell_table {
	struct ovs_flowcell_buckets __rcu *buckets;
	atomic_t count;			/* flows in the buckets */
	u32 limit;
	u32 port_share;			/* percent of the limit a port may hold */
	u32 port_limit;			/* the flows that makes */
	u32 idle_msecs;
	unsigned long idle;		/* idle_msecs in jiffies */
	u32 start_seed;			/* 0: random starts, else hashed */
	u32 gap_us;			/* 0: flowcells, else flowlets */
	u64 gap_ns;			/* gap_us in nanoseconds */
	u64 gap_since_ns;		/* gap_us last set from 0 */
	bool dying;			/* the datapath is going away */
	u32 gc_next;			/* the bucket the collector goes on at */
	struct ovs_flowcell_pcpu_stats __percpu *stats;
	struct mutex mutex;		/* rebuild, collector, teardown */
	struct delayed_work gc;
	atomic_t ports[OVS_FLOWCELL_PORT_SLOTS];	/* flows per input port */
};

/* The flowcell size a hash action's basis stands for. */
static inline u32 ovs_flowcell_size(u32 basis)
{
	return basis ? basis : OVS_FLOWCELL_SIZE_DEFAULT;
}

static inline bool ovs_flowcell_size_valid(u32 basis)
{
	return !basis || (basis >= OVS_FLOWCELL_SIZE_MIN &&
			  basis <= OVS_FLOWCELL_SIZE_MAX);
}

/* Accounts a packet of @len payload bytes to @f, whose flowcells hold
 * @size bytes.  Returns true when the packet starts a new flowcell: it
 * would take the current one past @size bytes.  A packet is never split:
 * one larger than @size fills a flowcell of its own, and a flowcell of
 * maximum-sized TSO skbs (65160 bytes of payload at MSS 1448) is one skb,
 * the paper's unit, not two.
 */
static inline bool ovs_flowcell_advance(struct ovs_flowcell_flow *f, u32 len,
					u32 size)
{
	bool next = f->bytes && (u64)f->bytes + len > size;

	if (next) {
		f->cell++;
		f->bytes = 0;
	}
	f->bytes = min_t(u64, (u64)f->bytes + len, U32_MAX);
	return next;
}

static inline u64 ovs_flowcell_gap_ns(u32 gap_us)
{
	return (u64)gap_us * NSEC_PER_USEC;
}

/* Flowlet mode: accounts a packet of @len payload bytes sent at @now
 * (nanoseconds) to @f.  Returns true when the packet starts a new flowcell
 * (a flowlet): the flow's previous data packet, at @f->last_ns, is more than
 * @gap_ns old.  A packet exactly @gap_ns after the previous one continues
 * the flowlet.  The byte count is kept (it is the flowlet's size so far) but
 * never ends a flowlet.  The difference is taken modulo 2^64 and read as
 * signed, so a clock that wraps still works and a packet stamped slightly
 * before the previous one (another CPU) continues the flowlet.
 */
static inline bool ovs_flowcell_gap_advance(struct ovs_flowcell_flow *f,
					    u32 len, u64 now, u64 gap_ns)
{
	bool next = (s64)(now - f->last_ns) > (s64)gap_ns;

	f->last_ns = now;
	if (next) {
		f->cell++;
		f->bytes = 0;
	}
	f->bytes = min_t(u64, (u64)f->bytes + len, U32_MAX);
	return next;
}

/* The decision for one packet: by bytes (@gap_ns 0, the flowcells of the
 * paper) or by the inactivity gap (flowlets).  The clock is only read in
 * flowlet mode: with @gap_ns 0, @now and @since are not used and
 * @f->last_ns is left alone.  In flowlet mode a stamp older than @since
 * (when the gap was set on the table, from 0) counts from @since: time
 * spent in flowcell mode, which does not stamp, is not inactivity, so a
 * gap set on a running datapath starts a flow's next flowlet only after
 * a pause of more than the gap since both the flow's previous packet and
 * the moment the gap was set.
 */
static inline bool ovs_flowcell_decide(struct ovs_flowcell_flow *f, u32 len,
				       u32 size, u64 now, u64 gap_ns,
				       u64 since)
{
	if (!gap_ns)
		return ovs_flowcell_advance(f, len, size);
	if ((s64)(f->last_ns - since) < 0)
		f->last_ns = since;
	return ovs_flowcell_gap_advance(f, len, now, gap_ns);
}

/* Never 0; consecutive flowcells take consecutive values (modulo 2^31). */
static inline u32 ovs_flowcell_hash(const struct ovs_flowcell_flow *f)
{
	return (f->start + f->cell) | BIT(31);
}

/* What the receiver sees: the low 16 bits of the flowcell ID. */
static inline u16 ovs_flowcell_id(const struct ovs_flowcell_flow *f)
{
	return (u16)f->cell;
}

#if IS_ENABLED(CONFIG_KUNIT)
/* The table, without a datapath (for KUnit).  ovs_flowcell_find() expects
 * the bucket of its key locked by ovs_flowcell_lock(); the others take
 * what they need and may sleep.
 */
u32 ovs_flowcell_nbuckets(u32 limit);
u32 ovs_flowcell_table_buckets(struct ovs_flowcell_table *t);
struct ovs_flowcell_table *ovs_flowcell_table_alloc(u32 limit, u32 idle_msecs);
void ovs_flowcell_table_free(struct ovs_flowcell_table *t);
struct ovs_flowcell_bucket *ovs_flowcell_lock(struct ovs_flowcell_table *t,
					      const struct ovs_flowcell_key *key);
void ovs_flowcell_unlock(struct ovs_flowcell_bucket *b);
struct ovs_flowcell_flow *ovs_flowcell_find(struct ovs_flowcell_table *t,
					    struct ovs_flowcell_bucket *b,
					    const struct ovs_flowcell_key *key,
					    unsigned long now, u64 now_ns,
					    gfp_t gfp, bool *created);
unsigned int ovs_flowcell_expire(struct ovs_flowcell_table *t,
				 unsigned long now, unsigned int budget);
int ovs_flowcell_set_limits(struct ovs_flowcell_table *t, u32 limit,
			    u32 idle_msecs);
int ovs_flowcell_set_port_share(struct ovs_flowcell_table *t, u32 share);
u32 ovs_flowcell_port_limit(u32 limit, u32 share);
void ovs_flowcell_read_stats(struct ovs_flowcell_table *t,
			     struct ovs_flowcell_stats *s);
u32 ovs_flowcell_payload(const struct sk_buff *skb,
			 const struct sw_flow_key *key);
u32 ovs_flowcell_start(const struct ovs_flowcell_table *t,
		       const struct ovs_flowcell_key *key);
#endif

#if IS_ENABLED(CONFIG_OPENVSWITCH_FLOWCELL)
int ovs_flowcell_init(struct datapath *dp);
void ovs_flowcell_stop(struct datapath *dp);
void ovs_flowcell_free(struct datapath *dp);
bool ovs_flowcell_execute(struct datapath *dp, struct sk_buff *skb,
			  struct sw_flow_key *key, u32 basis);
size_t ovs_flowcell_msg_size(void);
int ovs_flowcell_fill(struct datapath *dp, struct sk_buff *skb);
int ovs_flowcell_set(struct datapath *dp, const struct nlattr *attr,
		     struct netlink_ext_ack *extack);
#else
static inline int ovs_flowcell_init(struct datapath *dp)
{
	return 0;
}

static inline void ovs_flowcell_stop(struct datapath *dp)
{
}

static inline void ovs_flowcell_free(struct datapath *dp)
{
}

static inline bool ovs_flowcell_execute(struct datapath *dp,
					struct sk_buff *skb,
					struct sw_flow_key *key, u32 basis)
{
	return false;
}

static inline size_t ovs_flowcell_msg_size(void)
{
	return 0;
}

static inline int ovs_flowcell_fill(struct datapath *dp, struct sk_buff *skb)
{
	return 0;
}

static inline int ovs_flowcell_set(struct datapath *dp,
				   const struct nlattr *attr,
				   struct netlink_ext_ack *extack)
{
	NL_SET_ERR_MSG_ATTR(extack, attr,
			    "Flowcells are not supported (CONFIG_OPENVSWITCH_FLOWCELL)");
	return -EOPNOTSUPP;
}
#endif

#endif /* OVS_FLOWCELL_H */
