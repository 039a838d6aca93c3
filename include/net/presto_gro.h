/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Presto GRO: a resequencing stage after GRO that hides flowcell
 * reordering from TCP (He et al., "Presto: Edge-based Load Balancing for
 * Fast Datacenter Networks", SIGCOMM 2015, Sec. 3.2, Algorithm 1).
 *
 * The sender stamps a flowcell ID, one per 64 KB flowcell and increasing
 * per flow, into the Ethernet source MAC: bytes 2-3 carry the tag
 * PRESTO_GRO_STAMP_TAG that marks a stamped frame, bytes 4-5 the low 16
 * bits of the ID, big endian.  Stock GRO compares the whole Ethernet
 * header, so merged segments leave it per flowcell; napi_gro_complete()
 * and the GRO_NORMAL paths hand them to presto_gro_receive(), which keeps
 * a per-flow sorted list per NAPI instance and pushes segments up by
 * Algorithm 1, from that NAPI's poll only.
 */
#ifndef _NET_PRESTO_GRO_H
#define _NET_PRESTO_GRO_H

#include <linux/types.h>
#include <linux/list.h>
#include <linux/skbuff.h>
#include <linux/netdevice.h>
#include <linux/jump_label.h>
#include <linux/openvswitch.h>


/* Parameters of Algorithm 1 (per device) */
struct presto_gro_params {
	u32 alpha;		/* hold up to alpha * EWMA */
	u32 beta;		/* still hold if merged within EWMA / beta */
	u32 timeout_min_us;	/* clamps of alpha * EWMA */
	u32 timeout_max_us;
	u32 max_segs;		/* held skbs per flow before forced push */
	u32 max_bytes;		/* held skb->truesize per NAPI, in bytes */
};

#define PRESTO_GRO_ALPHA_DEFAULT	2
#define PRESTO_GRO_BETA_DEFAULT		2
#define PRESTO_GRO_TMIN_US_DEFAULT	100
#define PRESTO_GRO_TMAX_US_DEFAULT	10000
#define PRESTO_GRO_MAX_SEGS_DEFAULT	128
#define PRESTO_GRO_MAX_BYTES_DEFAULT	(8 << 20)
#define PRESTO_GRO_EWMA_SHIFT		3	/* gain 1/8 */

/* Bytes 2-3 of the source MAC of a stamped frame (big endian) */
#define PRESTO_GRO_STAMP_TAG		OVS_FLOWCELL_STAMP_TAG

/* Per-skb state while it sits in a flow's list (in skb->cb) */
struct presto_gro_seg {
	u32 seq;		/* first sequence number */
	u32 end_seq;		/* seq + payload */
	u64 arrival_ns;		/* when GRO handed it to us */
	u32 gro_count;		/* MTU packets merged into it */
	u16 fcid;		/* flowcell ID */
	u8 held;		/* PRESTO_HELD_*: waited at least once */
	u8 untagged;		/* no stamp: fcid means nothing */
};

#define PRESTO_HELD_BEHIND	1	/* behind a held segment */
#define PRESTO_HELD_GAP		2	/* at a flowcell boundary gap */

static inline struct presto_gro_seg *presto_gro_seg(struct sk_buff *skb)
{
	return (struct presto_gro_seg *)skb->cb;
}

/* Counters (per NAPI; reported summed per device) */
struct presto_gro_stats {
	u64 held;		/* segments that had to wait (counted once) */
	u64 pushed_inorder;	/* same or next flowcell, in sequence */
	u64 pushed_timeout;	/* gap at a flowcell boundary timed out */
	u64 pushed_loss;	/* gap inside a flowcell: pushed at once */
	u64 pushed_old;		/* older flowcell (late or retransmitted) */
	u64 pushed_evicted;	/* flow or NAPI limit, SYN, RST or URG */
	u64 reorder_events;	/* boundary gaps filled without loss */
	u64 late_fills;		/* of those, filled after their hold timed out */
	u64 untagged;		/* data segments without a flowcell stamp */
	u64 restarts;		/* new data under an older ID: IDs restarted */
	u64 expired;		/* flows idle so long their ID was forgotten */
	u64 dropped;		/* held when the NAPI, the device or the
				 * feature went away: freed
				 */
};

/* Per-flow state of Algorithm 1 */
struct presto_gro_flow {
	u32 exp_seq;		/* f.expSeq */
	u16 last_fc;		/* f.lastFlowcell */
	u8 valid;		/* exp_seq/last_fc initialised */
	u8 late;		/* a boundary gap timed out, not yet filled */
	u8 rebase;		/* last_fc forgotten: the next ID sets it */
	u32 late_end;		/* where that gap ended */
	u64 late_since;		/* arrival of the segment that timed out */
	u32 nsegs;
	u32 bytes;		/* skb->truesize of the segments held */
	struct list_head segs;	/* skbs sorted by seq, ascending */
};

/* Verdicts of the decision on one segment */
enum presto_gro_verdict {
	PRESTO_PUSH_INORDER,	/* lines 3-5 without a gap, 7-10 */
	PRESTO_PUSH_FILLED,	/* lines 7-10 for a segment that waited */
	PRESTO_PUSH_LOSS,	/* lines 3-5 with a gap inside the flowcell */
	PRESTO_PUSH_TIMEOUT,	/* lines 11-14 */
	PRESTO_PUSH_OLD,	/* line 17 */
	PRESTO_HOLD,		/* line 15: wait */
};

/* The flow a segment belongs to: the 4-tuple on one VLAN */
struct presto_gro_key {
	__be32 saddr[4];
	__be32 daddr[4];
	__be16 sport;
	__be16 dport;
	u16 family;
	u16 vlan;		/* VLAN ID of an accelerated tag, or 0 */
};

/* Pure logic, exported for KUnit */
bool presto_gro_fc_after(u16 a, u16 b);
bool presto_gro_restarted(const struct presto_gro_flow *f,
			  const struct presto_gro_seg *s);
u64 presto_gro_timeout_ns(u64 ewma_ns, const struct presto_gro_params *p);
u64 presto_gro_ewma_update(u64 ewma_ns, u64 sample_ns);
u64 presto_gro_sample_ns(u64 d, const struct presto_gro_params *p);
u64 presto_gro_deadline_ns(const struct presto_gro_seg *s, u64 run_last_ns,
			   u64 first_ns, u64 ewma_ns,
			   const struct presto_gro_params *p);
enum presto_gro_verdict presto_gro_decide(struct presto_gro_flow *f,
					  const struct presto_gro_seg *s,
					  u64 run_last_ns, u64 first_ns,
					  u64 ewma_ns,
					  const struct presto_gro_params *p,
					  u64 now);
#if IS_ENABLED(CONFIG_KUNIT)
bool presto_gro_parse(const struct sk_buff *skb, struct presto_gro_key *k,
		      u32 *seq, u32 *len, u8 *flags);
#endif
void presto_gro_flow_insert(struct presto_gro_flow *f, struct sk_buff *skb);
u64 presto_gro_flow_flush(struct presto_gro_flow *f, u64 *ewma_ns,
			  const struct presto_gro_params *p, u64 now,
			  struct list_head *out, struct presto_gro_stats *st,
			  unsigned int *budget);
void presto_gro_flow_drain(struct presto_gro_flow *f, struct list_head *out,
			   struct presto_gro_stats *st);

#if IS_ENABLED(CONFIG_NET_PRESTO_GRO)
DECLARE_STATIC_KEY_FALSE(presto_gro_active);
bool presto_gro_receive(struct napi_struct *napi, struct sk_buff *skb,
			int segs);
void presto_gro_napi_poll(struct napi_struct *napi);
void presto_gro_napi_add(struct napi_struct *napi);
void presto_gro_napi_del(struct napi_struct *napi);

/*
 * The static key is on while any device has Presto GRO enabled; the
 * NAPI_STATE_PRESTO_GRO bit marks the NAPI instances of those devices,
 * so the others take the stock path after one bit test.
 */
static inline bool presto_gro_napi_on(const struct napi_struct *napi)
{
	return static_branch_unlikely(&presto_gro_active) && napi &&
	       test_bit(NAPI_STATE_PRESTO_GRO, &napi->state);
}

static inline bool presto_gro_hook(struct napi_struct *napi,
				   struct sk_buff *skb, int segs)
{
	if (presto_gro_napi_on(napi))
		return presto_gro_receive(napi, skb, segs);
	return false;
}

/* A NAPI poll ends: holds that ended go up with its GRO_NORMAL list */
static inline void presto_gro_poll_hook(struct napi_struct *napi)
{
	if (presto_gro_napi_on(napi))
		presto_gro_napi_poll(napi);
}

/* A NAPI is added to a device that may have Presto GRO enabled */
static inline void presto_gro_napi_add_hook(struct napi_struct *napi)
{
	if (static_branch_unlikely(&presto_gro_active))
		presto_gro_napi_add(napi);
}

/* A NAPI goes away: what it holds is dropped */
static inline void presto_gro_napi_del_hook(struct napi_struct *napi)
{
	if (static_branch_unlikely(&presto_gro_active))
		presto_gro_napi_del(napi);
}
#else
static inline bool presto_gro_hook(struct napi_struct *napi,
				   struct sk_buff *skb, int segs)
{
	return false;
}

static inline void presto_gro_poll_hook(struct napi_struct *napi)
{
}

static inline void presto_gro_napi_add_hook(struct napi_struct *napi)
{
}

static inline void presto_gro_napi_del_hook(struct napi_struct *napi)
{
}
#endif

#endif /* _NET_PRESTO_GRO_H */
