//! Deterministic channel tests (virtual time). Debug builds run 1,500
//! symbols per case; `--release` (or the ignored `full_size` test, run by
//! `make bench`) runs the 10^5 symbols per policy and mode.

use std::time::Duration;

use nc_frames::sim::{run, Channel, SimConfig};
use nc_frames::{Mode, PolicyKind};

const POLICIES: [PolicyKind; 5] = [
    PolicyKind::FixedR(1.25),
    PolicyKind::CtcpBlock { n: 32 },
    PolicyKind::Von,
    PolicyKind::Fnc,
    PolicyKind::ADAPTIVE,
];

fn symbols() -> u64 {
    if cfg!(debug_assertions) {
        1_500
    } else {
        100_000
    }
}

fn sweep(n: u64, channels: &[Channel]) {
    for &channel in channels {
        for mode in [Mode::Systematic, Mode::FullyCoded] {
            for policy in POLICIES {
                let cfg = SimConfig {
                    symbols: n,
                    mode,
                    policy,
                    channel,
                    seed: 7,
                    ..SimConfig::default()
                };
                let r = run(&cfg)
                    .unwrap_or_else(|e| panic!("{channel:?} {mode:?} {}: {e}", policy.name()));
                assert_eq!(r.sources, n);
                assert!(r.max_window_seen <= cfg.window);
                if let PolicyKind::FixedR(_) = policy {
                } else {
                    // Feedback-driven policies must not waste much.
                    let p = match channel {
                        Channel::Bernoulli(p) | Channel::GilbertElliott { p, .. } => p,
                    };
                    assert!(
                        r.overhead < 3.0 * p + 0.05,
                        "{} overhead {}",
                        policy.name(),
                        r.overhead
                    );
                }
            }
        }
    }
}

#[test]
fn bernoulli_all_policies_and_modes() {
    sweep(
        symbols(),
        &[
            Channel::Bernoulli(0.01),
            Channel::Bernoulli(0.05),
            Channel::Bernoulli(0.20),
        ],
    );
}

#[test]
fn gilbert_elliott_all_policies_and_modes() {
    sweep(
        symbols(),
        &[
            Channel::GilbertElliott {
                p: 0.05,
                burst: 4.0,
            },
            Channel::GilbertElliott {
                p: 0.20,
                burst: 4.0,
            },
        ],
    );
}

#[test]
fn two_second_outage_is_survived() {
    for mode in [Mode::Systematic, Mode::FullyCoded] {
        for policy in POLICIES {
            let cfg = SimConfig {
                symbols: 4_000,
                mode,
                policy,
                channel: Channel::Bernoulli(0.02),
                outage: Some((Duration::from_millis(1000), Duration::from_secs(2))),
                seed: 3,
                ..SimConfig::default()
            };
            let r = run(&cfg).unwrap_or_else(|e| panic!("{mode:?} {}: {e}", policy.name()));
            assert!(r.max_delay_ms >= 2000.0, "outage must show in the delay");
        }
    }
}

#[test]
fn reordering_and_jitter() {
    // Up to 15 ms of jitter at one packet per ms: heavy reordering of data
    // packets and of NC_ACKs.
    for mode in [Mode::Systematic, Mode::FullyCoded] {
        for policy in POLICIES {
            let cfg = SimConfig {
                symbols: 3_000,
                mode,
                policy,
                channel: Channel::Bernoulli(0.05),
                jitter: Duration::from_millis(15),
                seed: 5,
                ..SimConfig::default()
            };
            run(&cfg).unwrap_or_else(|e| panic!("{mode:?} {}: {e}", policy.name()));
        }
    }
}

#[test]
fn zero_loss_has_no_overhead_except_fixed_r() {
    for policy in POLICIES {
        let cfg = SimConfig {
            symbols: 2_000,
            policy,
            channel: Channel::Bernoulli(0.0),
            ..SimConfig::default()
        };
        let r = run(&cfg).unwrap();
        if !matches!(policy, PolicyKind::FixedR(_)) {
            assert_eq!(r.repairs, 0, "{}", policy.name());
        }
        assert!(
            r.max_delay_ms <= 26.0,
            "{} {}",
            policy.name(),
            r.max_delay_ms
        );
    }
}

/// The full size: 10^5 symbols per policy and mode (release build:
/// `cargo test --release -p nc-frames --test channel -- --ignored`).
#[test]
#[ignore]
fn full_size() {
    sweep(
        100_000,
        &[
            Channel::Bernoulli(0.01),
            Channel::Bernoulli(0.05),
            Channel::Bernoulli(0.20),
            Channel::GilbertElliott {
                p: 0.05,
                burst: 4.0,
            },
        ],
    );
}

/// Transport loss signals (`on_source_lost` / `on_repair_lost`, declared one
/// RTT plus 3 send intervals after the lost packet was sent) keep every run
/// correct, at most doubles the overhead (VON, fully coded: its repair-loss
/// rule trades overhead for delay), and the adaptive default delivers with a
/// lower mean delay than from NC_ACK feedback alone in systematic mode, and
/// no higher in fully coded mode (deterministic virtual time: the same
/// figures in debug and release builds).
#[test]
fn transport_loss_signals_keep_runs_correct_and_help_adaptive() {
    let n = 3_000;
    for mode in [Mode::Systematic, Mode::FullyCoded] {
        for policy in POLICIES {
            for channel in [
                Channel::Bernoulli(0.05),
                Channel::GilbertElliott {
                    p: 0.05,
                    burst: 4.0,
                },
            ] {
                let base = SimConfig {
                    symbols: n,
                    mode,
                    policy,
                    channel,
                    seed: 11,
                    ..SimConfig::default()
                };
                let with = SimConfig {
                    loss_detection: Some(Duration::from_millis(53)),
                    ..base.clone()
                };
                let name = format!("{channel:?} {mode:?} {}", policy.name());
                let a = run(&base).unwrap_or_else(|e| panic!("{name}: {e}"));
                let b = run(&with).unwrap_or_else(|e| panic!("{name} with signals: {e}"));
                eprintln!(
                    "{name}: mean {:.1} -> {:.1} ms, p99 {:.0} -> {:.0} ms, overhead {:.3} -> {:.3} (probes {} tail {} loss est {:.3})",
                    a.mean_delay_ms, b.mean_delay_ms, a.p99_delay_ms, b.p99_delay_ms, a.overhead, b.overhead, b.probes, b.tail_repairs, b.loss_estimate
                );
                assert!(
                    b.overhead <= 2.0 * a.overhead + 0.02,
                    "{name}: overhead {} vs {}",
                    b.overhead,
                    a.overhead
                );
                // Systematic mode: a declared loss is repaired before the
                // peer's report. Fully coded mode: the next coded packet
                // shows the peer the gap, so its NC_ACK is as early as the
                // transport's declaration; the signals must not hurt.
                if matches!(policy, PolicyKind::Adaptive { .. }) {
                    let bound = match mode {
                        Mode::Systematic => a.mean_delay_ms,
                        Mode::FullyCoded => a.mean_delay_ms * 1.02 + 0.1,
                    };
                    assert!(
                        b.mean_delay_ms < bound,
                        "{name}: {} !< {}",
                        b.mean_delay_ms,
                        bound
                    );
                }
            }
        }
    }
}
