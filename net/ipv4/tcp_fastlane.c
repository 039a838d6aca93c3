// SPDX-License-Identifier: GPL-2.0-only
/*
 * FastLane drop notifications at the source (CONFIG_TCP_FASTLANE).
 *
 * Zats et al., "FastLane: Making Short Flows Shorter with Agile Drop
 * Notification", SoCC 2015: a switch port that drops a TCP packet tells
 * its source at high priority (net/sched/sch_fastlane.c), and the source
 * retransmits at once instead of waiting for duplicate ACKs or a timeout.
 *
 * A notification is an ICMP (ICMPv6) error of an experimental type
 * (include/net/fastlane.h) quoting the dropped packet's IP and TCP
 * headers, options included.  ICMP validates it as it validates any
 * error (checksum, IPsec policy) and hands it to tcp_v4_err() or
 * tcp_v6_err(), which look the connection up by the quoted addresses and
 * ports and call tcp_fastlane_err().  It is untrusted input: plaintext
 * and unauthenticated.  It is taken only when net.ipv4.tcp_fastlane is
 * on and it carries the configured codepoint; it must name an existing
 * connection that nothing protects: a socket with TCP-MD5 or TCP-AO keys,
 * an IPsec policy or transform, or a minimum TTL (hop limit) the
 * notification is below never acts on one (TCPFastLaneRefused), and
 * neither does a connection without timestamps, which cannot tell which
 * transmission was dropped.  The quoted sequence range must lie within
 * [snd_una, snd_nxt) (TCPFastLaneOutOfWindow; RFC 5927), or be a SYN,
 * SYN-ACK, FIN or pure ACK the socket has sent.  The quote must carry a
 * timestamp (TCPFastLaneBadOpts), and it must be that of the segment's
 * last transmission (TCPFastLaneStaleTS): a notification from before a
 * retransmission, or from before a timeout, is stale.  In CA_Loss the
 * timeout's recovery owns the queue and notifications are stale.  It
 * must name one wire segment of the skb that holds it: a multiple of the
 * skb's MSS into it, one MSS long (or the rest of the skb); anything else
 * would split the retransmit queue at any byte and is counted as a bad
 * sequence (TCPFastLaneBadSeq).  At most 2 * cwnd + 16 notifications are
 * taken per socket and round trip, counted after every other check, so
 * that forged ones cannot use up the budget of genuine ones.  Everything
 * else is counted (TCPFastLane* in nstat) and dropped.  A notification
 * that finds the socket owned by the user waits in the socket's backlog
 * (a clone of it, TCP_SKB_CB(skb)->fastlane marks it).
 *
 * Algorithm 1 of the paper maps onto Linux's loss recovery:
 *
 *  - the list of notified segments, sorted by sequence, is the
 *    retransmit queue's TCPCB_LOST marks; entry.retx is the skb's
 *    tx.fastlane_retx (notifications for it since the last timeout) and
 *    issent its TCPCB_SACKED_RETRANS;
 *  - the first notification of a window enters CA_Recovery, with the
 *    congestion control's ssthresh; alpha is half the window at entry;
 *  - sim_retx, the notified segments' resends in flight, is counted
 *    before each pass of tcp_xmit_retransmit_queue(), which resends
 *    notified segments, lowest first, only while sim_retx is below
 *    bound_sim = alpha / max(entry.retx), a real number compared as
 *    such (tcp_fastlane_bound_sim()), cwnd and PRR still applying;
 *    a notified segment the bound holds is skipped, and lost segments
 *    after it that no notification named (SACK, RACK) still go;
 *    ACKs that take resends out of flight let more go;
 *  - the lowest sequence is always resent, even beyond the bound, so
 *    cumulative ACKs never stall behind it;
 *  - a departure: when the bound holds a notified segment and the only
 *    segment in flight is one notified resend, the held one goes too
 *    (TCPFastLaneBoundPair).  The paper's receivers did not delay ACKs;
 *    Linux's ACK a lone in-order segment 40 ms late, and bound_sim's
 *    clock, the ACK of that resend, would stop for that long;
 *  - no new data is sent until that recovery ends, when snd_una reaches
 *    its high_seq (or it is undone, or a timeout takes over), even where
 *    Linux keeps a socket without SACK in CA_Recovery past that point;
 *  - SACK, RACK-TLP, timestamps and the congestion control module keep
 *    working: the segment is marked lost as RACK would mark it, and the
 *    retransmission timer is rearmed, the last resort as before;
 *  - a recovery notifications enter or join is never undone: a
 *    notification reports a drop, it does not infer one.
 */

#include <linux/jump_label_ratelimit.h>
#include <linux/kernel.h>
#include <linux/mutex.h>
#include <linux/sysctl.h>
#include <linux/tcp.h>
#include <net/inet_hashtables.h>
#include <net/ip.h>
#include <net/ip6_checksum.h>
#include <net/ipv6.h>
#include <net/request_sock.h>
#include <net/tcp.h>
#include <net/tcp_fastlane.h>
#include <net/xfrm.h>

/* What a notification says, taken out of its headers */
struct tcp_fastlane_info {
	u32	seq;
	u32	end_seq;	/* counts SYN and FIN */
	u32	tsval;		/* of the dropped transmission */
	u32	ack_seq;	/* its ACK field (if ack) */
	bool	has_ts;
	bool	syn;
	bool	ack;
};

static struct sk_buff *tcp_fastlane_find(struct sock *sk, u32 seq)
{
	struct rb_node *p = sk->tcp_rtx_queue.rb_node;

	while (p) {
		struct sk_buff *skb = rb_to_skb(p);

		if (before(seq, TCP_SKB_CB(skb)->seq))
			p = p->rb_left;
		else if (!before(seq, TCP_SKB_CB(skb)->end_seq))
			p = p->rb_right;
		else
			return skb;
	}
	return NULL;
}

/* Split @skb of the retransmit queue so that a part of it starts at @seq,
 * if @seq falls strictly inside it: what is resent is then what was
 * dropped.  SYN and FIN are never split off.  Returns whether it split.
 */
static bool tcp_fastlane_split(struct sock *sk, struct sk_buff *skb, u32 seq)
{
	if (!after(seq, TCP_SKB_CB(skb)->seq) ||
	    !before(seq, TCP_SKB_CB(skb)->end_seq) ||
	    (TCP_SKB_CB(skb)->tcp_flags & (TCPHDR_SYN | TCPHDR_FIN)))
		return false;
	return !tcp_fragment(sk, TCP_FRAG_IN_RTX_QUEUE, skb,
			     seq - TCP_SKB_CB(skb)->seq, tcp_current_mss(sk),
			     GFP_ATOMIC);
}

/* Forget every notified segment: Algorithm 1's list after a timeout */
static void tcp_fastlane_clear_marks(struct sock *sk)
{
	struct sk_buff *skb;

	skb_rbtree_walk(skb, &sk->tcp_rtx_queue) {
		TCP_SKB_CB(skb)->tx.fastlane_retx = 0;
		TCP_SKB_CB(skb)->tx.fastlane_noted = 0;
	}
}

bool __tcp_fastlane_retx_begin(struct sock *sk, struct tcp_fastlane_pass *p)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 sim_retx = 0, max_retx = 0;
	struct sk_buff *skb;

	if (!tcp_fastlane_holds_new_data(sk))
		return false;
	/* entry.issent: the notified skb's resend is in flight */
	skb_rbtree_walk(skb, &sk->tcp_rtx_queue) {
		u32 retx = TCP_SKB_CB(skb)->tx.fastlane_retx;

		if (!retx)
			continue;
		max_retx = max(max_retx, retx);
		if (TCP_SKB_CB(skb)->sacked & TCPCB_SACKED_RETRANS)
			sim_retx += tcp_skb_pcount(skb);
	}
	p->sim_retx = sim_retx;
	p->bound_sim = tcp_fastlane_bound_sim(tp->fastlane.cwnd_entry, max_retx);
	return true;
}
EXPORT_SYMBOL_GPL(__tcp_fastlane_retx_begin);

int __tcp_fastlane_retx_segs(struct sock *sk, struct tcp_fastlane_pass *p,
			     struct sk_buff *skb, bool lowest, int segs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct net *net = sock_net(sk);
	int n;

	n = tcp_fastlane_retx_allowance(p->sim_retx, p->bound_sim, lowest, segs);
	if (!n && segs > 0 &&
	    tcp_fastlane_pairs(tcp_packets_in_flight(tp), p->sim_retx)) {
		/* a lone resend in flight: this one goes with it */
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANEBOUNDPAIR);
		p->sim_retx++;
		return 1;
	}
	if (!n) {
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANEBOUNDTHROTTLED);
		return 0;
	}
	if (p->sim_retx >= p->bound_sim)
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANEBOUNDLOWEST);
	else
		NET_ADD_STATS(net, LINUX_MIB_TCPFASTLANEBOUNDALLOWED, n);
	p->sim_retx += n;
	return n;
}
EXPORT_SYMBOL_GPL(__tcp_fastlane_retx_segs);

/* The per-socket rate limit's count of notifications taken in this round
 * trip (at least 1 ms), started afresh when it is over
 */
static u32 tcp_fastlane_rate_count(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 now = (u32)tcp_clock_us();	/* a u32 of microseconds: the
					 * difference is right for 71 min
					 */
	u32 rtt = max_t(u32, tp->srtt_us >> 3, USEC_PER_MSEC);

	if (now - tp->fastlane.window_us > rtt) {
		tp->fastlane.window_us = now;
		tp->fastlane.count = 0;
	}
	return tp->fastlane.count;
}

static bool tcp_fastlane_rate_ok(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!tcp_fastlane_within_rate(tcp_fastlane_rate_count(sk),
				      tcp_snd_cwnd(tp)))
		return false;
	tp->fastlane.count++;
	return true;
}

/* Mark the notified range [nf->seq, nf->end_seq), one wire segment of
 * @skb (tcp_fastlane_one_segment()), lost as an entry of Algorithm 1's
 * list: split off if @split (no more: a failed split marks more), else
 * the whole of @skb; enter or join the recovery notifications drive, and
 * hold new data until it ends
 */
static void tcp_fastlane_mark(struct sock *sk, struct sk_buff *skb,
			      const struct tcp_fastlane_info *nf, bool split)
{
	struct inet_connection_sock *icsk = inet_csk(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	/* Algorithm 1's list holds the segments notified since the last
	 * timeout: after one, start it afresh
	 */
	if (tp->fl_rto_epoch != tp->total_rto) {
		tcp_fastlane_clear_marks(sk);
		tp->fl_rto_epoch = tp->total_rto;
	}
	if (split && tcp_fastlane_split(sk, skb, nf->seq))
		skb = skb_rb_next(skb);
	for (; skb && before(TCP_SKB_CB(skb)->seq, nf->end_seq);
	     skb = skb_rb_next(skb)) {
		if (split)
			tcp_fastlane_split(sk, skb, nf->end_seq);
		tcp_mark_skb_lost(sk, skb);
		/* an entry of Algorithm 1's list: entry.retx++, once per
		 * transmission (a notification that names it again is stale,
		 * tcp_fastlane_data_verdict())
		 */
		if (TCP_SKB_CB(skb)->tx.fastlane_retx < TCP_FASTLANE_RETX_MAX)
			TCP_SKB_CB(skb)->tx.fastlane_retx++;
		TCP_SKB_CB(skb)->tx.fastlane_noted = 1;
		/* the dropped copy was a retransmission (a loss probe, or
		 * one RACK or an earlier notification caused) that was not
		 * marked lost before: it is no longer in flight either
		 */
		if (TCP_SKB_CB(skb)->sacked & TCPCB_SACKED_RETRANS) {
			TCP_SKB_CB(skb)->sacked &= ~TCPCB_SACKED_RETRANS;
			tp->retrans_out -= tcp_skb_pcount(skb);
		}
	}
	/* ssthresh is the congestion control's (CUBIC's beta, DCTCP's
	 * alpha, Reno's half), as for any recovery
	 */
	if (icsk->icsk_ca_state < TCP_CA_Recovery)
		tcp_enter_recovery(sk, false);
	/* A notified segment was dropped: this recovery is never undone.
	 * Linux undoes one when an ACK echoes a timestamp from before its
	 * first retransmission, or comes before any (tcp_packet_delayed()),
	 * and then unmarks every lost segment (tcp_undo_cwnd_reduction()).
	 * With notifications such an ACK is the normal case, not a sign of
	 * reordering: a notification overtakes the queue the earlier
	 * segments wait in, and bound_sim or the rate cap may hold the
	 * resend.  Unmarked, a notified segment that no later notification
	 * names waits for the RTO.  Like ECN's CE, a notification is no
	 * guess.
	 */
	tp->undo_marker = 0;
	/* a recovery notifications start or join: bound_sim's alpha is half
	 * the window at its entry (tcp_init_cwnd_reduction()'s prior_cwnd),
	 * kept whole so that no half segment is lost (tcp_fastlane_bound_sim())
	 */
	if (!tp->fl_recovering || tp->fastlane.high_seq != tp->high_seq)
		tp->fastlane.cwnd_entry = max(tp->prior_cwnd, 1U);
	/* no new data until this recovery ends (tcp_write_xmit()) */
	tp->fl_recovering = 1;
	tp->fastlane.high_seq = tp->high_seq;
}

/**
 * tcp_fastlane_pacing_timer - run tcp_tsq_write() at @expires_ns at the latest
 * @sk: the socket, locked
 * @expires_ns: CLOCK_MONOTONIC, as tcp_clock_ns() and tp->tcp_wstamp_ns
 *
 * The pacing hrtimer (tcp_pace_kick() runs tcp_tsq_write()) is shared by
 * internal pacing (tcp_pacing_check(): BBR, or SO_MAX_PACING_RATE without
 * fq) and FastLane's deferred resend.  Each needs a wake-up no later than
 * its own deadline, and an early one costs a pass of tcp_tsq_write(),
 * which queues the timer again for what is still to come: so the earlier
 * deadline wins.  A later one left queued would hold paced segments back
 * to it (tcp_pacing_check() only waits while the timer is queued).  The
 * queued timer owns one reference on @sk, which tcp_pace_kick() drops: a
 * timer cancelled here hands its reference to the new expiry.
 */
void tcp_fastlane_pacing_timer(struct sock *sk, u64 expires_ns)
{
	struct hrtimer *timer = &tcp_sk(sk)->pacing_timer;
	ktime_t expires = ns_to_ktime(expires_ns);

	if (hrtimer_is_queued(timer)) {
		if (hrtimer_get_expires(timer) <= expires)
			return;		/* it fires first */
		if (hrtimer_try_to_cancel(timer) == 1) {
			hrtimer_start(timer, expires,
				      HRTIMER_MODE_ABS_PINNED_SOFT);
			return;
		}
		/* it fired meanwhile; its callback drops its own reference */
	}
	hrtimer_start(timer, expires, HRTIMER_MODE_ABS_PINNED_SOFT);
	sock_hold(sk);
}

/* Wake tcp_tsq_write() once the rate cap's round trip is over, to resend
 * the lowest sequence if a rate-limited notification left it lost
 * (tcp_fastlane_deferred_resend())
 */
static void tcp_fastlane_defer(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u64 now_us = tcp_clock_us();
	u32 left = tp->fastlane.window_us + 1 +
		   max_t(u32, tp->srtt_us >> 3, USEC_PER_MSEC) - (u32)now_us;
	u64 end_us = now_us + ((s32)left > 0 ? left : 0);

	tcp_fastlane_pacing_timer(sk, end_us * NSEC_PER_USEC);
}

void __tcp_fastlane_tsq_write(struct sock *sk)
{
	struct sk_buff *skb = tcp_rtx_queue_head(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	struct net *net = sock_net(sk);
	u8 sacked;

	if (!skb)
		return;
	sacked = TCP_SKB_CB(skb)->sacked;
	if (!tcp_fastlane_deferred_resend(tcp_fastlane_holds_new_data(sk),
					  TCP_SKB_CB(skb)->tx.fastlane_retx,
					  sacked & TCPCB_LOST,
					  sacked & TCPCB_SACKED_RETRANS,
					  tp->fl_rto_epoch == tp->total_rto))
		return;
	/* the resend is the one the notification would have made: it counts
	 * against the cap, and waits for the next round trip if over it
	 */
	if (!tcp_fastlane_rate_ok(sk)) {
		tcp_fastlane_defer(sk);
		return;
	}
	tcp_mstamp_refresh(tp);
	if (tcp_retransmit_skb(sk, skb, 1))
		return;
	NET_INC_STATS(net, LINUX_MIB_TCPFASTLANEDEFERRED);
	NET_INC_STATS(net, LINUX_MIB_TCPFASTLANEBOUNDLOWEST);
	NET_INC_STATS(net, LINUX_MIB_TCPFASTLANERETRANS);
	tcp_rearm_rto(sk);
	tcp_fastlane_tail_push(sk);
}

/* The tail push (tcp_fastlane_tail_pushes()), after a retransmission: the
 * recovery's last one is the last segment in flight and the only one not
 * delivered, new data waits behind the hold; one new segment goes with
 * it, so that the receiver has two segments to ACK at once instead of one
 * to delay its ACK for.
 * Once sent, the new segment is the queue's tail: one per retransmission
 * of the tail, never more than one segment beyond cwnd.
 */
void __tcp_fastlane_tail_push(struct sock *sk)
{
	struct sk_buff *tail = tcp_rtx_queue_tail(sk), *skb;
	struct tcp_sock *tp = tcp_sk(sk);

	if (!tail ||
	    !tcp_fastlane_tail_pushes(tcp_fastlane_holds_new_data(sk),
				      tcp_send_head(sk),
				      TCP_SKB_CB(tail)->tx.fastlane_retx,
				      TCP_SKB_CB(tail)->sacked & TCPCB_SACKED_RETRANS,
				      tp->lost_out, tp->retrans_out))
		return;
	/* Only where the resend arrives alone and in order: everything
	 * before it delivered (SACKed).  Below an unacknowledged segment it
	 * is out of order at the receiver, which SACKs it at once, and the
	 * segment that fills the hole is ACKed at once too.
	 */
	for (skb = skb_rb_prev(tail); skb; skb = skb_rb_prev(skb))
		if (!(TCP_SKB_CB(skb)->sacked & TCPCB_SACKED_ACKED))
			return;
	if (tcp_fastlane_push_one(sk))
		NET_INC_STATS(sock_net(sk), LINUX_MIB_TCPFASTLANETAILPUSH);
}

/* Count a notification refused for its timestamp: the connection has
 * none (refused), the quote has none (bad options), or it is not the
 * transmission's (stale by timestamp)
 */
static void tcp_fastlane_count(struct net *net,
			       enum tcp_fastlane_data_verdict v)
{
	switch (v) {
	case TCP_FASTLANE_DATA_NOTS:
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANEREFUSED);
		break;
	case TCP_FASTLANE_DATA_BADOPTS:
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANEBADOPTS);
		break;
	case TCP_FASTLANE_DATA_STALE_TS:
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANESTALETS);
		break;
	case TCP_FASTLANE_DATA_STALE:
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANESTALE);
		break;
	case TCP_FASTLANE_DATA_BADSEQ:
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANEBADSEQ);
		break;
	case TCP_FASTLANE_DATA_RATELIMITED:
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANERATELIMITED);
		break;
	case TCP_FASTLANE_DATA_TAKE:
		break;
	}
}

/* A notification for data (or a FIN) in flight, socket locked by us */
static void tcp_fastlane_data(struct sock *sk, const struct tcp_fastlane_info *nf)
{
	struct inet_connection_sock *icsk = inet_csk(sk);
	struct tcp_fastlane_data_state st = {
		.nf_tsval	= nf->tsval,
		.has_ts		= nf->has_ts,
	};
	struct tcp_sock *tp = tcp_sk(sk);
	struct net *net = sock_net(sk);
	struct sk_buff *skb;

	skb = tcp_fastlane_find(sk, nf->seq);
	st.ts_ok = tp->rx_opt.tstamp_ok;
	st.ca_state = icsk->icsk_ca_state;
	st.cwnd = tcp_snd_cwnd(tp);
	st.rate_count = tcp_fastlane_rate_count(sk);
	st.found = skb;
	if (skb) {
		st.sacked = TCP_SKB_CB(skb)->sacked;
		st.noted = TCP_SKB_CB(skb)->tx.fastlane_noted;
		st.skb_tsval = tcp_skb_timestamp_ts(tp->tcp_usec_ts, skb) +
			       tp->tsoffset;
		st.misaligned =
			!tcp_fastlane_one_segment(TCP_SKB_CB(skb)->seq,
						  TCP_SKB_CB(skb)->end_seq,
						  tcp_skb_pcount(skb) > 1 ?
						  tcp_skb_mss(skb) : 0,
						  nf->seq, nf->end_seq);
	}
	switch (tcp_fastlane_data_verdict(&st)) {
	case TCP_FASTLANE_DATA_NOTS:
	case TCP_FASTLANE_DATA_BADOPTS:
	case TCP_FASTLANE_DATA_STALE_TS:
		tcp_fastlane_count(net, tcp_fastlane_data_verdict(&st));
		return;
	case TCP_FASTLANE_DATA_STALE:
		/* delivered, already notified, or a timeout's recovery
		 * owns it
		 */
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANESTALE);
		return;
	case TCP_FASTLANE_DATA_BADSEQ:
		/* not one segment: it would split the queue at any byte */
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANEBADSEQ);
		return;
	case TCP_FASTLANE_DATA_RATELIMITED:
		/* Still a drop of ours: the segment is lost.  The window
		 * resends it (cwnd, PRR, bound_sim), or, if it holds the
		 * lowest sequence, tcp_tsq_write() once the cap's round
		 * trip is over; nothing is sent for it now, and the queue
		 * is not split for it (its whole skb is marked): over the
		 * cap, notifications cost no more skbs.
		 */
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANERATELIMITED);
		tcp_fastlane_mark(sk, skb, nf, false);
		tcp_fastlane_defer(sk);
		return;
	case TCP_FASTLANE_DATA_TAKE:
		break;
	}
	tp->fastlane.count++;
	NET_INC_STATS(net, LINUX_MIB_TCPFASTLANENOTIFY);
	tcp_fastlane_mark(sk, skb, nf, true);
	/* resend what bound_sim allows, lowest first */
	tcp_xmit_retransmit_queue(sk);
	/* Resending a lost segment before ours may have collapsed ours into
	 * it and freed it (tcp_retrans_try_collapse()): look it up again.
	 */
	skb = tcp_fastlane_find(sk, nf->seq);
	switch (tcp_fastlane_after_pass(skb, skb && skb == tcp_rtx_queue_head(sk),
					skb && (TCP_SKB_CB(skb)->sacked &
						TCPCB_SACKED_RETRANS))) {
	case TCP_FASTLANE_AFTER_GONE:
	case TCP_FASTLANE_AFTER_HELD:	/* until ACKs make room in bound_sim */
		return;
	case TCP_FASTLANE_AFTER_SEND_LOWEST:
		/* the lowest sequence goes at once, whatever the budget;
		 * this may collapse the skbs after it, never itself
		 */
		if (tcp_retransmit_skb(sk, skb, 1))
			return;
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANEBOUNDLOWEST);
		tcp_rearm_rto(sk);
		tcp_fastlane_tail_push(sk);
		fallthrough;
	case TCP_FASTLANE_AFTER_RESENT:
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANERETRANS);
	}
}

/* A notification for a SYN of ours (SYN_SENT).  The SYN carries
 * timestamps if tcp_connect_init() counted them in tcp_header_len (MD5
 * and AO sockets, which add to it too, refuse notifications); a SYN
 * without them cannot be told from an earlier one (refused), and the
 * quote must carry the SYN's.
 */
static void tcp_fastlane_syn(struct sock *sk, const struct tcp_fastlane_info *nf)
{
	struct inet_connection_sock *icsk = inet_csk(sk);
	struct sk_buff *skb = tcp_rtx_queue_head(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	bool ts_ok = tp->tcp_header_len >= sizeof(struct tcphdr) +
					   TCPOLEN_TSTAMP_ALIGNED;

	if (!ts_ok || !nf->has_ts) {
		tcp_fastlane_count(sock_net(sk), ts_ok ? TCP_FASTLANE_DATA_BADOPTS :
							 TCP_FASTLANE_DATA_NOTS);
		return;
	}
	if (!skb || !nf->syn || nf->seq != TCP_SKB_CB(skb)->seq) {
		NET_INC_STATS(sock_net(sk), LINUX_MIB_TCPFASTLANESTALE);
		return;
	}
	if (nf->tsval != tcp_skb_timestamp_ts(tp->tcp_usec_ts, skb) + tp->tsoffset) {
		NET_INC_STATS(sock_net(sk), LINUX_MIB_TCPFASTLANESTALETS);
		return;
	}
	if (!tcp_fastlane_rate_ok(sk)) {
		NET_INC_STATS(sock_net(sk), LINUX_MIB_TCPFASTLANERATELIMITED);
		return;
	}
	NET_INC_STATS(sock_net(sk), LINUX_MIB_TCPFASTLANENOTIFY);
	if (!tcp_retransmit_skb(sk, skb, 1)) {
		NET_INC_STATS(sock_net(sk), LINUX_MIB_TCPFASTLANECTLRESEND);
		inet_csk_reset_xmit_timer(sk, ICSK_TIME_RETRANS, icsk->icsk_rto,
					  TCP_RTO_MAX);
	}
}

/* Does a notification for the SYN-ACK of @req carry what the SYN-ACK
 * carried?  A timestamp from the request's last second (the SYN-ACK's own
 * is not kept): a forger then needs the request's random offset.  A
 * request without timestamps refuses it.  Counts a refusal.
 */
static bool tcp_fastlane_req_ts_ok(struct net *net,
				   const struct request_sock *req,
				   const struct tcp_fastlane_info *nf)
{
	const struct tcp_request_sock *treq = tcp_rsk(req);
	struct tcp_fastlane_data_state st = {
		.has_ts		= nf->has_ts,
		.nf_tsval	= nf->tsval,
		.ts_ok		= inet_rsk(req)->tstamp_ok,
		.cwnd		= 1,
	};
	u32 window = treq->req_usec_ts ? USEC_PER_SEC : MSEC_PER_SEC;

	enum tcp_fastlane_data_verdict v;

	v = tcp_fastlane_ack_verdict(&st, tcp_clock_ts(treq->req_usec_ts) +
				     treq->ts_off, window);
	if (v == TCP_FASTLANE_DATA_TAKE)
		return true;
	tcp_fastlane_count(net, v);
	return false;
}

/* A notification for the SYN-ACK of a Fast Open child (a full socket in
 * SYN_RECV, or FIN_WAIT1 if closed that early, that keeps its request
 * until the client acknowledges the SYN-ACK): resent at once by the
 * request, as tcp_fastopen_synack_timer() would at its timeout, until
 * the request has been resent twice (num_retrans 2, its timer's resends
 * included), as for a listener's request (tcp_fastlane_req())
 */
static void tcp_fastlane_fastopen_synack(struct sock *sk,
					 struct request_sock *req,
					 const struct tcp_fastlane_info *nf)
{
	struct net *net = sock_net(sk);

	if (!tcp_fastlane_req_ts_ok(net, req, nf))
		return;
	if (!nf->ack || nf->seq != tcp_rsk(req)->snt_isn ||
	    req->num_retrans >= 2) {
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANESTALE);
		return;
	}
	if (!tcp_fastlane_rate_ok(sk)) {
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANERATELIMITED);
		return;
	}
	NET_INC_STATS(net, LINUX_MIB_TCPFASTLANENOTIFY);
	if (!inet_rtx_syn_ack(sk, req))
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANECTLRESEND);
}

/* A notification for a pure ACK of ours: the ACK carried state the peer
 * needs (a window, a duplicate ACK), so it is sent again, if it passes
 * tcp_fastlane_ack_verdict() (timestamps within the last second)
 */
static void tcp_fastlane_pure_ack(struct sock *sk,
				  const struct tcp_fastlane_info *nf)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tcp_fastlane_data_state st = {
		.nf_tsval	= nf->tsval,
		.has_ts		= nf->has_ts,
		.ts_ok		= tp->rx_opt.tstamp_ok,
		.cwnd		= tcp_snd_cwnd(tp),
	};
	u32 window = tp->tcp_usec_ts ? USEC_PER_SEC : MSEC_PER_SEC;
	struct net *net = sock_net(sk);
	enum tcp_fastlane_data_verdict v;

	st.rate_count = tcp_fastlane_rate_count(sk);
	v = tcp_fastlane_ack_verdict(&st, tcp_time_stamp_ts(tp) + tp->tsoffset,
				     window);
	if (v != TCP_FASTLANE_DATA_TAKE) {
		tcp_fastlane_count(net, v);
		return;
	}
	tp->fastlane.count++;
	NET_INC_STATS(net, LINUX_MIB_TCPFASTLANENOTIFY);
	NET_INC_STATS(net, LINUX_MIB_TCPFASTLANECTLRESEND);
	tcp_send_ack(sk);
}

/* Act on a notification; the socket is locked and not owned by user (or
 * owned by us, from the backlog).  The clock is read first: a resend is
 * stamped now, as tcp_rcv_established() and tcp_v4_err() do.
 */
static void tcp_fastlane_act(struct sock *sk, const struct tcp_fastlane_info *nf)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct net *net = sock_net(sk);
	struct request_sock *req;

	tcp_mstamp_refresh(tp);
	req = rcu_dereference_protected(tp->fastopen_rsk,
					lockdep_sock_is_held(sk));
	switch (tcp_fastlane_kind(sk->sk_state, req, nf->syn)) {
	case TCP_FASTLANE_KIND_SYN:
		tcp_fastlane_syn(sk, nf);
		return;
	case TCP_FASTLANE_KIND_FASTOPEN_SYNACK:
		tcp_fastlane_fastopen_synack(sk, req, nf);
		return;
	case TCP_FASTLANE_KIND_STALE:
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANESTALE);
		return;
	case TCP_FASTLANE_KIND_SEQ:
		break;
	}
	/* an ACK field the connection never sent: forged */
	if (nf->ack &&
	    !tcp_fastlane_ack_ok(nf->ack_seq, tp->rcv_nxt,
				 max(tp->rcv_wnd, tp->window_clamp))) {
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANEBADSEQ);
		return;
	}
	switch (tcp_fastlane_classify(nf->seq, nf->end_seq, tp->snd_una,
				      tp->snd_nxt)) {
	case TCP_FASTLANE_IN_FLIGHT:
		tcp_fastlane_data(sk, nf);
		break;
	case TCP_FASTLANE_PURE_ACK:
		tcp_fastlane_pure_ack(sk, nf);
		break;
	default:
		/* RFC 5927: not in flight, as tcp_v4_err() counts it */
		NET_INC_STATS(net, LINUX_MIB_OUTOFWINDOWICMPS);
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANEOUTOFWINDOW);
	}
}

/* What the notification @skb says: its quote, at skb->data (the quoted
 * IP header, IPv4 or IPv6), the quoted TCP header @thoff bytes into it.
 * Pulls the TCP header and its options.  Returns false if they are not
 * all there, or the quoted IP length is shorter than the headers.
 */
static bool tcp_fastlane_parse(struct sk_buff *skb, unsigned int thoff,
			       struct tcp_fastlane_info *nf)
{
	const struct tcphdr *th;
	unsigned int hlen, total;

	if (!pskb_may_pull(skb, thoff + sizeof(*th)))
		return false;
	th = (const struct tcphdr *)(skb->data + thoff);
	hlen = thoff + th->doff * 4;
	if (th->doff < sizeof(*th) / 4 || !pskb_may_pull(skb, hlen))
		return false;
	th = (const struct tcphdr *)(skb->data + thoff);
	if ((skb->data[0] >> 4) == 4)
		total = ntohs(((const struct iphdr *)skb->data)->tot_len);
	else
		total = ntohs(((const struct ipv6hdr *)skb->data)->payload_len) +
			sizeof(struct ipv6hdr);
	if (total < hlen)
		return false;
	nf->seq = ntohl(th->seq);
	nf->end_seq = nf->seq + (total - hlen) + th->syn + th->fin;
	nf->has_ts = tcp_fastlane_parse_tsval((const u8 *)(th + 1),
					      th->doff * 4 - sizeof(*th),
					      &nf->tsval);
	nf->syn = th->syn;
	nf->ack = th->ack;
	nf->ack_seq = ntohl(th->ack_seq);
	return true;
}

/**
 * tcp_fastlane_backlog_rcv - a notification that found @sk owned by user
 * @sk: the socket, owned by us now (__release_sock())
 * @skb: a clone of the notification, from the backlog
 *	 (TCP_SKB_CB(skb)->fastlane; the quoted TCP header's offset in
 *	 TCP_SKB_CB(skb)->seq)
 *
 * Consumes @skb.  Called from tcp_v{4,6}_do_rcv().
 */
void tcp_fastlane_backlog_rcv(struct sock *sk, struct sk_buff *skb)
{
	struct tcp_fastlane_info nf = {};

	if (tcp_fastlane_parse(skb, TCP_SKB_CB(skb)->seq, &nf))
		tcp_fastlane_act(sk, &nf);
	consume_skb(skb);
	/* the reference tcp_fastlane_err() took for it */
	static_branch_slow_dec_deferred(&tcp_fastlane_needed);
}
EXPORT_SYMBOL_GPL(tcp_fastlane_backlog_rcv);

/* A notification for a request socket: resend the SYN-ACK, at most
 * twice in all (num_retrans counts the timer's resends too)
 */
static void tcp_fastlane_req(struct net *net, struct request_sock *req,
			     const struct tcp_fastlane_info *nf)
{
	if (!tcp_fastlane_req_ts_ok(net, req, nf))
		return;
	/* the SYN-ACK acknowledges the SYN, nothing else */
	if (nf->ack && nf->ack_seq != tcp_rsk(req)->rcv_nxt) {
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANEBADSEQ);
		return;
	}
	if (!nf->syn || !nf->ack || nf->seq != tcp_rsk(req)->snt_isn ||
	    req->num_retrans >= 2) {
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANESTALE);
		return;
	}
	NET_INC_STATS(net, LINUX_MIB_TCPFASTLANENOTIFY);
	if (!inet_rtx_syn_ack(req->rsk_listener, req))
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANECTLRESEND);
}

/* Must @sk (established, or a request socket) refuse the notification
 * @skb?  A protected connection never acts on a plaintext notification,
 * whatever it says: TCP-MD5 or TCP-AO keys, an IPsec policy or transform
 * (ICMP itself passed the host's IPsec policy in icmp_rcv()), or a
 * minimum TTL (hop limit) the notification, as it arrived, is below;
 * nor does one whose codepoint is not the namespace's.
 */
static bool tcp_fastlane_refused(struct net *net, struct sock *sk,
				 struct sk_buff *skb)
{
	struct sock *full = sk;
	struct dst_entry *dst;

	if (sk->sk_state == TCP_NEW_SYN_RECV)
		full = inet_reqsk(sk)->rsk_listener;
#ifdef CONFIG_TCP_MD5SIG
	if (rcu_access_pointer(tcp_sk(full)->md5sig_info))
		return true;
#endif
#ifdef CONFIG_TCP_AO
	if (rcu_access_pointer(tcp_sk(full)->ao_info))
		return true;
#endif
#ifdef CONFIG_XFRM
	if (rcu_access_pointer(full->sk_policy[0]) ||
	    rcu_access_pointer(full->sk_policy[1]))
		return true;
#endif
	if (sk_fullsock(sk)) {
		dst = __sk_dst_get(sk);
		if (dst && dst_xfrm(dst))
			return true;
	}
	if (skb->protocol == htons(ETH_P_IP)) {
		if (ip_hdr(skb)->ttl < READ_ONCE(inet_sk(full)->min_ttl))
			return true;
		return (ipv4_get_dsfield(ip_hdr(skb)) >> 2) !=
		       READ_ONCE(net->ipv4.sysctl_tcp_fastlane_dscp);
	}
#if IS_ENABLED(CONFIG_IPV6)
	if (full->sk_family == AF_INET6 &&
	    ipv6_hdr(skb)->hop_limit < READ_ONCE(inet6_sk(full)->min_hopcount))
		return true;
	return (ipv6_get_dsfield(ipv6_hdr(skb)) >> 2) !=
	       READ_ONCE(net->ipv4.sysctl_tcp_fastlane_dscp);
#else
	return true;
#endif
}

/**
 * tcp_fastlane_err - take a notification for socket @sk
 * @net: the namespace it arrived in
 * @sk: the socket its quote names (a reference, released here): a full,
 *	request or TIME_WAIT socket
 * @skb: the ICMP (ICMPv6) error, skb->data at the quoted IP header, the
 *	 IP (IPv6) header it arrived with at its network header
 * @thoff: the offset of the quoted TCP header from skb->data
 *
 * Called from tcp_v4_err() and tcp_v6_err() for a FastLane error type
 * (tcp_fastlane_icmp(), tcp_fastlane_icmpv6()) in place of the stock
 * handling; @skb stays the caller's.
 */
void tcp_fastlane_err(struct net *net, struct sock *sk, struct sk_buff *skb,
		      unsigned int thoff)
{
	struct tcp_fastlane_info nf = {};
	struct sk_buff *clone;

	if (sk->sk_state == TCP_TIME_WAIT) {
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANESTALE);
		inet_twsk_put(inet_twsk(sk));
		return;
	}
	if (!tcp_fastlane_parse(skb, thoff, &nf)) {
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANEBADSEQ);
		sock_gen_put(sk);
		return;
	}
	if (tcp_fastlane_refused(net, sk, skb)) {
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANEREFUSED);
		sock_gen_put(sk);
		return;
	}
	if (sk->sk_state == TCP_NEW_SYN_RECV) {
		tcp_fastlane_req(net, inet_reqsk(sk), &nf);
		reqsk_put(inet_reqsk(sk));
		return;
	}

	bh_lock_sock(sk);
	if (!sock_owned_by_user(sk)) {
		tcp_fastlane_act(sk, &nf);
		goto out;
	}
	/* Owned: a clone of the error waits in the backlog, handled on
	 * release like a segment (tcp_v4_err() drops most errors here,
	 * LINUX_MIB_LOCKDROPPEDICMPS; a notification is a loss to repair
	 * now).  It holds a reference on the static key, so that the
	 * backlog's test (tcp_fastlane_backlogged()) stays on until then;
	 * none is taken once the key is being disabled.  Its control block
	 * is cleared (tcp_add_backlog() compares the backlog's tail with the
	 * next segment before it coalesces them: no ACK flag, nothing
	 * coalesces with it) but for its mark and the quoted TCP header's
	 * offset.
	 */
	clone = skb_clone(skb, GFP_ATOMIC);
	if (!clone) {
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANELOCKDROPPED);
		goto out;
	}
	memset(TCP_SKB_CB(clone), 0, sizeof(struct tcp_skb_cb));
	TCP_SKB_CB(clone)->fastlane = 1;
	TCP_SKB_CB(clone)->seq = thoff;
	if (!static_key_fast_inc_not_disabled(&tcp_fastlane_needed.key.key)) {
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANELOCKDROPPED);
		kfree_skb(clone);
	} else if (unlikely(sk_add_backlog(sk, clone,
					   READ_ONCE(sk->sk_rcvbuf) +
					   READ_ONCE(sk->sk_sndbuf)))) {
		static_branch_slow_dec_deferred(&tcp_fastlane_needed);
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANELOCKDROPPED);
		kfree_skb(clone);
	}
out:
	bh_unlock_sock(sk);
	sock_put(sk);
}
EXPORT_SYMBOL_GPL(tcp_fastlane_err);

/* DEFINE_STATIC_KEY_DEFERRED_FALSE(tcp_fastlane_needed, HZ), written out */
struct static_key_false_deferred tcp_fastlane_needed = {
	.key		= { STATIC_KEY_INIT_FALSE },
	.timeout	= HZ,
	.work		= __DELAYED_WORK_INITIALIZER(tcp_fastlane_needed.work,
						     jump_label_update_timeout, 0),
};
EXPORT_SYMBOL_GPL(tcp_fastlane_needed);

/* Serialises the sysctl's writers: the key counts the namespaces whose
 * knob is on, so a write must see the value it changes
 */
static DEFINE_MUTEX(tcp_fastlane_sysctl_mutex);

/**
 * proc_tcp_fastlane - the handler of net.ipv4.tcp_fastlane
 * @table: the namespace's entry
 * @write: a write
 * @buffer: what is read or written
 * @lenp: its length
 * @ppos: the file position
 *
 * proc_dou8vec_minmax(), and a reference on tcp_fastlane_needed for each
 * namespace that turns the knob on, dropped when it turns it off or
 * exits (tcp_fastlane_net_exit()).
 */
int proc_tcp_fastlane(const struct ctl_table *table, int write, void *buffer,
		      size_t *lenp, loff_t *ppos)
{
	u8 *val = table->data, old;
	int ret;

	if (!write)
		return proc_dou8vec_minmax(table, write, buffer, lenp, ppos);
	mutex_lock(&tcp_fastlane_sysctl_mutex);
	old = READ_ONCE(*val);
	ret = proc_dou8vec_minmax(table, write, buffer, lenp, ppos);
	if (!ret && !old && READ_ONCE(*val))
		static_branch_deferred_inc(&tcp_fastlane_needed);
	else if (!ret && old && !READ_ONCE(*val))
		static_branch_slow_dec_deferred(&tcp_fastlane_needed);
	mutex_unlock(&tcp_fastlane_sysctl_mutex);
	return ret;
}
EXPORT_SYMBOL_GPL(proc_tcp_fastlane);

/* A namespace that exits with the knob on drops its reference.  Runs
 * after its sysctl table is gone (registered before ipv4's sysctls, so
 * unregistered after them): no write can race with it.
 */
static void __net_exit tcp_fastlane_net_exit(struct net *net)
{
	mutex_lock(&tcp_fastlane_sysctl_mutex);
	if (READ_ONCE(net->ipv4.sysctl_tcp_fastlane)) {
		WRITE_ONCE(net->ipv4.sysctl_tcp_fastlane, 0);
		static_branch_slow_dec_deferred(&tcp_fastlane_needed);
	}
	mutex_unlock(&tcp_fastlane_sysctl_mutex);
}

static struct pernet_operations tcp_fastlane_net_ops = {
	.exit = tcp_fastlane_net_exit,
};

static int __init tcp_fastlane_init(void)
{
	return register_pernet_subsys(&tcp_fastlane_net_ops);
}
subsys_initcall(tcp_fastlane_init);
