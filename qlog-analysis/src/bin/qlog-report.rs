//! `qlog-report [-o DIR] [--compare] [--png] RESULTS.json...`: the HTML
//! report of each scenario results file (`nc-experiment scenario`), its
//! plot as SVG (and PNG with `--png`, drawn by headless Chromium), and an
//! index page (`--markdown`: the plotted values as tables on stdout);
//! with `--compare`, one page whose plot holds the series of
//! all the files (runs of one scenario).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use qlog_analysis::report::{self, Results};

const USAGE: &str =
    "usage: qlog-report [-o DIR] [--compare] [--png] [--markdown] RESULTS.json...\n\
  -o DIR      where the pages go (default: results/report)\n\
  --compare   one page, one plot with the series of every file\n\
  --png       also a PNG of each plot (needs chromium or chromium-browser)\n\
  --markdown  also print each file's plotted values as a markdown table";

fn main() -> ExitCode {
    let mut out = PathBuf::from("results/report");
    let (mut compare, mut png, mut md) = (false, false, false);
    let mut inputs = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "-o" | "--out" => match args.next() {
                Some(d) => out = d.into(),
                None => return fail("-o needs a directory"),
            },
            "--compare" => compare = true,
            "--png" => png = true,
            "--markdown" => md = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            f if f.starts_with('-') => return fail(&format!("unknown flag {f}\n{USAGE}")),
            f => inputs.push(PathBuf::from(f)),
        }
    }
    if inputs.is_empty() {
        return fail(&format!("no results file given\n{USAGE}"));
    }
    let mut all = Vec::new();
    for p in &inputs {
        match Results::read(p) {
            Ok(r) => all.push(r),
            Err(e) => return fail(&e),
        }
    }
    if md {
        for r in &all {
            println!("{}", report::markdown(r));
        }
    }
    if let Err(e) = std::fs::create_dir_all(&out) {
        return fail(&format!("{}: {e}", out.display()));
    }
    let mut entries = Vec::new();
    let mut pages: Vec<(String, String, String)> = Vec::new();
    if compare {
        let refs: Vec<&Results> = all.iter().collect();
        let (html, svg) = report::compare(&refs);
        pages.push((format!("compare-{}", all[0].name()), html, svg));
    } else {
        for r in &all {
            let (html, svg) = report::html(r);
            pages.push((r.name(), html, svg));
        }
    }
    for (k, (name, html, svg)) in pages.iter().enumerate() {
        let (h, s) = (format!("{name}.html"), format!("{name}.svg"));
        for (file, text) in [(&h, html), (&s, svg)] {
            if let Err(e) = std::fs::write(out.join(file), text) {
                return fail(&format!("{}: {e}", out.join(file).display()));
            }
        }
        if png {
            if let Err(e) = to_png(&out.join(&s), &out.join(format!("{name}.png"))) {
                return fail(&e);
            }
        }
        let title = if compare {
            format!("Comparison: {}", all[0].title())
        } else {
            all[k].title()
        };
        println!("{}", out.join(&h).display());
        entries.push((title, h, s));
    }
    if let Err(e) = std::fs::write(out.join("index.html"), report::index(&entries)) {
        return fail(&format!("{}: {e}", out.display()));
    }
    println!("{}", out.join("index.html").display());
    ExitCode::SUCCESS
}

/// Renders an SVG to PNG with headless Chromium (the SVG's own size).
fn to_png(svg: &Path, png: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(svg).map_err(|e| e.to_string())?;
    let dim = |k: &str| -> u32 {
        text.split(&format!(" {k}=\""))
            .nth(1)
            .and_then(|t| t.split('"').next())
            .and_then(|v| v.parse::<f64>().ok())
            .map_or(800, |v| v.ceil() as u32)
    };
    let abs = std::fs::canonicalize(svg).map_err(|e| e.to_string())?;
    let browser = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| Command::new(b).arg("--version").output().is_ok())
        .ok_or("--png needs chromium (apt-get install chromium)")?;
    let st = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .arg(format!("--window-size={},{}", dim("width"), dim("height")))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", abs.display()))
        .output()
        .map_err(|e| format!("{browser}: {e}"))?;
    if !png.is_file() {
        return Err(format!(
            "{browser} wrote no {}: {}",
            png.display(),
            String::from_utf8_lossy(&st.stderr)
        ));
    }
    Ok(())
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("qlog-report: error: {msg}");
    ExitCode::from(2)
}
