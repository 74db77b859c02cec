//! N flows of one algorithm on one bottleneck, each starting a fixed
//! stagger after the one before, for a range of staggers: does a set of
//! equal flows stay out of hybrid's competitive mode and off the buffer's
//! limit? (docs/congestion.md §7; the loss-free four-flow runs of
//! docs/results.md §5.)
//!
//! `cargo run -p congestion --example simstagger --release -- [ALGO] [N] [LOSS] [STAGGERS_MS]`
//! (simulator name, default `hybrid`; N default 4; loss on data and
//! ACKs, default 0; staggers a comma-separated list in milliseconds,
//! default `0,10,20,50,100,200,300,450,800,1200,1500`).
//!
//! 20 Mbit/s, RTT 40 ms, one-BDP buffer, 20 s per run, rates measured from
//! 3 s. One row per stagger: each flow's share of the time in the
//! competitive mode (`-` for controllers without one), its queue drops,
//! max/min of the rates and Jain's index. Loss-free runs do not depend on
//! the seed.

use std::time::Duration;

mod common;

use common::Args;
use congestion::sim::{Algo, LinkConfig, Simulation};

fn main() {
    let args = Args::from_env();
    let algo = args.algo(0, Algo::Hybrid);
    let n: u64 = args.value(
        1,
        4,
        |v| (2..=16).contains(v),
        "N must be an integer in 2..=16",
    );
    let loss: f64 = args.value(
        2,
        0.0,
        |v| (0.0..0.5).contains(v),
        "LOSS must be a probability below 0.5",
    );
    let staggers: Vec<u64> = args
        .text(3)
        .unwrap_or("0,10,20,50,100,200,300,450,800,1200,1500")
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .unwrap_or_else(|_| Args::fail("STAGGERS_MS must be integers"))
        })
        .collect();
    let ms = Duration::from_millis;
    println!(
        "# {n} x {}: 20 Mbit/s, 40 ms, BDP buffer, loss {loss}, 20 s, rates from 3 s",
        algo.name()
    );
    println!("| stagger | time in the mode | queue drops | max/min | Jain |");
    println!("|---|---|---|---|---|");
    let (mut flooded, mut total) = (0, 0);
    for st in staggers {
        let link = LinkConfig::bdp_buffer(20.0, ms(40))
            .with_loss(loss, loss)
            .with_seed(1);
        let mut sim = Simulation::new(link);
        for k in 0..n {
            sim.add_flow(algo.flow(ms(40)).starting_at(ms(st * k)));
        }
        let r = sim.run(Duration::from_secs(20), Duration::from_secs(3));
        let list = |v: Vec<String>| v.join(" ");
        let mode = list(
            r.flows
                .iter()
                .map(|f| {
                    f.mean_metric("competitive")
                        .map_or("-".to_string(), |c| format!("{c:.2}"))
                })
                .collect(),
        );
        let drops: Vec<u64> = r.flows.iter().map(|f| f.queue_drops).collect();
        let rates: Vec<f64> = r.flows.iter().map(|f| f.throughput_bps).collect();
        let (lo, hi) = rates
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
        let sum: f64 = rates.iter().sum();
        let sq: f64 = rates.iter().map(|x| x * x).sum();
        let jain = sum * sum / (rates.len() as f64 * sq.max(1e-9));
        total += 1;
        // CUBIC-like flows drop up to a few hundred packets each in 20 s
        // (congestion.md §7 item 3); a flood drops thousands.
        if drops.iter().any(|&d| d > 500) {
            flooded += 1;
        }
        println!(
            "| {st} ms | {mode} | {} | {:.2} | {jain:.3} |",
            list(drops.iter().map(u64::to_string).collect()),
            hi / lo.max(1.0)
        );
    }
    println!("\n{flooded} of {total} staggers with a flow above 500 queue drops");
}
