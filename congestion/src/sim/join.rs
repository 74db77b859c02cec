//! A flow joining behind another that has had the link to itself for about
//! 2 s, over a sweep of start offsets (`examples/simjoin.rs`,
//! docs/congestion.md §7 item 3): where the joiner lands in the other
//! flow's sawtooth decides what its RTTmin includes.

use std::time::Duration;

use super::{AckPolicy, Algo, LinkConfig, Simulation};

/// One run of [`join_runs`]: the joiner's rate over the other flow's, and
/// what the joiner's controller reported (zero for controllers without
/// these metrics).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JoinRun {
    /// When the joiner started.
    pub start: Duration,
    /// The joiner's rate over the other flow's.
    pub ratio: f64,
    /// The fraction of the measurement interval hybrid spent in its
    /// competitive mode.
    pub mode_time: f64,
    /// The mean loss rate of packets that met no queue peak (hybrid's
    /// random-loss estimate, which gates the mode at 0.2 %).
    pub off_peak_loss: f64,
}

/// The joiner's rate over the other flow's, for `runs` runs: run `k`
/// (1-based, seed `k`) starts `joiner` at 2 s + 37 k ms behind `ahead` on
/// 20 Mbit/s, 40 ms, a one-BDP buffer, loss-free, for `secs` seconds, rates
/// from 4 s. With `quiche_acks` both receivers acknowledge every second
/// packet (or after 25 ms), otherwise every packet.
pub fn join_runs(
    ahead: Algo,
    joiner: Algo,
    runs: u64,
    secs: u64,
    quiche_acks: bool,
) -> Vec<JoinRun> {
    let ms = Duration::from_millis;
    (1..=runs)
        .map(|k| {
            let mut sim = Simulation::new(LinkConfig::bdp_buffer(20.0, ms(40)).with_seed(k));
            let start = ms(2000 + 37 * k);
            let mut first = ahead.flow(ms(40));
            let mut second = joiner.flow(ms(40)).starting_at(start);
            if quiche_acks {
                first.acks = AckPolicy::quiche();
                second.acks = AckPolicy::quiche();
            }
            sim.add_flow(first);
            sim.add_flow(second);
            let r = sim.run(Duration::from_secs(secs), Duration::from_secs(4));
            let j = &r.flows[1];
            JoinRun {
                start,
                ratio: j.throughput_bps / r.flows[0].throughput_bps.max(1.0),
                mode_time: j.mean_metric("competitive").unwrap_or(0.0),
                off_peak_loss: j.mean_metric("off_peak_loss").unwrap_or(0.0),
            }
        })
        .collect()
}

/// [`join_runs`]' ratios alone.
pub fn join_ratios(ahead: Algo, joiner: Algo, runs: u64, secs: u64, quiche_acks: bool) -> Vec<f64> {
    join_runs(ahead, joiner, runs, secs, quiche_acks)
        .iter()
        .map(|r| r.ratio)
        .collect()
}
