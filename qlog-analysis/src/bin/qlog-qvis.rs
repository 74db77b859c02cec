//! `qlog-qvis [-o OUT.qlog] [--title TITLE] [--event-fields] FILE.sqlog...`:
//! converts qlogs (JSON-SEQ, quiche's schema and ours) into one qlog
//! draft-02 JSON document for the qvis visualiser, one trace per file
//! (e.g. the client and the server of a connection). Writes to stdout
//! unless `-o` is given; a one-line summary per file goes to stderr.
//!
//! Exit status: 0 done, 2 bad usage or bad input (nothing usable is left
//! in OUT), 1 the output could not be written.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use qlog_analysis::qvis::{self, ConvertStats, Layout, Options, TraceStats};

const USAGE: &str =
    "usage: qlog-qvis [-o OUT.qlog] [--title TITLE] [--event-fields] FILE.sqlog [FILE.sqlog ...]";

fn main() -> ExitCode {
    let mut opts = Options::default();
    let mut out: Option<PathBuf> = None;
    let mut files: Vec<PathBuf> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "-o" | "--out" => match args.next() {
                Some(f) => out = Some(f.into()),
                None => return usage_error("-o needs a file name"),
            },
            "--title" => match args.next() {
                Some(t) => opts.title = Some(t),
                None => return usage_error("--title needs a title"),
            },
            "--event-fields" => opts.layout = Layout::EventFields,
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            "-" => return usage_error("reading stdin is not supported; give file names"),
            f if f.starts_with('-') => return usage_error(&format!("unknown flag {f}")),
            f => files.push(f.into()),
        }
    }
    if files.is_empty() {
        return usage_error("no qlog file given");
    }
    if let Some(o) = out.as_ref().and_then(|o| std::fs::canonicalize(o).ok()) {
        if files
            .iter()
            .any(|f| std::fs::canonicalize(f).ok().as_ref() == Some(&o))
        {
            return usage_error(&format!("-o {} would overwrite an input", o.display()));
        }
    }
    // Open every input before writing anything.
    let mut inputs = Vec::with_capacity(files.len());
    for f in &files {
        match qlog_analysis::open(f) {
            Ok(r) => inputs.push((f.display().to_string(), r)),
            Err(e) => return fail(2, &format!("cannot read {}: {e}", f.display())),
        }
    }
    let result = match &out {
        Some(path) => match File::create(path) {
            Ok(file) => {
                let r = run(inputs, file, &opts);
                if r.is_err() {
                    // Leave no half-written document behind.
                    let _ = std::fs::remove_file(path);
                }
                r
            }
            Err(e) => return fail(1, &format!("cannot write {}: {e}", path.display())),
        },
        None => run(inputs, io::stdout().lock(), &opts),
    };
    match result {
        Ok(stats) => {
            for t in &stats.traces {
                eprintln!("qlog-qvis: {}", summary(t));
            }
            if let Some(path) = out {
                eprintln!("qlog-qvis: wrote {}", path.display());
            }
            ExitCode::SUCCESS
        }
        Err((e, code)) => fail(code, &e),
    }
}

/// Converts into `w`; on failure, the message and the exit code (1 if
/// writing failed, 2 if the input was bad).
fn run<R: io::BufRead, W: Write>(
    inputs: Vec<(String, R)>,
    w: W,
    opts: &Options,
) -> Result<ConvertStats, (String, u8)> {
    let mut sink = Sink::new(w);
    let r = qvis::convert_many(inputs, &mut sink, opts);
    let code = if sink.failed { 1 } else { 2 };
    r.map_err(|e| (e, code))
}

/// One line about one converted file.
fn summary(t: &TraceStats) -> String {
    let categories: Vec<String> = t
        .categories
        .iter()
        .map(|(c, n)| format!("{c} {n}"))
        .collect();
    let mut line = format!(
        "{} ({}): {} events",
        t.label,
        t.vantage_point.as_deref().unwrap_or("unknown"),
        t.events
    );
    if t.events == 0 {
        line.push_str(" (a placeholder event was written: qvis needs one)");
    } else {
        line.push_str(&format!(" ({})", categories.join(", ")));
    }
    if t.late > 0 {
        line.push_str(&format!(
            ", {} logged late ({} put back in order, {} clamped)",
            t.late,
            t.late.saturating_sub(t.clamped),
            t.clamped
        ));
    }
    if let Some(n) = t.truncated {
        line.push_str(&format!(", record {n} cut off and ignored"));
    }
    line
}

/// A buffered writer that remembers whether writing failed, to tell
/// output errors (exit 1) from input errors (exit 2).
struct Sink<W: Write> {
    inner: BufWriter<W>,
    failed: bool,
}

impl<W: Write> Sink<W> {
    fn new(w: W) -> Sink<W> {
        Sink {
            inner: BufWriter::with_capacity(1 << 16, w),
            failed: false,
        }
    }
}

impl<W: Write> Write for Sink<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let r = self.inner.write(buf);
        self.failed |= r.is_err();
        r
    }

    fn flush(&mut self) -> io::Result<()> {
        let r = self.inner.flush();
        self.failed |= r.is_err();
        r
    }
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("error: {msg} ({USAGE})");
    ExitCode::from(2)
}

fn fail(code: u8, msg: &str) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(code)
}
