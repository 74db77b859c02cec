//! Simulator checks of the CTCP model predictions (Kim et al., §IV) and of
//! the hybrid controller's targets. All runs are deterministic (seeded) and
//! in virtual time.

use std::time::Duration;

use congestion::sim::{
    join_ratios, AckPolicy, Algo, CodingModel, FlowSpec, LinkConfig, SimReport, Simulation,
};

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn secs(v: u64) -> Duration {
    Duration::from_secs(v)
}

/// Two flows on a 20 Mbit/s bottleneck with a BDP buffer (for 40 ms); the
/// second starts 0.5 s later.
fn pair(a: FlowSpec, b: FlowSpec, link: LinkConfig, dur: Duration, warm: Duration) -> SimReport {
    let mut sim = Simulation::new(link);
    sim.add_flow(a);
    sim.add_flow(b.starting_at(ms(500)));
    sim.run(dur, warm)
}

fn ratio(r: &SimReport) -> f64 {
    r.flows[0].throughput_bps / r.flows[1].throughput_bps
}

/// A paced, coded hybrid flow with `cfg` (its `common` sets the MSS).
fn coded_hybrid(cfg: congestion::HybridConfig, rtt: Duration) -> FlowSpec {
    let mss = cfg.common.mss;
    let mut f = FlowSpec::new("hybrid", Box::new(congestion::Hybrid::new(cfg)), rtt)
        .paced()
        .with_coding(CodingModel::full());
    f.mss = mss;
    f
}

/// The examples' command lines take the simulator's names: each parses
/// back to its algorithm, and an unknown one is refused with the list.
#[test]
fn algorithm_names_parse_back() {
    for a in Algo::ALL {
        assert_eq!(Algo::parse(a.name()), Ok(a));
    }
    let err = Algo::parse("reno").unwrap_err();
    assert!(
        err.contains("reno") && err.contains("cubic-rollback"),
        "{err}"
    );
}

fn single(algo: Algo, p: f64, dur: Duration) -> SimReport {
    let link = LinkConfig::bdp_buffer(20.0, ms(40)).with_loss(p, p);
    let mut sim = Simulation::new(link);
    sim.add_flow(algo.flow(ms(40)));
    sim.run(dur, dur / 2)
}

/// `Simulation::record_metrics` samples each running flow's controller at
/// the interval asked for, from the flow's start: window, sRTT, the queue
/// and the controller's own metrics (`simmetrics` prints these).
#[test]
fn metrics_trace_samples_each_flow_from_its_start() {
    let mut sim = Simulation::new(LinkConfig::bdp_buffer(20.0, ms(40)));
    sim.add_flow(Algo::Hybrid.flow(ms(40)));
    sim.add_flow(Algo::Cubic.flow(ms(40)).starting_at(ms(1000)));
    sim.record_metrics(ms(100));
    let r = sim.run(secs(3), Duration::ZERO);
    let (h, c) = (&r.flows[0].metrics_trace, &r.flows[1].metrics_trace);
    assert!((29..=31).contains(&h.len()), "{}", h.len());
    assert!((19..=21).contains(&c.len()), "{}", c.len());
    assert!(c[0].at >= ms(1000));
    assert!(h.windows(2).all(|w| w[1].at - w[0].at == ms(100)));
    let last = h.last().unwrap();
    assert!(last.cwnd > 0 && last.srtt >= ms(40));
    assert!(last.metrics.iter().any(|&(n, _)| n == "competitive"));
    assert!(h.iter().any(|m| m.queue_bytes > 0));
    // Outside the competitive mode, why no paced pairs are sent: slow
    // start (2) first, another reason after it.
    let pairs_off = |m: &congestion::sim::MetricsSample| {
        m.metrics
            .iter()
            .find(|&&(n, _)| n == "pairs_off")
            .map(|&(_, v)| v)
    };
    assert_eq!(pairs_off(&h[0]), Some(2.0));
    assert!(h
        .iter()
        .filter_map(pairs_off)
        .all(|v| (0.0..=6.0).contains(&v)));
    assert!(h.iter().filter_map(pairs_off).any(|v| v != 2.0));
}

#[test]
fn simulation_is_deterministic_and_seed_sensitive() {
    let run = |seed| {
        let link = LinkConfig::bdp_buffer(20.0, ms(40))
            .with_loss(0.02, 0.02)
            .with_seed(seed);
        let mut sim = Simulation::new(link);
        sim.add_flow(Algo::Ctcp.flow(ms(40)));
        sim.run(secs(3), secs(1))
    };
    assert_eq!(run(5), run(5));
    assert_ne!(run(5), run(6));
}

#[test]
fn queueing_delay_agrees_with_the_queue_and_the_buffer() {
    // A loss-based flow keeps a one-BDP buffer (20 ms of queue at 20 Mbit/s)
    // mostly full; the per-packet delays obey Little's law and the buffer.
    let r = single(Algo::Cubic, 0.0, secs(20));
    let rate_bytes_per_s = 20e6 / 8.0;
    let from_queue = r.mean_queue_bytes / (r.utilisation * rate_bytes_per_s);
    let mean = r.mean_queue_delay().as_secs_f64();
    assert!(
        (mean - from_queue).abs() < 0.1 * from_queue,
        "mean delay {mean} s, queue / departure rate {from_queue} s"
    );
    let buffer_s = LinkConfig::bdp_buffer(20.0, ms(40)).buffer_bytes as f64 / rate_bytes_per_s;
    let p95 = r.queue_delay_quantile(0.95).as_secs_f64();
    let max = r.queue_delay_quantile(1.0).as_secs_f64();
    assert!(
        p95 > 0.3 * buffer_s && max <= buffer_s * 1.01,
        "p95 {p95} s, max {max} s"
    );
    assert!(r.queue_delay_quantile(0.0) <= r.queue_delay_quantile(0.5));
}

#[test]
fn bottleneck_conserves_packets() {
    let link = LinkConfig::bdp_buffer(20.0, ms(40)).with_loss(0.05, 0.0);
    let mut sim = Simulation::new(link);
    sim.add_flow(Algo::Aimd.flow(ms(40)));
    let r = sim.run(secs(5), Duration::ZERO);
    let f = &r.flows[0];
    // Every declared loss is a random loss or a queue drop (no reordering in
    // the simulator, ACKs every packet, no ACK loss here): the loss
    // detector finds all of them and invents none (a few may still be
    // in flight or undetected at the end).
    let real = f.random_losses + f.queue_drops;
    assert!(
        f.declared_lost <= real && f.declared_lost + 5 >= real,
        "{f:?}"
    );
    // Random loss rate is about 5%.
    let p = f.random_losses as f64 / f.sent as f64;
    assert!((0.04..0.06).contains(&p), "{p}");
}

/// Start offsets of the second flow used by the loss-free two-flow checks.
/// On a deterministic loss-free drop-tail link the share each flow gets
/// depends on the phase at which their sawtooths meet the full queue: single
/// runs of two CTCP flows with equal RTTs range from 0.75 to 1.34. The §IV
/// predictions are about means, so these checks average over 8 offsets.
const OFFSETS_MS: [u64; 8] = [300, 500, 750, 1100, 1300, 1700, 2100, 2600];

/// Geometric mean of flow 0 / flow 1 throughput over [`OFFSETS_MS`], loss-free
/// BDP link, 40 s runs measured from 10 s.
fn mean_ratio_over_offsets(a: Algo, rtt_a: u64, b: Algo, rtt_b: u64) -> (f64, Vec<f64>) {
    let v: Vec<f64> = OFFSETS_MS
        .iter()
        .map(|&start| {
            let mut sim = Simulation::new(LinkConfig::bdp_buffer(20.0, ms(40)));
            sim.add_flow(a.flow(ms(rtt_a)));
            sim.add_flow(b.flow(ms(rtt_b)).starting_at(ms(start)));
            ratio(&sim.run(secs(40), secs(10)))
        })
        .collect();
    let g = (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp();
    (g, v)
}

/// §IV "fairness between flows with the same RTT": equal shares on average
/// (tolerance 10% as asked); loss-free drop-tail link, geometric mean over
/// 8 start offsets.
#[test]
fn ctcp_equal_rtts_share_equally() {
    let (g, v) = mean_ratio_over_offsets(Algo::Ctcp, 40, Algo::Ctcp, 40);
    assert!((0.9..=1.1).contains(&g), "mean ratio {g}, runs {v:?}");
}

/// §IV "fairness between flows with different RTTs" (T = 40 vs 80 ms).
///
/// The model predicts E[s_i]/E[s_j] = (T_j/T_i)^2 = 4 when all flows back off
/// together with the *same* mean backoff factor. Neither premise holds for
/// CTCP on a drop-tail link: Equation (1) gives the longer-RTT flow the
/// milder backoff (beta_i = T_i/(T_i + q)), which by model (4) alone lowers
/// the prediction to 4 (T_i + q)/(T_j + q) = 2.7 for q = 40 ms; and when an
/// overflow drops only one flow's packet (paced flows), the backoff
/// probability grows with the flow's rate, which takes the square root
/// (1.6). Measured over 8 start offsets the ratio is lower still, close to 1
/// (see docs/congestion.md §6): we do NOT reproduce (T_j/T_i)^2. What we check
/// is what the analysis supports: the short-RTT flow does not get less than
/// its peer (>= 0.9) nor more than (T_j/T_i)^2 plus 10%, and with i.i.d.
/// loss (where Padhye-limited AIMD flows share as T_j/T_i = 2) CTCP is no
/// more RTT-unfair than AIMD(0.5).
#[test]
fn ctcp_rtt_ratio_follows_model() {
    let (lossfree, v) = mean_ratio_over_offsets(Algo::Ctcp, 40, Algo::Ctcp, 80);
    assert!(
        (0.9..=4.4).contains(&lossfree),
        "loss-free ratio {lossfree}, runs {v:?}"
    );
    let lossy = |algo: Algo| {
        let mut sum = 0.0;
        for seed in 1..=3 {
            let link = LinkConfig::bdp_buffer(20.0, ms(40))
                .with_loss(0.005, 0.0)
                .with_seed(seed);
            sum += ratio(&pair(
                algo.flow(ms(40)),
                algo.flow(ms(80)),
                link,
                secs(30),
                secs(10),
            ));
        }
        sum / 3.0
    };
    let ctcp = lossy(Algo::Ctcp);
    let aimd = lossy(Algo::Aimd);
    assert!((0.9..=4.4).contains(&ctcp), "lossy ratio {ctcp}");
    assert!(ctcp <= aimd * 1.1, "ctcp {ctcp} vs aimd {aimd}");
}

/// §IV friendliness, loss-free link with a BDP buffer: beta = RTTmin/RTTmax
/// = 0.5, so CTCP behaves like AIMD(0.5): within 20% on average over the
/// start offsets.
#[test]
fn ctcp_is_friendly_to_aimd_on_loss_free_bdp_link() {
    let (g, v) = mean_ratio_over_offsets(Algo::Ctcp, 40, Algo::Aimd, 40);
    assert!((0.8..=1.2).contains(&g), "mean ratio {g}, runs {v:?}");
}

/// §IV friendliness with i.i.d. loss: the AIMD flow is Padhye-limited and
/// gets about what it gets against another AIMD flow (CTCP does not
/// penalise it); tolerance 25% (random-loss variance over 30 s).
#[test]
fn ctcp_does_not_penalise_aimd_under_random_loss() {
    let link = LinkConfig::bdp_buffer(20.0, ms(40)).with_loss(0.01, 0.0);
    let vs_ctcp = pair(
        Algo::Ctcp.flow(ms(40)),
        Algo::Aimd.flow(ms(40)),
        link,
        secs(30),
        secs(5),
    );
    let vs_aimd = pair(
        Algo::Aimd.flow(ms(40)),
        Algo::Aimd.flow(ms(40)),
        link,
        secs(30),
        secs(5),
    );
    let a = vs_ctcp.flows[1].throughput_bps;
    let b = vs_aimd.flows[1].throughput_bps;
    assert!(a > 0.75 * b, "aimd vs ctcp {a}, vs aimd {b}");
    // And CTCP fills what AIMD leaves.
    assert!(vs_ctcp.utilisation > 0.9, "{}", vs_ctcp.utilisation);
}

/// Efficiency under i.i.d. loss on data and ACKs (20 Mbit/s, 40 ms, BDP
/// buffer). Hybrid and CTCP with the round-minimum RTT keep >= 90% up to
/// p = 10%. CTCP as published (latest RTT sample in Equation 1) keeps >= 95%
/// up to 5% and >= 85% at 10%: the pacer's bursts put a packet or two of
/// transient queue into most samples, so at loss events it backs off below
/// the BDP/(1-p) window needed to fill the link (see docs/congestion.md).
#[test]
fn coded_controllers_keep_utilisation_under_random_loss() {
    for p in [0.01, 0.05, 0.10] {
        let h = single(Algo::Hybrid, p, secs(20));
        assert!(h.utilisation >= 0.90, "hybrid p={p}: {}", h.utilisation);
        assert_eq!(h.queue_drops, 0, "hybrid p={p}");
        let c = single(Algo::Ctcp, p, secs(20));
        let need = if p <= 0.05 { 0.95 } else { 0.85 };
        assert!(c.utilisation >= need, "ctcp p={p}: {}", c.utilisation);
        let link = LinkConfig::bdp_buffer(20.0, ms(40)).with_loss(p, p);
        let mut sim = Simulation::new(link);
        sim.add_flow(Algo::CtcpRoundMin.flow(ms(40)));
        let r = sim.run(secs(20), secs(10)).utilisation;
        assert!(r >= 0.90, "ctcp round-min p={p}: {r}");
    }
}

/// Padhye: AIMD(0.5) keeps about sqrt(1.5/p) packets per RTT. On a 100
/// Mbit/s link (never the limit here) the measured window must be within
/// [0.7, 1.4] of the model (the simple square-root model ignores timeouts
/// and the discreteness of small windows).
#[test]
fn aimd_follows_padhye() {
    for p in [0.01, 0.05, 0.10] {
        let link = LinkConfig::bdp_buffer(100.0, ms(40)).with_loss(p, 0.0);
        let mut sim = Simulation::new(link);
        sim.add_flow(Algo::Aimd.flow(ms(40)));
        let r = sim.run(secs(30), secs(5));
        let f = &r.flows[0];
        // Sent packets per RTT = delivered / (1 - p).
        let w = f.throughput_bps / 8.0 / 1200.0 * f.mean_srtt.as_secs_f64() / (1.0 - p);
        let model = (1.5 / p).sqrt();
        assert!((0.7..=1.4).contains(&(w / model)), "p={p}: {w} vs {model}");
    }
}

/// Mean hybrid/CUBIC ratio per condition of a small matrix: receiver ACK
/// policy (every packet; quiche's every-second-packet + 25 ms) x ACK-path
/// jitter (none, one start order each way; 1 ms, two seeds x two start
/// orders); loss-free drop-tail link with a BDP buffer, 30 s runs.
fn fairness_matrix(hybrid: Algo, other: Algo) -> Vec<f64> {
    let mut report = Vec::new();
    for acks in [AckPolicy::every_packet(), AckPolicy::quiche()] {
        for jitter in [0, 1] {
            let seeds: &[u64] = if jitter == 0 { &[1] } else { &[1, 2] };
            let mut v = Vec::new();
            for &seed in seeds {
                for hybrid_first in [true, false] {
                    let link = LinkConfig::bdp_buffer(20.0, ms(40))
                        .with_ack_jitter(ms(jitter))
                        .with_seed(seed);
                    let h = hybrid.flow(ms(40)).with_acks(acks);
                    let c = other.flow(ms(40)).with_acks(acks);
                    let q = if hybrid_first {
                        ratio(&pair(h, c, link, secs(30), secs(10)))
                    } else {
                        1.0 / ratio(&pair(c, h, link, secs(30), secs(10)))
                    };
                    v.push(q);
                }
            }
            report.push(v.iter().sum::<f64>() / v.len() as f64);
        }
    }
    report
}

fn geo_mean(v: &[f64]) -> f64 {
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

/// Hybrid vs CUBIC on a loss-free drop-tail link with a BDP buffer.
///
/// Two-flow drop-tail results are dominated by phase effects: which flow's
/// burst meets the full queue depends on ACK spacing, so a single
/// deterministic run says more about burst structure than about the
/// control law. We therefore check the matrix of [`fairness_matrix`].
///
/// * `hybrid-yield` (competitive mode off): each condition within a factor
///   2, geometric mean within 1.5 (Table 8 of docs/congestion.md: 0.74 /
///   1.05 / 0.89 / 1.74, geometric mean 1.05).
/// * `hybrid` (competitive mode on, the default): each condition within
///   [0.5, 2.5], geometric mean at most 2 (measured 0.98 / 1.20 / 0.87 /
///   1.87, 1.17; before the drain probes and the RFC 9438 loss response
///   2.06 / 1.43 / 1.57 / 1.92). For scale, CUBIC against AIMD(0.5) gives
///   1.29-1.67 (1.51) in the same matrix; the emulated link against real
///   CUBIC stacks is in docs/results.md §5.
#[test]
fn hybrid_is_fair_to_cubic() {
    let y = fairness_matrix(Algo::HybridYield, Algo::Cubic);
    assert!(y.iter().all(|&m| (0.5..=2.0).contains(&m)), "{y:?}");
    let g = geo_mean(&y);
    assert!(
        (1.0 / 1.5..=1.5).contains(&g),
        "yield: geometric mean {g}, {y:?}"
    );
    let c = fairness_matrix(Algo::Hybrid, Algo::Cubic);
    assert!(c.iter().all(|&m| (0.5..=2.5).contains(&m)), "{c:?}");
    let g = geo_mean(&c);
    assert!(
        (1.0 / 1.5..=2.0).contains(&g),
        "competitive: geometric mean {g}, {c:?}"
    );
}

/// Hybrid vs AIMD(0.5) (Reno), loss-free BDP buffer, per-packet ACKs. Reno
/// holds the queue until it overflows, so hybrid's competitive mode plays
/// CUBIC against it: hybrid takes at most 1.25x what CUBIC takes from Reno
/// in the same setting (measured 1.67 against CUBIC's 1.69), and at least
/// 1/1.5 of Reno's share.
#[test]
fn hybrid_is_no_harder_on_aimd_than_cubic() {
    let link = LinkConfig::bdp_buffer(20.0, ms(40));
    let vs_aimd = |a: Algo| {
        pair(
            a.flow(ms(40)),
            Algo::Aimd.flow(ms(40)),
            link,
            secs(40),
            secs(10),
        )
    };
    let r = vs_aimd(Algo::Hybrid);
    let (q, cubic) = (ratio(&r), ratio(&vs_aimd(Algo::Cubic)));
    assert!(
        (1.0 / 1.5..=1.25 * cubic).contains(&q),
        "hybrid vs aimd: {q}, cubic vs aimd: {cubic}"
    );
    assert!(r.utilisation > 0.95);
}

/// A hybrid flow that starts behind CUBIC's standing queue (so its RTTmin
/// is overestimated) does not take much more than its share: at most 1.5x
/// CUBIC's rate when yielding, 2x with the competitive mode (1.21 in the
/// simulator table of docs/congestion.md).
#[test]
fn hybrid_joining_a_standing_queue_is_not_aggressive() {
    for (algo, cap) in [(Algo::HybridYield, 1.5), (Algo::Hybrid, 2.0)] {
        let link = LinkConfig::bdp_buffer(20.0, ms(40));
        let mut sim = Simulation::new(link);
        sim.add_flow(Algo::Cubic.flow(ms(40)));
        sim.add_flow(algo.flow(ms(40)).starting_at(secs(5)));
        let r = sim.run(secs(40), secs(10));
        let q = r.flows[1].throughput_bps / r.flows[0].throughput_bps;
        assert!(q <= cap, "{}/cubic {q}", algo.name());
    }
}

/// Hybrid joining 2.04-3.48 s behind ngtcp2's and quic-go's kind of CUBIC
/// (HyStart++, paced, no rollback), at 40 start offsets spread over more
/// than one period of that flow's sawtooth (`examples/simjoin.rs`): 39 of
/// 40 runs within 0.8-1.25 and the lowest at 0.76. Behind the quiche-like
/// CUBIC the same sweep still starves hybrid in 17 of 40 runs
/// (docs/congestion.md §7 item 3); this guards the case that works at every
/// offset, which the fixed-offset tests above do not sweep.
#[test]
fn hybrid_joining_behind_a_hystart_cubic_gets_its_share_at_any_offset() {
    let r = join_ratios(Algo::CubicHystart, Algo::Hybrid, 40, 20, false);
    let band = r.iter().filter(|x| (0.8..=1.25).contains(*x)).count();
    let min = r.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(
        band >= 36 && min >= 0.6,
        "{band} of 40 in the band, lowest {min:.2}: {r:.2?}"
    );
}

/// How many of 40 coded hybrid joiners with `cfg`, started 2.04-3.48 s
/// behind a quiche-like CUBIC (rollback of small events) as
/// `examples/simjoin.rs` does, get less than half of CUBIC's rate.
fn joiners_starved_behind_rollback_cubic(cfg: congestion::HybridConfig) -> usize {
    (1..=40u64)
        .filter(|&k| {
            let link = LinkConfig::bdp_buffer(20.0, ms(40)).with_seed(k);
            let mut sim = Simulation::new(link);
            sim.add_flow(Algo::CubicRollback.flow(ms(40)));
            sim.add_flow(coded_hybrid(cfg, ms(40)).starting_at(ms(2000 + 37 * k)));
            let r = sim.run(secs(20), secs(4));
            r.flows[1].throughput_bps < 0.5 * r.flows[0].throughput_bps
        })
        .count()
}

/// [`HybridConfig::competitive_share_entry`]: hybrid joining 2.04-3.48 s
/// behind a quiche-like CUBIC (rollback of small events) at 40 start
/// offsets, as `examples/simjoin.rs` does. Behind that flow's standing
/// queue the drain watch and the recheck read its dips as a drained
/// queue; the capacity share from paced pairs tells the flow it is
/// starving. Below half of CUBIC's rate: 2 of 40 runs with the entry, 16
/// without (12 with the entry before `competitive_correlated_losses`; on
/// the emulated link behind quiche's CUBIC, 0 of 32 joiners against 3 of
/// 32).
#[test]
fn hybrid_share_entry_lifts_joiners_behind_a_standing_queue() {
    let starved = |share_entry: bool| {
        joiners_starved_behind_rollback_cubic(congestion::HybridConfig {
            competitive_share_entry: share_entry,
            ..Default::default()
        })
    };
    let (with, without) = (starved(true), starved(false));
    eprintln!(
        "joiners below half of CUBIC's rate: {with} of 40 with the share entry, {without} without"
    );
    assert!(with <= 4 && without >= with + 4, "{with} vs {without}");
}

/// Behind quiche-like CUBIC (rollback of small congestion events), which
/// keeps a one-BDP buffer near its limit, a joiner's RTTmin includes that
/// flow's floor and the queue-peak threshold lies inside the sawtooth: many
/// of its overflow losses are classed off-peak, the off-peak rate reads
/// 0.4-3 %, and a path with random loss keeps the share entry and its pairs
/// off. While losses correlate with queue peaks they count as overflows
/// (`competitive_correlated_losses`). Below half of CUBIC's rate: 2 of 40
/// runs counting them, 12 not.
#[test]
fn hybrid_counts_correlated_losses_as_overflows_behind_a_full_buffer() {
    let starved = |correlated: bool| {
        joiners_starved_behind_rollback_cubic(congestion::HybridConfig {
            competitive_correlated_losses: correlated,
            ..Default::default()
        })
    };
    let (with, without) = (starved(true), starved(false));
    eprintln!("joiners below half of CUBIC's rate: {with} of 40 counting correlated losses as overflows, {without} not");
    assert!(with <= 4 && without >= with + 6, "{with} vs {without}");
}

/// A hybrid flow that joins 2 s after a quiche-like CUBIC flow (rollback of
/// small congestion events), which holds a standing queue: its RTTmin
/// includes part of that queue, so the whole buffer looked shallow to it and
/// the share balance stayed off; it answered every overflow loss and kept
/// 2-5 % of the capacity in some runs (ratios 0.04-0.58 over these ten
/// seeds before). Now every run gets at least 0.6 of CUBIC's rate, with our
/// client's ACK of every packet and with CUBIC's receiver acknowledging
/// every second one (as ngtcp2's and quic-go's clients do on the link).
#[test]
fn hybrid_joining_behind_a_cubic_flow_gets_its_share() {
    for quiche_acks in [false, true] {
        let mut ratios = Vec::new();
        for seed in 1..=10 {
            let link = LinkConfig::bdp_buffer(20.0, ms(40)).with_seed(seed);
            let mut sim = Simulation::new(link);
            let mut cubic = Algo::CubicRollback.flow(ms(40));
            if quiche_acks {
                cubic.acks = AckPolicy::quiche();
            }
            sim.add_flow(cubic);
            sim.add_flow(Algo::Hybrid.flow(ms(40)).starting_at(ms(2000 + seed * 7)));
            let r = sim.run(secs(22), secs(2));
            ratios.push(r.flows[1].throughput_bps / r.flows[0].throughput_bps);
        }
        let min = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        assert!(
            min >= 0.6,
            "quiche ACKs {quiche_acks}: hybrid/cubic {ratios:.2?}"
        );
    }
}

/// The target environment: 20 Mbit/s, 40 ms, BDP buffer, 10% loss both
/// ways. The aggressive BBR-like baseline keeps the link busy but drops
/// thousands of packets per 10 MB at the queue; hybrid keeps >= 90% and
/// causes under 1% of those drops.
#[test]
fn hybrid_vs_bbr_like_queue_drops_at_ten_percent_loss() {
    let h = single(Algo::Hybrid, 0.10, secs(20));
    let b = single(Algo::BbrAggressive, 0.10, secs(20));
    assert!(
        b.queue_drops_per_10mb() > 1000.0,
        "bbr-2x {}",
        b.queue_drops_per_10mb()
    );
    assert!(h.utilisation >= 0.9);
    assert!(
        h.queue_drops_per_10mb() <= 0.01 * b.queue_drops_per_10mb(),
        "hybrid {} vs bbr {}",
        h.queue_drops_per_10mb(),
        b.queue_drops_per_10mb()
    );
    // CUBIC collapses in the same environment.
    let c = single(Algo::Cubic, 0.10, secs(20));
    assert!(c.utilisation < 0.1, "{}", c.utilisation);
}

/// Start-up under random loss, with the start of a quiche server: the
/// handshake's RTT sample at an empty queue, then the initial window as one
/// unpaced burst of 10 packets, and quiche-like ACKs (20 Mbit/s, 40 ms, BDP
/// buffer, loss p on data and ACKs, seeds 1..5). Every run must reach 80% of
/// the link rate (over 200 ms) within 1.5 s, and receive 1 MB within 1 s and
/// 10 MB within 5 s (ideal about 0.6 s and 4.2 s).
///
/// This reproduces the emulated link's bimodal start-up (10 MB in 5-9 s at
/// 10% loss): the initial burst queues itself (a few ms), a random loss in
/// that first round met this queue, and the slow-start backoff scaled the
/// handful of packets acknowledged so far in that incomplete round. Before
/// the fix seed 1 at 20% fell to 6.8 kB (below the 12 kB initial window)
/// and took 5.1 s to reach 80% (1 MB in 2.3 s, 10 MB in 7.3 s); seed 3
/// 2.1 s (10 MB in 5.0 s). After: at most 1.0 s, 0.72 s and 4.61 s.
#[test]
fn hybrid_start_up_under_random_loss_is_not_bimodal() {
    for (p, seed, coded) in [0.05, 0.10, 0.20]
        .into_iter()
        .flat_map(|p| (1..=5).map(move |s| (p, s)))
        .flat_map(|(p, s)| [(p, s, false), (p, s, true)])
    {
        {
            let link = LinkConfig::bdp_buffer(20.0, ms(40))
                .with_loss(p, p)
                .with_seed(seed);
            let mut sim = Simulation::new(link);
            sim.record_delivery();
            let mut flow = Algo::Hybrid
                .flow(ms(40))
                .quiche_start()
                .with_acks(AckPolicy::quiche());
            if coded {
                // The coding layer's erasure-rate estimate from the first
                // packets on (noisy while few packets back it).
                flow = flow.with_coding(CodingModel {
                    erasure_rate: true,
                    recovered: true,
                    dof_rtt: false,
                });
            }
            sim.add_flow(flow);
            let r = sim.run(secs(6), Duration::ZERO);
            let f = &r.flows[0];
            let t80 = f.time_to_rate(0.8 * 20e6, ms(200));
            let t1 = f.time_to_receive(1_000_000);
            let t10 = f.time_to_receive(10_000_000);
            let case =
                format!("p={p} seed={seed} coded={coded}: t80 {t80:?}, 1 MB {t1:?}, 10 MB {t10:?}");
            assert!(t80.is_some_and(|t| t <= ms(1500)), "{case}");
            assert!(t1.is_some_and(|t| t <= secs(1)), "{case}");
            assert!(t10.is_some_and(|t| t <= secs(5)), "{case}");
        }
    }
}

/// Why the RTT of Equation (1) must be filtered: with up to 5 ms of
/// ACK-path jitter and 10% loss, CTCP as published (latest RTT sample)
/// backs off at almost every loss event and collapses; with the round
/// minimum it loses less; hybrid keeps >= 90%.
#[test]
fn hybrid_is_robust_to_ack_jitter_where_ctcp_is_not() {
    let run = |flow: FlowSpec| {
        let link = LinkConfig::bdp_buffer(20.0, ms(40))
            .with_loss(0.1, 0.1)
            .with_ack_jitter(ms(5));
        let mut sim = Simulation::new(link);
        sim.add_flow(flow);
        sim.run(secs(20), secs(10)).utilisation
    };
    let h = run(Algo::Hybrid.flow(ms(40)));
    let c = run(Algo::Ctcp.flow(ms(40)));
    let r = run(Algo::CtcpRoundMin.flow(ms(40)));
    assert!(h >= 0.9, "hybrid {h}");
    assert!(c < 0.5, "ctcp {c}");
    assert!(
        r > c && r < h,
        "ctcp round-min {r} (published {c}, hybrid {h})"
    );
}

/// TCP/NC-style Vegas with DOF RTTs keeps the link busy under loss with a
/// bounded standing queue (about alpha = 28 packets).
#[test]
fn vegas_nc_fills_lossy_link_with_bounded_queue() {
    let r = single(Algo::VegasNc, 0.05, secs(20));
    assert!(r.utilisation > 0.9, "{}", r.utilisation);
    assert!(r.mean_queue_bytes < 60.0 * 1200.0, "{}", r.mean_queue_bytes);
}

/// Congestion safety on a buffer shallower than hybrid's delay tolerance
/// (1.5 ms = 3 packets, tolerance 2 ms): overflow losses must still count.
/// History of this test's single-flow figure (drops per 10 MB): ~3 400 when
/// the tolerance was fixed (losses ignored, count growing with time), ~230
/// with the tolerance capped by the observed queue range (Equation (1) then
/// backs off by only RTTmin/RTTmax = 0.96; CTCP: 90), ~8 with the
/// loss/queue-peak correlation test (CUBIC-like 0.7 backoff). Against CUBIC
/// on 1.5 and 4 ms buffers hybrid took 37x and 8.5x CUBIC's rate before the
/// correlation test and 3.7x and 1.3x after (docs/congestion.md, Table 6).
#[test]
fn hybrid_reacts_to_overflow_on_a_shallow_buffer() {
    let shallow = |us: u64| {
        let mut link = LinkConfig::bdp_buffer(20.0, ms(40));
        link.buffer_bytes = (20e6 / 8.0 * us as f64 / 1e6) as usize;
        link
    };
    let mut sim = Simulation::new(shallow(1500));
    sim.add_flow(Algo::Hybrid.flow(ms(40)));
    let r = sim.run(secs(30), secs(10));
    assert!(
        r.queue_drops_per_10mb() < 50.0,
        "{}",
        r.queue_drops_per_10mb()
    );
    assert!(r.utilisation > 0.8, "{}", r.utilisation);
    for (us, limit) in [(1500, 5.0), (4000, 2.0)] {
        let r = pair(
            Algo::Hybrid.flow(ms(40)),
            Algo::Cubic.flow(ms(40)),
            shallow(us),
            secs(30),
            secs(10),
        );
        let q = ratio(&r);
        assert!(q <= limit, "{us} us: hybrid/cubic {q}");
    }
}

/// Hybrid's competitive mode (on by default): against a CUBIC flow that
/// holds the queue it takes a larger share than `hybrid-yield`, while alone
/// on a lossy link it never enters the mode (its own Equation (1) backoff
/// drains the queue) and so keeps zero queue drops at 10% random loss, and
/// it does not take more than its share from a yielding hybrid.
#[test]
fn hybrid_competitive_mode_claims_share_only_against_a_queue_holder() {
    let link = LinkConfig::bdp_buffer(20.0, ms(40));
    let vs_cubic = |a: Algo| {
        ratio(&pair(
            a.flow(ms(40)),
            Algo::Cubic.flow(ms(40)),
            link,
            secs(30),
            secs(10),
        ))
    };
    let (comp, yielding) = (vs_cubic(Algo::Hybrid), vs_cubic(Algo::HybridYield));
    assert!(comp > yielding, "competitive {comp} vs yielding {yielding}");

    // Alone with random loss: no standing queue held by others.
    let lossy = LinkConfig::bdp_buffer(20.0, ms(40)).with_loss(0.1, 0.1);
    let mut sim = Simulation::new(lossy);
    sim.add_flow(Algo::Hybrid.flow(ms(40)));
    let r = sim.run(secs(30), secs(5));
    assert!(r.utilisation >= 0.90, "{}", r.utilisation);
    assert_eq!(r.flows[0].queue_drops, 0);

    // Against another hybrid, which drains its own queue at its backoffs
    // and drain probes, it never engages: an even split without queue
    // drops (measured 1.01, none). (`hybrid-yield` drains only at a loss,
    // so it holds a queue for seconds like a loss-based flow, and the mode
    // does engage against it: 1.41.)
    let r = pair(
        Algo::Hybrid.flow(ms(40)),
        Algo::Hybrid.flow(ms(40)),
        link,
        secs(30),
        secs(10),
    );
    assert!(
        (0.8..=1.25).contains(&ratio(&r)),
        "hybrid vs hybrid {}",
        ratio(&r)
    );
    assert!(r.queue_drops <= 5, "{} queue drops", r.queue_drops);
}

/// The emulated link showed quiche's CUBIC starving the yielding hybrid
/// (share 0.09, docs/results.md §5) where this simulator's CUBIC predicts
/// parity. With quiche's rollback of "spurious" congestion events
/// modelled, the simulator reproduces both that CUBIC keeps most of the
/// link alone at 1% loss (measured here: 0.96 against 0.15 without
/// rollback; the link gave 0.89) and that it starves `hybrid-yield` (0.03;
/// the link gave 0.09), and, without the share balance, the competitive
/// mode (0.1-0.3 on the link, docs/results.md §5). The share balance takes
/// some of its share back here (0.27 against 0.07); on the link it does
/// not (0.19): quiche's CUBIC rolls back its reductions there, so no other
/// flow's share is read.
#[test]
fn cubic_with_rollback_reproduces_the_emulated_link() {
    let alone = |algo: Algo| {
        let link = LinkConfig::bdp_buffer(20.0, ms(40)).with_loss(0.01, 0.01);
        let mut sim = Simulation::new(link);
        sim.add_flow(algo.flow(ms(40)));
        sim.run(secs(30), secs(5)).utilisation
    };
    let (plain, rollback) = (alone(Algo::Cubic), alone(Algo::CubicRollback));
    println!("cubic alone at 1%: plain {plain:.3}, rollback {rollback:.3}");
    assert!(rollback > plain + 0.2, "plain {plain}, rollback {rollback}");

    let link = LinkConfig::bdp_buffer(20.0, ms(40));
    let vs_rollback = |a: Algo| {
        ratio(&pair(
            a.flow(ms(40)),
            Algo::CubicRollback.flow(ms(40)),
            link,
            secs(30),
            secs(10),
        ))
    };
    let (yielding, comp) = (vs_rollback(Algo::HybridYield), vs_rollback(Algo::Hybrid));
    let unbalanced = ratio(&pair(
        coded_hybrid(
            congestion::HybridConfig {
                competitive_share_balance: false,
                ..Default::default()
            },
            ms(40),
        ),
        Algo::CubicRollback.flow(ms(40)),
        link,
        secs(30),
        secs(10),
    ));
    println!(
        "vs cubic-rollback: hybrid-yield {yielding:.3}, hybrid {comp:.3}, \
         hybrid without the share balance {unbalanced:.3}"
    );
    assert!(yielding < 0.5, "hybrid-yield {yielding}");
    assert!(
        unbalanced < 0.5,
        "hybrid without the share balance {unbalanced}"
    );
    // The share balance takes its share back from that CUBIC.
    assert!(comp > 2.0 * unbalanced, "hybrid {comp}");
}

/// Hybrid on a link whose capacity swings (a square wave between 20 and 4
/// Mbit/s every 2 s, buffer 100 packets) with 2 % random loss: each
/// capacity drop builds a queue that the next random loss backs off by
/// Equation (1), so the window must climb back quickly when the capacity
/// returns. The ramp (additive increase doubling per queue-free round trip)
/// keeps it within 10 % of the loss-free run and well above linear growth.
/// Loss-free, it costs a little here (0.843 against 0.889 without: it
/// overshoots into the 100-packet buffer when the capacity returns; 0.855
/// before a drain watch went on through further backoffs, which makes the
/// recheck cut the window after a capacity drop sooner) and
/// gains on the cellular traces (`examples/simtrace.rs`: 0.82 against 0.66
/// of T-Mobile's capacity with a 1000-packet buffer).
#[test]
fn hybrid_ramp_tracks_capacity_swings_under_random_loss() {
    use congestion::sim::RateSchedule;
    use congestion::{CommonConfig, HybridConfig};
    let run = |ramp: f64, p: f64| {
        let rtt = ms(40);
        let mut link = LinkConfig::bdp_buffer(20.0, rtt).with_loss(p, p);
        let common = CommonConfig::default();
        link.buffer_bytes = 100 * common.mss;
        let mut sim = Simulation::new(link);
        sim.with_rate_schedule(RateSchedule::square(20_000_000, 4_000_000, secs(4)).unwrap());
        sim.add_flow(coded_hybrid(
            HybridConfig {
                common,
                ramp,
                ..Default::default()
            },
            rtt,
        ));
        sim.run(secs(40), secs(4)).utilisation
    };
    let default = HybridConfig::default().ramp;
    let (clean, lossy, linear) = (run(default, 0.0), run(default, 0.02), run(0.0, 0.02));
    eprintln!("loss-free {clean:.3}, 2 % loss {lossy:.3}, 2 % loss without ramp {linear:.3}");
    assert!(lossy >= 0.9 * clean, "{lossy} vs {clean}");
    assert!(lossy >= 1.1 * linear, "{lossy} vs {linear}");
    let clean_linear = run(0.0, 0.0);
    assert!(clean >= 0.94 * clean_linear, "{clean} vs {clean_linear}");
}

/// Hybrid against CUBIC on a buffer of 10 % of the BDP (4 ms), CUBIC
/// starting at ten offsets; the ratios sorted, and hybrid's utilisation
/// alone.
fn shallow_buffer_runs(cfg: congestion::HybridConfig, other: Algo) -> (Vec<f64>, f64) {
    buffer_runs(cfg, other, ms(4))
}

/// The same on a buffer of `buffer` at 20 Mbit/s (the path is 40 ms).
fn buffer_runs(cfg: congestion::HybridConfig, other: Algo, buffer: Duration) -> (Vec<f64>, f64) {
    buffer_runs_jitter(cfg, other, buffer, Duration::ZERO)
}

fn buffer_runs_jitter(
    cfg: congestion::HybridConfig,
    other: Algo,
    buffer: Duration,
    jitter: Duration,
) -> (Vec<f64>, f64) {
    let link = || {
        let mut link = LinkConfig::bdp_buffer(20.0, ms(40)).with_ack_jitter(jitter);
        link.buffer_bytes = (20e6 / 8.0 * buffer.as_secs_f64()) as usize;
        link
    };
    // CUBIC starts at different offsets (the link is loss-free, so the
    // start is what varies between runs).
    let mut r: Vec<f64> = (0..10u64)
        .map(|k| {
            let mut sim = Simulation::new(link());
            sim.add_flow(coded_hybrid(cfg, ms(40)));
            sim.add_flow(other.flow(ms(40)).starting_at(ms(500 + 157 * k)));
            ratio(&sim.run(secs(30), secs(5)))
        })
        .collect();
    r.sort_by(f64::total_cmp);
    let mut sim = Simulation::new(link());
    sim.add_flow(coded_hybrid(cfg, ms(40)));
    (r, sim.run(secs(30), secs(5)).utilisation)
}

/// On a buffer of 10 % of the BDP (4 ms), a CUBIC flow's packets take
/// most overflow drops and paced hybrid escapes them; the sympathetic
/// backoff (the queue level falls without hybrid backing off: another
/// flow's response to an overflow) lowers hybrid's share over ten start
/// offsets of CUBIC, against an unpaced CUBIC and against a paced one
/// (ngtcp2's and quic-go's kind), and alone hybrid keeps at least 0.95 of
/// the link. Measured without the friendly increase on shallow buffers
/// (next test), which also needs the buffer to be known as shallow.
/// Hybrid / CUBIC, without → with: unpaced 0.95-3.74 (median 1.67) →
/// 1.03-1.65 (1.30); paced 1.08-1.38 (1.135) → 0.89-1.16 (1.095); alone
/// 1.000. With the queue readings of before 2026-11-29 (docs/
/// congestion.md §3.2 item 16) the unpaced runs read 1.24-1.96.
#[test]
fn hybrid_backs_off_with_others_on_a_shallow_buffer() {
    use congestion::HybridConfig;
    let cfg = |sympathetic_range: f64| HybridConfig {
        sympathetic_range,
        friendly_increase_shallow: false,
        ..Default::default()
    };
    let default = HybridConfig::default().sympathetic_range;
    for (other, worst) in [(Algo::Cubic, 2.0), (Algo::CubicHystart, 1.25)] {
        let ((with, alone), (without, _)) = (
            shallow_buffer_runs(cfg(default), other),
            shallow_buffer_runs(cfg(0.0), other),
        );
        eprintln!("{other:?}: with {with:.2?}, without {without:.2?}, alone {alone:.3}");
        assert!(
            with[9] < without[9] && with[4] < without[4],
            "{other:?}: {with:?} vs {without:?}"
        );
        assert!(with[9] <= worst, "{other:?}: {with:?}");
        assert!(alone >= 0.95, "{alone}");
    }
}

/// On the same shallow buffer hybrid's backoffs are CUBIC's 0.7 (the
/// loss/queue-peak correlation test, the sympathetic backoff), but the
/// queue rarely exceeds the tolerance, so the increase stayed Reno's 1
/// where CUBIC's Reno-friendly region grows by 0.53. The friendly increase
/// on shallow buffers brings hybrid from 1.03-1.65x CUBIC's rate (median
/// 1.30) to 0.56-1.16x (median 0.935); alone it keeps 1.00 of the link.
/// (Before the queue readings of docs/congestion.md §3.2 item 16:
/// 1.24-1.96x → 0.75-1.30x.)
#[test]
fn hybrid_grows_like_a_loss_based_flow_on_a_shallow_buffer() {
    use congestion::HybridConfig;
    let ((with, alone), (without, _)) = (
        shallow_buffer_runs(HybridConfig::default(), Algo::Cubic),
        shallow_buffer_runs(
            HybridConfig {
                friendly_increase_shallow: false,
                ..Default::default()
            },
            Algo::Cubic,
        ),
    );
    eprintln!("with {with:.2?}, without {without:.2?}");
    assert!(
        with[9] < without[9] && with[4] < without[4],
        "{with:?} vs {without:?}"
    );
    assert!(with[9] <= 1.5, "{with:?}");
    assert!(alone >= 0.95, "{alone}");
}

/// On the emulated link a buffer of a quarter of the BDP (25 kB, 10 ms)
/// shows a queue range of 0.26-0.28 RTTmin (the link's timer noise adds to
/// the buffer's 10 ms), so with the range limit at 0.25 it did not count as
/// shallow, and hybrid took 1.45-1.52 times the share of ngtcp2's and
/// quic-go's CUBIC (median of six runs). The limit is now 0.43: below it
/// Equation (1) backs off less than CUBIC's 0.7 at an overflow. Here the
/// noise is up to 3 ms of ACK jitter on a 10 ms buffer, against an unpaced
/// CUBIC at ten offsets: hybrid / CUBIC 0.92-1.46 (median 1.26) with the
/// old limit, 0.80-1.29 (1.04) with the new one; alone 0.999 of the link.
#[test]
fn hybrid_counts_a_quarter_bdp_buffer_as_shallow() {
    use congestion::HybridConfig;
    let run = |sympathetic_range: f64| {
        buffer_runs_jitter(
            HybridConfig {
                sympathetic_range,
                ..Default::default()
            },
            Algo::Cubic,
            ms(10),
            ms(3),
        )
    };
    let ((with, alone), (old, _)) = (run(HybridConfig::default().sympathetic_range), run(0.25));
    eprintln!("default {with:.2?}, 0.25 {old:.2?}, alone {alone:.3}");
    assert!(
        with[9] <= 1.35 && with[9] < old[9] && with[4] < old[4],
        "{with:?} vs {old:?}"
    );
    assert!(alone >= 0.95, "{alone}");
}

/// Alone on a 4 ms buffer (10 % of the BDP) with ACK jitter, as on the
/// emulated link: the queue rose from the tolerance to an overflow in
/// about as long as a drain probe waits, and once an overflow came first
/// the flow sawed between 0.7 and 1.1 BDP at CUBIC's increase (0.91-0.92
/// of the link). The shallow-buffer guard backs off by Equation (1) as
/// the queue nears the range's top while the flow has the link nearly to
/// itself: 0.98-1.00. (Without jitter the probe came first every time.)
/// Against CUBIC the guard stays off (the shallow-buffer tests above).
#[test]
fn hybrid_alone_on_a_shallow_buffer_does_not_overflow_with_ack_jitter() {
    use congestion::HybridConfig;
    let util = |shallow_guard: f64, jitter_us: u64, seed: u64| {
        let mut link = LinkConfig::bdp_buffer(20.0, ms(40))
            .with_ack_jitter(Duration::from_micros(jitter_us))
            .with_seed(seed);
        link.buffer_bytes = (20e6 / 8.0 * 0.004) as usize;
        let mut sim = Simulation::new(link);
        sim.add_flow(coded_hybrid(
            HybridConfig {
                shallow_guard,
                ..Default::default()
            },
            ms(40),
        ));
        sim.run(secs(10), secs(1)).utilisation
    };
    let guard = HybridConfig::default().shallow_guard;
    for jitter in [500, 1000] {
        for seed in 1..=3 {
            let (with, without) = (util(guard, jitter, seed), util(0.0, jitter, seed));
            eprintln!("jitter {jitter} us, seed {seed}: {with:.3} (without {without:.3})");
            assert!(with >= 0.97 && without <= 0.93, "{with} vs {without}");
        }
    }
}

/// Alone on a link whose capacity swings (a square wave between 20 and 4
/// Mbit/s every 2 s, a 1000-packet buffer, no loss), a capacity drop leaves
/// a queue that an Equation (1) backoff cannot drain, which the drain check
/// takes for another flow's. The recheck (cut to the measured
/// bandwidth-delay product: alone the queue empties) refuses or leaves the
/// competitive mode, whose CUBIC-like growth otherwise fills the deep
/// buffer; against CUBIC holding a one-BDP queue the mode still engages and
/// keeps hybrid's share. The comparison is without the share balance, whose
/// give-back (a lone flow's capacity share reads ahead of the empty rest)
/// also ends a false mode.
#[test]
fn hybrid_rechecks_the_competitive_mode_on_a_varying_link() {
    use congestion::sim::RateSchedule;
    use congestion::{CommonConfig, HybridConfig};
    let hybrid = |recheck: Duration| {
        coded_hybrid(
            HybridConfig {
                competitive_recheck: recheck,
                competitive_share_balance: !recheck.is_zero(),
                ..Default::default()
            },
            ms(40),
        )
    };
    let alone = |recheck: Duration| {
        let mut link = LinkConfig::bdp_buffer(20.0, ms(40));
        link.buffer_bytes = 1000 * CommonConfig::default().mss;
        let mut sim = Simulation::new(link);
        sim.with_rate_schedule(RateSchedule::square(20_000_000, 4_000_000, secs(4)).unwrap());
        sim.add_flow(hybrid(recheck));
        let r = sim.run(secs(60), secs(5));
        let comp = r.flows[0].mean_metric("competitive").unwrap_or(0.0);
        (r.utilisation, r.mean_queue_bytes, comp)
    };
    let default = HybridConfig::default().competitive_recheck;
    let (with, without) = (alone(default), alone(Duration::ZERO));
    let vs_cubic = |recheck: Duration| {
        let r = pair(
            hybrid(recheck),
            Algo::Cubic.flow(ms(40)),
            LinkConfig::bdp_buffer(20.0, ms(40)),
            secs(30),
            secs(10),
        );
        let comp = r.flows[0].mean_metric("competitive").unwrap_or(0.0);
        (ratio(&r), comp)
    };
    let (shared, shared_without) = (vs_cubic(default), vs_cubic(Duration::ZERO));
    eprintln!(
        "alone (utilisation, mean queue, competitive share of time): with {with:.3?}, \
         without {without:.3?}; vs CUBIC (share ratio, competitive share of time): \
         with {shared:.2?}, without {shared_without:.2?}"
    );
    assert!(without.2 > 0.2, "{without:?}");
    assert!(with.2 < without.2 / 2.0, "{with:?} vs {without:?}");
    assert!(with.1 < without.1 / 2.0, "{with:?} vs {without:?}");
    assert!(with.0 >= 0.85, "{with:?}");
    assert!(shared.1 > 0.5, "{shared:?}");
    assert!(
        (0.7..=1.43).contains(&shared.0),
        "{shared:?} vs {shared_without:?}"
    );
}

/// The downlink of a public LTE trace (`../shared/traces`, or
/// `QNC_TRACE_DIR`) in 1 ms steps; `None`, saying so, when it is missing.
fn lte_trace(name: &str) -> Option<congestion::sim::RateSchedule> {
    let dir = std::env::var("QNC_TRACE_DIR")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/traces").into());
    let path = std::path::Path::new(&dir).join(name);
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("skipped: {} not found (set QNC_TRACE_DIR)", path.display());
        return None;
    };
    let opportunities: Vec<u64> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| {
            l.parse()
                .unwrap_or_else(|_| panic!("{}: not a millisecond count: {l:?}", path.display()))
        })
        .collect();
    Some(
        congestion::sim::RateSchedule::from_opportunities(&opportunities, 1500, ms(1))
            .unwrap_or_else(|| panic!("{}: no delivery opportunities", path.display())),
    )
}

/// Under random loss only losses at a queue peak back off by Equation (1)
/// ([`HybridConfig::random_loss_peak_backoff`]). Alone on the T-Mobile LTE
/// trace (60 s from three offsets, 1000-packet buffer, 40 ms, 10 ms of
/// ACK jitter), 2 % loss on data and ACKs then costs at most a few per cent
/// of the loss-free throughput at every offset (0.93-0.95 of it), where
/// Equation (1) at every loss above the tolerance cost 15-20 % (0.80-0.85),
/// and the queue stays below the loss-free flow's.
#[test]
fn hybrid_keeps_its_loss_free_throughput_under_random_loss_on_a_varying_link() {
    use congestion::{CommonConfig, HybridConfig};
    let Some(schedule) = lte_trace("TMobile-LTE-short.down") else {
        return;
    };
    // Per offset: (utilisation, p95 queueing delay).
    let run = |peak: bool, p: f64| -> Vec<(f64, Duration)> {
        [0u64, 40, 80]
            .into_iter()
            .enumerate()
            .map(|(i, offset)| {
                let mut link = LinkConfig::bdp_buffer(10.0, ms(40))
                    .with_loss(p, p)
                    .with_ack_jitter(ms(10));
                link.seed = i as u64 + 1;
                link.buffer_bytes = 1000 * CommonConfig::default().mss;
                let mut sim = Simulation::new(link);
                sim.with_rate_schedule(schedule.shifted(secs(offset)));
                sim.add_flow(coded_hybrid(
                    HybridConfig {
                        random_loss_peak_backoff: peak,
                        ..Default::default()
                    },
                    ms(40),
                ));
                let r = sim.run(secs(60), Duration::ZERO);
                (r.utilisation, r.queue_delay_quantile(0.95))
            })
            .collect()
    };
    let (clean, with, without) = (run(true, 0.0), run(true, 0.02), run(false, 0.02));
    eprintln!(
        "(utilisation, p95 queueing delay) per offset: loss-free {clean:.3?}, \
         2 % loss {with:.3?}, 2 % loss with Equation (1) at every loss {without:.3?}"
    );
    assert_eq!(
        clean,
        run(false, 0.0),
        "loss-free, the rule changes nothing"
    );
    for ((c, w), wo) in clean.iter().zip(&with).zip(&without) {
        assert!(w.0 >= 0.9 * c.0, "{with:?} vs {clean:?}");
        assert!(w.0 >= wo.0 + 0.05, "{with:?} vs {without:?}");
        assert!(w.1 <= c.1, "{with:?} vs {clean:?}");
    }
}

/// The recheck's timing ([`HybridConfig::competitive_recheck_timing`]).
/// Alone on the Verizon LTE trace (60 s from three offsets, 1000-packet
/// buffer, 40 ms), a recheck that starts at the queue's peak, where a
/// capacity drop has just left a queue, finds it held and keeps the flow in
/// the competitive mode, whose CUBIC-like growth fills the deep buffer;
/// waiting for the middle of the queue's recent range keeps it out. Against
/// CUBIC the mode still engages. Skipped without the public traces
/// (`../shared/traces`, or `QNC_TRACE_DIR`).
#[test]
fn hybrid_times_its_recheck_away_from_the_queue_peak() {
    use congestion::{CommonConfig, HybridConfig};
    let Some(schedule) = lte_trace("Verizon-LTE-short.down") else {
        return;
    };
    let hybrid = |timing: bool| {
        coded_hybrid(
            HybridConfig {
                competitive_recheck_timing: timing,
                ..Default::default()
            },
            ms(40),
        )
    };
    // Per offset: (utilisation, p95 queueing delay, time in the mode).
    let alone = |timing: bool| -> Vec<(f64, Duration, f64)> {
        [0u64, 40, 80]
            .into_iter()
            .enumerate()
            .map(|(i, offset)| {
                let mut link = LinkConfig::bdp_buffer(10.0, ms(40)).with_ack_jitter(ms(10));
                link.seed = i as u64 + 1;
                link.buffer_bytes = 1000 * CommonConfig::default().mss;
                let mut sim = Simulation::new(link);
                sim.with_rate_schedule(schedule.shifted(secs(offset)));
                sim.add_flow(hybrid(timing));
                let r = sim.run(secs(60), Duration::ZERO);
                let comp = r.flows[0].mean_metric("competitive").unwrap_or(0.0);
                (r.utilisation, r.queue_delay_quantile(0.95), comp)
            })
            .collect()
    };
    let (with, without) = (alone(true), alone(false));
    let vs_cubic = pair(
        hybrid(true),
        Algo::Cubic.flow(ms(40)),
        LinkConfig::bdp_buffer(20.0, ms(40)),
        secs(30),
        secs(10),
    );
    let shared = (
        ratio(&vs_cubic),
        vs_cubic.flows[0].mean_metric("competitive").unwrap_or(0.0),
    );
    eprintln!(
        "alone (utilisation, p95 queueing delay, time in the mode): with {with:.3?}, \
         without {without:.3?}; vs CUBIC (share ratio, time in the mode): {shared:.2?}"
    );
    let mode = |v: &[(f64, Duration, f64)]| v.iter().map(|r| r.2).sum::<f64>();
    let worst_p95 = |v: &[(f64, Duration, f64)]| v.iter().map(|r| r.1).max().unwrap();
    assert!(mode(&without) > 0.2, "{without:?}");
    assert!(
        mode(&with) < mode(&without) / 4.0,
        "{with:?} vs {without:?}"
    );
    assert!(
        worst_p95(&with) < worst_p95(&without) / 4,
        "{with:?} vs {without:?}"
    );
    for (w, wo) in with.iter().zip(&without) {
        assert!(w.0 >= wo.0 - 0.05, "{with:?} vs {without:?}");
    }
    assert!(shared.1 > 0.5, "{shared:?}");
    assert!((0.7..=1.43).contains(&shared.0), "{shared:?}");
}

/// The CUBIC stacks on the emulated link (quiche, ngtcp2, quic-go) end slow
/// start with HyStart++ (RFC 9406), which the simulator's CUBIC models
/// with `hystart` (`cubic-hystart`, `cubic-rollback-hystart`). Alone on a
/// loss-free buffer of four BDPs, slow start then ends on the delay rise,
/// and only conservative slow start's growth (a quarter, for five rounds)
/// overflows the buffer: a fifth of the drops. (On a one-BDP buffer it
/// makes no difference: the
/// round minimum rises one round after the queue begins, and the round
/// that doubles the window past the BDP overflows that buffer.)
#[test]
fn cubic_hystart_ends_slow_start_before_the_overflow() {
    let alone = |algo: Algo| {
        let mut link = LinkConfig::bdp_buffer(20.0, ms(40));
        link.buffer_bytes *= 4;
        let mut sim = Simulation::new(link);
        sim.add_flow(algo.flow(ms(40)));
        let r = sim.run(secs(2), secs(1));
        (r.flows[0].queue_drops, r.utilisation)
    };
    let (plain_drops, plain_util) = alone(Algo::Cubic);
    let (hs_drops, hs_util) = alone(Algo::CubicHystart);
    println!(
        "cubic alone, first 2 s: {plain_drops} queue drops, utilisation {plain_util:.3}; \
         with HyStart++: {hs_drops}, {hs_util:.3}"
    );
    assert!(
        plain_drops >= 20,
        "slow start without HyStart++ overflows: {plain_drops}"
    );
    assert!(hs_drops * 4 <= plain_drops, "{hs_drops} vs {plain_drops}");
    assert!(hs_util > 0.9, "{hs_util}");
}

/// The start against CUBIC, measured as the emulated link's 20 MB cells
/// are: shares from the start over the 9 s both run (hybrid's receiver
/// acknowledging every packet, CUBIC's every second one, as ours and
/// ngtcp2's clients do). Hybrid's slow start ends on the delay both flows
/// cause, CUBIC's at the overflow with several times the window, and
/// measured from 3 s over 20 s (`simcompete`'s default) that deficit
/// hardly shows. The start entry and the share read from the capacity
/// (docs/congestion.md §3.4) take it back within the transfer: median of
/// five seeds 1.25 here (the top of the band), 0.48 without them
/// (`simcompete hybrid cubic 7 9 0`, third column: 1.23). With the own
/// rate averaged per ACK event and the reduction-read reference this read
/// 0.80; before the paced pairs and the spread test of the capacity
/// estimate, 1.02. On the link the same start reads 0.95-1.13 (medians of
/// 10 runs against the four CUBICs, docs/results.md §5).
#[test]
fn hybrid_recovers_the_start_deficit_against_cubic() {
    use congestion::HybridConfig;
    let median = |cfg: HybridConfig| {
        let mut r: Vec<f64> = (1..=5u64)
            .map(|seed| {
                let mut link = LinkConfig::bdp_buffer(20.0, ms(40));
                link.seed = seed;
                let mut sim = Simulation::new(link);
                sim.add_flow(coded_hybrid(cfg, ms(40)).starting_at(ms(seed * 7)));
                let mut cubic = Algo::Cubic.flow(ms(40));
                cubic.acks = AckPolicy::quiche();
                sim.add_flow(cubic);
                ratio(&sim.run(secs(9), Duration::ZERO))
            })
            .collect();
        r.sort_by(f64::total_cmp);
        r[2]
    };
    let with = median(HybridConfig::default());
    let without = median(HybridConfig {
        competitive_start_entry: false,
        competitive_capacity_share: false,
        ..HybridConfig::default()
    });
    println!("hybrid / cubic over the first 9 s: {with:.2}, without the start entry and the capacity share {without:.2}");
    assert!((0.75..=1.25).contains(&with), "{with}");
    assert!(with > without + 0.2, "{with} vs {without}");
}

/// Four hybrid flows started 200 and 300 ms apart, staggers at which they
/// do enter the competitive mode (a start entry, then the others follow;
/// docs/congestion.md §7 item 3). With the share balance's reference as
/// the rest of the capacity (one competitor), each read itself behind at
/// a quarter, skipped congestion events and grew towards half the link:
/// 2 358-3 388 queue drops per flow in 20 s. Counting the flows whose
/// catch-up does not raise the share (`competitive_share_flows`) keeps
/// them at 177-398, against 10-300 for four CUBIC flows
/// (`examples/simstagger.rs`).
#[test]
fn equal_hybrids_in_the_mode_count_each_other() {
    let drops = |share_flows: bool, stagger: u64| {
        let mut sim = Simulation::new(LinkConfig::bdp_buffer(20.0, ms(40)));
        for k in 0..4u64 {
            let cfg = congestion::HybridConfig {
                competitive_share_flows: share_flows,
                ..Default::default()
            };
            sim.add_flow(coded_hybrid(cfg, ms(40)).starting_at(ms(stagger * k)));
        }
        let r = sim.run(secs(20), secs(3));
        r.flows.iter().map(|f| f.queue_drops).max().unwrap_or(0)
    };
    for stagger in [200, 300] {
        let (with, without) = (drops(true, stagger), drops(false, stagger));
        eprintln!(
            "{stagger} ms apart: most queue drops of a flow {with}, without counting {without}"
        );
        assert!(
            with < 1_000 && without > 2 * with,
            "{stagger} ms: {with} vs {without}"
        );
    }
}

/// Four hybrid flows on one bottleneck, each acknowledged packet by packet
/// (so each reads the capacity share): an equal share is a quarter of the
/// capacity, which must not read as "another flow holds the queue". With
/// the first share entry (`competitive_share_entry` at a quarter, without
/// its overflow test) all four entered the competitive mode and filled
/// the buffer: here 94-100 % of the time in the mode and 12 283 queue
/// drops, on the emulated link about 5 000 queue drops per flow and 20 MB,
/// against 1-21 without it.
/// The flows start 10 ms apart here; other staggers still end in the mode
/// without the share entry (`examples/simstagger.rs`, docs/congestion.md
/// §7 item 3).
#[test]
fn four_hybrids_keep_out_of_the_competitive_mode() {
    for (p, seed) in [(0.0, 1), (0.0, 2), (0.05, 1)] {
        let mut sim = Simulation::new(
            LinkConfig::bdp_buffer(20.0, ms(40))
                .with_loss(p, p)
                .with_seed(seed),
        );
        for k in 0..4u64 {
            let cfg = congestion::HybridConfig::default();
            let f = coded_hybrid(cfg, ms(40)).starting_at(ms(10 * k));
            sim.add_flow(f);
        }
        let r = sim.run(secs(20), secs(3));
        let competitive: Vec<f64> = r
            .flows
            .iter()
            .map(|f| f.mean_metric("competitive").unwrap_or(0.0))
            .collect();
        let drops: u64 = r.flows.iter().map(|f| f.queue_drops).sum();
        eprintln!("p {p} seed {seed}: competitive {competitive:.2?}, queue drops {drops}");
        assert!(
            competitive.iter().all(|&c| c < 0.25),
            "p {p} seed {seed}: time in the competitive mode {competitive:.2?}"
        );
    }
}
