/* SPDX-License-Identifier: GPL-2.0-only */
/* FastLane drop notifications at the source (CONFIG_TCP_FASTLANE).
 *
 * A FastLane switch port (net/sched/sch_fastlane.c) that drops a TCP
 * packet tells its source with an ICMP (ICMPv6) error of an experimental
 * type quoting the packet's IP and TCP headers (include/net/fastlane.h).
 * With net.ipv4.tcp_fastlane on, ICMP delivers it to TCP's error handler
 * (tcp_v4_err(), tcp_v6_err()), which hands it to the socket it names:
 * that one retransmits at once (net/ipv4/tcp_fastlane.c).
 */
#ifndef _NET_TCP_FASTLANE_H
#define _NET_TCP_FASTLANE_H

#include <linux/jump_label_ratelimit.h>
#include <net/fastlane.h>
#include <linux/skbuff.h>
#include <linux/sysctl.h>
#include <linux/tcp.h>
#include <linux/types.h>
#include <linux/unaligned.h>
#include <net/net_namespace.h>
#include <net/tcp.h>

/* The codepoint notifications carry by default (sch_fastlane's too) */
#define TCP_FASTLANE_DEFAULT_DSCP	45

/* At most this many notifications per socket and round trip, beyond
 * twice the congestion window
 */
#define TCP_FASTLANE_BURST		16

/* entry.retx of Algorithm 1 saturates here (a 4-bit field of the skb) */
#define TCP_FASTLANE_RETX_MAX		15

/* Find the timestamp value in the TCP options @opt of @len bytes
 * (untrusted: a notification's quote).  Returns whether there is one.
 */
static inline bool tcp_fastlane_parse_tsval(const u8 *opt, int len, u32 *tsval)
{
	while (len > 0) {
		u8 kind = opt[0], olen;

		if (kind == TCPOPT_EOL)
			return false;
		if (kind == TCPOPT_NOP) {
			opt++;
			len--;
			continue;
		}
		if (len < 2)
			return false;
		olen = opt[1];
		if (olen < 2 || olen > len)
			return false;
		if (kind == TCPOPT_TIMESTAMP && olen == TCPOLEN_TIMESTAMP) {
			*tsval = get_unaligned_be32(opt + 2);
			return true;
		}
		opt += olen;
		len -= olen;
	}
	return false;
}

/* Where a notification's sequence range falls for a socket */
enum tcp_fastlane_range {
	TCP_FASTLANE_IN_FLIGHT,		/* within [snd_una, snd_nxt) */
	TCP_FASTLANE_PURE_ACK,		/* no data at snd_nxt or below: an ACK */
	TCP_FASTLANE_OUT_OF_WINDOW,
};

/* Classify the notified range [seq, end_seq) of a socket whose
 * unacknowledged data is [snd_una, snd_nxt).  end_seq counts SYN and FIN.
 * Sequence numbers wrap: compared with before()/after() semantics.
 */
static inline enum tcp_fastlane_range
tcp_fastlane_classify(u32 seq, u32 end_seq, u32 snd_una, u32 snd_nxt)
{
	if (seq == end_seq) {
		/* a pure ACK sent no later than now, not before snd_una */
		if ((s32)(seq - snd_una) >= 0 && (s32)(seq - snd_nxt) <= 0)
			return TCP_FASTLANE_PURE_ACK;
		return TCP_FASTLANE_OUT_OF_WINDOW;
	}
	if ((s32)(end_seq - seq) < 0)
		return TCP_FASTLANE_OUT_OF_WINDOW;
	if ((s32)(seq - snd_una) >= 0 && (s32)(end_seq - snd_nxt) <= 0)
		return TCP_FASTLANE_IN_FLIGHT;
	return TCP_FASTLANE_OUT_OF_WINDOW;
}

/* Is @ack, the ACK field of the segment a notification quotes, one the
 * connection sent?  It was its rcv_nxt then: not beyond @rcv_nxt now, and
 * not below it by more than @win, the largest window the connection
 * offers (what the peer can have sent since).  A forger who does not see
 * the connection's traffic must guess it as well as the sequence.
 */
static inline bool tcp_fastlane_ack_ok(u32 ack, u32 rcv_nxt, u32 win)
{
	return (s32)(rcv_nxt - ack) >= 0 && rcv_nxt - ack <= win;
}

/* Does the notified range [seq, end_seq) name one wire segment of the
 * retransmit queue's skb [skb_seq, skb_end) (FIN counted), which was sent
 * in segments of @mss bytes (0: the skb is one segment)?  It starts at a
 * multiple of the MSS into the skb and is one MSS long, or the rest of
 * the skb.  Only then may the queue be split for it: SACK splits at such
 * boundaries only (tcp_match_skb_to_sack()); a notification that could
 * split at any byte would turn a flight into 1-byte skbs, each walked on
 * every pass (the CVE-2019-11478 class).
 */
static inline bool tcp_fastlane_one_segment(u32 skb_seq, u32 skb_end, u32 mss,
					    u32 seq, u32 end_seq)
{
	u32 off = seq - skb_seq, rest = skb_end - seq, len = end_seq - seq;

	if ((s32)off < 0 || (s32)rest <= 0)
		return false;
	if (!mss)
		mss = skb_end - skb_seq;
	if (off % mss)
		return false;
	return len == rest || (len == mss && rest > mss);
}

/* The per-socket rate limit: may one more notification be taken in a
 * round trip that has seen @count, with a congestion window of @cwnd?
 * Only notifications that passed every check count (a flood of forged
 * ones must not use up the budget of genuine ones).
 */
static inline bool tcp_fastlane_within_rate(u32 count, u32 cwnd)
{
	return count < 2 * cwnd + TCP_FASTLANE_BURST;
}

/* Does a notification quote the timestamp of the packet it stands for?
 * FastLane requires timestamps (@ts_ok: the connection negotiated them,
 * or the SYN carried them): they tell which transmission was dropped.
 * A quote without one, where the connection sends them on every segment,
 * is forged or mangled (leaving it out must not skip its check).
 */
static inline bool tcp_fastlane_opts_ok(bool has_ts, bool ts_ok)
{
	return has_ts && ts_ok;
}

/* Does the recovery hold of Algorithm 1 still apply?  Only in the
 * CA_Recovery that notifications entered or joined (same high_seq), and
 * only until snd_una reaches its high_seq: a socket without SACK stays
 * in CA_Recovery past that point (tcp_try_undo_recovery()) until data
 * above it is acknowledged, which a hold would never let it send.
 */
static inline bool tcp_fastlane_hold(bool in_recovery, u32 high_seq,
				     u32 fl_high_seq, u32 snd_una)
{
	return in_recovery && high_seq == fl_high_seq &&
	       (s32)(snd_una - fl_high_seq) < 0;
}

/* Algorithm 1's bound on the retransmissions of notified segments in
 * flight: bound_sim = alpha / max(entries.retx), where alpha is half the
 * congestion window at the entry into recovery (@cwnd_entry) and
 * entry.retx counts the notifications for one segment since the last
 * timeout.  It halves when a retransmission is itself dropped, thirds at
 * the third drop, ...  The paper's bound is a real number that an integer
 * sim_retx is compared with (sim_retx < bound_sim); this returns the
 * smallest integer not below it, cwnd_entry / (2 * max_retx) rounded up,
 * so that sim_retx < tcp_fastlane_bound_sim() is exactly that comparison
 * (no precision lost: an alpha of 1 or 2.5 with a segment notified twice
 * still lets one or two resends go, where a floor would allow none or one).
 */
static inline u32 tcp_fastlane_bound_sim(u32 cwnd_entry, u32 max_retx)
{
	return DIV_ROUND_UP(cwnd_entry, 2 * (max_retx ? max_retx : 1));
}

/* How many segments of a notified skb may be retransmitted now, of the
 * @segs the window allows, with @sim_retx notified segments' resends in
 * flight and a bound of @bound_sim: what is left of the bound; beyond
 * it, one if the skb holds the lowest unacknowledged sequence (@lowest:
 * cumulative ACKs must progress, the paper's exception); else none.
 */
static inline int tcp_fastlane_retx_allowance(u32 sim_retx, u32 bound_sim,
					      bool lowest, int segs)
{
	if (segs <= 0)
		return 0;
	if (sim_retx < bound_sim)
		return min_t(u32, segs, bound_sim - sim_retx);
	return lowest ? 1 : 0;
}

/* A departure from Algorithm 1 where bound_sim holds a notified segment
 * back: if the only segment in flight (@in_flight) is a notified segment's
 * resend (@sim_retx), the held one goes with it.  The receiver then has
 * two segments and ACKs at once; with one, in order and filling no hole,
 * it delays the ACK (40 ms in Linux), the only ACK that would let bound_sim
 * send again.  The paper's receivers had delayed ACKs off.  At most one
 * segment beyond the bound, and only while one is in flight.
 */
static inline bool tcp_fastlane_pairs(u32 in_flight, u32 sim_retx)
{
	return in_flight == 1 && sim_retx == 1;
}

/* What a notification names, by the state of the socket it matched */
enum tcp_fastlane_kind {
	TCP_FASTLANE_KIND_SYN,		/* our SYN (SYN_SENT) */
	TCP_FASTLANE_KIND_FASTOPEN_SYNACK, /* a Fast Open child's SYN-ACK */
	TCP_FASTLANE_KIND_SEQ,		/* data, FIN or ACK: by its range */
	TCP_FASTLANE_KIND_STALE,	/* nothing of the socket's in flight */
};

/* Dispatch a notification for a full socket in @state; @fastopen: it is a
 * Fast Open server's child whose SYN-ACK is not yet acknowledged (it
 * keeps the request, tcp_sock.fastopen_rsk: SYN_RECV, or FIN_WAIT1 if
 * closed that early); @syn: the notification is for a SYN.  A Fast Open
 * child's SYN-ACK is resent by its request (tcp_fastopen_synack_timer());
 * its data, sent before the handshake completes, is data in flight.  A
 * full socket in SYN_RECV that is no Fast Open child (one tcp_check_req()
 * is completing) has nothing in flight yet.
 */
static inline enum tcp_fastlane_kind
tcp_fastlane_kind(int state, bool fastopen, bool syn)
{
	if (state == TCP_SYN_SENT)
		return TCP_FASTLANE_KIND_SYN;
	if (fastopen && syn)
		return TCP_FASTLANE_KIND_FASTOPEN_SYNACK;
	if (state == TCP_CLOSE || state == TCP_LISTEN ||
	    (state == TCP_SYN_RECV && !fastopen))
		return TCP_FASTLANE_KIND_STALE;
	return TCP_FASTLANE_KIND_SEQ;
}

/* What the data-notification handler knows when it decides: the
 * notification's options, the connection's, and the skb of the
 * retransmit queue that holds the notified sequence (if any)
 */
struct tcp_fastlane_data_state {
	u32	nf_tsval;	/* the quoted TCP timestamp */
	u32	skb_tsval;	/* the skb's last transmission's, as sent */
	u32	rate_count;	/* notifications taken this round trip */
	u32	cwnd;
	u8	sacked;		/* the skb's TCP_SKB_CB()->sacked */
	u8	ca_state;
	bool	has_ts;
	bool	ts_ok;		/* the connection negotiated timestamps */
	bool	found;		/* the notified sequence is in the queue */
	bool	noted;		/* a notification of its last transmission
				 * was taken (TCP_SKB_CB()->tx.fastlane_noted)
				 */
	bool	misaligned;	/* ... but not one segment of its skb
				 * (tcp_fastlane_one_segment())
				 */
};

enum tcp_fastlane_data_verdict {
	TCP_FASTLANE_DATA_TAKE,		/* mark lost, resend what bound_sim allows */
	TCP_FASTLANE_DATA_NOTS,		/* no timestamps: cannot be validated */
	TCP_FASTLANE_DATA_BADOPTS,	/* the quote has no timestamp */
	TCP_FASTLANE_DATA_STALE,	/* delivered, noted, or CA_Loss */
	TCP_FASTLANE_DATA_STALE_TS,	/* not the last transmission's TSval */
	TCP_FASTLANE_DATA_BADSEQ,	/* not one segment of the queue's skb */
	TCP_FASTLANE_DATA_RATELIMITED,	/* over the cap: mark lost, resend later */
};

/* Decide on a notification for data (or a FIN) within [snd_una, snd_nxt)
 * (tcp_fastlane_data()).  FastLane requires timestamps: without them the
 * connection cannot tell which transmission was dropped (refused).  The
 * quote must carry one (bad options).  Stale: no longer in the queue,
 * delivered (SACKed), already notified (a copy or a replay of a
 * notification taken for the same transmission), or a timeout's recovery
 * owns the queue (CA_Loss).  Stale by timestamp: the quoted TSval is not
 * that of the segment's last transmission, so it stands for a copy sent
 * before a retransmission or before the last timeout (the paper's timeout
 * count: everything sent before a timeout is either acknowledged by the
 * time CA_Loss ends or resent with a new TSval).  Bad sequence: a range
 * that is not one wire segment of the skb that holds it
 * (tcp_fastlane_one_segment()).  The rate limit counts only what passed
 * every other check; a notification over it still marks its segment
 * lost, with no resend at once (tcp_fastlane_deferred_resend()).
 */
static inline enum tcp_fastlane_data_verdict
tcp_fastlane_data_verdict(const struct tcp_fastlane_data_state *s)
{
	if (!s->ts_ok)
		return TCP_FASTLANE_DATA_NOTS;
	if (!tcp_fastlane_opts_ok(s->has_ts, s->ts_ok))
		return TCP_FASTLANE_DATA_BADOPTS;
	if (!s->found || (s->sacked & TCPCB_SACKED_ACKED) || s->noted ||
	    s->ca_state == TCP_CA_Loss)
		return TCP_FASTLANE_DATA_STALE;
	if (s->nf_tsval != s->skb_tsval)
		return TCP_FASTLANE_DATA_STALE_TS;
	if (s->misaligned)
		return TCP_FASTLANE_DATA_BADSEQ;
	if (!tcp_fastlane_within_rate(s->rate_count, s->cwnd))
		return TCP_FASTLANE_DATA_RATELIMITED;
	return TCP_FASTLANE_DATA_TAKE;
}

/* Decide on a notification for a pure ACK of ours (or a SYN-ACK of a
 * request), which has no transmission in the queue to be matched
 * against: it must quote a timestamp from the last @window ticks of the
 * connection's clock (@now, offset included), so that a forger needs the
 * connection's random timestamp offset before it can use up the rate
 * budget (s->found, s->sacked, s->skb_tsval and s->ca_state are not used).
 */
static inline enum tcp_fastlane_data_verdict
tcp_fastlane_ack_verdict(const struct tcp_fastlane_data_state *s, u32 now,
			 u32 window)
{
	if (!s->ts_ok)
		return TCP_FASTLANE_DATA_NOTS;
	if (!tcp_fastlane_opts_ok(s->has_ts, s->ts_ok))
		return TCP_FASTLANE_DATA_BADOPTS;
	if (after(s->nf_tsval, now) || before(s->nf_tsval, now - window))
		return TCP_FASTLANE_DATA_STALE_TS;
	if (!tcp_fastlane_within_rate(s->rate_count, s->cwnd))
		return TCP_FASTLANE_DATA_RATELIMITED;
	return TCP_FASTLANE_DATA_TAKE;
}

/* After a taken notification's pass over the retransmit queue (which
 * resends what bound_sim allows, lowest first): is the notified segment
 * @resent, or does it go now anyway (it holds the lowest sequence, @head:
 * cumulative ACKs must not stall behind it), or does bound_sim hold it
 * until ACKs take resends out of flight?  @found: it is still in the
 * queue (delivered meanwhile, it is gone).
 */
enum tcp_fastlane_after {
	TCP_FASTLANE_AFTER_RESENT,
	TCP_FASTLANE_AFTER_SEND_LOWEST,
	TCP_FASTLANE_AFTER_HELD,
	TCP_FASTLANE_AFTER_GONE,
};

static inline enum tcp_fastlane_after
tcp_fastlane_after_pass(bool found, bool head, bool resent)
{
	if (!found)
		return TCP_FASTLANE_AFTER_GONE;
	if (resent)
		return TCP_FASTLANE_AFTER_RESENT;
	return head ? TCP_FASTLANE_AFTER_SEND_LOWEST : TCP_FASTLANE_AFTER_HELD;
}

/* A notification over the per-socket rate cap still names a drop of
 * ours: its segment is marked lost like a taken one's, but nothing is
 * sent for it at once.  When the cap's round trip is over, the pacing
 * timer (tcp_tsq_write()) resends the lowest sequence if it is such a
 * segment: one the notifications named (@notified), marked lost
 * (@lost), not resent since (@retrans), in the recovery notifications
 * drive (@recovering), with no timeout since (@same_epoch); the resend
 * counts against the cap's next round trip.  Everything else goes by the
 * window, as for any segment marked lost (tcp_xmit_retransmit_queue()).
 * Before, such a notification was dropped: a head segment whose later
 * segments were lost too waited for the retransmission timeout.
 */
static inline bool tcp_fastlane_deferred_resend(bool recovering, bool notified,
						bool lost, bool retrans,
						bool same_epoch)
{
	return recovering && notified && lost && !retrans && same_epoch;
}

/* Tail push (a departure from the paper): does one held new segment go
 * out with the retransmission just made, beyond cwnd if need be?  When
 * the recovery's last retransmission is the last segment in flight (the
 * retransmit queue's tail: @tail_notified, @tail_resent) and nothing
 * marked lost is left to resend (@retrans_out >= @lost_out), and (the
 * caller checks) everything before it is delivered, it reaches the
 * receiver alone, in order and filling no hole, and the receiver delays
 * its ACK (40 ms); the hold (@holding) keeps the new data (@new_data)
 * back until that ACK.  Two segments are ACKed at once.
 */
static inline bool tcp_fastlane_tail_pushes(bool holding, bool new_data,
					    bool tail_notified,
					    bool tail_resent, u32 lost_out,
					    u32 retrans_out)
{
	return holding && new_data && tail_notified && tail_resent &&
	       retrans_out >= lost_out;
}

/* Algorithm 1's bound_sim for one pass of tcp_xmit_retransmit_queue()
 * (on its stack: nothing of it outlives the pass)
 */
struct tcp_fastlane_pass {
	u32	sim_retx;	/* notified segments' resends in flight */
	u32	bound_sim;	/* alpha / max(retx), rounded up */
	bool	throttling;	/* bound_sim applies to this pass */
};

#if IS_ENABLED(CONFIG_TCP_FASTLANE)

/* On while a namespace has net.ipv4.tcp_fastlane on, or a notification
 * waits in a socket's backlog (each holds a reference).  Every hook that
 * FastLane adds to the IP and TCP paths tests it first: with the knob off
 * in every namespace, each test is a NOP in the stock code.  Disabling
 * is deferred (HZ), as for tcp_md5_needed: the last reference may be
 * dropped in softirq.
 */
extern struct static_key_false_deferred tcp_fastlane_needed;

static inline bool tcp_fastlane_active(void)
{
	return static_branch_unlikely(&tcp_fastlane_needed.key);
}

int proc_tcp_fastlane(const struct ctl_table *table, int write, void *buffer,
		      size_t *lenp, loff_t *ppos);

static inline bool tcp_fastlane_on(const struct net *net)
{
	return tcp_fastlane_active() &&
	       READ_ONCE(net->ipv4.sysctl_tcp_fastlane);
}

/* A notification that waited in the backlog (tcp_v{4,6}_do_rcv()): its
 * reference keeps the key on until it is handled
 */
static inline bool tcp_fastlane_backlogged(const struct sk_buff *skb)
{
	return tcp_fastlane_active() && unlikely(TCP_SKB_CB(skb)->fastlane);
}

/* Is an ICMP error of @type a notification this netns takes?  From
 * icmp_rcv() (which discards unknown types otherwise) and tcp_v4_err().
 */
static inline bool tcp_fastlane_icmp(const struct net *net, u8 type)
{
	return type == ICMP_FASTLANE && tcp_fastlane_on(net);
}

/* ... an ICMPv6 error of @type, from tcp_v6_err() (icmpv6_rcv() hands
 * errors of unknown types to the protocol's error handler)
 */
static inline bool tcp_fastlane_icmpv6(const struct net *net, u8 type)
{
	return type == ICMPV6_FASTLANE && tcp_fastlane_on(net);
}

/* Algorithm 1: no new data while the socket recovers from notifications,
 * that is until snd_una reaches the high_seq of the recovery they started
 * or joined (or it ends otherwise: a timeout takes over).  From
 * tcp_write_xmit().  fl_recovering says that the socket's recovery
 * is such a one; it outlives the hold: a socket without SACK stays in
 * CA_Recovery at snd_una == high_seq until data above it is acknowledged
 * (tcp_is_non_sack_preventing_reopen()), and only then ends the recovery
 * (tcp_fastlane_end_recovery()).
 */
static inline bool tcp_fastlane_holds_new_data(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!tcp_fastlane_active() || likely(!tp->fl_recovering))
		return false;
	if (inet_csk(sk)->icsk_ca_state != TCP_CA_Recovery ||
	    tp->high_seq != tp->fastlane.high_seq) {
		/* that recovery is over (a timeout, or another one) */
		tp->fl_recovering = 0;
		return false;
	}
	return tcp_fastlane_hold(true, tp->high_seq, tp->fastlane.high_seq,
				 tp->snd_una);
}

/* From tcp_end_cwnd_reduction(), when a recovery (or CWR) ends: was it
 * the one notifications started or joined?  Such a recovery is never
 * undone (its undo_marker is cleared, tcp_fastlane_mark()), but Linux
 * takes a Recovery without undo_marker for one that was undone and
 * leaves cwnd where PRR put it (as low as one segment, or never
 * reduced).  A notified recovery ends with cwnd at ssthresh, as any
 * other does.  Forgets it: the next recovery is another one.
 */
static inline bool tcp_fastlane_end_recovery(struct tcp_sock *tp)
{
	bool notified;

	if (!tcp_fastlane_active() || likely(!tp->fl_recovering))
		return false;
	notified = tp->fastlane.high_seq == tp->high_seq;
	tp->fl_recovering = 0;
	return notified;
}

void __tcp_fastlane_tsq_write(struct sock *sk);

/* From tcp_tsq_write() (the pacing timer's work, among others): resend
 * the lowest sequence a rate-limited notification left marked lost
 */
static inline void tcp_fastlane_tsq_write(struct sock *sk)
{
	if (tcp_fastlane_active() && unlikely(tcp_sk(sk)->fl_recovering))
		__tcp_fastlane_tsq_write(sk);
}

void tcp_fastlane_pacing_timer(struct sock *sk, u64 expires_ns);

/* From tcp_pacing_check(), the pacing timer queued: FastLane's deferred
 * resend (tcp_fastlane_defer()) shares it and may have queued it for
 * later than the next paced departure at @wstamp_ns; the earlier wins
 */
static inline void tcp_fastlane_pacing_queued(struct sock *sk, u64 wstamp_ns)
{
	if (tcp_fastlane_active())
		tcp_fastlane_pacing_timer(sk, wstamp_ns);
}

void __tcp_fastlane_tail_push(struct sock *sk);
bool tcp_fastlane_push_one(struct sock *sk);

/* After a retransmission of the recovery notifications drive: the tail
 * push (tcp_fastlane_tail_pushes())
 */
static inline void tcp_fastlane_tail_push(struct sock *sk)
{
	if (tcp_fastlane_active() && unlikely(tcp_sk(sk)->fl_recovering))
		__tcp_fastlane_tail_push(sk);
}

/* From tcp_retransmit_skb(): @skb went again, a new transmission that a
 * notification may name once more
 */
static inline void tcp_fastlane_resent(struct sk_buff *skb)
{
	if (tcp_fastlane_active())
		TCP_SKB_CB(skb)->tx.fastlane_noted = 0;
}

void tcp_fastlane_err(struct net *net, struct sock *sk, struct sk_buff *skb,
		      unsigned int thoff);
void tcp_fastlane_backlog_rcv(struct sock *sk, struct sk_buff *skb);
bool __tcp_fastlane_retx_begin(struct sock *sk, struct tcp_fastlane_pass *p);
int __tcp_fastlane_retx_segs(struct sock *sk, struct tcp_fastlane_pass *p,
			     struct sk_buff *skb, bool lowest, int segs);

/* Algorithm 1's bound_sim, from tcp_xmit_retransmit_queue(): before a
 * pass over the retransmit queue, count the notified segments' resends
 * in flight (sim_retx) and the bound, when notifications drive the
 * recovery
 */
static inline void tcp_fastlane_retx_begin(struct sock *sk,
					   struct tcp_fastlane_pass *p)
{
	p->throttling = tcp_fastlane_active() &&
			unlikely(tcp_sk(sk)->fl_recovering) &&
			__tcp_fastlane_retx_begin(sk, p);
}

/* ... and for each lost skb of the pass, how many of @segs segments may
 * be resent (0: bound_sim holds it; the pass skips it and goes on, and
 * the retransmit hint stays on it).  Only segments notifications named
 * are throttled; the lowest sequence always goes.
 */
static inline int tcp_fastlane_retx_segs(struct sock *sk,
					 struct tcp_fastlane_pass *p,
					 struct sk_buff *skb, bool lowest,
					 int segs)
{
	if (!tcp_fastlane_active() || likely(!p->throttling) ||
	    !TCP_SKB_CB(skb)->tx.fastlane_retx)
		return segs;
	return __tcp_fastlane_retx_segs(sk, p, skb, lowest, segs);
}

#else

static inline bool tcp_fastlane_on(const struct net *net)
{
	return false;
}

static inline bool tcp_fastlane_backlogged(const struct sk_buff *skb)
{
	return false;
}

static inline bool tcp_fastlane_icmp(const struct net *net, u8 type)
{
	return false;
}

static inline bool tcp_fastlane_icmpv6(const struct net *net, u8 type)
{
	return false;
}

static inline void tcp_fastlane_err(struct net *net, struct sock *sk,
				    struct sk_buff *skb, unsigned int thoff)
{
}

static inline void tcp_fastlane_backlog_rcv(struct sock *sk,
					    struct sk_buff *skb)
{
	kfree_skb(skb);
}

static inline bool tcp_fastlane_holds_new_data(struct sock *sk)
{
	return false;
}

static inline bool tcp_fastlane_end_recovery(struct tcp_sock *tp)
{
	return false;
}

static inline void tcp_fastlane_retx_begin(struct sock *sk,
					   struct tcp_fastlane_pass *p)
{
	p->throttling = false;
}

static inline void tcp_fastlane_tsq_write(struct sock *sk)
{
}

static inline void tcp_fastlane_tail_push(struct sock *sk)
{
}

static inline void tcp_fastlane_pacing_queued(struct sock *sk, u64 wstamp_ns)
{
}

static inline void tcp_fastlane_resent(struct sk_buff *skb)
{
}

static inline int tcp_fastlane_retx_segs(struct sock *sk,
					 struct tcp_fastlane_pass *p,
					 struct sk_buff *skb, bool lowest,
					 int segs)
{
	return segs;
}

#endif /* CONFIG_TCP_FASTLANE */
#endif /* _NET_TCP_FASTLANE_H */
