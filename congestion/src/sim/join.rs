//! A flow joining behind another that has had the link to itself for about
//! 2 s, over a sweep of start offsets (`examples/simjoin.rs`,
//! docs/congestion.md §7 item 3): where the joiner lands in the other
//! flow's sawtooth decides what its RTTmin includes.

use std::time::Duration;

use super::{AckPolicy, Algo, LinkConfig, Simulation};

/// The joiner's rate over the other flow's, for `runs` runs: run `k`
/// (1-based, seed `k`) starts `joiner` at 2 s + 37 k ms behind `ahead` on
/// 20 Mbit/s, 40 ms, a one-BDP buffer, loss-free, for `secs` seconds, rates
/// from 4 s. With `quiche_acks` both receivers acknowledge every second
/// packet (or after 25 ms), otherwise every packet.
pub fn join_ratios(ahead: Algo, joiner: Algo, runs: u64, secs: u64, quiche_acks: bool) -> Vec<f64> {
    let ms = Duration::from_millis;
    (1..=runs)
        .map(|k| {
            let mut sim = Simulation::new(LinkConfig::bdp_buffer(20.0, ms(40)).with_seed(k));
            let mut first = ahead.flow(ms(40));
            let mut second = joiner.flow(ms(40)).starting_at(ms(2000 + 37 * k));
            if quiche_acks {
                first.acks = AckPolicy::quiche();
                second.acks = AckPolicy::quiche();
            }
            sim.add_flow(first);
            sim.add_flow(second);
            let r = sim.run(Duration::from_secs(secs), Duration::from_secs(4));
            r.flows[1].throughput_bps / r.flows[0].throughput_bps.max(1.0)
        })
        .collect()
}
