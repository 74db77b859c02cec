//! `nc-experiment`'s command line as a whole: the subcommand (`bench-e2e`,
//! `bench-cellular`, `bench-fairness`, `scenario`, or none for the matrix)
//! picks the parser.

use std::path::Path;

use crate::experiment::bench_options::{parse_bench, BenchOptions, BENCH_USAGE};
use crate::experiment::cellular_options::{parse_cellular, CellularOptions, CELLULAR_USAGE};
use crate::experiment::fairness_options::{parse_fairness, FairnessOptions, FAIRNESS_USAGE};
use crate::experiment::options::{parse_matrix, Options, USAGE};

/// Parse result.
#[derive(Debug)]
pub enum Command_ {
    /// Run the matrix (or `--compete`) with these options.
    Run(Box<Options>),
    /// Run `bench-e2e`.
    Bench(Box<BenchOptions>),
    /// Run `bench-cellular`.
    Cellular(Box<CellularOptions>),
    /// Run `bench-fairness`.
    Fairness(Box<FairnessOptions>),
    /// Run scenario files.
    Scenario(Box<crate::scenario::cli::ScenarioArgs>),
    /// Print this usage text.
    Help(&'static str),
}

/// Parses the arguments (without program name). `exe_dir` is the directory
/// of the running executable (default for `--bin-dir` and `linkem`).
pub fn parse_args<I: IntoIterator<Item = String>>(
    args: I,
    exe_dir: &Path,
) -> Result<Command_, String> {
    let mut args = args.into_iter().peekable();
    let sub = args.peek().cloned();
    Ok(match sub.as_deref() {
        Some("bench-e2e") => {
            args.next();
            parse_bench(args, exe_dir)?.map_or(Command_::Help(BENCH_USAGE), |b| {
                Command_::Bench(Box::new(b))
            })
        }
        Some("bench-cellular") => {
            args.next();
            parse_cellular(args, exe_dir)?.map_or(Command_::Help(CELLULAR_USAGE), |c| {
                Command_::Cellular(Box::new(c))
            })
        }
        Some("bench-fairness") => {
            args.next();
            parse_fairness(args, exe_dir)?.map_or(Command_::Help(FAIRNESS_USAGE), |f| {
                Command_::Fairness(Box::new(f))
            })
        }
        Some("scenario") => {
            args.next();
            crate::scenario::cli::parse_scenario(args)?
                .map_or(Command_::Help(crate::scenario::cli::SCENARIO_USAGE), |s| {
                    Command_::Scenario(Box::new(s))
                })
        }
        _ => parse_matrix(args, exe_dir)?
            .map_or(Command_::Help(USAGE), |o| Command_::Run(Box::new(o))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Command_, String> {
        parse_args(s.split_whitespace().map(String::from), Path::new("/x"))
    }

    #[test]
    fn subcommands_and_help() {
        assert!(matches!(parse("--runs 2"), Ok(Command_::Run(o)) if o.runs == 2));
        assert!(matches!(parse("bench-e2e --runs 2"), Ok(Command_::Bench(b)) if b.runs == Some(2)));
        assert!(matches!(
            parse("bench-cellular --runs 2"),
            Ok(Command_::Cellular(c)) if c.runs == 2
        ));
        assert!(matches!(parse("--help"), Ok(Command_::Help(USAGE))));
        assert!(matches!(parse("-h"), Ok(Command_::Help(USAGE))));
        assert!(matches!(
            parse("bench-e2e --help"),
            Ok(Command_::Help(BENCH_USAGE))
        ));
        assert!(matches!(
            parse("bench-cellular --help"),
            Ok(Command_::Help(CELLULAR_USAGE))
        ));
        assert!(matches!(
            parse("bench-fairness --runs 2"),
            Ok(Command_::Fairness(f)) if f.runs == 2
        ));
        assert!(matches!(
            parse("bench-fairness --help"),
            Ok(Command_::Help(FAIRNESS_USAGE))
        ));
        // A subcommand is only recognised first.
        assert!(parse("--runs 2 bench-cellular").is_err());
        assert!(parse("bench-cellular --cost-size 1MB").is_err());
    }
}
