// SPDX-License-Identifier: GPL-2.0-only
/*
 * Presto GRO: resequencing of flowcells after GRO (He et al., SIGCOMM
 * 2015, Sec. 3.2, Algorithm 1).
 *
 * Stock GRO merges packets per flowcell (the flowcell ID in the source
 * MAC makes each flowcell a different flow to gro_list_prepare()), and
 * hands completed segments to napi_gro_complete() or, unmerged, to the
 * GRO_NORMAL paths.  Where Presto GRO is enabled on the receiving device,
 * those hand TCP segments to presto_gro_receive() instead of queueing
 * them on napi->rx_list.  Each flow (4-tuple, MACs ignored) keeps its
 * segments sorted by sequence number; Algorithm 1 then pushes up what is
 * in order, what is a loss inside a flowcell, and what waited longer than
 * alpha * EWMA of past reordering durations at a flowcell boundary.  The
 * state is per NAPI instance and touched only from its poll; a per-NAPI
 * hrtimer reschedules the NAPI when a hold ends and no packet arrives.
 *
 * A device's settings and counters are read and written over the generic
 * netlink family "presto-gro" (uapi/linux/presto_gro.h).
 */

#include <linux/hashtable.h>
#include <linux/hrtimer.h>
#include <linux/if_arp.h>
#include <linux/if_ether.h>
#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/jhash.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/slab.h>
#include <linux/tcp.h>
#include <linux/unaligned.h>
#include <kunit/visibility.h>
#include <net/genetlink.h>
#include <net/gro.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <net/presto_gro.h>
#include <net/tcp.h>
#include <uapi/linux/presto_gro.h>

/* ---------------------------------------------------------------------
 * Pure decision logic (KUnit: net/core/presto_gro_kunit.c)
 */

/* Flowcell IDs are u16 and wrap: serial number arithmetic. */
bool presto_gro_fc_after(u16 a, u16 b)
{
	return (s16)(a - b) > 0;
}
EXPORT_SYMBOL_GPL(presto_gro_fc_after);

/*
 * New data under an older flowcell ID: the sender's IDs restarted (its
 * flow state was evicted or expired, or the flow moved to another input
 * port).  An older flowcell's data was sent before all of a newer one's,
 * so a genuine late segment starts before expSeq, the highest sequence
 * number pushed up; one at or after it is from a new run of IDs.
 */
bool presto_gro_restarted(const struct presto_gro_flow *f,
			  const struct presto_gro_seg *s)
{
	return f->valid && !s->untagged && s->fcid != f->last_fc &&
	       !presto_gro_fc_after(s->fcid, f->last_fc) &&
	       !before(s->seq, f->exp_seq);
}
EXPORT_SYMBOL_GPL(presto_gro_restarted);

/*
 * Before a segment's decision: one without a stamp belongs to the flow's
 * current flowcell (its MAC bytes are no ID); one whose ID restarted, or
 * the first after the flow's ID was forgotten, starts a new run of IDs:
 * lastFlowcell becomes the ID before it, so it is the next flowcell, in
 * order or held at a gap, as Algorithm 1 decides.
 */
static void presto_gro_rebase(struct presto_gro_flow *f,
			      struct presto_gro_seg *s,
			      struct presto_gro_stats *st)
{
	if (s->untagged) {
		if (f->valid)
			s->fcid = f->last_fc;
		else
			f->rebase = 1;
		return;
	}
	if (f->valid && f->rebase)
		f->rebase = 0;
	else if (presto_gro_restarted(f, s))
		st->restarts++;
	else
		return;
	f->last_fc = s->fcid - 1;
	f->late = 0;
}

/* alpha * EWMA, clamped to [timeout_min_us, timeout_max_us] */
u64 presto_gro_timeout_ns(u64 ewma_ns, const struct presto_gro_params *p)
{
	u64 lo = (u64)p->timeout_min_us * NSEC_PER_USEC;
	u64 hi = (u64)p->timeout_max_us * NSEC_PER_USEC;
	u64 t;

	if (ewma_ns > div64_u64(U64_MAX, max_t(u32, p->alpha, 1)))
		t = U64_MAX;
	else
		t = ewma_ns * p->alpha;
	if (hi < lo)
		hi = lo;
	return clamp_t(u64, t, lo, hi);
}
EXPORT_SYMBOL_GPL(presto_gro_timeout_ns);

/*
 * A reordering duration as an EWMA sample, bounded by timeout_max_us /
 * alpha: a hold never lasts longer than timeout_max_us, so an EWMA above
 * that bound only pins every hold at the maximum.  One very late fill
 * then moves the EWMA by at most an eighth of the bound.
 */
u64 presto_gro_sample_ns(u64 d, const struct presto_gro_params *p)
{
	u64 cap = div_u64((u64)p->timeout_max_us * NSEC_PER_USEC,
			  max_t(u32, p->alpha, 1));

	return min(d, cap);
}
EXPORT_SYMBOL_GPL(presto_gro_sample_ns);

/* EWMA with gain 1/8, in nanoseconds; the first sample initialises it */
u64 presto_gro_ewma_update(u64 ewma_ns, u64 sample_ns)
{
	if (!ewma_ns)
		return sample_ns;
	if (sample_ns >= ewma_ns)
		return ewma_ns + ((sample_ns - ewma_ns) >> PRESTO_GRO_EWMA_SHIFT);
	return ewma_ns - ((ewma_ns - sample_ns) >> PRESTO_GRO_EWMA_SHIFT);
}
EXPORT_SYMBOL_GPL(presto_gro_ewma_update);

/*
 * When a segment held at a flowcell boundary times out: alpha * EWMA after
 * it arrived, but not before EWMA / beta after the last packet merged into
 * its run (the contiguous segments of its flowcell that follow it), and
 * never later than timeout_max_us after the oldest arrival (@first_ns) of
 * it and the segments held behind it.  The cap is per segment: a newer
 * segment that takes the head of the list cannot renew the hold of older
 * ones queued behind it.
 */
u64 presto_gro_deadline_ns(const struct presto_gro_seg *s, u64 run_last_ns,
			   u64 first_ns, u64 ewma_ns,
			   const struct presto_gro_params *p)
{
	u64 d = s->arrival_ns + presto_gro_timeout_ns(ewma_ns, p);
	u64 m = run_last_ns + div_u64(ewma_ns, max_t(u32, p->beta, 1));
	u64 cap = min(s->arrival_ns, first_ns) +
		  (u64)p->timeout_max_us * NSEC_PER_USEC;

	if (m > d)
		d = m;
	return min(d, cap);
}
EXPORT_SYMBOL_GPL(presto_gro_deadline_ns);

/* Algorithm 1, lines 3-17, for one segment S of flow f */
enum presto_gro_verdict presto_gro_decide(struct presto_gro_flow *f,
					  const struct presto_gro_seg *s,
					  u64 run_last_ns, u64 first_ns,
					  u64 ewma_ns,
					  const struct presto_gro_params *p,
					  u64 now)
{
	if (!f->valid) {
		/* first segment of the flow: nothing to wait for */
		f->valid = 1;
		f->last_fc = s->fcid;
		f->exp_seq = s->end_seq;
		return PRESTO_PUSH_INORDER;
	}
	if (s->fcid == f->last_fc) {			/* lines 3-5 */
		bool gap = after(s->seq, f->exp_seq);

		if (after(s->end_seq, f->exp_seq))
			f->exp_seq = s->end_seq;
		return gap ? PRESTO_PUSH_LOSS : PRESTO_PUSH_INORDER;
	}
	if (presto_gro_fc_after(s->fcid, f->last_fc)) {	/* line 6 */
		/* line 7; a segment starting before expSeq has no gap either */
		if (!after(s->seq, f->exp_seq)) {
			f->last_fc = s->fcid;
			if (after(s->end_seq, f->exp_seq))
				f->exp_seq = s->end_seq;
			return s->held == PRESTO_HELD_GAP ? PRESTO_PUSH_FILLED :
							 PRESTO_PUSH_INORDER;
		}
		if (now >= presto_gro_deadline_ns(s, run_last_ns, first_ns,
						  ewma_ns, p)) {
			f->last_fc = s->fcid;		/* lines 11-14 */
			f->exp_seq = s->end_seq;
			return PRESTO_PUSH_TIMEOUT;
		}
		return PRESTO_HOLD;			/* line 15 */
	}
	return PRESTO_PUSH_OLD;				/* line 17 */
}
EXPORT_SYMBOL_GPL(presto_gro_decide);

/* Insert keeping the list sorted by seq; new segments usually go last. */
void presto_gro_flow_insert(struct presto_gro_flow *f, struct sk_buff *skb)
{
	struct presto_gro_seg *s = presto_gro_seg(skb);
	struct sk_buff *e;

	list_for_each_entry_reverse(e, &f->segs, list) {
		if (!after(presto_gro_seg(e)->seq, s->seq)) {
			list_add(&skb->list, &e->list);
			goto out;
		}
	}
	list_add(&skb->list, &f->segs);
out:
	f->nsegs++;
	f->bytes += skb->truesize;
}
EXPORT_SYMBOL_GPL(presto_gro_flow_insert);

/* Newest arrival in the contiguous same-flowcell run starting at skb */
static u64 presto_gro_run_last(struct presto_gro_flow *f, struct sk_buff *skb)
{
	struct presto_gro_seg *s = presto_gro_seg(skb);
	u64 last = s->arrival_ns;
	u32 end = s->end_seq;

	list_for_each_entry_continue(skb, &f->segs, list) {
		s = presto_gro_seg(skb);
		if (s->seq != end)
			break;
		if (s->fcid != presto_gro_seg(list_prev_entry(skb, list))->fcid)
			break;
		last = max(last, s->arrival_ns);
		end = s->end_seq;
	}
	return last;
}

/* Oldest arrival of skb and the segments queued behind it */
static u64 presto_gro_first_arrival(struct presto_gro_flow *f,
				    struct sk_buff *skb)
{
	u64 first = presto_gro_seg(skb)->arrival_ns;

	list_for_each_entry_continue(skb, &f->segs, list)
		first = min(first, presto_gro_seg(skb)->arrival_ns);
	return first;
}

/*
 * Algorithm 1 over one flow's sorted list: move what may go up to @out,
 * in order.  Once a segment is held, everything after it waits too, so
 * that what goes up is in sequence order.  Returns when the hold may end
 * (0: nothing held).  With @budget, at most *@budget segments move (the
 * budget is decremented); when it runs out with segments left, it returns
 * @now: call again.
 */
u64 presto_gro_flow_flush(struct presto_gro_flow *f, u64 *ewma_ns,
			  const struct presto_gro_params *p, u64 now,
			  struct list_head *out, struct presto_gro_stats *st,
			  unsigned int *budget)
{
	struct sk_buff *skb, *tmp;

	list_for_each_entry_safe(skb, tmp, &f->segs, list) {
		struct presto_gro_seg *s = presto_gro_seg(skb);
		enum presto_gro_verdict v;
		u64 run_last = s->arrival_ns;
		u64 first = s->arrival_ns;

		/* budget spent: the rest is decided by the next flush */
		if (budget && !*budget)
			return now;
		presto_gro_rebase(f, s, st);
		if (f->valid && s->fcid != f->last_fc &&
		    presto_gro_fc_after(s->fcid, f->last_fc)) {
			run_last = presto_gro_run_last(f, skb);
			first = presto_gro_first_arrival(f, skb);
		}
		v = presto_gro_decide(f, s, run_last, first, *ewma_ns, p, now);
		if (v == PRESTO_HOLD) {
			struct sk_buff *h = skb;

			/* the segment at the gap, and those queued behind it */
			list_for_each_entry_from(h, &f->segs, list) {
				if (!presto_gro_seg(h)->held)
					st->held++;
				if (presto_gro_seg(h)->held != PRESTO_HELD_GAP)
					presto_gro_seg(h)->held = PRESTO_HELD_BEHIND;
			}
			s->held = PRESTO_HELD_GAP;
			return presto_gro_deadline_ns(s, run_last, first,
						      *ewma_ns, p);
		}
		switch (v) {
		case PRESTO_PUSH_FILLED:
			/* reordering at a boundary, filled without loss */
			*ewma_ns = presto_gro_ewma_update(*ewma_ns,
				presto_gro_sample_ns(now - s->arrival_ns, p));
			st->reorder_events++;
			fallthrough;
		case PRESTO_PUSH_INORDER:
			st->pushed_inorder++;
			break;
		case PRESTO_PUSH_LOSS:
			st->pushed_loss++;
			break;
		case PRESTO_PUSH_TIMEOUT:
			st->pushed_timeout++;
			/* the gap may still fill from its older flowcell */
			f->late = 1;
			f->late_end = s->seq;
			f->late_since = s->arrival_ns;
			break;
		default:
			st->pushed_old++;
			/*
			 * The older flowcell filled a gap that timed out: that
			 * was reordering without loss too, only longer than the
			 * hold (a retransmission would carry a newer flowcell
			 * ID).  Its duration is a sample, or a hold that starts
			 * too short could never learn to grow.
			 */
			if (f->late && before(s->seq, f->late_end) &&
			    !before(s->end_seq, f->late_end)) {
				f->late = 0;
				*ewma_ns = presto_gro_ewma_update(*ewma_ns,
					presto_gro_sample_ns(now - f->late_since,
							     p));
				st->reorder_events++;
				st->late_fills++;
			}
			break;
		}
		list_move_tail(&skb->list, out);
		f->nsegs--;
		f->bytes -= skb->truesize;
		if (budget)
			(*budget)--;
	}
	return 0;
}
EXPORT_SYMBOL_GPL(presto_gro_flow_flush);

/* Everything of the flow goes up, in order (limits, SYN, RST, URG) */
void presto_gro_flow_drain(struct presto_gro_flow *f, struct list_head *out,
			   struct presto_gro_stats *st)
{
	struct sk_buff *skb, *tmp;

	list_for_each_entry_safe(skb, tmp, &f->segs, list) {
		struct presto_gro_seg *s = presto_gro_seg(skb);

		if (f->valid && after(s->end_seq, f->exp_seq)) {
			f->exp_seq = s->end_seq;
			if (!s->untagged)
				f->last_fc = s->fcid;
		}
		list_move_tail(&skb->list, out);
		st->pushed_evicted++;
	}
	f->nsegs = 0;
	f->bytes = 0;
}
EXPORT_SYMBOL_GPL(presto_gro_flow_drain);

/* ---------------------------------------------------------------------
 * Per-NAPI state, the hooks, the timer
 *
 * The settings are per device (struct presto_gro_dev); the flows, what
 * they hold, the EWMA and the counters are per NAPI instance (struct
 * presto_gro_napi), created by the NAPI's first segment after Presto GRO
 * is enabled and touched on the receive path only from that NAPI's poll,
 * so that path takes no lock.  Held segments go up only from the NAPI's
 * poll too: when a packet arrives, or when the hold timer, which only
 * schedules the NAPI (as napi_watchdog() does for gro_flush_timeout),
 * has fired and the poll ends (presto_gro_napi_poll()).  Every flush
 * moves at most PRESTO_GRO_FLUSH_BUDGET segments.  A NAPI's state is
 * dropped with the NAPI (__netif_napi_del()), when the device goes down
 * or away and when Presto GRO is turned off: what it held is freed
 * (counted in dropped), never delivered from outside NAPI.
 */

#define PRESTO_GRO_FLOW_BITS	8
#define PRESTO_GRO_MAX_FLOWS	1024
#define PRESTO_GRO_IDLE_NS	(1000 * NSEC_PER_MSEC)
/* The sender forgets a flow idle this long and restarts its IDs at 0 */
#define PRESTO_GRO_FORGET_NS	((u64)OVS_FLOWCELL_IDLE_MSECS_DEFAULT * \
				 NSEC_PER_MSEC)
/* Segments one flush (a packet's, or a poll's after a timeout) moves up */
#define PRESTO_GRO_FLUSH_BUDGET	64

struct presto_gro_fentry {
	struct hlist_node node;
	struct presto_gro_key key;
	u64 last_ns;
	struct presto_gro_flow flow;
};

struct presto_gro_dev;

struct presto_gro_napi {
	struct hlist_node node;		/* presto_gro_dev.napis, by napi */
	struct list_head gone;		/* on the way out (presto_gro_release) */
	struct napi_struct *napi;
	/* NAPI context only, below */
	u64 ewma_ns;
	u64 next_ns;			/* earliest end of a hold, or U64_MAX */
	u32 nflows;
	u32 held_bytes;			/* sum of the flows' bytes */
	struct presto_gro_stats st;
	struct u64_stats_sync syncp;	/* st, for the netlink reader */
	struct hrtimer timer;		/* schedules the NAPI at next_ns */
	DECLARE_HASHTABLE(flows, PRESTO_GRO_FLOW_BITS);
	struct rcu_head rcu;
};

struct presto_gro_dev {
	struct hlist_node node;		/* presto_gro_devs, by dev */
	struct net_device *dev;
	spinlock_t lock;		/* napis, enabled, p, retired */
	bool enabled;
	struct presto_gro_params p;
	struct presto_gro_stats retired; /* of NAPI states freed */
	DECLARE_HASHTABLE(napis, 4);
	struct rcu_head rcu;
};

DEFINE_STATIC_KEY_FALSE(presto_gro_active);
EXPORT_SYMBOL_GPL(presto_gro_active);

static DEFINE_HASHTABLE(presto_gro_devs, 6);
/* updates of presto_gro_devs; teardown of NAPI states */
static DEFINE_MUTEX(presto_gro_mutex);

static struct presto_gro_dev *presto_gro_dev_rcu(const struct net_device *dev)
{
	struct presto_gro_dev *pd;

	hash_for_each_possible_rcu(presto_gro_devs, pd, node, (unsigned long)dev)
		if (pd->dev == dev)
			return pd;
	return NULL;
}

static struct presto_gro_napi *
presto_gro_napi_rcu(struct presto_gro_dev *pd, const struct napi_struct *napi)
{
	struct presto_gro_napi *pn;

	hash_for_each_possible_rcu(pd->napis, pn, node, (unsigned long)napi)
		if (pn->napi == napi)
			return pn;
	return NULL;
}

/*
 * The flow key, sequence number, sequence space (payload) and flags of a
 * TCP segment at skb->data.  GRO aggregates beyond 64 KB (BIG TCP) are
 * parsed too, or they would go up ahead of their flow's held segments:
 * IPv4 with tot_len 0 and IPv6 with payload_len 0, bare or behind the
 * hop-by-hop jumbo header that ipv6_gro_complete() inserts, taking their
 * length from the skb.  Those forms are accepted only on GSO skbs, as
 * iph_totlen() does.
 */
VISIBLE_IF_KUNIT bool presto_gro_parse(const struct sk_buff *skb,
				       struct presto_gro_key *k, u32 *seq,
				       u32 *len, u8 *flags)
{
	unsigned int hl, l3len;
	struct tcphdr _th;
	const struct tcphdr *th;

	memset(k, 0, sizeof(*k));
	if (skb->protocol == htons(ETH_P_IP)) {
		struct iphdr _iph;
		const struct iphdr *iph;

		iph = skb_header_pointer(skb, 0, sizeof(_iph), &_iph);
		if (!iph || iph->version != 4 || iph->ihl < 5 ||
		    iph->protocol != IPPROTO_TCP ||
		    (iph->frag_off & htons(IP_MF | IP_OFFSET)))
			return false;
		hl = iph->ihl * 4;
		l3len = iph_totlen(skb, iph);
		k->saddr[0] = iph->saddr;
		k->daddr[0] = iph->daddr;
		k->family = AF_INET;
	} else if (skb->protocol == htons(ETH_P_IPV6)) {
		struct ipv6hdr _ip6h;
		const struct ipv6hdr *ip6h;

		ip6h = skb_header_pointer(skb, 0, sizeof(_ip6h), &_ip6h);
		if (!ip6h || ip6h->version != 6)
			return false;
		hl = sizeof(*ip6h);
		if (ip6h->payload_len) {
			if (ip6h->nexthdr != IPPROTO_TCP)
				return false;
			l3len = hl + ntohs(ip6h->payload_len);
		} else if (!skb_is_gso(skb)) {
			return false;
		} else if (ip6h->nexthdr == IPPROTO_TCP) {
			l3len = skb->len;
		} else if (ip6h->nexthdr == NEXTHDR_HOP) {
			struct hop_jumbo_hdr _jh;
			const struct hop_jumbo_hdr *jh;

			jh = skb_header_pointer(skb, hl, sizeof(_jh), &_jh);
			if (!jh || jh->nexthdr != IPPROTO_TCP || jh->hdrlen ||
			    jh->tlv_type != IPV6_TLV_JUMBO || jh->tlv_len != 4)
				return false;
			l3len = hl + min_t(u32, ntohl(jh->jumbo_payload_len),
					   skb->len);
			hl += sizeof(*jh);
		} else {
			return false;
		}
		memcpy(k->saddr, &ip6h->saddr, 16);
		memcpy(k->daddr, &ip6h->daddr, 16);
		k->family = AF_INET6;
	} else {
		return false;
	}
	th = skb_header_pointer(skb, hl, sizeof(_th), &_th);
	if (!th || th->doff < 5)
		return false;
	l3len = min(l3len, skb->len);
	if (l3len < hl + th->doff * 4)
		return false;
	k->sport = th->source;
	k->dport = th->dest;
	if (skb_vlan_tag_present(skb))
		k->vlan = skb_vlan_tag_get_id(skb);
	*seq = ntohl(th->seq);
	*len = l3len - hl - th->doff * 4;
	*flags = ((u8 *)th)[13];
	return true;
}
EXPORT_SYMBOL_IF_KUNIT(presto_gro_parse);

static u32 presto_gro_hash_seed __read_mostly;

/* Seeded once per boot, so a peer cannot aim its flows at one bucket */
static u32 presto_gro_key_hash(const struct presto_gro_key *k)
{
	net_get_random_once(&presto_gro_hash_seed,
			    sizeof(presto_gro_hash_seed));
	return jhash2((const u32 *)k, sizeof(*k) / sizeof(u32),
		      presto_gro_hash_seed);
}

static void presto_gro_free_flow(struct presto_gro_napi *pn,
				 struct presto_gro_fentry *fe,
				 struct list_head *out)
{
	pn->held_bytes -= fe->flow.bytes;
	presto_gro_flow_drain(&fe->flow, out, &pn->st);
	hash_del(&fe->node);
	pn->nflows--;
	kfree(fe);
}

/* Idle flows go first; at the limit the least recently used one goes. */
static void presto_gro_make_room(struct presto_gro_napi *pn, u64 now,
				 struct list_head *out)
{
	struct presto_gro_fentry *fe, *lru = NULL;
	struct hlist_node *tmp;
	int bkt;

	hash_for_each_safe(pn->flows, bkt, tmp, fe, node) {
		if (!fe->flow.nsegs && now - fe->last_ns > PRESTO_GRO_IDLE_NS)
			presto_gro_free_flow(pn, fe, out);
		else if (!lru || fe->last_ns < lru->last_ns)
			lru = fe;
	}
	if (pn->nflows >= PRESTO_GRO_MAX_FLOWS && lru)
		presto_gro_free_flow(pn, lru, out);
}

static struct presto_gro_fentry *
presto_gro_flow_get(struct presto_gro_napi *pn, const struct presto_gro_key *k,
		    u32 hash, bool create, u64 now, struct list_head *out)
{
	struct presto_gro_fentry *fe;

	hash_for_each_possible(pn->flows, fe, node, hash)
		if (!memcmp(&fe->key, k, sizeof(*k)))
			return fe;
	if (!create)
		return NULL;
	if (pn->nflows >= PRESTO_GRO_MAX_FLOWS)
		presto_gro_make_room(pn, now, out);
	fe = kzalloc(sizeof(*fe), GFP_ATOMIC);
	if (!fe)
		return NULL;
	fe->key = *k;
	INIT_LIST_HEAD(&fe->flow.segs);
	hash_add(pn->flows, &fe->node, hash);
	pn->nflows++;
	return fe;
}

/* The hold timer only schedules the NAPI; its poll moves segments up */
static enum hrtimer_restart presto_gro_timer(struct hrtimer *t)
{
	struct presto_gro_napi *pn = container_of(t, struct presto_gro_napi,
						  timer);

	napi_schedule(pn->napi);
	return HRTIMER_NORESTART;
}

/* From NAPI context: a hold may end at @when (0: none) */
static void presto_gro_arm(struct presto_gro_napi *pn, u64 when)
{
	if (!when)
		return;
	if (when >= pn->next_ns && hrtimer_is_queued(&pn->timer))
		return;
	pn->next_ns = min(pn->next_ns, when);
	hrtimer_start(&pn->timer, ns_to_ktime(pn->next_ns),
		      HRTIMER_MODE_ABS_PINNED_SOFT);
}

/* Into the NAPI's GRO_NORMAL list, which its poll hands to the stack */
static void presto_gro_push(struct napi_struct *napi, struct list_head *out)
{
	struct sk_buff *p, *tmp;

	list_for_each_entry_safe(p, tmp, out, list) {
		int n = presto_gro_seg(p)->gro_count;

		skb_list_del_init(p);
		memset(p->cb, 0, sizeof(struct presto_gro_seg));
		gro_normal_one(napi, p, n ? n : 1);
	}
}

static struct presto_gro_napi *presto_gro_napi_new(struct presto_gro_dev *pd,
						   struct napi_struct *napi)
{
	struct presto_gro_napi *pn = kzalloc(sizeof(*pn), GFP_ATOMIC);

	if (!pn)
		return NULL;
	pn->napi = napi;
	pn->next_ns = U64_MAX;
	hash_init(pn->flows);
	u64_stats_init(&pn->syncp);
	hrtimer_init(&pn->timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_PINNED_SOFT);
	pn->timer.function = presto_gro_timer;
	spin_lock(&pd->lock);
	if (!pd->enabled) {
		spin_unlock(&pd->lock);
		kfree(pn);
		return NULL;
	}
	hash_add_rcu(pd->napis, &pn->node, (unsigned long)napi);
	spin_unlock(&pd->lock);
	return pn;
}

/*
 * The hook: a segment GRO completed (or passed as GRO_NORMAL) on a device
 * with Presto GRO, in @napi's poll.  Returns false when the caller
 * delivers it as usual.
 */
bool presto_gro_receive(struct napi_struct *napi, struct sk_buff *skb,
			int segs)
{
	const struct presto_gro_params *p;
	struct presto_gro_napi *pn;
	struct presto_gro_dev *pd;
	struct presto_gro_fentry *fe;
	unsigned int budget = PRESTO_GRO_FLUSH_BUDGET;
	struct presto_gro_key k;
	struct presto_gro_seg *s;
	u32 seq, len, hash, b0;
	u64 now, next = 0;
	LIST_HEAD(out);
	const u8 *src;
	bool ctl;
	u8 flags;

	/* skb->data is at the network header; mac_len is not set yet */
	if (!napi || skb->dev != napi->dev || !skb_mac_header_was_set(skb) ||
	    skb->dev->type != ARPHRD_ETHER || skb_mac_offset(skb) > -ETH_HLEN)
		return false;
	rcu_read_lock();
	pd = presto_gro_dev_rcu(skb->dev);
	if (!pd || !READ_ONCE(pd->enabled) ||
	    !presto_gro_parse(skb, &k, &seq, &len, &flags))
		goto stock;
	/* SYN and RST end the flow's resequencing; a FIN takes its sequence
	 * number and is resequenced like data
	 */
	ctl = flags & (TCPHDR_SYN | TCPHDR_RST | TCPHDR_URG);
	if (flags & TCPHDR_FIN)
		len++;
	if (!ctl && !len)
		goto stock;	/* a pure ACK: nothing to resequence or reset */
	pn = presto_gro_napi_rcu(pd, napi);
	if (!pn && !ctl)
		pn = presto_gro_napi_new(pd, napi);
	if (!pn)
		goto stock;
	p = &pd->p;
	hash = presto_gro_key_hash(&k);
	now = ktime_get_ns();

	u64_stats_update_begin(&pn->syncp);
	if (ctl) {
		/* control segments are not resequenced; what the flow holds
		 * goes up first when the segment resets it
		 */
		fe = presto_gro_flow_get(pn, &k, hash, false, now, &out);
		if (fe && (flags & (TCPHDR_SYN | TCPHDR_RST))) {
			presto_gro_free_flow(pn, fe, &out);
		} else if (fe) {
			pn->held_bytes -= fe->flow.bytes;
			presto_gro_flow_drain(&fe->flow, &out, &pn->st);
		}
		u64_stats_update_end(&pn->syncp);
		if (list_empty(&out))
			goto stock;
		rcu_read_unlock();
		presto_gro_seg(skb)->gro_count = segs;
		list_add_tail(&skb->list, &out);
		presto_gro_push(napi, &out);
		return true;
	}
	fe = presto_gro_flow_get(pn, &k, hash, true, now, &out);
	if (!fe) {
		u64_stats_update_end(&pn->syncp);
		rcu_read_unlock();
		presto_gro_push(napi, &out);
		return false;
	}
	s = presto_gro_seg(skb);
	BUILD_BUG_ON(sizeof(*s) > sizeof(skb->cb));
	memset(s, 0, sizeof(*s));
	s->seq = seq;
	s->end_seq = seq + len;
	s->arrival_ns = now;
	s->gro_count = segs;
	src = eth_hdr(skb)->h_source;
	if (get_unaligned_be16(src + 2) == PRESTO_GRO_STAMP_TAG) {
		s->fcid = get_unaligned_be16(src + 4);
	} else {
		s->untagged = 1;
		pn->st.untagged++;
	}
	/* a sender forgets the IDs of a flow idle that long: so does this */
	if (fe->flow.valid && !fe->flow.nsegs && !fe->flow.rebase &&
	    now - fe->last_ns > PRESTO_GRO_FORGET_NS) {
		fe->flow.rebase = 1;
		fe->flow.late = 0;
		pn->st.expired++;
	}
	fe->last_ns = now;
	b0 = fe->flow.bytes;
	presto_gro_flow_insert(&fe->flow, skb);
	/* a flow holds at most max_segs skbs, the NAPI max_bytes in all */
	if (fe->flow.nsegs > READ_ONCE(p->max_segs) ||
	    pn->held_bytes - b0 + fe->flow.bytes > READ_ONCE(p->max_bytes))
		presto_gro_flow_drain(&fe->flow, &out, &pn->st);
	else
		next = presto_gro_flow_flush(&fe->flow, &pn->ewma_ns, p, now,
					     &out, &pn->st, &budget);
	pn->held_bytes = pn->held_bytes - b0 + fe->flow.bytes;
	u64_stats_update_end(&pn->syncp);
	presto_gro_arm(pn, next);
	rcu_read_unlock();
	presto_gro_push(napi, &out);
	return true;

stock:
	rcu_read_unlock();
	return false;
}

/*
 * The second hook: @napi's poll ends (napi_complete_done(), or a poll
 * that used its whole budget), before its GRO_NORMAL list goes up.  Holds
 * that ended move up, at most PRESTO_GRO_FLUSH_BUDGET segments; if more
 * are due, the timer reschedules the NAPI at once.
 */
void presto_gro_napi_poll(struct napi_struct *napi)
{
	unsigned int budget = PRESTO_GRO_FLUSH_BUDGET;
	struct presto_gro_fentry *fe;
	struct presto_gro_napi *pn;
	struct presto_gro_dev *pd;
	u64 now, next = 0;
	LIST_HEAD(out);
	int bkt;

	rcu_read_lock();
	pd = presto_gro_dev_rcu(napi->dev);
	pn = pd ? presto_gro_napi_rcu(pd, napi) : NULL;
	if (!pn || pn->next_ns == U64_MAX)
		goto out;
	now = ktime_get_ns();
	if (now < pn->next_ns)
		goto out;
	pn->next_ns = U64_MAX;
	u64_stats_update_begin(&pn->syncp);
	hash_for_each(pn->flows, bkt, fe, node) {
		u32 b0 = fe->flow.bytes;
		u64 d;

		if (!fe->flow.nsegs)
			continue;
		d = presto_gro_flow_flush(&fe->flow, &pn->ewma_ns, &pd->p, now,
					  &out, &pn->st, &budget);
		pn->held_bytes = pn->held_bytes - b0 + fe->flow.bytes;
		if (d && (!next || d < next))
			next = d;
	}
	u64_stats_update_end(&pn->syncp);
	presto_gro_arm(pn, next);
	presto_gro_push(napi, &out);
out:
	rcu_read_unlock();
}
EXPORT_SYMBOL_GPL(presto_gro_napi_poll);

/* Adds @b's counters to @a */
static void presto_gro_stats_add(struct presto_gro_stats *a,
				 const struct presto_gro_stats *b)
{
	u64 *x = (u64 *)a;
	const u64 *y = (const u64 *)b;
	int i;

	BUILD_BUG_ON(sizeof(*a) % sizeof(u64));
	for (i = 0; i < sizeof(*a) / sizeof(u64); i++)
		x[i] += y[i];
}

/*
 * Frees a NAPI's state that no NAPI poll, timer or reader can reach any
 * more (unlinked from pd->napis, and the NAPI disabled or an RCU grace
 * period past): what it held is dropped, its counters go to pd->retired.
 */
static void presto_gro_napi_free(struct presto_gro_dev *pd,
				 struct presto_gro_napi *pn)
{
	struct presto_gro_fentry *fe;
	struct hlist_node *tmp;
	struct sk_buff *skb, *n;
	LIST_HEAD(out);
	u64 dropped = 0;
	int bkt;

	hrtimer_cancel(&pn->timer);
	hash_for_each_safe(pn->flows, bkt, tmp, fe, node) {
		dropped += fe->flow.nsegs;
		list_splice_tail_init(&fe->flow.segs, &out);
		hash_del(&fe->node);
		kfree(fe);
	}
	list_for_each_entry_safe(skb, n, &out, list) {
		skb_list_del_init(skb);
		kfree_skb_reason(skb, SKB_DROP_REASON_DEV_READY);
	}
	pn->st.dropped += dropped;
	spin_lock_bh(&pd->lock);
	presto_gro_stats_add(&pd->retired, &pn->st);
	spin_unlock_bh(&pd->lock);
	kfree_rcu(pn, rcu);
}

/*
 * The device goes down or away, or Presto GRO is turned off (@disable):
 * every NAPI's state goes, with what it held.
 */
static void presto_gro_release(struct presto_gro_dev *pd, bool disable)
{
	struct presto_gro_napi *pn, *n;
	struct hlist_node *tmp;
	LIST_HEAD(gone);
	int bkt;

	lockdep_assert_held(&presto_gro_mutex);
	spin_lock_bh(&pd->lock);
	if (disable)
		pd->enabled = false;
	hash_for_each_safe(pd->napis, bkt, tmp, pn, node) {
		/* RCU readers may still follow pn->node: not reused */
		hash_del_rcu(&pn->node);
		list_add_tail(&pn->gone, &gone);
	}
	spin_unlock_bh(&pd->lock);
	if (list_empty(&gone))
		return;
	/* NAPI polls that found a state before it was unlinked are done */
	synchronize_net();
	list_for_each_entry_safe(pn, n, &gone, gone)
		presto_gro_napi_free(pd, pn);
}

/* From __netif_napi_del(): the NAPI is disabled and goes away */
void presto_gro_napi_del(struct napi_struct *napi)
{
	struct presto_gro_napi *pn = NULL;
	struct presto_gro_dev *pd;

	clear_bit(NAPI_STATE_PRESTO_GRO, &napi->state);
	mutex_lock(&presto_gro_mutex);
	hash_for_each_possible(presto_gro_devs, pd, node,
			       (unsigned long)napi->dev) {
		if (pd->dev != napi->dev)
			continue;
		spin_lock_bh(&pd->lock);
		pn = presto_gro_napi_rcu(pd, napi);
		if (pn)
			hash_del_rcu(&pn->node);
		spin_unlock_bh(&pd->lock);
		if (pn)
			presto_gro_napi_free(pd, pn);
		break;
	}
	mutex_unlock(&presto_gro_mutex);
}
EXPORT_SYMBOL_GPL(presto_gro_napi_del);

static void presto_gro_defaults(struct presto_gro_params *p)
{
	p->alpha = PRESTO_GRO_ALPHA_DEFAULT;
	p->beta = PRESTO_GRO_BETA_DEFAULT;
	p->timeout_min_us = PRESTO_GRO_TMIN_US_DEFAULT;
	p->timeout_max_us = PRESTO_GRO_TMAX_US_DEFAULT;
	p->max_segs = PRESTO_GRO_MAX_SEGS_DEFAULT;
	p->max_bytes = PRESTO_GRO_MAX_BYTES_DEFAULT;
}

static struct presto_gro_dev *presto_gro_dev_get(struct net_device *dev)
{
	struct presto_gro_dev *pd;

	lockdep_assert_held(&presto_gro_mutex);
	hash_for_each_possible(presto_gro_devs, pd, node, (unsigned long)dev)
		if (pd->dev == dev)
			return pd;
	pd = kzalloc(sizeof(*pd), GFP_KERNEL);
	if (!pd)
		return NULL;
	pd->dev = dev;
	spin_lock_init(&pd->lock);
	presto_gro_defaults(&pd->p);
	hash_init(pd->napis);
	hash_add_rcu(presto_gro_devs, &pd->node, (unsigned long)dev);
	return pd;
}

/*
 * Mark (or unmark) every NAPI instance of @dev, so that its segments (or
 * no longer) take the hooks' slow path.  NAPIs added concurrently are
 * marked by presto_gro_napi_add(): each side publishes its store before it
 * reads the other's (smp_mb() on both), so one of them sees the other.
 */
static void presto_gro_mark_napis(struct net_device *dev, bool on)
{
	struct napi_struct *napi;

	smp_mb(); /* pd->enabled before the list, see presto_gro_napi_add() */
	rcu_read_lock();
	list_for_each_entry_rcu(napi, &dev->napi_list, dev_list) {
		if (on)
			set_bit(NAPI_STATE_PRESTO_GRO, &napi->state);
		else
			clear_bit(NAPI_STATE_PRESTO_GRO, &napi->state);
	}
	rcu_read_unlock();
}

/* From netif_napi_add_weight(), the NAPI on its device's list */
void presto_gro_napi_add(struct napi_struct *napi)
{
	struct presto_gro_dev *pd;

	smp_mb(); /* the list before pd->enabled, see presto_gro_mark_napis() */
	rcu_read_lock();
	pd = presto_gro_dev_rcu(napi->dev);
	if (pd && READ_ONCE(pd->enabled))
		set_bit(NAPI_STATE_PRESTO_GRO, &napi->state);
	rcu_read_unlock();
}
EXPORT_SYMBOL_GPL(presto_gro_napi_add);

static void presto_gro_set_enabled(struct presto_gro_dev *pd, bool on)
{
	lockdep_assert_held(&presto_gro_mutex);
	if (on == pd->enabled)
		return;
	if (on) {
		static_branch_inc(&presto_gro_active);
		spin_lock_bh(&pd->lock);
		pd->enabled = true;
		spin_unlock_bh(&pd->lock);
		presto_gro_mark_napis(pd->dev, true);
	} else {
		/* the state goes first: a NAPI still marked finds none */
		presto_gro_release(pd, true);
		presto_gro_mark_napis(pd->dev, false);
		static_branch_dec(&presto_gro_active);
	}
}

static int presto_gro_netdev_event(struct notifier_block *nb,
				   unsigned long event, void *ptr)
{
	struct net_device *dev = netdev_notifier_info_to_dev(ptr);
	struct presto_gro_dev *pd;

	if (event != NETDEV_DOWN && event != NETDEV_UNREGISTER)
		return NOTIFY_DONE;
	mutex_lock(&presto_gro_mutex);
	hash_for_each_possible(presto_gro_devs, pd, node, (unsigned long)dev) {
		if (pd->dev != dev)
			continue;
		if (event == NETDEV_UNREGISTER) {
			presto_gro_set_enabled(pd, false);
			hash_del_rcu(&pd->node);
			kfree_rcu(pd, rcu);
		} else {
			presto_gro_release(pd, false);
		}
		break;
	}
	mutex_unlock(&presto_gro_mutex);
	return NOTIFY_DONE;
}

static struct notifier_block presto_gro_notifier = {
	.notifier_call = presto_gro_netdev_event,
};

/* ---------------------------------------------------------------------
 * Generic netlink: the "presto-gro" family (uapi/linux/presto_gro.h,
 * Documentation/netlink/specs/presto-gro.yaml)
 */

static const struct netlink_range_validation presto_gro_factor_range = {
	.min	= 1,
	.max	= 1000000,
};

static const struct netlink_range_validation presto_gro_us_range = {
	.min	= 0,
	.max	= USEC_PER_SEC,
};

static const struct netlink_range_validation presto_gro_bytes_range = {
	.min	= 4096,
	.max	= 256 << 20,
};

static const struct nla_policy
presto_gro_get_nl_policy[PRESTO_GRO_A_DEV_IFINDEX + 1] = {
	[PRESTO_GRO_A_DEV_IFINDEX] = NLA_POLICY_MIN(NLA_U32, 1),
};

static const struct nla_policy
presto_gro_set_nl_policy[PRESTO_GRO_A_DEV_MAX_BYTES + 1] = {
	[PRESTO_GRO_A_DEV_IFINDEX] = NLA_POLICY_MIN(NLA_U32, 1),
	[PRESTO_GRO_A_DEV_ENABLED] = NLA_POLICY_MAX(NLA_U8, 1),
	[PRESTO_GRO_A_DEV_ALPHA] =
		NLA_POLICY_FULL_RANGE(NLA_U32, &presto_gro_factor_range),
	[PRESTO_GRO_A_DEV_BETA] =
		NLA_POLICY_FULL_RANGE(NLA_U32, &presto_gro_factor_range),
	[PRESTO_GRO_A_DEV_TIMEOUT_MIN_US] =
		NLA_POLICY_FULL_RANGE(NLA_U32, &presto_gro_us_range),
	[PRESTO_GRO_A_DEV_TIMEOUT_MAX_US] =
		NLA_POLICY_FULL_RANGE(NLA_U32, &presto_gro_us_range),
	[PRESTO_GRO_A_DEV_MAX_SEGS] =
		NLA_POLICY_FULL_RANGE(NLA_U32, &presto_gro_factor_range),
	[PRESTO_GRO_A_DEV_MAX_BYTES] =
		NLA_POLICY_FULL_RANGE(NLA_U32, &presto_gro_bytes_range),
};

/* Under rcu_read_lock(): the device's counters, summed over its NAPIs */
static int presto_gro_nl_fill(struct sk_buff *rsp, struct net_device *dev,
			      const struct genl_info *info)
{
	u32 flows = 0, held_bytes = 0, napis = 0;
	struct presto_gro_stats st = {};
	struct presto_gro_params p;
	struct napi_struct *napi;
	struct presto_gro_napi *pn;
	struct presto_gro_dev *pd;
	bool enabled = false;
	struct nlattr *nest;
	u64 ewma_ns = 0;
	int bkt;
	void *hdr;

	presto_gro_defaults(&p);
	pd = presto_gro_dev_rcu(dev);
	if (pd) {
		spin_lock_bh(&pd->lock);
		p = pd->p;
		st = pd->retired;
		enabled = pd->enabled;
		spin_unlock_bh(&pd->lock);
		hash_for_each_rcu(pd->napis, bkt, pn, node) {
			struct presto_gro_stats one;
			unsigned int start;

			do {
				start = u64_stats_fetch_begin(&pn->syncp);
				one = pn->st;
			} while (u64_stats_fetch_retry(&pn->syncp, start));
			presto_gro_stats_add(&st, &one);
			flows += READ_ONCE(pn->nflows);
			held_bytes += READ_ONCE(pn->held_bytes);
			/* the EWMA is per NAPI: the longest is reported */
			ewma_ns = max(ewma_ns, READ_ONCE(pn->ewma_ns));
		}
	}

	list_for_each_entry_rcu(napi, &dev->napi_list, dev_list)
		napis += test_bit(NAPI_STATE_PRESTO_GRO, &napi->state);

	hdr = genlmsg_iput(rsp, info);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(rsp, PRESTO_GRO_A_DEV_IFINDEX, dev->ifindex) ||
	    nla_put_u32(rsp, PRESTO_GRO_A_DEV_NAPIS, napis) ||
	    nla_put_u8(rsp, PRESTO_GRO_A_DEV_ENABLED, enabled) ||
	    nla_put_u32(rsp, PRESTO_GRO_A_DEV_ALPHA, p.alpha) ||
	    nla_put_u32(rsp, PRESTO_GRO_A_DEV_BETA, p.beta) ||
	    nla_put_u32(rsp, PRESTO_GRO_A_DEV_TIMEOUT_MIN_US,
			p.timeout_min_us) ||
	    nla_put_u32(rsp, PRESTO_GRO_A_DEV_TIMEOUT_MAX_US,
			p.timeout_max_us) ||
	    nla_put_u32(rsp, PRESTO_GRO_A_DEV_MAX_SEGS, p.max_segs) ||
	    nla_put_u32(rsp, PRESTO_GRO_A_DEV_MAX_BYTES, p.max_bytes))
		goto nla_put_failure;

	nest = nla_nest_start(rsp, PRESTO_GRO_A_DEV_STATS);
	if (!nest)
		goto nla_put_failure;
	if (nla_put_uint(rsp, PRESTO_GRO_A_STATS_HELD, st.held) ||
	    nla_put_uint(rsp, PRESTO_GRO_A_STATS_PUSHED_INORDER,
			 st.pushed_inorder) ||
	    nla_put_uint(rsp, PRESTO_GRO_A_STATS_PUSHED_TIMEOUT,
			 st.pushed_timeout) ||
	    nla_put_uint(rsp, PRESTO_GRO_A_STATS_PUSHED_LOSS,
			 st.pushed_loss) ||
	    nla_put_uint(rsp, PRESTO_GRO_A_STATS_PUSHED_OLD, st.pushed_old) ||
	    nla_put_uint(rsp, PRESTO_GRO_A_STATS_PUSHED_EVICTED,
			 st.pushed_evicted) ||
	    nla_put_uint(rsp, PRESTO_GRO_A_STATS_REORDER_EVENTS,
			 st.reorder_events) ||
	    nla_put_uint(rsp, PRESTO_GRO_A_STATS_LATE_FILLS, st.late_fills) ||
	    nla_put_uint(rsp, PRESTO_GRO_A_STATS_UNTAGGED, st.untagged) ||
	    nla_put_uint(rsp, PRESTO_GRO_A_STATS_RESTARTS, st.restarts) ||
	    nla_put_uint(rsp, PRESTO_GRO_A_STATS_EXPIRED, st.expired) ||
	    nla_put_uint(rsp, PRESTO_GRO_A_STATS_EWMA_US,
			 div_u64(ewma_ns, NSEC_PER_USEC)) ||
	    nla_put_uint(rsp, PRESTO_GRO_A_STATS_FLOWS, flows) ||
	    nla_put_uint(rsp, PRESTO_GRO_A_STATS_HELD_BYTES, held_bytes) ||
	    nla_put_uint(rsp, PRESTO_GRO_A_STATS_DROPPED, st.dropped)) {
		nla_nest_cancel(rsp, nest);
		goto nla_put_failure;
	}
	nla_nest_end(rsp, nest);
	genlmsg_end(rsp, hdr);
	return 0;

nla_put_failure:
	genlmsg_cancel(rsp, hdr);
	return -EMSGSIZE;
}

static int presto_gro_nl_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct net_device *dev;
	struct sk_buff *rsp;
	int err;

	if (GENL_REQ_ATTR_CHECK(info, PRESTO_GRO_A_DEV_IFINDEX))
		return -EINVAL;

	rsp = genlmsg_new(GENLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!rsp)
		return -ENOMEM;

	rcu_read_lock();
	dev = dev_get_by_index_rcu(genl_info_net(info),
				   nla_get_u32(info->attrs[PRESTO_GRO_A_DEV_IFINDEX]));
	if (dev) {
		err = presto_gro_nl_fill(rsp, dev, info);
	} else {
		NL_SET_BAD_ATTR(info->extack,
				info->attrs[PRESTO_GRO_A_DEV_IFINDEX]);
		err = -ENODEV;
	}
	rcu_read_unlock();

	if (err) {
		nlmsg_free(rsp);
		return err;
	}
	return genlmsg_reply(rsp, info);
}

struct presto_gro_dump_ctx {
	unsigned long ifindex;
};

static int presto_gro_nl_get_dumpit(struct sk_buff *skb,
				    struct netlink_callback *cb)
{
	struct presto_gro_dump_ctx *ctx = (void *)cb->ctx;
	struct net *net = sock_net(skb->sk);
	struct net_device *dev;
	int err = 0;

	NL_ASSERT_DUMP_CTX_FITS(struct presto_gro_dump_ctx);
	rcu_read_lock();
	for_each_netdev_dump(net, dev, ctx->ifindex) {
		err = presto_gro_nl_fill(skb, dev, genl_info_dump(cb));
		if (err < 0)
			break;
	}
	rcu_read_unlock();
	return err;
}

/*
 * How many skbs a flow may hold, how many bytes a NAPI may hold and
 * for how long bound the memory a peer can pin: above the defaults only
 * for the host's own admin, not for root of a user namespace that owns
 * the device's namespace (which GENL_UNS_ADMIN_PERM lets in).
 */
static int presto_gro_nl_limit(struct genl_info *info, int attr, u32 def)
{
	struct nlattr *a = info->attrs[attr];

	if (!a || nla_get_u32(a) <= def || capable(CAP_NET_ADMIN))
		return 0;
	NL_SET_ERR_MSG_ATTR(info->extack, a,
			    "above the default only with CAP_NET_ADMIN in the initial user namespace");
	return -EPERM;
}

static void presto_gro_nl_u32(struct genl_info *info, int attr, u32 *v)
{
	if (info->attrs[attr])
		*v = nla_get_u32(info->attrs[attr]);
}

static int presto_gro_nl_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct presto_gro_params p;
	struct presto_gro_dev *pd;
	struct net_device *dev;
	int err;

	if (GENL_REQ_ATTR_CHECK(info, PRESTO_GRO_A_DEV_IFINDEX))
		return -EINVAL;
	err = presto_gro_nl_limit(info, PRESTO_GRO_A_DEV_MAX_SEGS,
				  PRESTO_GRO_MAX_SEGS_DEFAULT) ?:
	      presto_gro_nl_limit(info, PRESTO_GRO_A_DEV_MAX_BYTES,
				  PRESTO_GRO_MAX_BYTES_DEFAULT) ?:
	      presto_gro_nl_limit(info, PRESTO_GRO_A_DEV_TIMEOUT_MAX_US,
				  PRESTO_GRO_TMAX_US_DEFAULT);
	if (err)
		return err;

	dev = dev_get_by_index(genl_info_net(info),
			       nla_get_u32(info->attrs[PRESTO_GRO_A_DEV_IFINDEX]));
	if (!dev) {
		NL_SET_BAD_ATTR(info->extack,
				info->attrs[PRESTO_GRO_A_DEV_IFINDEX]);
		return -ENODEV;
	}
	mutex_lock(&presto_gro_mutex);
	if (dev->reg_state != NETREG_REGISTERED) {
		err = -ENODEV;
		goto out;
	}
	pd = presto_gro_dev_get(dev);
	if (!pd) {
		err = -ENOMEM;
		goto out;
	}
	spin_lock_bh(&pd->lock);
	p = pd->p;
	spin_unlock_bh(&pd->lock);
	presto_gro_nl_u32(info, PRESTO_GRO_A_DEV_ALPHA, &p.alpha);
	presto_gro_nl_u32(info, PRESTO_GRO_A_DEV_BETA, &p.beta);
	presto_gro_nl_u32(info, PRESTO_GRO_A_DEV_TIMEOUT_MIN_US,
			  &p.timeout_min_us);
	presto_gro_nl_u32(info, PRESTO_GRO_A_DEV_TIMEOUT_MAX_US,
			  &p.timeout_max_us);
	presto_gro_nl_u32(info, PRESTO_GRO_A_DEV_MAX_SEGS, &p.max_segs);
	presto_gro_nl_u32(info, PRESTO_GRO_A_DEV_MAX_BYTES, &p.max_bytes);
	if (p.timeout_min_us > p.timeout_max_us) {
		NL_SET_ERR_MSG(info->extack,
			       "timeout-min-us above timeout-max-us");
		err = -EINVAL;
		goto out;
	}
	/* NAPI polls read the fields without the lock, one at a time */
	spin_lock_bh(&pd->lock);
	WRITE_ONCE(pd->p.alpha, p.alpha);
	WRITE_ONCE(pd->p.beta, p.beta);
	WRITE_ONCE(pd->p.timeout_min_us, p.timeout_min_us);
	WRITE_ONCE(pd->p.timeout_max_us, p.timeout_max_us);
	WRITE_ONCE(pd->p.max_segs, p.max_segs);
	WRITE_ONCE(pd->p.max_bytes, p.max_bytes);
	spin_unlock_bh(&pd->lock);
	if (info->attrs[PRESTO_GRO_A_DEV_ENABLED])
		presto_gro_set_enabled(pd,
				       nla_get_u8(info->attrs[PRESTO_GRO_A_DEV_ENABLED]));
out:
	mutex_unlock(&presto_gro_mutex);
	dev_put(dev);
	return err;
}

static const struct genl_split_ops presto_gro_nl_ops[] = {
	{
		.cmd		= PRESTO_GRO_CMD_DEV_GET,
		.doit		= presto_gro_nl_get_doit,
		.policy		= presto_gro_get_nl_policy,
		.maxattr	= PRESTO_GRO_A_DEV_IFINDEX,
		.flags		= GENL_CMD_CAP_DO,
	},
	{
		.cmd		= PRESTO_GRO_CMD_DEV_GET,
		.dumpit		= presto_gro_nl_get_dumpit,
		.flags		= GENL_CMD_CAP_DUMP,
	},
	{
		.cmd		= PRESTO_GRO_CMD_DEV_SET,
		.doit		= presto_gro_nl_set_doit,
		.policy		= presto_gro_set_nl_policy,
		.maxattr	= PRESTO_GRO_A_DEV_MAX_BYTES,
		.flags		= GENL_UNS_ADMIN_PERM | GENL_CMD_CAP_DO,
	},
};

static struct genl_family presto_gro_nl_family __ro_after_init = {
	.name		= PRESTO_GRO_FAMILY_NAME,
	.version	= PRESTO_GRO_FAMILY_VERSION,
	.netnsok	= true,
	.parallel_ops	= true,
	.module		= THIS_MODULE,
	.split_ops	= presto_gro_nl_ops,
	.n_split_ops	= ARRAY_SIZE(presto_gro_nl_ops),
	.resv_start_op	= PRESTO_GRO_CMD_DEV_SET + 1,
};

static int __init presto_gro_init(void)
{
	int err;

	err = register_netdevice_notifier(&presto_gro_notifier);
	if (err)
		return err;
	err = genl_register_family(&presto_gro_nl_family);
	if (err)
		unregister_netdevice_notifier(&presto_gro_notifier);
	return err;
}
subsys_initcall(presto_gro_init);
