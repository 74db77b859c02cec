//! Hybrid joining behind another flow that has had the link to itself for
//! about 2 s, over a sweep of start offsets: the simulator's view of the
//! "CUBIC 2 s ahead" cells of docs/results.md §5, where hybrid starves in
//! some runs. The joiner's RTTmin includes part of the other flow's
//! standing queue, and where the sweep lands in that flow's sawtooth decides
//! whether hybrid's first recheck reads the queue as drained
//! (docs/congestion.md §7 item 3).
//!
//! `cargo run -p congestion --example simjoin --release -- [OTHER] [RUNS] [SECS]`
//! (simulator name of the flow ahead, default `cubic-rollback`, quiche's
//! CUBIC; RUNS offsets, default 40; SECS per run, default 20).
//!
//! 20 Mbit/s, RTT 40 ms, one-BDP buffer, loss-free. Run `k` starts hybrid
//! at 2 s + 37 k ms (spanning more than one period of the other flow's
//! sawtooth) with seed `k`, once with every packet acknowledged and once
//! with quiche-like ACKs at both receivers. Rates from 4 s (after the
//! last start) to the end. Prints hybrid's rate over the other flow's:
//! median (min-max), how many runs are in 0.8-1.25 and below 0.5, and
//! every run's ratio; then, for the sweep with every packet acknowledged,
//! each run's start, ratio, hybrid's time in its competitive mode and its
//! mean off-peak (random) loss estimate, and how many starving runs never
//! entered the mode or had that estimate at or above the mode's gate
//! (`HybridConfig::competitive_max_random_loss`).

mod common;

use common::Args;
use congestion::sim::{join_runs, Algo, JoinRun};
use congestion::HybridConfig;

fn main() {
    let args = Args::from_env();
    let other = args.algo(0, Algo::CubicRollback);
    let runs: u64 = args.value(
        1,
        40,
        |v| (1..=54).contains(v),
        "RUNS must be an integer in 1..=54 (offsets up to 4 s)",
    );
    let secs: u64 = args.value(
        2,
        20,
        |v| *v >= 10,
        "SECS must be an integer of at least 10",
    );
    println!(
        "# hybrid joining {} at 2 s + 37 k ms, k = 1..={runs}: 20 Mbit/s, 40 ms, BDP buffer, {secs} s, rates from 4 s",
        other.name()
    );
    println!(
        "| ACKs | hybrid / {} | in 0.8-1.25 | below 0.5 | per run |",
        other.name()
    );
    println!("|---|---|---|---|---|");
    let mut detail = Vec::new();
    for (label, quiche) in [("every packet", false), ("quiche-like", true)] {
        let runs_out = join_runs(other, Algo::Hybrid, runs, secs, quiche);
        let ratios: Vec<f64> = runs_out.iter().map(|r| r.ratio).collect();
        let mut sorted = ratios.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        let band = ratios.iter().filter(|r| (0.8..=1.25).contains(*r)).count();
        let starved = ratios.iter().filter(|&&r| r < 0.5).count();
        let all: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
        println!(
            "| {label} | {median:.2} ({:.2}-{:.2}) | {band}/{runs} | {starved}/{runs} | {} |",
            sorted[0],
            sorted[sorted.len() - 1],
            all.join(" ")
        );
        if !quiche {
            detail = runs_out;
        }
    }
    // Why runs starve (every packet acknowledged): whether hybrid was in
    // its competitive mode, and its random-loss estimate, which keeps the
    // mode's entries closed at or above the gate.
    let gate = HybridConfig::default().competitive_max_random_loss;
    println!(
        "\n| run | start s | hybrid / {} | time in the mode | off-peak loss % |",
        other.name()
    );
    println!("|---|---|---|---|---|");
    for (k, r) in detail.iter().enumerate() {
        println!(
            "| {} | {:.3} | {:.2} | {:.2} | {:.2} |",
            k + 1,
            r.start.as_secs_f64(),
            r.ratio,
            r.mode_time,
            100.0 * r.off_peak_loss
        );
    }
    let low: Vec<&JoinRun> = detail.iter().filter(|r| r.ratio < 0.5).collect();
    let never = low.iter().filter(|r| r.mode_time < 0.05).count();
    let gated = low.iter().filter(|r| r.off_peak_loss >= gate).count();
    let gated_ok = detail
        .iter()
        .filter(|r| r.ratio >= 0.5 && r.off_peak_loss >= gate)
        .count();
    println!(
        "\nbelow 0.5: {} runs; {never} of them under 5 % of the time in the mode; {gated} with a mean off-peak loss of {} % or more (of the other {} runs: {gated_ok})",
        low.len(),
        100.0 * gate,
        detail.len() - low.len()
    );
}
