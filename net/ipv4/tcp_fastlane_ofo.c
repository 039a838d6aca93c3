// SPDX-License-Identifier: GPL-2.0-only
/*
 * FastLane over multiple paths (CONFIG_TCP_FASTLANE_OFO).
 *
 * Zats et al., "FastLane: Making Short Flows Shorter with Agile Drop
 * Notification", SoCC 2015, Sec. 3.4.1: with packet scatter, segments
 * reach the receiver out of order; those it holds beyond rcv_nxt have
 * left the network, so the sender may inflate its congestion window by
 * them.  The receiver says how many bytes it holds in an experimental
 * TCP option (include/net/tcp_fastlane_ofo.h); the sender inflates on a
 * new ACK by its value, on a duplicate ACK by the maximum of its value
 * and the current inflation.
 *
 * Receiver: with net.ipv4.tcp_fastlane_ofo on, the SYN and SYN-ACK offer
 * the option (4 bytes); a connection whose both ends offered it puts the
 * byte count (8 bytes) on every segment it sends while its out-of-order
 * queue is not empty, if at least one SACK block still fits after it
 * (tcp_established_options(): MD5, AO, timestamps, FastLane's timeout
 * count and MPTCP come first; the option displaces a SACK block, never
 * the last one).
 *
 * Sender: the inflation is tp->fl_ofo.infl, in bytes, at most the
 * receive window; tcp_cwnd_test() lets the socket send as many more
 * segments as it exceeds what Linux already leaves out of the packets in
 * flight (SACKed segments, or Reno's one per duplicate ACK).  An option
 * that is not plausible (more than is outstanding or than the receive
 * window) or arrives on a connection that did not negotiate it is
 * ignored and counted (TCPFastLaneOfoBadValue, TCPFastLaneOfoNotNegotiated).
 *
 * Packet scatter (net.ipv4.tcp_fastlane_scatter or the socket option
 * TCP_FASTLANE_SCATTER): reordering is normal, so the duplicate-ACK and
 * RACK heuristics must not declare losses that FastLane notifications
 * and the RTO cover.  The socket's reordering degree is raised to
 * net.ipv4.tcp_max_reordering (Reno's duplicate ACK threshold, NewReno's
 * and RACK's SACK threshold), and RACK marks nothing lost (on ACKs or
 * from its reordering timer) until at least that many segments are
 * SACKed: notifications (which mark segments lost themselves), the RTO
 * and, beyond that, SACK decide.
 */

#include <linux/bpf.h>
#include <linux/inet_diag.h>
#include <linux/jump_label.h>
#include <linux/kernel.h>
#include <linux/mutex.h>
#include <linux/tcp.h>
#include <kunit/visibility.h>
#include <net/netlink.h>
#include <net/tcp.h>
#include <net/tcp_fastlane_ofo.h>

/* A socket has set TCP_FASTLANE_SCATTER to 1: the key's reference for it */
static atomic_t tcp_fl_scatter_sockopt = ATOMIC_INIT(0);

/* Serialises the writers of both sysctls: the key counts the knobs on */
static DEFINE_MUTEX(tcp_fl_ofo_sysctl_mutex);

/**
 * proc_tcp_fastlane_ofo - net.ipv4.tcp_fastlane_ofo and tcp_fastlane_scatter
 * @table: the namespace's entry
 * @write: a write
 * @buffer: what is read or written
 * @lenp: its length
 * @ppos: the file position
 *
 * proc_dou8vec_minmax(), and a reference on tcp_fl_ofo_needed for each
 * of the two knobs a namespace turns on, dropped when it turns it off or
 * exits (tcp_fl_ofo_net_exit()).
 */
int proc_tcp_fastlane_ofo(const struct ctl_table *table, int write,
			  void *buffer, size_t *lenp, loff_t *ppos)
{
	u8 *val = table->data, old;
	int ret;

	if (!write)
		return proc_dou8vec_minmax(table, write, buffer, lenp, ppos);
	mutex_lock(&tcp_fl_ofo_sysctl_mutex);
	old = READ_ONCE(*val);
	ret = proc_dou8vec_minmax(table, write, buffer, lenp, ppos);
	if (!ret && !old && READ_ONCE(*val))
		static_branch_inc(&tcp_fl_ofo_needed);
	else if (!ret && old && !READ_ONCE(*val))
		static_branch_dec(&tcp_fl_ofo_needed);
	mutex_unlock(&tcp_fl_ofo_sysctl_mutex);
	return ret;
}
EXPORT_SYMBOL_GPL(proc_tcp_fastlane_ofo);

/* A namespace that exits with a knob on drops its references; after its
 * sysctl table is gone (registered before ipv4's sysctls)
 */
static void __net_exit tcp_fl_ofo_net_exit(struct net *net)
{
	mutex_lock(&tcp_fl_ofo_sysctl_mutex);
	if (READ_ONCE(net->ipv4.sysctl_tcp_fastlane_ofo)) {
		WRITE_ONCE(net->ipv4.sysctl_tcp_fastlane_ofo, 0);
		static_branch_dec(&tcp_fl_ofo_needed);
	}
	if (READ_ONCE(net->ipv4.sysctl_tcp_fastlane_scatter)) {
		WRITE_ONCE(net->ipv4.sysctl_tcp_fastlane_scatter, 0);
		static_branch_dec(&tcp_fl_ofo_needed);
	}
	mutex_unlock(&tcp_fl_ofo_sysctl_mutex);
}

static struct pernet_operations tcp_fl_ofo_net_ops = {
	.exit = tcp_fl_ofo_net_exit,
};

static int __init tcp_fl_ofo_init(void)
{
	return register_pernet_subsys(&tcp_fl_ofo_net_ops);
}
subsys_initcall(tcp_fl_ofo_init);

/* A full recount of the receiver's byte count: what the kept one must be
 * (getsockopt() and ss, and after tcp_collapse_ofo_queue())
 */
VISIBLE_IF_KUNIT u32 tcp_fl_ofo_recount(const struct tcp_sock *tp)
{
	struct rb_node *p = rb_first(&tp->out_of_order_queue);
	u32 sum = 0, edge = 0;
	bool first = true;

	for (; p; p = rb_next(p)) {
		const struct sk_buff *skb = rb_to_skb(p);

		sum = tcp_fl_ofo_sum(sum, &edge, first, TCP_SKB_CB(skb)->seq,
				     TCP_SKB_CB(skb)->end_seq);
		first = false;
	}
	return sum;
}
EXPORT_SYMBOL_IF_KUNIT(tcp_fl_ofo_recount);

/* What @skb, ending at @end, adds to the count where it sits in the
 * queue: its bytes beyond its predecessor, and what its successor has
 * beyond it rather than beyond that predecessor (negative if it covers
 * part of the successor).
 */
static s32 tcp_fl_ofo_part(struct tcp_sock *tp, const struct sk_buff *skb,
			   u32 end)
{
	const struct sk_buff *prev = skb_rb_prev(skb);
	const struct sk_buff *next = skb_rb_next(skb);
	u32 seq = TCP_SKB_CB(skb)->seq;
	s32 part;

	part = tcp_fl_ofo_beyond(prev ? TCP_SKB_CB(prev)->end_seq : seq,
				 seq, end);
	tp->fl_ofo.rcv_walk += 1 + !!prev + !!next;
	if (next) {
		u32 nseq = TCP_SKB_CB(next)->seq;
		u32 nend = TCP_SKB_CB(next)->end_seq;

		part += tcp_fl_ofo_beyond(end, nseq, nend);
		part -= tcp_fl_ofo_beyond(prev ? TCP_SKB_CB(prev)->end_seq :
					  nseq, nseq, nend);
	}
	return part;
}

void __tcp_fl_ofo_linked(struct tcp_sock *tp, const struct sk_buff *skb)
{
	/* the queue's first segment: whatever was counted before is gone */
	if (rb_first(&tp->out_of_order_queue) == &skb->rbnode &&
	    rb_last(&tp->out_of_order_queue) == &skb->rbnode)
		tp->fl_ofo.rcv_bytes = 0;
	tp->fl_ofo.rcv_bytes += tcp_fl_ofo_part(tp, skb,
						TCP_SKB_CB(skb)->end_seq);
}
EXPORT_SYMBOL_IF_KUNIT(__tcp_fl_ofo_linked);

void __tcp_fl_ofo_unlink(struct tcp_sock *tp, const struct sk_buff *skb)
{
	tp->fl_ofo.rcv_bytes -= tcp_fl_ofo_part(tp, skb,
						TCP_SKB_CB(skb)->end_seq);
}
EXPORT_SYMBOL_IF_KUNIT(__tcp_fl_ofo_unlink);

void __tcp_fl_ofo_grown(struct tcp_sock *tp, const struct sk_buff *skb,
			u32 old_end)
{
	tp->fl_ofo.rcv_bytes += tcp_fl_ofo_part(tp, skb,
						TCP_SKB_CB(skb)->end_seq) -
				tcp_fl_ofo_part(tp, skb, old_end);
}
EXPORT_SYMBOL_IF_KUNIT(__tcp_fl_ofo_grown);

void __tcp_fl_ofo_collapsed(struct tcp_sock *tp)
{
	tp->fl_ofo.rcv_bytes = tcp_fl_ofo_recount(tp);
}

/* The count the option carries.  It lies within the receive window; a
 * count kept with gaps (the static key went off and on again while the
 * queue held segments) is bounded by it until the queue empties.
 */
u32 tcp_fl_ofo_rcv_bytes(const struct tcp_sock *tp)
{
	return min(tp->fl_ofo.rcv_bytes, tp->rcv_wnd);
}

void tcp_fl_ofo_count_sent(const struct sock *sk)
{
	NET_INC_STATS(sock_net(sk), LINUX_MIB_TCPFASTLANEOFOSENT);
}

void tcp_fl_ofo_count_noroom(const struct sock *sk)
{
	NET_INC_STATS(sock_net(sk), LINUX_MIB_TCPFASTLANEOFONOROOM);
}

struct static_key_false tcp_fl_ofo_needed = STATIC_KEY_FALSE_INIT;
EXPORT_SYMBOL_GPL(tcp_fl_ofo_needed);

/* Packet scatter: the reordering degree that keeps duplicate ACKs and
 * SACK from declaring losses (Reno's threshold, RACK's gate)
 */
static void tcp_fl_scatter_reordering(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 max_reo = READ_ONCE(sock_net(sk)->ipv4.sysctl_tcp_max_reordering);

	if (tp->reordering < max_reo)
		tp->reordering = max_reo;
}

/* From tcp_ack(), for an ACK that neither is older than snd_una nor
 * acknowledges unsent data, after the window update.  @new_ack: it
 * advances snd_una (FLAG_SND_UNA_ADVANCED).  tcp_parse_options() found
 * the option, if the segment carries one, in tp->rx_opt (cleared for
 * every segment: an ACK without it, or one that took the fast path,
 * leaves fl_ofo_saw at TCP_FL_OFO_NONE).
 */
void tcp_fl_ofo_ack(struct sock *sk, const struct sk_buff *skb, bool new_ack)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct net *net = sock_net(sk);
	enum tcp_fl_ofo_opt found = tp->rx_opt.fl_ofo_saw;
	u32 val = 0, infl, bound;

	if (unlikely(tcp_fl_scatter(sk)))
		tcp_fl_scatter_reordering(sk);

	/* Off in this netns: the options are not even looked at
	 * (tcp_parse_options()), and a connection negotiated before it
	 * was turned off inflates no more.
	 */
	if (!tcp_fl_ofo_on(net)) {
		tp->fl_ofo.infl = 0;
		return;
	}
	/* The SYN-ACK's offer is the negotiation (tcp_fl_ofo_syn_sent(),
	 * after this ACK is processed); a byte count on it is absurd.
	 */
	if (tcp_hdr(skb)->syn) {
		if (found > TCP_FL_OFO_PERM) {
			NET_INC_STATS(net, LINUX_MIB_TCPFASTLANEOFOBADVALUE);
			tp->fl_ofo.bad++;
		}
		return;
	}
	if (!tp->fl_ofo_ok) {
		if (found != TCP_FL_OFO_NONE) {
			NET_INC_STATS(net, LINUX_MIB_TCPFASTLANEOFONOTNEGOTIATED);
			tp->fl_ofo.bad++;
		}
		return;
	}
	if (found == TCP_FL_OFO_VALUE)
		val = tp->rx_opt.fl_ofo_val;
	if (found == TCP_FL_OFO_PERM || found == TCP_FL_OFO_MALFORMED ||
	    (found == TCP_FL_OFO_VALUE &&
	     !tcp_fl_ofo_plausible(val, TCP_SKB_CB(skb)->ack_seq, tp->snd_nxt,
				   tp->snd_wnd))) {
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANEOFOBADVALUE);
		tp->fl_ofo.bad++;
		/* ignored: the inflation stays as it was */
		tp->fl_ofo.infl = min(tp->fl_ofo.infl, tp->snd_wnd);
		return;
	}
	if (found == TCP_FL_OFO_VALUE) {
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANEOFORCVD);
		tp->fl_ofo.rcvd++;
	}
	/* After a timeout the flight the counts stood for is lost: nothing
	 * is inflated until its recovery is over (tcp_fl_ofo_timeout()).
	 */
	if (inet_csk(sk)->icsk_ca_state == TCP_CA_Loss) {
		tp->fl_ofo.infl = 0;
		return;
	}
	/* no option: the receiver holds nothing out of order */
	infl = tcp_fl_ofo_inflate(tp->fl_ofo.infl, val, new_ack, tp->snd_wnd);
	bound = tcp_fl_ofo_bound(tcp_snd_cwnd(tp), tp->mss_cache,
				 tp->sacked_out);
	tp->fl_ofo.infl = min(infl, bound);
	if (tp->fl_ofo.infl) {
		NET_INC_STATS(net, LINUX_MIB_TCPFASTLANEOFOINFLATED);
		tp->fl_ofo.infl_max = max(tp->fl_ofo.infl_max,
					  tp->fl_ofo.infl);
	}
}

/* A retransmission timeout (tcp_enter_loss()) with the window inflated:
 * the inflation ends
 */
void __tcp_fl_ofo_timeout(struct sock *sk)
{
	tcp_sk(sk)->fl_ofo.infl = 0;
}

/* SYN-ACK received: @peer_offered the option on it */
void tcp_fl_ofo_syn_sent(struct sock *sk, bool peer_offered)
{
	struct tcp_sock *tp = tcp_sk(sk);

	tp->fl_ofo_ok = peer_offered && tcp_fl_ofo_on(sock_net(sk));
	tp->fl_ofo.infl = 0;
	tp->fl_ofo.rcv_bytes = 0;
}

/* A child socket: @negotiated on the SYN and SYN-ACK; or a socket
 * disconnected (tcp_disconnect()), which negotiates anew on its next
 * SYN-ACK.  A child's scatter setting is the listener's; a disconnected
 * socket keeps its own.
 */
void tcp_fl_ofo_child(struct sock *newsk, bool negotiated)
{
	struct tcp_sock *tp = tcp_sk(newsk);

	tp->fl_ofo_ok = negotiated;
	tp->fl_ofo.infl = 0;
	tp->fl_ofo.infl_max = 0;
	tp->fl_ofo.rcvd = 0;
	tp->fl_ofo.bad = 0;
	tp->fl_ofo.rcv_bytes = 0;
	tp->fl_ofo.rcv_walk = 0;
}

/* The socket's state (the socket locked) */
static void tcp_fl_ofo_get_info(struct sock *sk,
				struct tcp_fastlane_ofo_info *info)
{
	struct tcp_sock *tp = tcp_sk(sk);

	memset(info, 0, sizeof(*info));
	if (tp->fl_ofo_ok)
		info->tcpfo_flags |= TCP_FASTLANE_OFO_F_OK;
	if (tcp_fl_scatter(sk))
		info->tcpfo_flags |= TCP_FASTLANE_OFO_F_SCATTER;
	info->tcpfo_infl = tp->fl_ofo.infl;
	info->tcpfo_infl_max = tp->fl_ofo.infl_max;
	info->tcpfo_extra = tcp_fl_ofo_cwnd_extra(tp);
	info->tcpfo_rcv_ofo = tcp_fl_ofo_want(tp) ? tcp_fl_ofo_rcv_bytes(tp) : 0;
	info->tcpfo_rcvd = tp->fl_ofo.rcvd;
	info->tcpfo_bad = tp->fl_ofo.bad;
	info->tcpfo_reordering = tp->reordering;
	info->tcpfo_rcv_walk = tp->fl_ofo.rcv_walk;
	info->tcpfo_rcv_ofo_full = tcp_fl_ofo_want(tp) ? tcp_fl_ofo_recount(tp) : 0;
}

/* INET_DIAG_FASTLANE_OFO (ss -ti), for a connected socket of a netns
 * where the option is on, or that negotiated it or is in packet-scatter
 * mode: stock sockets and listeners get no attribute.  From
 * tcp_diag_get_aux(), the socket not locked (as for tcp_get_info()).
 * inet_diag fills listeners under the listening hash's spinlock, where
 * lock_sock_fast() must not be called; a listener has no out-of-order
 * state to report anyway.
 */
int tcp_fl_ofo_diag_put(struct sk_buff *skb, struct sock *sk)
{
	struct tcp_fastlane_ofo_info info;
	bool slow;

	if (!tcp_fl_ofo_active() || sk->sk_state == TCP_LISTEN)
		return 0;
	if (!tcp_fl_ofo_on(sock_net(sk)) && !tcp_sk(sk)->fl_ofo_ok &&
	    !tcp_fl_scatter(sk))
		return 0;
	slow = lock_sock_fast(sk);
	tcp_fl_ofo_get_info(sk, &info);
	unlock_sock_fast(sk, slow);
	return nla_put(skb, INET_DIAG_FASTLANE_OFO, sizeof(info), &info);
}
EXPORT_SYMBOL_GPL(tcp_fl_ofo_diag_put);

/* TCP_FASTLANE_SCATTER: 1 on, 0 off, -1 back to the netns default */
int tcp_fl_ofo_setsockopt(struct sock *sk, sockptr_t optval,
			  unsigned int optlen)
{
	struct tcp_sock *tp = tcp_sk(sk);
	int val;

	if (optlen < sizeof(int))
		return -EINVAL;
	if (copy_from_sockptr(&val, optval, sizeof(val)))
		return -EFAULT;
	if (val < -1 || val > 1)
		return -EINVAL;
	/* scatter mode's hooks are behind the key: the first socket that
	 * turns it on turns the key on for good (as IP_MINTTL does
	 * ip4_min_ttl); not from BPF, which may not sleep here
	 */
	if (val == 1 && !atomic_read(&tcp_fl_scatter_sockopt)) {
		if (has_current_bpf_ctx())
			return -EOPNOTSUPP;
		if (!atomic_xchg(&tcp_fl_scatter_sockopt, 1))
			static_branch_inc(&tcp_fl_ofo_needed);
	}
	sockopt_lock_sock(sk);
	tp->fl_scatter_set = val >= 0;
	tp->fl_scatter = val == 1;
	if (tcp_fl_scatter(sk))
		tcp_fl_scatter_reordering(sk);
	sockopt_release_sock(sk);
	return 0;
}

int tcp_fl_ofo_getsockopt(struct sock *sk, int optname, sockptr_t optval,
			  sockptr_t optlen)
{
	struct tcp_fastlane_ofo_info info;
	int len, val;

	if (copy_from_sockptr(&len, optlen, sizeof(int)))
		return -EFAULT;
	if (len < 0)
		return -EINVAL;

	if (optname == TCP_FASTLANE_SCATTER) {
		if (len < (int)sizeof(int))
			return -EINVAL;
		val = tcp_fl_scatter(sk);
		len = sizeof(int);
		if (copy_to_sockptr(optlen, &len, sizeof(int)) ||
		    copy_to_sockptr(optval, &val, len))
			return -EFAULT;
		return 0;
	}

	sockopt_lock_sock(sk);
	tcp_fl_ofo_get_info(sk, &info);
	sockopt_release_sock(sk);

	len = min_t(int, len, sizeof(info));
	if (copy_to_sockptr(optlen, &len, sizeof(int)))
		return -EFAULT;
	if (copy_to_sockptr(optval, &info, len))
		return -EFAULT;
	return 0;
}
