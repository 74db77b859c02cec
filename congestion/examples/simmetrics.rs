//! One run of two flows on `simcompete`'s link (20 Mbit/s, RTT 40 ms,
//! one-BDP buffer), printing each flow's controller state every 100 ms:
//! the simulator's counterpart of reading `nc:cc_state` in a qlog
//! (docs/qlog.md), to see why a seed of `simcompete` went the way it did.
//!
//! `cargo run -p congestion --example simmetrics --release -- A B A_START_MS B_START_MS [SEED] [ACKS] [JITTER_US]`
//!
//! A and B are simulator names (`hybrid`, `cubic-rollback`, ...); ACKS is
//! `every` (default), `quiche` (both receivers acknowledge every second
//! packet) or `mixed` (B's only); JITTER_US adds uniform 0..J µs to every
//! ACK. One line per flow and sample: time in s, flow (A or B), window in
//! bytes, sRTT in ms, bottleneck queue in bytes, then the metrics as
//! `name=value`. The last line gives the run's A/B ratio over the time
//! both flows ran. `simcompete`'s "B 2 s ahead" cell, seed 7, is
//! `-- hybrid cubic-rollback 2049 0 7`.

use std::time::Duration;

use congestion::sim::{AckPolicy, Algo, LinkConfig, Simulation};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = || -> ! {
        eprintln!(
            "usage: simmetrics A B A_START_MS B_START_MS [SEED] [every|quiche|mixed] [JITTER_US]"
        );
        std::process::exit(2)
    };
    let algo = |i: usize| {
        let n = args.get(i).unwrap_or_else(|| usage());
        Algo::parse(n).unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(2)
        })
    };
    let num = |i: usize, default: Option<u64>| match args.get(i).map(|s| s.parse::<u64>()) {
        Some(Ok(v)) => v,
        None if default.is_some() => default.unwrap_or_default(),
        _ => usage(),
    };
    let (a, b) = (algo(0), algo(1));
    let (a_start, b_start) = (num(2, None), num(3, None));
    let seed = num(4, Some(1));
    let acks = args.get(5).map_or("every", String::as_str);
    let jitter = num(6, Some(0));
    let ms = Duration::from_millis;

    let link = LinkConfig::bdp_buffer(20.0, ms(40))
        .with_seed(seed)
        .with_ack_jitter(Duration::from_micros(jitter));
    let mut sim = Simulation::new(link);
    let mut fa = a.flow(ms(40)).starting_at(ms(a_start));
    let mut fb = b.flow(ms(40)).starting_at(ms(b_start));
    match acks {
        "every" => {}
        "quiche" => {
            fa.acks = AckPolicy::quiche();
            fb.acks = AckPolicy::quiche();
        }
        "mixed" => fb.acks = AckPolicy::quiche(),
        _ => usage(),
    }
    sim.add_flow(fa);
    sim.add_flow(fb);
    sim.record_metrics(ms(100));
    let late = ms(a_start.max(b_start));
    let r = sim.run(late + Duration::from_secs(20), late);

    let mut rows: Vec<(Duration, &str, String)> = Vec::new();
    for (flow, label) in r.flows.iter().zip(["A", "B"]) {
        for m in &flow.metrics_trace {
            let mut line = format!(
                "{:.1}\t{label}\t{}\t{:.1}\t{}",
                m.at.as_secs_f64(),
                m.cwnd,
                m.srtt.as_secs_f64() * 1e3,
                m.queue_bytes
            );
            for (n, v) in &m.metrics {
                line += &format!("\t{n}={v:.3}");
            }
            rows.push((m.at, label, line));
        }
    }
    rows.sort_by(|x, y| x.0.cmp(&y.0).then(x.1.cmp(y.1)));
    println!("# t_s\tflow\tcwnd\tsrtt_ms\tqueue_bytes\tmetrics");
    for (_, _, line) in rows {
        println!("{line}");
    }
    println!(
        "# A/B over the 20 s both ran: {:.2}",
        r.flows[0].throughput_bps / r.flows[1].throughput_bps.max(1.0)
    );
}
