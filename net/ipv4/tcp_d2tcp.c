// SPDX-License-Identifier: GPL-2.0-only
/* Deadline-Aware Datacenter TCP (D2TCP) congestion control.
 *
 * Balajee Vamanan, Jahangir Hasan, T. N. Vijaykumar:
 * "Deadline-Aware Datacenter TCP (D2TCP)", SIGCOMM 2012.
 *
 * D2TCP is DCTCP with the window reduction bent by the flow's deadline:
 * alpha is DCTCP's EWMA of the fraction of CE-marked packets, and on ECN
 * feedback (once per window of data, through TCP's CWR state) the window
 * becomes W * (1 - p / 2) with the gamma correction
 *
 *	p = alpha^d,	d = Tc / D, clamped to [1/n, n],
 *
 * D the time left to the deadline and Tc = B / (3/4 W) round trips the
 * time needed for the B bytes not yet acknowledged.  Without a deadline
 * (TCP_DEADLINE not set) or once it has passed, d = 1 and D2TCP computes
 * exactly DCTCP's windows.
 *
 * Fixed point: alpha in 1/1024 (as DCTCP), d in 1/1024, p in 1/65536.
 * alpha^d = 2^(-d * (10 - log2(alpha))): log2 with 20 fractional bits by
 * repeated squaring, 2^-y from a table of 2^(-2^-k).  The result is
 * within 1/65536 of the exact value for d in [1/8, 8] and is monotone in
 * alpha and d (tcp_d2tcp_kunit.c checks both).
 */

#include <linux/bits.h>
#include <linux/module.h>
#include <linux/math64.h>
#include <linux/log2.h>
#include <linux/inet_diag.h>
#include <net/tcp.h>
#include <kunit/visibility.h>
#include "tcp_dctcp.h"
#include "tcp_d2tcp.h"

#define D2TCP_LOG_FRAC	20U	/* fractional bits of log2() */
#define D2TCP_ONE_Q31	BIT_ULL(31)

struct d2tcp {
	u32 old_delivered;
	u32 old_delivered_ce;
	u32 prior_rcv_nxt;
	u32 alpha;
	u32 next_seq;
	u32 ce_state;
	u32 loss_cwnd;
	u32 last_d;	/* d of the last window reduction, Q10 */
	struct tcp_plb_state plb;
};

static unsigned int d2tcp_shift_g __read_mostly = 4; /* g = 1/2^4 */

static int d2tcp_shift_g_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 0, 10);
}

static const struct kernel_param_ops d2tcp_shift_g_ops = {
	.set = d2tcp_shift_g_set,
	.get = param_get_uint,
};

module_param_cb(shift_g, &d2tcp_shift_g_ops, &d2tcp_shift_g, 0644);
MODULE_PARM_DESC(shift_g, "EWMA weight of alpha, g = 1/2^shift_g (default 4)");

static unsigned int d2tcp_alpha_on_init __read_mostly = D2TCP_MAX_ALPHA;
module_param_named(alpha_on_init, d2tcp_alpha_on_init, uint, 0644);
MODULE_PARM_DESC(alpha_on_init, "initial alpha, 1024 = 1.0 (default 1024)");

static unsigned int d2tcp_d_cap __read_mostly = 2;

static int d2tcp_d_cap_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, D2TCP_MAX_D_CAP);
}

static const struct kernel_param_ops d2tcp_d_cap_ops = {
	.set = d2tcp_d_cap_set,
	.get = param_get_uint,
};

module_param_cb(d_cap, &d2tcp_d_cap_ops, &d2tcp_d_cap, 0644);
MODULE_PARM_DESC(d_cap, "n: d is clamped to [1/n, n], 1..8 (default 2; 1 makes D2TCP DCTCP)");

/* 2^(-2^(k - 20)) in Q31, k = 0..19 */
static const u32 d2tcp_exp2_tab[D2TCP_LOG_FRAC] = {
	2147482228, 2147480809, 2147477970, 2147472292,
	2147460935, 2147438222, 2147392798, 2147301951,
	2147120270, 2146756953, 2146030505, 2144578345,
	2141676973, 2135885998, 2124350982, 2101467502,
	2056437387, 1969251188, 1805811301, 1518500250,
};

/* log2(x) for x in [1, 2^20], D2TCP_LOG_FRAC fractional bits */
static u32 d2tcp_log2(u32 x)
{
	u32 ip = ilog2(x), frac = 0;
	u64 m = ((u64)x << 31) >> ip;	/* mantissa in [1, 2), Q31 */
	int b;

	for (b = D2TCP_LOG_FRAC - 1; b >= 0; b--) {
		m = (m * m) >> 31;
		if (m >= 2 * D2TCP_ONE_Q31) {
			m >>= 1;
			frac |= 1U << b;
		}
	}
	return (ip << D2TCP_LOG_FRAC) | frac;
}

/* p = alpha^d: alpha in 1/1024, d in Q10, p in Q16 */
VISIBLE_IF_KUNIT u32 d2tcp_gamma(u32 alpha, u32 d)
{
	u32 yi, yf, b;
	u64 y, r;

	if (!alpha)
		return 0;
	if (alpha >= D2TCP_MAX_ALPHA)
		return D2TCP_P_ONE;
	if (d == D2TCP_D_ONE)	/* exact, so that D2TCP is DCTCP at d = 1 */
		return alpha << (D2TCP_P_SHIFT - D2TCP_ALPHA_SHIFT);

	/* y = -log2(alpha^d) = d * (10 - log2(alpha)) */
	y = (D2TCP_ALPHA_SHIFT << D2TCP_LOG_FRAC) - d2tcp_log2(alpha);
	y = (y * d) >> D2TCP_D_SHIFT;
	yi = y >> D2TCP_LOG_FRAC;
	yf = y & ((1U << D2TCP_LOG_FRAC) - 1);
	if (yi >= 31)
		return 0;

	r = D2TCP_ONE_Q31;
	for (b = 0; b < D2TCP_LOG_FRAC; b++)
		if (yf & (1U << b))
			r = (r * d2tcp_exp2_tab[b]) >> 31;
	r >>= yi;
	/* Q31 -> Q16, rounded */
	return (r + (1U << (31 - D2TCP_P_SHIFT - 1))) >> (31 - D2TCP_P_SHIFT);
}
EXPORT_SYMBOL_IF_KUNIT(d2tcp_gamma);

/* d = Tc / D in Q10, clamped to [1/d_cap, d_cap], where
 * Tc = B / (3/4 W) round trips of srtt_us and D = time_left_us.
 */
VISIBLE_IF_KUNIT u32 d2tcp_imminence(u64 bytes_left, u64 window_bytes,
				     u32 srtt_us, u64 time_left_us, u32 d_cap)
{
	u32 d_min, d_max;
	u64 tc, lim, d;

	d_cap = clamp(d_cap, 1U, D2TCP_MAX_D_CAP);
	d_min = D2TCP_D_ONE / d_cap;
	d_max = D2TCP_D_ONE * d_cap;
	if (!srtt_us || !time_left_us)
		return D2TCP_D_ONE;

	bytes_left = min_t(u64, bytes_left, TCP_DEADLINE_MAX_BYTES);
	window_bytes = clamp_t(u64, window_bytes, 1, TCP_DEADLINE_MAX_BYTES);
	time_left_us = min_t(u64, time_left_us, TCP_DEADLINE_MAX_US);

	/* Tc in round trips, Q10: B * 4 / (3 W); B < 2^49, so B << 12 fits */
	tc = div64_u64(bytes_left << (D2TCP_D_SHIFT + 2), 3 * window_bytes);

	/* d = Tc * srtt / D; saturate before the product can overflow:
	 * d_max * D < 2^13 * 2^32.
	 */
	lim = div64_u64((u64)d_max * time_left_us, srtt_us);
	if (tc >= lim)
		return d_max;
	d = div64_u64(tc * srtt_us, time_left_us);
	return clamp_t(u64, d, d_min, d_max);
}
EXPORT_SYMBOL_IF_KUNIT(d2tcp_imminence);

/* W * (1 - p / 2), at least 2 segments; p in Q16 */
VISIBLE_IF_KUNIT u32 d2tcp_reduced_cwnd(u32 cwnd, u32 p)
{
	u32 cut = ((u64)cwnd * p) >> (D2TCP_P_SHIFT + 1);

	return max(cwnd - cut, 2U);
}
EXPORT_SYMBOL_IF_KUNIT(d2tcp_reduced_cwnd);

/* The socket's deadline imminence factor now */
static u32 d2tcp_sk_imminence(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	s64 time_left;
	u64 bytes;

	if (!tcp_deadline_left(tp, tp->tcp_mstamp, &time_left, &bytes))
		return D2TCP_D_ONE;
	/* A flow past its deadline is treated as a flow without one: a late
	 * flow that keeps pushing only makes other flows late as well.
	 */
	if (time_left <= 0)
		return D2TCP_D_ONE;
	return d2tcp_imminence(bytes, (u64)tcp_snd_cwnd(tp) * tp->mss_cache,
			       tp->srtt_us >> 3, time_left,
			       READ_ONCE(d2tcp_d_cap));
}

static struct tcp_congestion_ops d2tcp_reno;

static void d2tcp_reset(const struct tcp_sock *tp, struct d2tcp *ca)
{
	ca->next_seq = tp->snd_nxt;

	ca->old_delivered = tp->delivered;
	ca->old_delivered_ce = tp->delivered_ce;
}

static void d2tcp_init(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	if ((tp->ecn_flags & TCP_ECN_OK) ||
	    (sk->sk_state == TCP_LISTEN ||
	     sk->sk_state == TCP_CLOSE)) {
		struct d2tcp *ca = inet_csk_ca(sk);

		ca->prior_rcv_nxt = tp->rcv_nxt;
		ca->alpha = min(d2tcp_alpha_on_init, D2TCP_MAX_ALPHA);
		ca->loss_cwnd = 0;
		ca->ce_state = 0;
		ca->last_d = D2TCP_D_ONE;

		d2tcp_reset(tp, ca);
		tcp_plb_init(sk, &ca->plb);
		return;
	}

	/* No ECN support? Fall back to Reno, as DCTCP does, and clear the
	 * ECT set on the socket during the handshake.
	 */
	WRITE_ONCE(inet_csk(sk)->icsk_ca_ops, &d2tcp_reno);
	INET_ECN_dontxmit(sk);
}

static u32 d2tcp_ssthresh(struct sock *sk)
{
	struct d2tcp *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	u32 d = d2tcp_sk_imminence(sk);

	WRITE_ONCE(ca->last_d, d);
	ca->loss_cwnd = tcp_snd_cwnd(tp);
	return d2tcp_reduced_cwnd(tcp_snd_cwnd(tp), d2tcp_gamma(ca->alpha, d));
}

static void d2tcp_update_alpha(struct sock *sk, u32 flags)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct d2tcp *ca = inet_csk_ca(sk);

	/* Once per window of data */
	if (!before(tp->snd_una, ca->next_seq)) {
		u32 delivered = tp->delivered - ca->old_delivered;
		u32 delivered_ce = tp->delivered_ce - ca->old_delivered_ce;
		u32 alpha = ca->alpha;
		u32 ce_ratio = 0;

		if (delivered > 0) {
			if (delivered_ce > 0)
				ce_ratio = (delivered_ce << TCP_PLB_SCALE) / delivered;
			tcp_plb_update_state(sk, &ca->plb, (int)ce_ratio);
			tcp_plb_check_rehash(sk, &ca->plb);
		}

		/* alpha = (1 - g) * alpha + g * F */
		alpha -= min_not_zero(alpha, alpha >> d2tcp_shift_g);
		if (delivered_ce) {
			delivered_ce <<= (D2TCP_ALPHA_SHIFT - d2tcp_shift_g);
			delivered_ce /= max(1U, delivered);
			alpha = min(alpha + delivered_ce, D2TCP_MAX_ALPHA);
		}
		/* read locklessly by d2tcp_get_info() */
		WRITE_ONCE(ca->alpha, alpha);
		d2tcp_reset(tp, ca);
	}
}

static void d2tcp_react_to_loss(struct sock *sk)
{
	struct d2tcp *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	ca->loss_cwnd = tcp_snd_cwnd(tp);
	tp->snd_ssthresh = max(tcp_snd_cwnd(tp) >> 1U, 2U);
}

static void d2tcp_state(struct sock *sk, u8 new_state)
{
	/* Loss is answered by halving, as in DCTCP and in the paper: the
	 * gamma correction only shapes the reaction to ECN marks.
	 */
	if (new_state == TCP_CA_Recovery &&
	    new_state != inet_csk(sk)->icsk_ca_state)
		d2tcp_react_to_loss(sk);
}

static void d2tcp_cwnd_event(struct sock *sk, enum tcp_ca_event ev)
{
	struct d2tcp *ca = inet_csk_ca(sk);

	switch (ev) {
	case CA_EVENT_ECN_IS_CE:
	case CA_EVENT_ECN_NO_CE:
		dctcp_ece_ack_update(sk, ev, &ca->prior_rcv_nxt, &ca->ce_state);
		break;
	case CA_EVENT_LOSS:
		tcp_plb_update_state_upon_rto(sk, &ca->plb);
		d2tcp_react_to_loss(sk);
		break;
	case CA_EVENT_TX_START:
		tcp_plb_check_rehash(sk, &ca->plb);
		break;
	default:
		break;
	}
}

static size_t d2tcp_get_info(struct sock *sk, u32 ext, int *attr,
			     union tcp_cc_info *info)
{
	const struct d2tcp *ca = inet_csk_ca(sk);
	const struct tcp_sock *tp = tcp_sk(sk);

	/* Same attribute and semantics as DCTCP, so that ss -ti shows alpha */
	if (ext & (1 << (INET_DIAG_DCTCPINFO - 1)) ||
	    ext & (1 << (INET_DIAG_VEGASINFO - 1))) {
		memset(&info->dctcp, 0, sizeof(info->dctcp));
		if (READ_ONCE(inet_csk(sk)->icsk_ca_ops) != &d2tcp_reno) {
			info->dctcp.dctcp_enabled = 1;
			info->dctcp.dctcp_ce_state = (u16)ca->ce_state;
			info->dctcp.dctcp_alpha = READ_ONCE(ca->alpha);
			info->dctcp.dctcp_ab_ecn = tp->mss_cache *
				(tp->delivered_ce - ca->old_delivered_ce);
			info->dctcp.dctcp_ab_tot = tp->mss_cache *
				(tp->delivered - ca->old_delivered);
		}

		*attr = INET_DIAG_DCTCPINFO;
		return sizeof(info->dctcp);
	}
	return 0;
}

static u32 d2tcp_cwnd_undo(struct sock *sk)
{
	const struct d2tcp *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	return max(tcp_snd_cwnd(tp), ca->loss_cwnd);
}

static struct tcp_congestion_ops d2tcp __read_mostly = {
	.init		= d2tcp_init,
	.in_ack_event	= d2tcp_update_alpha,
	.cwnd_event	= d2tcp_cwnd_event,
	.ssthresh	= d2tcp_ssthresh,
	.cong_avoid	= tcp_reno_cong_avoid,
	.undo_cwnd	= d2tcp_cwnd_undo,
	.set_state	= d2tcp_state,
	.get_info	= d2tcp_get_info,
	.flags		= TCP_CONG_NEEDS_ECN,
	.owner		= THIS_MODULE,
	.name		= "d2tcp",
};

static struct tcp_congestion_ops d2tcp_reno __read_mostly = {
	.ssthresh	= tcp_reno_ssthresh,
	.cong_avoid	= tcp_reno_cong_avoid,
	.undo_cwnd	= tcp_reno_undo_cwnd,
	.get_info	= d2tcp_get_info,
	.owner		= THIS_MODULE,
	.name		= "d2tcp-reno",
};

static int __init d2tcp_register(void)
{
	BUILD_BUG_ON(sizeof(struct d2tcp) > ICSK_CA_PRIV_SIZE);
	return tcp_register_congestion_control(&d2tcp);
}

static void __exit d2tcp_unregister(void)
{
	tcp_unregister_congestion_control(&d2tcp);
}

module_init(d2tcp_register);
module_exit(d2tcp_unregister);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Deadline-Aware Datacenter TCP (D2TCP)");
MODULE_ALIAS("tcp-d2tcp");
