//! `qlog-summary [--json] [--csv DIR] FILE...`: one line of figures per
//! qlog file; `--csv` also writes each file's recovery time series.

use std::path::PathBuf;
use std::process::ExitCode;

use qlog_analysis::{Series, Summary, Trace};

fn main() -> ExitCode {
    let mut json = false;
    let mut csv_dir: Option<PathBuf> = None;
    let mut files = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--json" => json = true,
            "--csv" => match args.next() {
                Some(d) => csv_dir = Some(d.into()),
                None => return fail("--csv needs a directory"),
            },
            "-h" | "--help" => {
                println!("usage: qlog-summary [--json] [--csv DIR] FILE...");
                return ExitCode::SUCCESS;
            }
            f if f.starts_with('-') => return fail(&format!("unknown flag {f}")),
            f => files.push(PathBuf::from(f)),
        }
    }
    if files.is_empty() {
        return fail("no qlog files given (usage: qlog-summary [--json] [--csv DIR] FILE...)");
    }
    for f in &files {
        let trace = match Trace::read(f) {
            Ok(t) => t,
            Err(e) => return fail(&e),
        };
        let s = Summary::from_trace(&trace);
        if json {
            let mut v = s.to_json();
            v["file"] = f.display().to_string().into();
            println!("{v}");
        } else {
            println!("{}  {}", f.display(), s.line());
        }
        if let Some(dir) = &csv_dir {
            let name = f
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string()
                + ".csv";
            let out = dir.join(name);
            if let Err(e) = std::fs::create_dir_all(dir)
                .and_then(|_| std::fs::write(&out, Series::from_trace(&trace).to_csv()))
            {
                return fail(&format!("cannot write {}: {e}", out.display()));
            }
        }
    }
    ExitCode::SUCCESS
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::FAILURE
}
