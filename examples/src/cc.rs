//! Congestion-controller selection by name.
//!
//! Every tool maps its `--cc NAME` flag through [`apply`] (on the shared
//! `quiche::Config`) and [`crate::hooks::on_new_connection`] (per
//! connection). Names and their meaning come from [`quic_nc::cc`]: quiche's
//! own `reno`, `cubic`, `bbr2`, and ours, run through the external
//! congestion-control hook.

/// Names accepted by [`apply`], in the order they are documented.
pub const NAMES: &[&str] = quic_nc::cc::NAMES;

/// The controller used when `--cc` is not given: our hybrid, which keeps
/// the pipe full under random loss without building a queue.
pub const DEFAULT: &str = "hybrid";

/// Configures `config` to use the congestion controller called `name`.
///
/// Returns a one-line message naming the accepted values when `name` is
/// unknown.
pub fn apply(config: &mut quiche::Config, name: &str) -> Result<(), String> {
    quic_nc::cc::configure(config, name).map(|_| ())
}

/// Checks a controller name (used by the argument parser so a typo is
/// reported before any socket is opened).
pub fn validate(name: &str) -> Result<String, String> {
    quic_nc::cc::resolve(name).map(|_| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> quiche::Config {
        quiche::Config::new(quiche::PROTOCOL_VERSION).expect("config")
    }

    #[test]
    fn known_names_apply() {
        for name in NAMES {
            assert!(apply(&mut config(), name).is_ok(), "{name}");
        }
        for name in ["hybrid", "ctcp", "vegas"] {
            assert!(NAMES.contains(&name));
        }
    }

    #[test]
    fn unknown_name_is_one_clear_line() {
        let err = apply(&mut config(), "vegas2").unwrap_err();
        assert!(err.contains("vegas2"));
        assert!(err.contains("reno, cubic, bbr2, hybrid"));
        assert!(!err.contains('\n'));
    }

    #[test]
    fn validate_matches_apply() {
        assert_eq!(validate("bbr2").unwrap(), "bbr2");
        assert!(validate("BBR2").is_err());
        assert!(NAMES.contains(&DEFAULT));
    }
}
