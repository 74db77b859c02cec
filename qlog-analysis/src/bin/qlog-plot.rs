//! `qlog-plot FILE [--out FILE.svg]`: congestion window, bytes in flight
//! and RTTs of one connection as an SVG (default: FILE with `.svg`).

use std::path::PathBuf;
use std::process::ExitCode;

use qlog_analysis::{plot, Series, Trace};

fn main() -> ExitCode {
    let mut input: Option<PathBuf> = None;
    let mut out: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--out" | "-o" => out = args.next().map(PathBuf::from),
            "-h" | "--help" => {
                println!("usage: qlog-plot FILE [--out FILE.svg]");
                return ExitCode::SUCCESS;
            }
            f if f.starts_with('-') => return fail(&format!("unknown flag {f}")),
            f if input.is_none() => input = Some(f.into()),
            f => return fail(&format!("unexpected argument {f}")),
        }
    }
    let Some(input) = input else {
        return fail("no qlog file given (usage: qlog-plot FILE [--out FILE.svg])");
    };
    let trace = match Trace::read(&input) {
        Ok(t) => t,
        Err(e) => return fail(&e),
    };
    let series = Series::from_trace(&trace);
    if series.time_ms.is_empty() {
        return fail(&format!("{}: no recovery metrics to plot", input.display()));
    }
    let out = out.unwrap_or_else(|| input.with_extension("svg"));
    let title = format!(
        "{} ({})",
        input.file_name().unwrap_or_default().to_string_lossy(),
        trace.vantage_point.as_deref().unwrap_or("?")
    );
    if let Err(e) = std::fs::write(&out, plot::svg(&series, &title)) {
        return fail(&format!("cannot write {}: {e}", out.display()));
    }
    println!("{}", out.display());
    ExitCode::SUCCESS
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::FAILURE
}
