//! `nc-interop` command line.

use std::path::PathBuf;

/// Usage text.
pub const USAGE: &str = "\
nc-interop: the quic-interop-runner's test cases, run locally over linkem

usage: nc-interop [--clients A,B] [--servers A,B] [--cases X,Y] [--runs N]
                  [--out DIR] [--bin DIR] [--repo DIR] [--seed N] [--all-pairs]
                  [--list]

  --clients, --servers  implementations (default: every one known)
  --cases               test cases (default: all; see --list)
  --runs N              repetitions of goodput, transferloss and blackhole,
                        each with its own loss seed (default 5)
  --out DIR             logs and results (default results/interop-<time>)
  --bin DIR             directory of qnc-server / qnc-client / qnc-certs
                        (default: this program's directory)
  --repo DIR            repository root, for the endpoint scripts
                        (default: where nc-interop was built from)
  --seed N              seed of the link's loss processes (default 1)
  --all-pairs           also run pairs of two third-party stacks (default:
                        only pairs with our endpoint on at least one side)
  --list                print the implementations and cases, then exit

Writes DIR/results.json (the runner's format), DIR/matrix.md,
DIR/index.html and a log directory per cell. Exit status 1 if a cell
failed (missing implementations and unsupported cases are not failures).";

/// Parsed options.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Client implementation names (`None`: all).
    pub clients: Option<String>,
    /// Server implementation names (`None`: all).
    pub servers: Option<String>,
    /// Case names (`None`: all).
    pub cases: Option<Vec<String>>,
    /// Repetitions of measurements.
    pub runs: usize,
    /// Output directory.
    pub out: Option<PathBuf>,
    /// Binary directory.
    pub bin: Option<PathBuf>,
    /// Repository root.
    pub repo: Option<PathBuf>,
    /// Loss seed.
    pub seed: u64,
    /// Also pairs without our endpoint.
    pub all_pairs: bool,
    /// Only list.
    pub list: bool,
    /// Only print the usage.
    pub help: bool,
}

/// Parses the arguments (without the program name).
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
    let mut o = Options {
        clients: None,
        servers: None,
        cases: None,
        runs: 5,
        out: None,
        bin: None,
        repo: None,
        seed: 1,
        all_pairs: false,
        list: false,
        help: false,
    };
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        if flag == "--all-pairs" {
            o.all_pairs = true;
            continue;
        }
        if flag == "--list" || flag == "--help" || flag == "-h" {
            o.list |= flag == "--list";
            o.help |= flag != "--list";
            continue;
        }
        let mut value = || {
            inline
                .clone()
                .or_else(|| it.next())
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--clients" => o.clients = Some(value()?),
            "--servers" => o.servers = Some(value()?),
            "--cases" => {
                o.cases = Some(
                    value()?
                        .split(',')
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect(),
                )
            }
            "--runs" => {
                let v = value()?;
                o.runs = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=100).contains(n))
                    .ok_or_else(|| format!("--runs: '{v}' is not a count from 1 to 100"))?;
            }
            "--out" => o.out = Some(value()?.into()),
            "--bin" => o.bin = Some(value()?.into()),
            "--repo" => o.repo = Some(value()?.into()),
            "--seed" => {
                let v = value()?;
                o.seed = v
                    .parse()
                    .map_err(|_| format!("--seed: '{v}' is not a number"))?;
            }
            _ => return Err(format!("unknown argument '{a}' (see --help)")),
        }
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(a: &[&str]) -> Result<Options, String> {
        parse(a.iter().map(|s| s.to_string()))
    }

    #[test]
    fn flags_and_defaults() {
        let o = p(&[]).unwrap();
        assert_eq!((o.runs, o.seed, o.list), (5, 1, false));
        let o = p(&[
            "--clients",
            "quic-nc",
            "--cases=handshake,retry",
            "--runs",
            "3",
            "--seed=7",
        ])
        .unwrap();
        assert_eq!(o.clients.as_deref(), Some("quic-nc"));
        assert_eq!(o.cases, Some(vec!["handshake".into(), "retry".into()]));
        assert_eq!((o.runs, o.seed), (3, 7));
        assert!(p(&["--runs", "0"]).is_err());
        assert!(p(&["--bogus"]).is_err());
        assert!(p(&["--out"]).is_err());
        assert!(p(&["--list"]).unwrap().list);
        assert!(!o.all_pairs && p(&["--all-pairs"]).unwrap().all_pairs);
    }
}
