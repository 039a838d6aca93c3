/* SPDX-License-Identifier: GPL-2.0-only */
/* FastLane over multiple paths (CONFIG_TCP_FASTLANE_OFO): the
 * out-of-order-bytes option and packet-scatter mode.
 *
 * Zats et al., "FastLane: Making Short Flows Shorter with Agile Drop
 * Notification", SoCC 2015, Sec. 3.4.1 "Supporting Multiple Paths".
 *
 * The receiver tells the sender how many bytes it holds out of order
 * beyond rcv_nxt, in an experimental option (RFC 6994) of its own ExID,
 * on every segment it sends while its out-of-order queue is not empty.
 * The sender inflates its congestion window by that amount: on a new
 * ACK by the option's value, on a duplicate ACK by the maximum of the
 * value and the current inflation (ACKs reordered among themselves),
 * never beyond the receive window.  Both ends must offer the option on
 * the SYN and SYN-ACK (net.ipv4.tcp_fastlane_ofo); it is never sent to
 * a peer that did not.
 *
 * Wire format:
 *
 *   SYN, SYN-ACK:  kind 254, length 4 | ExID 0xFA0F
 *   other:         kind 254, length 8 | ExID 0xFA0F | 32-bit byte count
 *
 * Packet-scatter mode (net.ipv4.tcp_fastlane_scatter, TCP_FASTLANE_SCATTER)
 * makes loss detection rely on FastLane notifications and the RTO, and
 * on SACK only once more than tcp_max_reordering segments are SACKed
 * above a hole (net/ipv4/tcp_fastlane_ofo.c).
 */
#ifndef _NET_TCP_FASTLANE_OFO_H
#define _NET_TCP_FASTLANE_OFO_H

#include <linux/jump_label.h>
#include <linux/skbuff.h>
#include <linux/sockptr.h>
#include <linux/sysctl.h>
#include <linux/tcp.h>
#include <linux/types.h>
#include <linux/unaligned.h>
#include <net/net_namespace.h>

#define TCPOPT_FL_OFO_MAGIC		0xFA0F
#define TCPOLEN_FL_OFO_PERM		4	/* SYN, SYN-ACK */
#define TCPOLEN_FL_OFO			8	/* the byte count */

/* What an option of our ExID on a segment is (tcp_fl_ofo_decode()),
 * kept per segment in tcp_options_received.fl_ofo_saw (2 bits)
 */
enum tcp_fl_ofo_opt {
	TCP_FL_OFO_NONE,	/* no option of our ExID */
	TCP_FL_OFO_PERM,	/* the SYN's offer */
	TCP_FL_OFO_VALUE,	/* a byte count */
	TCP_FL_OFO_MALFORMED,	/* our ExID, a length we do not know */
};

/* An experimental option of our ExID, of @opsize bytes (kind and length
 * included, as the peer sent it: untrusted) whose ExID is at @p: what it
 * is, and the byte count in *@val if it carries one.  tcp_parse_options()
 * has checked that the option lies within the header and that
 * @opsize >= 4.
 */
static inline enum tcp_fl_ofo_opt tcp_fl_ofo_decode(const u8 *p, int opsize,
						    u32 *val)
{
	if (opsize == TCPOLEN_FL_OFO_PERM)
		return TCP_FL_OFO_PERM;
	if (opsize != TCPOLEN_FL_OFO)
		return TCP_FL_OFO_MALFORMED;
	*val = get_unaligned_be32(p + 2);
	return TCP_FL_OFO_VALUE;
}

/* Write the byte count @val as the option at @p (8 bytes) */
static inline void tcp_fl_ofo_encode(u8 *p, u32 val)
{
	p[0] = 254;
	p[1] = TCPOLEN_FL_OFO;
	p[2] = TCPOPT_FL_OFO_MAGIC >> 8;
	p[3] = TCPOPT_FL_OFO_MAGIC & 0xff;
	p[4] = val >> 24;
	p[5] = val >> 16;
	p[6] = val >> 8;
	p[7] = val;
}

/* Is a received byte count plausible?  The receiver holds out of order
 * only bytes it was sent and that lie within the window it advertised:
 * never more than what is unacknowledged after this ACK, less the hole
 * at its left edge (@snd_nxt - @ack - 1), nor more than the receive
 * window (@snd_wnd).  Anything else is absurd (forged, or a broken
 * peer): ignored and counted.
 */
static inline bool tcp_fl_ofo_plausible(u32 val, u32 ack, u32 snd_nxt,
					u32 snd_wnd)
{
	u32 outstanding = snd_nxt - ack;

	if ((s32)outstanding <= 0)
		return val == 0;
	return val < outstanding && val <= snd_wnd;
}

/* The paper's inflation rule.  @cur: the current inflation (bytes);
 * @val: the option's value on this ACK (0 when it carries none: the
 * receiver holds nothing out of order); @new_ack: the ACK advances
 * snd_una.  A new ACK inflates by its value; a duplicate ACK by the
 * maximum of its value and the current inflation, so that a duplicate
 * ACK overtaken by a later one does not shrink the window.  Never
 * beyond the receive window @snd_wnd.
 */
static inline u32 tcp_fl_ofo_inflate(u32 cur, u32 val, bool new_ack,
				     u32 snd_wnd)
{
	u32 infl = new_ack ? val : max(cur, val);

	return min(infl, snd_wnd);
}

/* The packets the inflation adds to the congestion window: Linux already
 * leaves out of the packets in flight those it knows the receiver holds
 * (SACKed, or with Reno one per duplicate ACK: @sacked_out), so only
 * the inflation beyond them counts, in whole segments of @mss bytes.
 */
static inline u32 tcp_fl_ofo_extra(u32 infl, u32 mss, u32 sacked_out)
{
	u32 pkts;

	if (!infl || !mss)
		return 0;
	pkts = infl / mss;
	return pkts > sacked_out ? pkts - sacked_out : 0;
}

/* The most the inflation may be, in bytes: what lets tcp_cwnd_test() send
 * at most @cwnd segments beyond the congestion window (tcp_fl_ofo_extra()
 * leaves @sacked_out out), so that the window at most doubles in a round
 * trip, as slow start would have it grow.  A peer's byte count, plausible
 * or not, never lets the sender outrun that.
 */
static inline u32 tcp_fl_ofo_bound(u32 cwnd, u32 mss, u32 sacked_out)
{
	return min_t(u64, ((u64)cwnd + sacked_out) * mss, U32_MAX);
}

/* The bytes of the segment [@seq, @end_seq) beyond @edge, the end of the
 * segment before it in the out-of-order queue (@seq for the first one)
 */
static inline u32 tcp_fl_ofo_beyond(u32 edge, u32 seq, u32 end_seq)
{
	if ((s32)(edge - seq) > 0)
		seq = (s32)(end_seq - edge) > 0 ? edge : end_seq;
	return end_seq - seq;
}

/* The receiver's byte count: the out-of-order segments [seq, end_seq),
 * sorted by seq, each counted for its bytes beyond the end of the one
 * before it.  Linux keeps no segment inside its neighbour (it drops or
 * replaces it), so an overlap is counted once; only a segment extended
 * in place (coalesced) over its successors may hide one inside it, and
 * the bytes of the next one it overlaps are then counted twice: at most
 * the bytes the peer sent twice.  Fed one segment at a time to
 * tcp_fl_ofo_sum() with the running state (@edge: the end of the
 * previous one; @first: there is none).
 */
static inline u32 tcp_fl_ofo_sum(u32 sum, u32 *edge, bool first, u32 seq,
				 u32 end_seq)
{
	sum += tcp_fl_ofo_beyond(first ? seq : *edge, seq, end_seq);
	*edge = end_seq;
	return sum;
}

#if IS_ENABLED(CONFIG_TCP_FASTLANE_OFO)

/* On while a namespace has net.ipv4.tcp_fastlane_ofo or
 * net.ipv4.tcp_fastlane_scatter on (a reference for each), and for good
 * once a socket has set TCP_FASTLANE_SCATTER: every hook of the option
 * and of scatter mode in the TCP paths tests it first, so that with the
 * knobs off they are the stock code (a NOP in place of each test).
 */
DECLARE_STATIC_KEY_FALSE(tcp_fl_ofo_needed);

static inline bool tcp_fl_ofo_active(void)
{
	return static_branch_unlikely(&tcp_fl_ofo_needed);
}

int proc_tcp_fastlane_ofo(const struct ctl_table *table, int write,
			  void *buffer, size_t *lenp, loff_t *ppos);

static inline bool tcp_fl_ofo_on(const struct net *net)
{
	return tcp_fl_ofo_active() &&
	       READ_ONCE(net->ipv4.sysctl_tcp_fastlane_ofo);
}

/* tcp_parse_options() found an option of our ExID at @p (its ExID) on
 * the segment, in a netns where the option is on; the first one on a
 * segment counts.  Cleared for every segment (tcp_fl_ofo_rx_clear()).
 */
static inline void tcp_fl_ofo_rx_parse(struct tcp_options_received *rx,
				       const u8 *p, int opsize)
{
	u32 val = 0;

	if (rx->fl_ofo_saw != TCP_FL_OFO_NONE)
		return;
	rx->fl_ofo_saw = tcp_fl_ofo_decode(p, opsize, &val);
	rx->fl_ofo_val = val;
}

/* The per-segment clear of the receive paths that do not parse options
 * (tcp_parse_options() clears it with saw_unknown, in the same byte)
 */
static inline void tcp_fl_ofo_rx_clear(struct tcp_options_received *rx)
{
	if (tcp_fl_ofo_active())
		rx->fl_ofo_saw = TCP_FL_OFO_NONE;
}

/* Is the socket in packet-scatter mode?  Its own setting
 * (TCP_FASTLANE_SCATTER), or the netns default.
 */
static inline bool tcp_fl_scatter(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	if (!tcp_fl_ofo_active())
		return false;
	if (tp->fl_scatter_set)
		return tp->fl_scatter;
	return READ_ONCE(sock_net(sk)->ipv4.sysctl_tcp_fastlane_scatter);
}

/* The segments tcp_cwnd_test() may send beyond the congestion window */
static inline u32 tcp_fl_ofo_cwnd_extra(const struct tcp_sock *tp)
{
	if (!tcp_fl_ofo_active() || likely(!tp->fl_ofo.infl))
		return 0;
	return tcp_fl_ofo_extra(tp->fl_ofo.infl, tp->mss_cache,
				tp->sacked_out);
}

/* Does the receiver side of @sk send the option on its next segment? */
static inline bool tcp_fl_ofo_want(const struct tcp_sock *tp)
{
	return tcp_fl_ofo_active() && unlikely(tp->fl_ofo_ok) &&
	       !RB_EMPTY_ROOT(&tp->out_of_order_queue);
}

/* Packet scatter: may RACK mark losses on this ACK?  Only once more than
 * tp->reordering segments are SACKed (notifications and the RTO cover
 * the rest).
 */
static inline bool tcp_fl_scatter_holds_rack(struct sock *sk)
{
	if (likely(!tcp_fl_scatter(sk)))
		return false;
	return tcp_sk(sk)->sacked_out < tcp_sk(sk)->reordering;
}

/* The receiver's byte count is kept where the out-of-order queue
 * changes (net/ipv4/tcp_input.c), a few neighbours looked at per change
 * instead of the whole queue per ACK, by a connection that negotiated
 * the option.  tcp_fl_ofo_linked(): after @skb went in;
 * tcp_fl_ofo_unlink(): before it goes; tcp_fl_ofo_grown(): after its
 * end grew from @old_end (coalesced, or it replaced a shorter one);
 * tcp_fl_ofo_collapsed(): after tcp_collapse_ofo_queue(), which walks
 * the queue itself.  A queue emptied in bulk (FIN, disconnect) counts
 * again from its next first segment.
 */
static inline bool tcp_fl_ofo_counting(const struct tcp_sock *tp)
{
	return tcp_fl_ofo_active() && unlikely(tp->fl_ofo_ok);
}

void __tcp_fl_ofo_linked(struct tcp_sock *tp, const struct sk_buff *skb);
void __tcp_fl_ofo_unlink(struct tcp_sock *tp, const struct sk_buff *skb);
void __tcp_fl_ofo_grown(struct tcp_sock *tp, const struct sk_buff *skb,
			u32 old_end);
void __tcp_fl_ofo_collapsed(struct tcp_sock *tp);
#if IS_ENABLED(CONFIG_KUNIT)
u32 tcp_fl_ofo_recount(const struct tcp_sock *tp);
#endif

static inline void tcp_fl_ofo_linked(struct tcp_sock *tp,
				     const struct sk_buff *skb)
{
	if (tcp_fl_ofo_counting(tp))
		__tcp_fl_ofo_linked(tp, skb);
}

static inline void tcp_fl_ofo_unlink(struct tcp_sock *tp,
				     const struct sk_buff *skb)
{
	if (tcp_fl_ofo_counting(tp))
		__tcp_fl_ofo_unlink(tp, skb);
}

static inline void tcp_fl_ofo_grown(struct tcp_sock *tp,
				    const struct sk_buff *skb, u32 old_end)
{
	if (tcp_fl_ofo_counting(tp))
		__tcp_fl_ofo_grown(tp, skb, old_end);
}

static inline void tcp_fl_ofo_collapsed(struct tcp_sock *tp)
{
	if (tcp_fl_ofo_counting(tp))
		__tcp_fl_ofo_collapsed(tp);
}

u32 tcp_fl_ofo_rcv_bytes(const struct tcp_sock *tp);
void tcp_fl_ofo_ack(struct sock *sk, const struct sk_buff *skb, bool new_ack);
void __tcp_fl_ofo_timeout(struct sock *sk);

/* From tcp_enter_loss(): a retransmission timeout ends the inflation */
static inline void tcp_fl_ofo_timeout(struct sock *sk)
{
	if (tcp_fl_ofo_active() && unlikely(tcp_sk(sk)->fl_ofo.infl))
		__tcp_fl_ofo_timeout(sk);
}

void tcp_fl_ofo_syn_sent(struct sock *sk, bool peer_offered);
void tcp_fl_ofo_child(struct sock *newsk, bool negotiated);
void tcp_fl_ofo_count_sent(const struct sock *sk);
void tcp_fl_ofo_count_noroom(const struct sock *sk);
int tcp_fl_ofo_setsockopt(struct sock *sk, sockptr_t optval,
			  unsigned int optlen);
int tcp_fl_ofo_getsockopt(struct sock *sk, int optname, sockptr_t optval,
			  sockptr_t optlen);
int tcp_fl_ofo_diag_put(struct sk_buff *skb, struct sock *sk);

#else

static inline bool tcp_fl_ofo_active(void)
{
	return false;
}

static inline bool tcp_fl_ofo_on(const struct net *net)
{
	return false;
}

static inline void tcp_fl_ofo_rx_clear(struct tcp_options_received *rx)
{
}

static inline u32 tcp_fl_ofo_cwnd_extra(const struct tcp_sock *tp)
{
	return 0;
}

static inline bool tcp_fl_scatter_holds_rack(struct sock *sk)
{
	return false;
}

static inline void tcp_fl_ofo_linked(struct tcp_sock *tp,
				     const struct sk_buff *skb)
{
}

static inline void tcp_fl_ofo_unlink(struct tcp_sock *tp,
				     const struct sk_buff *skb)
{
}

static inline void tcp_fl_ofo_grown(struct tcp_sock *tp,
				    const struct sk_buff *skb, u32 old_end)
{
}

static inline void tcp_fl_ofo_collapsed(struct tcp_sock *tp)
{
}

#endif /* CONFIG_TCP_FASTLANE_OFO */
#endif /* _NET_TCP_FASTLANE_OFO_H */
