//! Redundancy policies: when should the next packet carry a repair symbol,
//! and over which sub-window.
//!
//! A policy accumulates *repair credit*; the sender emits a repair at a send
//! opportunity whenever the credit is at least one. The policies are the
//! four seed schemes of the papers plus our adaptive default (argued in
//! `docs/coding.md`).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Which sub-window a repair symbol combines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The whole coding window `[i_q, i_s)` (TCP/NC; VON "redundant").
    Window,
    /// The first `n` symbols of the coding window (FNC).
    Prefix(u64),
    /// `[i_q, end)` for an absolute `end` (adaptive: span of known losses).
    UpTo(u64),
}

/// What the sender knows when consulting a policy.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ctx {
    /// Peer's I_p / I_q / I_r / MAX_SEQ / DIFF from the latest NC_ACK.
    pub i_p: u64,
    /// Next unseen at the peer.
    pub i_q: u64,
    /// Next unsensed at the peer.
    pub i_r: u64,
    /// One past the highest sensed index at the peer.
    pub max_seq: u64,
    /// FNC DIFF at the peer.
    pub diff: u64,
    /// Next source index to be sent (i_s).
    pub i_s: u64,
    /// Smoothed RTT.
    pub srtt: Duration,
    /// RTT variation (the Delta of VON's RTT + 4 Delta).
    pub rttvar: Duration,
    /// Estimated loss rate in [0, 1).
    pub loss: f64,
    /// Total packets (source + repair) sent so far.
    pub sent_total: u64,
    /// Repairs sent so far.
    pub repairs_total: u64,
    /// Sources the transport declared lost that the peer has not reported
    /// yet (index >= `max_seq` and >= `i_q`): missing degrees of freedom
    /// on top of `diff`.
    pub lost_unreported: u64,
    /// One past the newest of those (`max_seq` if none).
    pub lost_end: u64,
    /// Sources sent beyond the peer's report (`>= max_seq`) whose fate is
    /// not known yet (neither acknowledged nor declared lost).
    pub sources_inflight: u64,
    /// Repairs sent after the newest one the peer reports and not declared
    /// lost: they will still arrive, or be found lost.
    pub repairs_inflight: u64,
    /// Of those, the tail-protection repairs (sent for the losses expected
    /// among the sources in flight).
    pub tail_inflight: u64,
}

impl Ctx {
    /// DIFF as it will be reported once the peer learns of the known
    /// losses: `diff + lost_unreported`.
    pub fn expected_diff(&self) -> u64 {
        self.diff.saturating_add(self.lost_unreported)
    }

    /// The deficit of degrees of freedom expected at the peer once
    /// everything in flight has landed: the known missing ones
    /// ([`Ctx::expected_diff`]), plus `p_src` of the sources in flight,
    /// less the repairs in flight that arrive (`1 - loss` of them).
    pub fn expected_deficit(&self, p_src: f64) -> f64 {
        self.expected_diff() as f64 + p_src * self.sources_inflight as f64
            - (1.0 - self.loss) * self.repairs_inflight as f64
    }
}

/// A busy sender's adaptive policy sends a repair while the known deficit
/// exceeds what the repairs in flight deliver by at least this much; an
/// idle one as soon as the expected deficit plus [`TAIL_MARGIN_SIGMAS`]
/// standard deviations is positive (tail protection).
pub const DEFICIT_THRESHOLD: f64 = 0.25;

/// Standard deviations of the losses among the sources in flight that an
/// idle sender's repairs cover beyond their mean. Covering only the mean
/// leaves the repair process critically loaded: whenever more losses
/// happen than expected, the extra ones wait a round trip for the peer's
/// report. Two deviations cover them in about 98% of the windows, with
/// capacity the idle application does not use anyway.
pub const TAIL_MARGIN_SIGMAS: f64 = 2.0;

/// An idle sender's repairs also never leave more than this many expected
/// losses among the sources sent since the last repair: a repair only helps
/// losses of sources sent before it, so repairs still in flight do not
/// protect the newest sources. At 0.5 a loss waits on average for a quarter
/// of the mean gap between losses.
pub const TAIL_UNPROTECTED_LOSSES: f64 = 0.5;

/// Policy selection (configuration value).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PolicyKind {
    /// TCP/NC: a constant redundancy factor R >= 1 (R - 1 repairs per source).
    FixedR(f64),
    /// CTCP: N_c = N (1/(1-p) - 1) repairs after every block of N sources.
    CtcpBlock {
        /// Block size N.
        n: u32,
    },
    /// TCP VON: ExpGap / RealGap with RTT + 4 Delta timers.
    Von,
    /// FNC: DIFF / LAST_DIFF, fourth uninterrupted rule, e*N cap.
    Fnc,
    /// Our default, built on the peer's expected deficit of degrees of
    /// freedom ([`Ctx::expected_deficit`]): the known missing ones (the
    /// peer's DIFF and the transport's loss declarations it has not
    /// reported yet), plus the losses expected among the sources in flight,
    /// less what the repairs in flight will deliver.
    ///
    /// * While the application has data (bulk), a repair is due when the
    ///   *known* deficit exceeds what the repairs in flight deliver by
    ///   [`DEFICIT_THRESHOLD`]: every repair answers a loss the sender knows
    ///   of, so none is wasted (a repair sent blind is wasted whenever no
    ///   loss happened in the window it covers; at 5% loss that wastes a
    ///   third of them), and the overhead is what the loss rate needs.
    /// * When the application has nothing more to send (the tail of a
    ///   response, or a stream between writes: tail protection), a repair is
    ///   due as soon as the deficit counting the *expected* losses, at
    ///   `beta * p` per source in flight, is positive: the last packets
    ///   need no loss report. In steady state this sends `beta p / (1 - p)`
    ///   repairs per source; every NC_ACK corrects the estimate.
    ///
    /// Known losses are repaired over the window up to the newest of them
    /// (the peer decodes them without waiting for newer symbols), expected
    /// ones over the whole window. [`PolicyKind::ADAPTIVE`] uses `beta = 1`.
    Adaptive {
        /// Over-provisioning factor of the expected losses (>= 0).
        beta: f64,
    },
}

impl PolicyKind {
    /// The adaptive default (beta = 1).
    pub const ADAPTIVE: PolicyKind = PolicyKind::Adaptive { beta: 1.0 };

    /// Short name for tables.
    pub fn name(&self) -> String {
        match self {
            PolicyKind::FixedR(r) => format!("fixed-R={r}"),
            PolicyKind::CtcpBlock { n } => format!("ctcp-N={n}"),
            PolicyKind::Von => "von".into(),
            PolicyKind::Fnc => "fnc".into(),
            PolicyKind::Adaptive { beta } => format!("adaptive-b={beta}"),
        }
    }
}

/// State of the active policy.
#[derive(Debug)]
pub(crate) struct Policy {
    kind: PolicyKind,
    credit: f64,
    scope: Scope,
    // CTCP
    block_count: u32,
    // VON
    exp_gap: i64,
    real_gap: i64,
    von_timers: VecDeque<Instant>,
    // FNC
    last_diff: u64,
    t_last: Option<Instant>,
    diff_streak: u32,
    fnc_repairs: u64,
}

impl Policy {
    pub(crate) fn new(kind: PolicyKind) -> Policy {
        Policy {
            kind,
            credit: 0.0,
            scope: Scope::Window,
            block_count: 0,
            exp_gap: 0,
            real_gap: 0,
            von_timers: VecDeque::new(),
            last_diff: 0,
            t_last: None,
            diff_streak: 0,
            fnc_repairs: 0,
        }
    }

    pub(crate) fn kind(&self) -> PolicyKind {
        self.kind
    }

    /// A new source symbol was sent.
    pub(crate) fn on_source_sent(&mut self, ctx: &Ctx) {
        match self.kind {
            PolicyKind::FixedR(r) => {
                self.credit += (r - 1.0).max(0.0);
                self.scope = Scope::Window;
            }
            PolicyKind::CtcpBlock { n } => {
                self.block_count += 1;
                if self.block_count >= n {
                    self.block_count = 0;
                    let p = ctx.loss.min(0.9);
                    self.credit += n as f64 * (1.0 / (1.0 - p) - 1.0);
                    self.scope = Scope::Window;
                }
            }
            // The adaptive policy keeps no credit: the sources in flight
            // are part of its expected deficit.
            PolicyKind::Adaptive { .. } | PolicyKind::Von | PolicyKind::Fnc => {}
        }
    }

    /// Whether a repair is owed now, and its scope (read-only).
    pub(crate) fn repair_due(&self, ctx: &Ctx, now: Instant) -> Option<Scope> {
        match self.kind {
            PolicyKind::Adaptive { .. } => {
                (known_uncovered(ctx) >= DEFICIT_THRESHOLD).then(|| adaptive_scope(ctx))
            }
            PolicyKind::Von => {
                if self.real_gap > self.exp_gap {
                    Some(Scope::Window)
                } else {
                    None
                }
            }
            _ => {
                let _ = (ctx, now);
                if self.credit >= 1.0 {
                    Some(self.scope)
                } else {
                    None
                }
            }
        }
    }

    /// Credit toward the next repair, for tail protection: positive when
    /// some redundancy is owed but less than a whole repair. VON keeps no
    /// credit (its gaps and timers repair the tail); 0 there.
    /// Whether an idle sender owes a repair (tail protection); `unprotected`
    /// sources were sent since the last repair (at least one).
    pub(crate) fn tail_due(&self, ctx: &Ctx, unprotected: u64) -> bool {
        match self.kind {
            PolicyKind::Von => false,
            PolicyKind::Adaptive { beta } => {
                // The expected deficit over everything in flight, with a
                // margin of TAIL_MARGIN_SIGMAS standard deviations, and the
                // expected losses among the newest, unprotected sources.
                // Without a measured loss there is nothing to protect
                // against (a loss-free path pays nothing).
                if ctx.loss <= 0.0 {
                    return false;
                }
                let p = (beta * ctx.loss).min(0.9);
                let sd = (ctx.sources_inflight as f64 * p * (1.0 - p)).sqrt();
                ctx.expected_deficit(p) + TAIL_MARGIN_SIGMAS * sd > 0.0
                    || p * unprotected as f64 >= TAIL_UNPROTECTED_LOSSES
            }
            _ => ctx.loss > 0.0 && self.credit > 0.0,
        }
    }

    /// A repair was sent; `tail`: as tail protection, an advance on the
    /// credit (which may then drop to -1, paid back by later sources).
    pub(crate) fn on_repair_sent(&mut self, ctx: &Ctx, now: Instant, tail: bool) {
        if tail {
            self.credit = (self.credit - 1.0).max(-1.0);
            if let PolicyKind::Fnc = self.kind {
                self.fnc_repairs += 1;
            }
            return;
        }
        match self.kind {
            PolicyKind::Von => {
                self.exp_gap += 1;
                self.von_timers.push_back(now + ctx.srtt + 4 * ctx.rttvar);
            }
            PolicyKind::Fnc => {
                self.fnc_repairs += 1;
                self.credit = (self.credit - 1.0).max(0.0);
            }
            // Its repairs in flight are counted from the sender's state.
            PolicyKind::Adaptive { .. } => {}
            _ => self.credit = (self.credit - 1.0).max(0.0),
        }
    }

    /// An NC_ACK was processed (ctx already updated).
    pub(crate) fn on_ack(&mut self, ctx: &Ctx, now: Instant) {
        match self.kind {
            PolicyKind::Von => {
                // RealGap generalised to DIFF: equals i_r - i_q under VON's own
                // coding (every packet covers [i_q, i_s]) and still counts the
                // lost clear sources in systematic mode.
                let old = self.real_gap;
                self.real_gap = ctx.expected_diff() as i64;
                let dec = old - self.real_gap;
                if dec > 0 {
                    self.exp_gap -= dec;
                    for _ in 0..dec {
                        self.von_timers.pop_front();
                    }
                }
                self.exp_gap = self.exp_gap.max(0);
            }
            PolicyKind::Fnc => {
                // DIFF including the transport-declared losses the peer has
                // not reported yet (those were repaired in on_source_lost).
                let diff = ctx.expected_diff();
                if diff > 0 {
                    self.diff_streak += 1;
                } else {
                    self.diff_streak = 0;
                    self.last_diff = 0;
                }
                if self.diff_streak >= 4 {
                    let cap = (ctx.loss.max(0.01) * ctx.sent_total as f64).ceil() as u64 + 1;
                    let mut last = self.last_diff;
                    if self.t_last.is_none_or(|t| now.duration_since(t) > ctx.srtt) {
                        last = 0;
                    }
                    if diff > last {
                        let n = (diff - last).min(cap.saturating_sub(self.fnc_repairs));
                        if n > 0 {
                            self.credit += n as f64;
                            self.scope = Scope::Prefix(diff - last);
                            self.t_last = Some(now);
                        }
                    }
                    self.last_diff = diff;
                }
            }
            PolicyKind::Adaptive { .. } => {}
            PolicyKind::CtcpBlock { .. } => {
                // CTCP: extra coded packets when decoding is stuck (DIFF > 0
                // and nothing in flight for an RTT).
                if ctx.diff > 0
                    && self
                        .t_last
                        .is_none_or(|t| now.duration_since(t) > ctx.srtt + 4 * ctx.rttvar)
                {
                    self.credit += ctx.diff as f64;
                    self.scope = Scope::Window;
                    self.t_last = Some(now);
                }
            }
            PolicyKind::FixedR(_) => {}
        }
    }

    pub(crate) fn timeout(&self) -> Option<Instant> {
        match self.kind {
            PolicyKind::Von => self.von_timers.front().copied(),
            _ => None,
        }
    }

    pub(crate) fn on_timeout(&mut self, now: Instant) {
        if self.kind == PolicyKind::Von {
            while self.von_timers.front().is_some_and(|&t| t <= now) {
                self.von_timers.pop_front();
                self.exp_gap = (self.exp_gap - 1).max(0);
            }
        }
    }

    /// A repair packet was declared lost by the transport.
    pub(crate) fn on_repair_lost(&mut self, _now: Instant) {
        match self.kind {
            PolicyKind::Von if self.von_timers.pop_front().is_some() => {
                self.exp_gap = (self.exp_gap - 1).max(0);
            }
            _ => {}
        }
    }

    /// Hook after a timeout (nothing to re-derive for the current policies:
    /// the adaptive one reads the sender's state directly).
    pub(crate) fn after_timeout(&mut self, _ctx: &Ctx) {}

    /// The transport declared source `index` lost and the peer has not
    /// reported it yet (`ctx.lost_unreported` already counts it).
    pub(crate) fn on_source_lost(&mut self, ctx: &Ctx, index: u64, now: Instant) {
        match self.kind {
            // The loss is in ctx.lost_unreported already.
            PolicyKind::Adaptive { .. } => {}
            PolicyKind::Von => {
                // RealGap is the (expected) DIFF.
                self.real_gap = self.real_gap.max(ctx.expected_diff() as i64);
            }
            PolicyKind::Fnc => {
                // A transport loss declaration (packet or time threshold) is
                // at least as strong as FNC's fourth uninterrupted DIFF: send
                // what the expected DIFF exceeds LAST_DIFF by, within the
                // e*N cap, over the prefix that reaches the lost symbol, and
                // record it in LAST_DIFF/T_last so that the NC_ACKs that
                // later report this loss do not trigger a second repair.
                let diff = ctx.expected_diff();
                let mut last = self.last_diff;
                if self.t_last.is_none_or(|t| now.duration_since(t) > ctx.srtt) {
                    last = 0;
                }
                if diff > last {
                    let cap = (ctx.loss.max(0.01) * ctx.sent_total as f64).ceil() as u64 + 1;
                    let n = (diff - last).min(cap.saturating_sub(self.fnc_repairs));
                    if n > 0 {
                        self.credit += n as f64;
                        let reach = (index + 1).saturating_sub(ctx.i_q);
                        self.scope = Scope::Prefix((diff - last).max(reach));
                        self.t_last = Some(now);
                    }
                }
                self.last_diff = diff;
                self.diff_streak = self.diff_streak.max(4);
            }
            PolicyKind::CtcpBlock { .. } | PolicyKind::FixedR(_) => {}
        }
    }
}

/// The known missing degrees of freedom less what the repairs in flight
/// will deliver to them: the tail-protection repairs first serve the
/// losses expected among the sources in flight (they were sent for them),
/// and only what they deliver beyond those counts here.
fn known_uncovered(ctx: &Ctx) -> f64 {
    let keep = 1.0 - ctx.loss;
    let other = ctx.repairs_inflight.saturating_sub(ctx.tail_inflight) as f64;
    let spare_tail =
        (keep * ctx.tail_inflight as f64 - ctx.loss * ctx.sources_inflight as f64).max(0.0);
    ctx.expected_diff() as f64 - keep * other - spare_tail
}

/// Scope of an adaptive repair: while known losses exceed what the repairs
/// in flight will deliver, the repair combines only up to the newest known
/// loss (so the peer can decode them without waiting for newer symbols);
/// otherwise the whole window (it protects the sources in flight).
fn adaptive_scope(ctx: &Ctx) -> Scope {
    let known = ctx.expected_diff() as f64;
    if known > (1.0 - ctx.loss) * ctx.repairs_inflight as f64 {
        Scope::UpTo(ctx.lost_end.max(ctx.max_seq))
    } else {
        Scope::Window
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(diff: u64) -> Ctx {
        Ctx {
            i_p: 0,
            i_q: 10,
            i_r: 10 + diff,
            max_seq: 20,
            diff,
            i_s: 20,
            srtt: Duration::from_millis(50),
            rttvar: Duration::from_millis(5),
            loss: 0.2,
            sent_total: 1000,
            repairs_total: 0,
            lost_unreported: 0,
            lost_end: 20,
            sources_inflight: 0,
            repairs_inflight: 0,
            tail_inflight: 0,
        }
    }

    #[test]
    fn fixed_r_one_repair_per_four_sources() {
        let t = Instant::now();
        let mut p = Policy::new(PolicyKind::FixedR(1.25));
        let c = ctx(0);
        for _ in 0..3 {
            p.on_source_sent(&c);
            assert_eq!(p.repair_due(&c, t), None);
        }
        p.on_source_sent(&c);
        assert_eq!(p.repair_due(&c, t), Some(Scope::Window));
        p.on_repair_sent(&c, t, false);
        assert_eq!(p.repair_due(&c, t), None);
    }

    #[test]
    fn ctcp_block_redundancy() {
        let t = Instant::now();
        let mut p = Policy::new(PolicyKind::CtcpBlock { n: 32 });
        let c = ctx(0);
        for _ in 0..31 {
            p.on_source_sent(&c);
        }
        assert_eq!(p.repair_due(&c, t), None);
        p.on_source_sent(&c);
        // N (1/(1-p) - 1) = 32 * 0.25 = 8 repairs.
        let mut n = 0;
        while p.repair_due(&c, t).is_some() {
            p.on_repair_sent(&c, t, false);
            n += 1;
        }
        assert_eq!(n, 8);
    }

    #[test]
    fn von_expgap_realgap_and_timers() {
        let t = Instant::now();
        let mut p = Policy::new(PolicyKind::Von);
        p.on_ack(&ctx(2), t);
        assert_eq!(p.repair_due(&ctx(2), t), Some(Scope::Window));
        p.on_repair_sent(&ctx(2), t, false);
        p.on_repair_sent(&ctx(2), t, false);
        assert_eq!(
            p.repair_due(&ctx(2), t),
            None,
            "ExpGap caught up with RealGap"
        );
        // One redundant packet got through: RealGap and ExpGap both drop.
        p.on_ack(&ctx(1), t + Duration::from_millis(40));
        assert_eq!(p.repair_due(&ctx(1), t), None);
        // The other one's RTT + 4 Delta timer expires: ExpGap--, resend.
        let to = p.timeout().unwrap();
        assert_eq!(to, t + Duration::from_millis(70));
        p.on_timeout(to);
        assert_eq!(p.repair_due(&ctx(1), to), Some(Scope::Window));
    }

    #[test]
    fn fnc_fourth_uninterrupted_diff() {
        let t = Instant::now();
        let mut p = Policy::new(PolicyKind::Fnc);
        for k in 0..3 {
            p.on_ack(&ctx(2), t + Duration::from_millis(k));
            assert_eq!(p.repair_due(&ctx(2), t), None, "ack {k}");
        }
        p.on_ack(&ctx(2), t + Duration::from_millis(3));
        assert_eq!(p.repair_due(&ctx(2), t), Some(Scope::Prefix(2)));
        p.on_repair_sent(&ctx(2), t, false);
        p.on_repair_sent(&ctx(2), t, false);
        assert_eq!(p.repair_due(&ctx(2), t), None);
        // Within one RTT, same DIFF: nothing; larger DIFF: only the increase.
        p.on_ack(&ctx(2), t + Duration::from_millis(10));
        assert_eq!(p.repair_due(&ctx(2), t), None);
        p.on_ack(&ctx(3), t + Duration::from_millis(11));
        assert_eq!(p.repair_due(&ctx(3), t), Some(Scope::Prefix(1)));
        // DIFF back to 0 resets the streak.
        p.on_repair_sent(&ctx(3), t, false);
        p.on_ack(&ctx(0), t + Duration::from_millis(12));
        p.on_ack(&ctx(1), t + Duration::from_millis(13));
        assert_eq!(p.repair_due(&ctx(1), t), None);
    }

    #[test]
    fn adaptive_keeps_the_expected_deficit_at_zero() {
        let t = Instant::now();
        let p = Policy::new(PolicyKind::ADAPTIVE);
        // Known losses: DIFF 3, nothing in flight: repair up to them.
        let mut c = ctx(3);
        c.loss = 0.0;
        assert_eq!(p.repair_due(&c, t), Some(Scope::UpTo(20)));
        // Three repairs in flight cover them (no loss expected).
        c.repairs_inflight = 3;
        assert_eq!(p.repair_due(&c, t), None);
        // At 20% loss three repairs deliver 2.4: still 0.6 owed.
        c.loss = 0.2;
        assert_eq!(p.repair_due(&c, t), Some(Scope::UpTo(20)));
        c.repairs_inflight = 4;
        assert_eq!(p.repair_due(&c, t), None);
        // Tail repairs in flight serve the sources in flight first: with 10
        // sources and two tail repairs at 20% loss, 1.6 - 2 = no spare, so a
        // known loss is still repaired.
        let mut c = ctx(1);
        c.loss = 0.2;
        c.sources_inflight = 10;
        c.repairs_inflight = 2;
        c.tail_inflight = 2;
        assert!(p.repair_due(&c, t).is_some());
        c.tail_inflight = 0;
        assert_eq!(p.repair_due(&c, t), None, "two repairs for the known loss");
        // A busy sender does not repair losses that may not happen.
        let mut c = ctx(0);
        c.loss = 0.2;
        c.sources_inflight = 50;
        assert_eq!(p.repair_due(&c, t), None);
        // The tail does: 20% of the sources in flight plus two standard
        // deviations, one repair per 0.8 of them. With 25 sources in
        // flight: 5 + 2 * 2 = 9 losses to cover, so 12 repairs (9.6).
        c.sources_inflight = 25;
        let needed = (0..30)
            .find(|&r| {
                c.repairs_inflight = r;
                !p.tail_due(&c, 1)
            })
            .unwrap();
        assert_eq!(needed, 12);
        // ... unless the sources since the last repair hold half a loss.
        assert!(p.tail_due(&c, 3));
        // Before any loss is measured, nothing.
        let mut c = ctx(0);
        c.loss = 0.0;
        c.sources_inflight = 10;
        assert!(!p.tail_due(&c, 10));
    }
}
