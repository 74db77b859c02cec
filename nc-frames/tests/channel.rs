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
