//! Prints the simulator tables quoted in docs/congestion.md.
//!
//! `cargo run -p congestion --example simtable --release`
//!
//! Everything is deterministic (seeded PRNG, virtual time): the same build
//! prints the same numbers.

use std::time::Duration;

use congestion::sim::{AckPolicy, Algo, FlowSpec, LinkConfig, SimReport, Simulation};
use congestion::CommonConfig;

/// Controllers of Table 6 (shallow buffers).
const SHALLOW_ALGOS: [Algo; 6] = [
    Algo::Aimd,
    Algo::Cubic,
    Algo::Ctcp,
    Algo::CtcpRoundMin,
    Algo::Hybrid,
    Algo::HybridYield,
];

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn secs(v: u64) -> Duration {
    Duration::from_secs(v)
}

fn run(link: LinkConfig, flows: Vec<FlowSpec>, dur: Duration, warm: Duration) -> SimReport {
    let mut sim = Simulation::new(link);
    for f in flows {
        sim.add_flow(f);
    }
    sim.run(dur, warm)
}

fn single_flow_table() {
    let rtt = ms(40);
    println!("### Table 1: one flow, 20 Mbit/s, RTT 40 ms, BDP buffer (100 kB), i.i.d. loss p on data and on ACKs");
    println!();
    println!("Steady state: 40 s simulated, measured over 10..40 s. Start-up: the first 5 s (about 12 MB at line rate).");
    println!();
    println!("| algo | p | utilisation | drops/10 MB | mean queue kB | mean sRTT ms | start-up utilisation | start-up drops |");
    println!("|---|---|---|---|---|---|---|---|");
    let algos = [
        Algo::Aimd,
        Algo::Cubic,
        Algo::Ctcp,
        Algo::CtcpRoundMin,
        Algo::Hybrid,
        Algo::VegasNc,
        Algo::Bbr,
        Algo::BbrAggressive,
    ];
    for algo in algos {
        for p in [0.0, 0.01, 0.02, 0.05, 0.10] {
            let link = LinkConfig::bdp_buffer(20.0, rtt).with_loss(p, p);
            let r = run(link, vec![algo.flow(rtt)], secs(40), secs(10));
            let s = run(link, vec![algo.flow(rtt)], secs(5), Duration::ZERO);
            println!(
                "| {} | {:.2} | {:.3} | {:.1} | {:.1} | {:.1} | {:.3} | {} |",
                algo.name(),
                p,
                r.utilisation,
                r.queue_drops_per_10mb(),
                r.mean_queue_bytes / 1e3,
                r.flows[0].mean_srtt.as_secs_f64() * 1e3,
                s.utilisation,
                s.queue_drops,
            );
        }
    }
    println!();
    println!("Hybrid without any coding feedback (self-estimated erasure rate):");
    println!();
    println!("| p | utilisation | drops/10 MB | start-up drops |");
    println!("|---|---|---|---|");
    for p in [0.0, 0.01, 0.05, 0.10] {
        let link = LinkConfig::bdp_buffer(20.0, rtt).with_loss(p, p);
        let f = || {
            FlowSpec::new(
                "hybrid-nofb",
                Algo::Hybrid.build(CommonConfig::default()),
                rtt,
            )
            .paced()
        };
        let r = run(link, vec![f()], secs(40), secs(10));
        let s = run(link, vec![f()], secs(5), Duration::ZERO);
        println!(
            "| {:.2} | {:.3} | {:.1} | {} |",
            p,
            r.utilisation,
            r.queue_drops_per_10mb(),
            s.queue_drops
        );
    }
    println!();
}

fn padhye_table() {
    let rtt = ms(40);
    println!("### Table 2: AIMD(0.5) alone vs the Padhye square-root model");
    println!();
    println!("100 Mbit/s (never the limit), RTT 40 ms, loss p on data only; 40 s, measured over 10..40 s.");
    println!("Window = delivered packets per sRTT / (1 - p).");
    println!();
    println!("| p | measured pkts/RTT | sqrt(1.5/p) | ratio |");
    println!("|---|---|---|---|");
    for p in [0.005, 0.01, 0.02, 0.05, 0.10] {
        let link = LinkConfig::bdp_buffer(100.0, rtt).with_loss(p, 0.0);
        let r = run(link, vec![Algo::Aimd.flow(rtt)], secs(40), secs(10));
        let f = &r.flows[0];
        let w = f.throughput_bps / 8.0 / 1200.0 * f.mean_srtt.as_secs_f64() / (1.0 - p);
        let model = (1.5 / p).sqrt();
        println!("| {:.3} | {:.2} | {:.2} | {:.2} |", p, w, model, w / model);
    }
    println!();
}

fn pair_table() {
    println!("### Table 3: two flows, 20 Mbit/s, buffer = BDP at 40 ms (100 kB)");
    println!();
    println!("Flow B starts 0.5 s after flow A; 60 s, measured over 10..60 s; p on data and ACKs.");
    println!();
    println!("| flow A | RTT A | flow B | RTT B | p | A Mbit/s | B Mbit/s | A/B | utilisation | drops/10 MB |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let pairs: &[(Algo, u64, Algo, u64, f64)] = &[
        (Algo::Aimd, 40, Algo::Aimd, 40, 0.0),
        (Algo::Cubic, 40, Algo::Cubic, 40, 0.0),
        (Algo::Aimd, 40, Algo::Cubic, 40, 0.0),
        (Algo::Ctcp, 40, Algo::Ctcp, 40, 0.0),
        (Algo::Ctcp, 40, Algo::Aimd, 40, 0.0),
        (Algo::Ctcp, 40, Algo::Cubic, 40, 0.0),
        (Algo::CtcpRoundMin, 40, Algo::CtcpRoundMin, 40, 0.0),
        (Algo::CtcpRoundMin, 40, Algo::Cubic, 40, 0.0),
        (Algo::Hybrid, 40, Algo::Hybrid, 40, 0.0),
        (Algo::Hybrid, 40, Algo::Aimd, 40, 0.0),
        (Algo::Hybrid, 40, Algo::Cubic, 40, 0.0),
        (Algo::Cubic, 40, Algo::Hybrid, 40, 0.0),
        (Algo::HybridYield, 40, Algo::HybridYield, 40, 0.0),
        (Algo::HybridYield, 40, Algo::Cubic, 40, 0.0),
        (Algo::Hybrid, 40, Algo::HybridYield, 40, 0.0),
        (Algo::Bbr, 40, Algo::Cubic, 40, 0.0),
        (Algo::BbrAggressive, 40, Algo::Cubic, 40, 0.0),
        (Algo::Aimd, 40, Algo::Aimd, 40, 0.01),
        (Algo::Ctcp, 40, Algo::Aimd, 40, 0.01),
        (Algo::Hybrid, 40, Algo::Aimd, 40, 0.01),
        (Algo::Hybrid, 40, Algo::Cubic, 40, 0.01),
        (Algo::Hybrid, 40, Algo::Cubic, 40, 0.10),
        (Algo::Hybrid, 40, Algo::Hybrid, 40, 0.10),
    ];
    for &(a, ra, b, rb, p) in pairs {
        let link = LinkConfig::bdp_buffer(20.0, ms(40)).with_loss(p, p);
        let r = run(
            link,
            vec![a.flow(ms(ra)), b.flow(ms(rb)).starting_at(ms(500))],
            secs(60),
            secs(10),
        );
        let (x, y) = (
            r.flows[0].throughput_bps / 1e6,
            r.flows[1].throughput_bps / 1e6,
        );
        println!(
            "| {} | {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.3} | {:.1} |",
            a.name(),
            ra,
            b.name(),
            rb,
            p,
            x,
            y,
            x / y,
            r.utilisation,
            r.queue_drops_per_10mb()
        );
    }
    println!();
    println!(
        "Hybrid joining 5 s after a CUBIC flow (standing queue inflates its RTTmin), loss-free:"
    );
    println!();
    let link = LinkConfig::bdp_buffer(20.0, ms(40));
    let r = run(
        link,
        vec![
            Algo::Cubic.flow(ms(40)),
            Algo::Hybrid.flow(ms(40)).starting_at(secs(5)),
        ],
        secs(60),
        secs(10),
    );
    println!(
        "cubic {:.2} Mbit/s, hybrid {:.2} Mbit/s, hybrid/cubic {:.2}, drops/10 MB {:.1}",
        r.flows[0].throughput_bps / 1e6,
        r.flows[1].throughput_bps / 1e6,
        r.flows[1].throughput_bps / r.flows[0].throughput_bps,
        r.queue_drops_per_10mb()
    );
    println!();
}

fn rtt_table() {
    println!("### Table 4: RTT fairness, T = 40 ms vs 80 ms, 20 Mbit/s");
    println!();
    println!(
        "Ratio of the 40 ms flow's throughput to the 80 ms flow's; (T_j/T_i)^2 = 4, T_j/T_i = 2."
    );
    println!("Loss-free: 8 start offsets of the 80 ms flow (300..2600 ms, as in tests/sim.rs), geometric mean. Lossy: seeds 1..3 (p on data only), geometric mean.");
    println!("40 s runs measured over 10..40 s.");
    println!();
    println!("| algo | buffer | p | runs | mean ratio |");
    println!("|---|---|---|---|---|");
    for algo in [Algo::Aimd, Algo::Ctcp, Algo::CtcpRoundMin, Algo::Hybrid] {
        for (buf, p) in [(40u64, 0.0), (40, 0.005), (10, 0.005), (160, 0.0)] {
            let mut v = Vec::new();
            if p == 0.0 {
                for start in [300, 500, 750, 1100, 1300, 1700, 2100, 2600] {
                    let link = LinkConfig::bdp_buffer(20.0, ms(buf));
                    let r = run(
                        link,
                        vec![algo.flow(ms(40)), algo.flow(ms(80)).starting_at(ms(start))],
                        secs(40),
                        secs(10),
                    );
                    v.push(r.flows[0].throughput_bps / r.flows[1].throughput_bps);
                }
            } else {
                for seed in 1..=3 {
                    let link = LinkConfig::bdp_buffer(20.0, ms(buf))
                        .with_loss(p, 0.0)
                        .with_seed(seed);
                    let r = run(
                        link,
                        vec![algo.flow(ms(40)), algo.flow(ms(80)).starting_at(ms(500))],
                        secs(40),
                        secs(10),
                    );
                    v.push(r.flows[0].throughput_bps / r.flows[1].throughput_bps);
                }
            }
            let mean = (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp();
            let runs: Vec<String> = v.iter().map(|x| format!("{x:.2}")).collect();
            println!(
                "| {} | {} ms | {:.3} | {} | {:.2} |",
                algo.name(),
                buf,
                p,
                runs.join(" "),
                mean
            );
        }
    }
    println!();
}

fn jitter_table() {
    println!("### Table 5: ACK-path jitter (uniform 0..J added to every ACK), one flow, 20 Mbit/s, 40 ms, BDP buffer");
    println!();
    println!("30 s, measured over 10..30 s; utilisation.");
    println!();
    println!("| algo | p | J = 0 | J = 2 ms | J = 5 ms | J = 10 ms |");
    println!("|---|---|---|---|---|---|");
    for algo in [Algo::Ctcp, Algo::CtcpRoundMin, Algo::Hybrid, Algo::VegasNc] {
        for p in [0.02, 0.10] {
            let mut cells = Vec::new();
            for j in [0, 2, 5, 10] {
                let link = LinkConfig::bdp_buffer(20.0, ms(40))
                    .with_loss(p, p)
                    .with_ack_jitter(ms(j));
                let r = run(link, vec![algo.flow(ms(40))], secs(30), secs(10));
                cells.push(format!("{:.3}", r.utilisation));
            }
            println!("| {} | {:.2} | {} |", algo.name(), p, cells.join(" | "));
        }
    }
    println!();
}

fn shallow_table() {
    println!("### Table 6: shallow buffers, loss-free, flow A vs CUBIC (B starts 0.5 s later), 20 Mbit/s, 40 ms");
    println!();
    println!("40 s, measured over 10..40 s. A/B throughput ratio (drops per 10 MB in brackets).");
    println!();
    println!("| flow A | buffer 1.5 ms (3 pkts) | 4 ms (8 pkts) | 10 ms (25% BDP) | 40 ms (BDP) |");
    println!("|---|---|---|---|---|");
    for algo in SHALLOW_ALGOS {
        let mut cells = Vec::new();
        for buf_us in [1500u64, 4000, 10000, 40000] {
            let mut link = LinkConfig::bdp_buffer(20.0, ms(40));
            link.buffer_bytes = (20e6 / 8.0 * buf_us as f64 / 1e6) as usize;
            let r = run(
                link,
                vec![
                    algo.flow(ms(40)),
                    Algo::Cubic.flow(ms(40)).starting_at(ms(500)),
                ],
                secs(40),
                secs(10),
            );
            cells.push(format!(
                "{:.2} ({:.0})",
                r.flows[0].throughput_bps / r.flows[1].throughput_bps,
                r.queue_drops_per_10mb()
            ));
        }
        println!("| {} | {} |", algo.name(), cells.join(" | "));
    }
    println!();
    println!("Single flow on the same buffers: utilisation (drops per 10 MB in brackets).");
    println!();
    println!("| algo | buffer 1.5 ms | 4 ms | 10 ms | 40 ms |");
    println!("|---|---|---|---|---|");
    for algo in SHALLOW_ALGOS {
        let mut cells = Vec::new();
        for buf_us in [1500u64, 4000, 10000, 40000] {
            let mut link = LinkConfig::bdp_buffer(20.0, ms(40));
            link.buffer_bytes = (20e6 / 8.0 * buf_us as f64 / 1e6) as usize;
            let r = run(link, vec![algo.flow(ms(40))], secs(40), secs(10));
            cells.push(format!(
                "{:.3} ({:.0})",
                r.utilisation,
                r.queue_drops_per_10mb()
            ));
        }
        println!("| {} | {} |", algo.name(), cells.join(" | "));
    }
    println!();
    println!("Single flow on the same buffers with i.i.d. loss p on data and ACKs: utilisation (drops per 10 MB).");
    println!();
    println!("| algo | p | buffer 1.5 ms | 4 ms | 10 ms | 40 ms |");
    println!("|---|---|---|---|---|---|");
    for algo in [Algo::Ctcp, Algo::CtcpRoundMin, Algo::Hybrid] {
        for p in [0.02, 0.10] {
            let mut cells = Vec::new();
            for buf_us in [1500u64, 4000, 10000, 40000] {
                let mut link = LinkConfig::bdp_buffer(20.0, ms(40)).with_loss(p, p);
                link.buffer_bytes = (20e6 / 8.0 * buf_us as f64 / 1e6) as usize;
                let r = run(link, vec![algo.flow(ms(40))], secs(40), secs(10));
                cells.push(format!(
                    "{:.3} ({:.0})",
                    r.utilisation,
                    r.queue_drops_per_10mb()
                ));
            }
            println!("| {} | {:.2} | {} |", algo.name(), p, cells.join(" | "));
        }
    }
    println!();
}

fn ack_policy_table() {
    println!("### Table 7: quiche-like ACKs (every 2nd packet, 25 ms delayed-ACK timer, immediate after a gap)");
    println!();
    println!(
        "One flow, 20 Mbit/s, 40 ms, BDP buffer, p on data and ACKs; 40 s, measured over 10..40 s."
    );
    println!("Utilisation (drops per 10 MB in brackets); start-up = first 5 s.");
    println!();
    println!("| algo | p = 0 | 0.01 | 0.05 | 0.10 | start-up p = 0.10 |");
    println!("|---|---|---|---|---|---|");
    for algo in [
        Algo::Aimd,
        Algo::Cubic,
        Algo::Ctcp,
        Algo::Hybrid,
        Algo::VegasNc,
    ] {
        let mut cells = Vec::new();
        for p in [0.0, 0.01, 0.05, 0.10] {
            let link = LinkConfig::bdp_buffer(20.0, ms(40)).with_loss(p, p);
            let r = run(
                link,
                vec![algo.flow(ms(40)).with_acks(AckPolicy::quiche())],
                secs(40),
                secs(10),
            );
            cells.push(format!(
                "{:.3} ({:.0})",
                r.utilisation,
                r.queue_drops_per_10mb()
            ));
        }
        let link = LinkConfig::bdp_buffer(20.0, ms(40)).with_loss(0.1, 0.1);
        let s = run(
            link,
            vec![algo.flow(ms(40)).with_acks(AckPolicy::quiche())],
            secs(5),
            Duration::ZERO,
        );
        println!(
            "| {} | {} | {:.3} |",
            algo.name(),
            cells.join(" | "),
            s.utilisation
        );
    }
    println!();
    println!(
        "Hybrid vs CUBIC and AIMD with quiche-like ACKs on both flows, loss-free BDP buffer, 60 s:"
    );
    println!();
    for other in [Algo::Cubic, Algo::Aimd] {
        let link = LinkConfig::bdp_buffer(20.0, ms(40));
        let r = run(
            link,
            vec![
                Algo::Hybrid.flow(ms(40)).with_acks(AckPolicy::quiche()),
                other
                    .flow(ms(40))
                    .with_acks(AckPolicy::quiche())
                    .starting_at(ms(500)),
            ],
            secs(60),
            secs(10),
        );
        println!(
            "hybrid/{} = {:.2}",
            other.name(),
            r.flows[0].throughput_bps / r.flows[1].throughput_bps
        );
    }
    println!();
}

/// Mean A/B ratio for one condition of the fairness matrix (as in the
/// `hybrid_is_fair_to_cubic` test): both start orders, seeds 1 (no jitter)
/// or 1..2 (1 ms ACK jitter), 30 s runs measured over 10..30 s.
fn matrix_cell(a: Algo, b: Algo, acks: AckPolicy, jitter: u64) -> f64 {
    let seeds: &[u64] = if jitter == 0 { &[1] } else { &[1, 2] };
    let mut v = Vec::new();
    for &seed in seeds {
        for a_first in [true, false] {
            let link = LinkConfig::bdp_buffer(20.0, ms(40))
                .with_ack_jitter(ms(jitter))
                .with_seed(seed);
            let fa = a.flow(ms(40)).with_acks(acks);
            let fb = b.flow(ms(40)).with_acks(acks);
            let q = if a_first {
                let r = run(link, vec![fa, fb.starting_at(ms(500))], secs(30), secs(10));
                r.flows[0].throughput_bps / r.flows[1].throughput_bps
            } else {
                let r = run(link, vec![fb, fa.starting_at(ms(500))], secs(30), secs(10));
                r.flows[1].throughput_bps / r.flows[0].throughput_bps
            };
            v.push(q);
        }
    }
    v.iter().sum::<f64>() / v.len() as f64
}

fn fairness_matrix_table() {
    println!("### Table 8: fairness matrix, loss-free, 20 Mbit/s, 40 ms, BDP buffer");
    println!();
    println!("A/B throughput ratio, mean over both start orders (and seeds 1..2 with jitter); 30 s runs.");
    println!("ACKs: every packet, or quiche-like (every 2nd packet, 25 ms timer). Jitter: uniform 0..1 ms on ACKs.");
    println!();
    println!("| A vs B | every/no jitter | every/1 ms | quiche/no jitter | quiche/1 ms | geometric mean |");
    println!("|---|---|---|---|---|---|");
    for (a, b) in [
        (Algo::Hybrid, Algo::Cubic),
        (Algo::Hybrid, Algo::Aimd),
        (Algo::HybridYield, Algo::Cubic),
        (Algo::HybridYield, Algo::Aimd),
        (Algo::Ctcp, Algo::Cubic),
        (Algo::Ctcp, Algo::Aimd),
        (Algo::Cubic, Algo::Aimd),
        (Algo::Hybrid, Algo::Hybrid),
        (Algo::Hybrid, Algo::HybridYield),
    ] {
        let mut cells = Vec::new();
        let mut log_sum = 0.0;
        for acks in [AckPolicy::every_packet(), AckPolicy::quiche()] {
            for jitter in [0, 1] {
                let m = matrix_cell(a, b, acks, jitter);
                log_sum += m.ln();
                cells.push(format!("{m:.2}"));
            }
        }
        println!(
            "| {} vs {} | {} | {:.2} |",
            a.name(),
            b.name(),
            cells.join(" | "),
            (log_sum / 4.0).exp()
        );
    }
    println!();
}

/// Median and maximum of `v` (seconds), formatted.
fn med_max(v: &mut [f64]) -> String {
    v.sort_by(f64::total_cmp);
    format!("{:.2} / {:.2}", v[v.len() / 2], v[v.len() - 1])
}

fn startup_table() {
    println!("### Table 9: start-up under random loss, quiche-like start, 10 seeds");
    println!();
    println!("One hybrid flow, 20 Mbit/s, 40 ms, BDP buffer, i.i.d. loss p on data and ACKs, seeds 1..10.");
    println!("quiche-like start: a loss-free handshake round trip, then the initial window as one unpaced");
    println!(
        "burst of 10 packets (quiche's pacer), quiche-like ACKs (every 2nd packet, 25 ms timer)."
    );
    println!(
        "t80: first time the receive rate over the preceding 200 ms reaches 80% of the link rate;"
    );
    println!("1 MB / 10 MB: time until that much has been received (ideal about 0.5 s / 4.1 s). Median / max in seconds.");
    println!();
    println!("| ACK jitter | p | t80 | 1 MB | 10 MB | runs with t80 > 1 s |");
    println!("|---|---|---|---|---|---|");
    for jitter in [0, 2] {
        for p in [0.05, 0.10, 0.20] {
            let (mut t80, mut t1, mut t10) = (Vec::new(), Vec::new(), Vec::new());
            for seed in 1..=10 {
                let link = LinkConfig::bdp_buffer(20.0, ms(40))
                    .with_loss(p, p)
                    .with_ack_jitter(ms(jitter))
                    .with_seed(seed);
                let mut sim = Simulation::new(link);
                sim.record_delivery();
                sim.add_flow(
                    Algo::Hybrid
                        .flow(ms(40))
                        .quiche_start()
                        .with_acks(AckPolicy::quiche()),
                );
                let r = sim.run(secs(15), Duration::ZERO);
                let f = &r.flows[0];
                let s = |d: Option<Duration>| d.map_or(f64::INFINITY, |d| d.as_secs_f64());
                t80.push(s(f.time_to_rate(0.8 * 20e6, ms(200))));
                t1.push(s(f.time_to_receive(1_000_000)));
                t10.push(s(f.time_to_receive(10_000_000)));
            }
            let slow = t80.iter().filter(|&&t| t > 1.0).count();
            println!(
                "| {} ms | {:.2} | {} | {} | {} | {} |",
                jitter,
                p,
                med_max(&mut t80),
                med_max(&mut t1),
                med_max(&mut t10),
                slow
            );
        }
    }
    println!();
}

fn main() {
    single_flow_table();
    padhye_table();
    pair_table();
    rtt_table();
    jitter_table();
    shallow_table();
    ack_policy_table();
    fairness_matrix_table();
    startup_table();
}
