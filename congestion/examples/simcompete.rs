//! Two flows on one bottleneck in the four start orders of
//! `nc-experiment --compete` (together, each order; each flow 2 s ahead),
//! five seeds each, with per-packet ACKs, with quiche-like ACKs (every
//! second packet or 25 ms), and with A's receiver acknowledging every packet
//! and B's every second one (on the emulated link our client acknowledges
//! nearly every packet, ngtcp2's and quic-go's clients every second one):
//! the simulator's view of docs/results.md §5.
//!
//! `cargo run -p congestion --example simcompete --release -- [A] [B] [SEEDS] [SECS] [FROM]`
//! (simulator names, default `hybrid cubic-rollback`; `cubic-rollback` is
//! RFC 9438 CUBIC with quiche's rollback of small congestion events;
//! SEEDS runs per cell, default 5).
//!
//! 20 Mbit/s, RTT 40 ms, one-BDP buffer, SECS per run (default 20), shares
//! measured from FROM (default 3 s), both counted from the later flow's
//! start. `5 9 0` is close to the emulated
//! link's 20 MB cells, whose shares cover the overlap from the start
//! (about 9 s together). Prints A's rate over B's, median (min-max), and the time A
//! spent in hybrid's competitive mode (when A is hybrid).

use std::time::Duration;

mod common;

use common::Args;
use congestion::sim::{AckPolicy, Algo, LinkConfig, Simulation};

/// The receivers' ACK policies of a column.
#[derive(Clone, Copy)]
enum Acks {
    Every,
    Quiche,
    Mixed,
}

fn main() {
    let args = Args::from_env();
    let (a, b) = (
        args.algo(0, Algo::Hybrid),
        args.algo(1, Algo::CubicRollback),
    );
    let seeds: u64 = args.value(2, 5, |n| *n > 0, "SEEDS must be a positive integer");
    let secs_msg = "SECS and FROM must be non-negative numbers";
    let secs: f64 = args.value(3, 20.0, |v| *v >= 0.0, secs_msg);
    let from: f64 = args.value(4, 3.0, |v| *v >= 0.0, secs_msg);
    if from >= secs {
        Args::fail("FROM must be less than SECS");
    }
    let ms = Duration::from_millis;
    println!(
        "# {} / {}: 20 Mbit/s, 40 ms, BDP buffer, {secs} s, shares from {from} s, {seeds} seeds",
        a.name(),
        b.name()
    );
    println!("| start | ACK every packet | quiche-like ACKs | A every packet, B every 2nd |");
    println!("|---|---|---|---|");
    let cells = [
        ("together, A first", 0, 0, true),
        ("together, B first", 0, 0, false),
        ("A 2 s ahead", 0, 2000, true),
        ("B 2 s ahead", 2000, 0, false),
    ];
    for (label, a_start, b_start, a_first) in cells {
        let mut line = format!("| {label} |");
        for acks in [Acks::Every, Acks::Quiche, Acks::Mixed] {
            let mut ratios = Vec::new();
            let mut competitive = 0.0;
            for seed in 1..=seeds {
                let mut link = LinkConfig::bdp_buffer(20.0, ms(40));
                link.seed = seed;
                let mut sim = Simulation::new(link);
                // A few ms apart, so that seeds also move the start.
                let mut fa = a.flow(ms(40)).starting_at(ms(a_start + seed * 7));
                let mut fb = b.flow(ms(40)).starting_at(ms(b_start));
                match acks {
                    Acks::Every => {}
                    Acks::Quiche => {
                        fa.acks = AckPolicy::quiche();
                        fb.acks = AckPolicy::quiche();
                    }
                    Acks::Mixed => fb.acks = AckPolicy::quiche(),
                }
                let (ia, ib) = if a_first {
                    sim.add_flow(fa);
                    sim.add_flow(fb);
                    (0, 1)
                } else {
                    sim.add_flow(fb);
                    sim.add_flow(fa);
                    (1, 0)
                };
                // Shares while both run: SECS and FROM count from the later start.
                let late = ms(a_start.max(b_start)).as_secs_f64();
                let r = sim.run(
                    Duration::from_secs_f64(secs + late),
                    Duration::from_secs_f64(from + late),
                );
                ratios.push(r.flows[ia].throughput_bps / r.flows[ib].throughput_bps.max(1.0));
                competitive += r.flows[ia].mean_metric("competitive").unwrap_or(0.0) / seeds as f64;
            }
            ratios.sort_by(f64::total_cmp);
            let n = ratios.len();
            let median = if n % 2 == 1 {
                ratios[n / 2]
            } else {
                (ratios[n / 2 - 1] + ratios[n / 2]) / 2.0
            };
            line += &format!(" {median:.2} ({:.2}-{:.2})", ratios[0], ratios[n - 1]);
            if a == Algo::Hybrid || a == Algo::HybridYield {
                line += &format!(", competitive {:.0} %", competitive * 100.0);
            }
            line += " |";
        }
        println!("{line}");
    }
}
