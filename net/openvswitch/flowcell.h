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
 * flows and an LRU list under one spinlock, a limit with LRU eviction and
 * an idle timeout enforced by a delayed work.
 */

#ifndef OVS_FLOWCELL_H
#define OVS_FLOWCELL_H 1

#include <linux/bits.h>
#include <linux/in6.h>
#include <linux/list.h>
#include <linux/minmax.h>
#include <linux/netlink.h>
#include <linux/spinlock.h>
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
	struct hlist_node hnode;
	struct list_head lru;		/* table->lru, most recent first */
	struct ovs_flowcell_key key;
	unsigned long last_used;	/* jiffies of the last data packet */
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
};

#define OVS_FLOWCELL_BUCKETS	2048
/* Idle flows freed per run of the garbage collector (under the lock). */
#define OVS_FLOWCELL_GC_BUDGET	4096

struct ovs_flowcell_table {
	spinlock_t lock;		/* everything below */
	struct list_head lru;
	u32 count;
	u32 limit;
	u32 idle_msecs;
	unsigned long idle;		/* idle_msecs in jiffies */
	u32 seed;			/* of the buckets' hash */
	u32 start_seed;			/* 0: random starts, else hashed */
	bool dying;			/* the datapath is going away */
	struct ovs_flowcell_stats stats;
	struct delayed_work gc;
	struct hlist_head buckets[OVS_FLOWCELL_BUCKETS];
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
 * @size bytes.  Returns true when the packet starts a new flowcell: the
 * current one already holds @size bytes or more.  A packet is never split,
 * so a flowcell ends with the packet that reaches (or passes) the size.
 */
static inline bool ovs_flowcell_advance(struct ovs_flowcell_flow *f, u32 len,
					u32 size)
{
	bool next = f->bytes >= size;

	if (next) {
		f->cell++;
		f->bytes = 0;
	}
	f->bytes = min_t(u64, (u64)f->bytes + len, U32_MAX);
	return next;
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
/* The table, without a datapath (for KUnit).  The functions that take a
 * table expect its lock held.
 */
struct ovs_flowcell_table *ovs_flowcell_table_alloc(u32 limit, u32 idle_msecs);
void ovs_flowcell_table_free(struct ovs_flowcell_table *t);
struct ovs_flowcell_flow *ovs_flowcell_find(struct ovs_flowcell_table *t,
					    const struct ovs_flowcell_key *key,
					    unsigned long now, gfp_t gfp,
					    bool *created);
unsigned int ovs_flowcell_expire(struct ovs_flowcell_table *t,
				 unsigned long now, unsigned int budget);
void ovs_flowcell_set_limits(struct ovs_flowcell_table *t, u32 limit,
			     u32 idle_msecs);
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
