//! One flow over a bottleneck whose rate follows a cellular trace
//! (mahimahi format, in 1 ms steps, the trace's resolution), with and
//! without random loss on data and ACKs, and 0-10 ms of ACK-path jitter
//! standing in for the uplink trace that carries the ACKs on the emulated
//! link: the simulator's view of `make bench-cellular`.
//!
//! `cargo run -p congestion --example simtrace --release -- TRACE [BUFFER_PKTS] [SECS]`
//!
//! Prints, per controller and loss rate, the utilisation of the offered
//! capacity (median and min-max over three trace offsets), queue drops per
//! 10 MB, the mean queue, the 95th percentile of the per-packet queueing
//! delay (median and min-max) and, for hybrid, the share of time spent in its
//! competitive mode.

use std::time::Duration;

use congestion::sim::{Algo, CodingModel, FlowSpec, LinkConfig, RateSchedule, Simulation};
use congestion::{CommonConfig, Hybrid, HybridConfig};

/// Step of the binned trace.
const STEP_MS: u64 = 1;
/// ACK-path jitter (uniform in 0..JITTER_MS).
const JITTER_MS: u64 = 10;
const ALGOS: [Algo; 4] = [Algo::Hybrid, Algo::Cubic, Algo::Bbr, Algo::Ctcp];

/// A flow of `algo`, or (`None`) hybrid without its ramp and jitter
/// tolerance (the design before them), for comparison.
fn flow(algo: Option<Algo>, rtt: Duration) -> FlowSpec {
    match algo {
        Some(a) => a.flow(rtt),
        None => {
            let common = CommonConfig::default();
            let h = Hybrid::new(HybridConfig {
                common,
                ramp: 0.0,
                jitter_tolerance: 0.0,
                ..Default::default()
            });
            let mut spec = FlowSpec::new("hybrid-linear", Box::new(h), rtt);
            spec.mss = common.mss;
            spec.paced().with_coding(CodingModel::full())
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: simtrace TRACE [BUFFER_PKTS] [SECS]");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        eprintln!("cannot read {path}: {e}");
        std::process::exit(1)
    });
    let ms: Vec<u64> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
    let buffer_pkts: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100);
    let secs: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(60);
    let schedule = RateSchedule::from_opportunities(&ms, 1500, Duration::from_millis(STEP_MS))
        .unwrap_or_else(|| {
            eprintln!("{path}: no capacity");
            std::process::exit(1)
        });
    let rtt = Duration::from_millis(40);
    println!("# {path}: RTT 40 ms, buffer {buffer_pkts} packets, {secs} s from offsets 0/40/80 s");
    println!(
        "| algo | loss | util median (min-max) | drops/10 MB | mean queue kB | qdelay p95 ms | competitive |"
    );
    println!("|---|---|---|---|---|---|---|");
    for algo in ALGOS.into_iter().map(Some).chain([None]) {
        for p in [0.0, 0.02] {
            let mut runs = Vec::new();
            for (i, offset) in [0u64, 40, 80].into_iter().enumerate() {
                let mut link = LinkConfig::bdp_buffer(10.0, rtt)
                    .with_loss(p, p)
                    .with_ack_jitter(Duration::from_millis(JITTER_MS));
                link.seed = i as u64 + 1;
                let flow = flow(algo, rtt);
                link.buffer_bytes = buffer_pkts * flow.mss;
                let mut sim = Simulation::new(link);
                sim.with_rate_schedule(schedule.shifted(Duration::from_secs(offset)));
                sim.add_flow(flow);
                runs.push(sim.run(Duration::from_secs(secs), Duration::ZERO));
            }
            let mut u: Vec<f64> = runs.iter().map(|r| r.utilisation).collect();
            u.sort_by(f64::total_cmp);
            let drops: f64 = runs.iter().map(|r| r.queue_drops_per_10mb()).sum::<f64>() / 3.0;
            let q: f64 = runs.iter().map(|r| r.mean_queue_bytes).sum::<f64>() / 3.0 / 1e3;
            let mut p95: Vec<f64> = runs
                .iter()
                .map(|r| r.queue_delay_quantile(0.95).as_secs_f64() * 1e3)
                .collect();
            p95.sort_by(f64::total_cmp);
            let comp: Vec<String> = runs
                .iter()
                .filter_map(|r| r.flows[0].mean_metric("competitive"))
                .map(|c| format!("{:.0}%", c * 100.0))
                .collect();
            println!(
                "| {} | {:.0}% | {:.3} ({:.3}-{:.3}) | {:.0} | {:.1} | {:.0} ({:.0}-{:.0}) | {} |",
                algo.map_or("hybrid-linear", Algo::name),
                p * 100.0,
                u[1],
                u[0],
                u[2],
                drops,
                q,
                p95[1],
                p95[0],
                p95[2],
                if comp.is_empty() {
                    "-".to_string()
                } else {
                    comp.join(" ")
                }
            );
        }
    }
}
