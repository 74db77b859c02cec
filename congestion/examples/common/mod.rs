//! Command-line arguments of the simulator examples: positional, each
//! optional with a default; a bad one ends the program with status 2.

use std::str::FromStr;

use congestion::sim::Algo;

/// The program's arguments after its name.
pub struct Args(Vec<String>);

impl Args {
    pub fn from_env() -> Self {
        Args(std::env::args().skip(1).collect())
    }

    /// Prints `msg` and exits with status 2.
    pub fn fail(msg: &str) -> ! {
        eprintln!("{msg}");
        std::process::exit(2)
    }

    /// Argument `i` as text, if given.
    #[allow(dead_code)]
    pub fn text(&self, i: usize) -> Option<&str> {
        self.0.get(i).map(String::as_str)
    }

    /// Argument `i` as a simulator algorithm name, or `default`.
    pub fn algo(&self, i: usize, default: Algo) -> Algo {
        self.0.get(i).map_or(default, |n| {
            Algo::parse(n).unwrap_or_else(|e| Self::fail(&e))
        })
    }

    /// Argument `i` parsed as `T` and accepted by `ok`, or `default`;
    /// otherwise fails with `msg`.
    pub fn value<T: FromStr>(&self, i: usize, default: T, ok: impl Fn(&T) -> bool, msg: &str) -> T {
        match self.0.get(i).map(|v| v.parse::<T>()) {
            None => default,
            Some(Ok(v)) if ok(&v) => v,
            Some(_) => Self::fail(msg),
        }
    }
}
