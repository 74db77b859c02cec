//! Prints the overhead/delay table of docs/coding.md:
//! `cargo run --release -p nc-frames --example sim_table [symbols]`.
use nc_frames::sim::{run, Channel, SimConfig};
use nc_frames::{Mode, PolicyKind};

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let policies = [
        PolicyKind::FixedR(1.25),
        PolicyKind::CtcpBlock { n: 32 },
        PolicyKind::Von,
        PolicyKind::Fnc,
        PolicyKind::ADAPTIVE,
    ];
    println!("| channel | loss | mode | policy | overhead | mean delay ms | p99 delay ms | max delay ms |");
    println!("|---|---|---|---|---|---|---|---|");
    for ch in ["bern", "ge"] {
        for p in [0.01, 0.05, 0.20] {
            for mode in [Mode::Systematic, Mode::FullyCoded] {
                for pol in policies {
                    let channel = if ch == "bern" {
                        Channel::Bernoulli(p)
                    } else {
                        Channel::GilbertElliott { p, burst: 4.0 }
                    };
                    let cfg = SimConfig {
                        symbols: n,
                        mode,
                        policy: pol,
                        channel,
                        ..SimConfig::default()
                    };
                    match run(&cfg) {
                        Ok(r) => println!(
                            "| {ch} | {:.0}% | {:?} | {} | {:.3} | {:.1} | {:.1} | {:.1} |",
                            p * 100.0,
                            mode,
                            pol.name(),
                            r.overhead,
                            r.mean_delay_ms,
                            r.p99_delay_ms,
                            r.max_delay_ms
                        ),
                        Err(e) => println!(
                            "| {ch} | {:.0}% | {:?} | {} | FAILED: {e} |",
                            p * 100.0,
                            mode,
                            pol.name()
                        ),
                    }
                }
            }
        }
    }
}
