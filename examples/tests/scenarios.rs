//! The scenario runner end to end: every scenario in `scenarios/` in its
//! `quick` variant, with our real binaries over linkem (what `make report`
//! runs in the `full` variant). Each must run all its runs without a
//! failure, write a qlog file per endpoint and run, and give a report page
//! that a real browser (headless Chromium) loads without errors and whose
//! screenshot shows the plot.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use interop::scenario::{load, run_plan};
use qlog_analysis::report::{self, Results};

mod common;
use common::*;

fn scenario_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    v
}

/// linkem beside our binaries (built with the workspace; built here if not).
fn linkem(bin: &Path) -> PathBuf {
    let p = bin.join("linkem");
    if !p.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let st = Command::new(cargo)
            .args(["build", "-p", "interop", "--bin", "linkem"])
            .status()
            .unwrap();
        assert!(st.success());
    }
    assert!(p.exists(), "{} missing", p.display());
    p
}

/// Headless Chromium from Debian (installed when missing and root).
fn chromium() -> String {
    let found = |b: &str| {
        Command::new(b)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !found("chromium") {
        let _ = Command::new("apt-get")
            .args(["install", "-y", "-q", "chromium"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status();
    }
    assert!(
        found("chromium"),
        "headless Chromium is needed to check the report (apt-get install chromium)"
    );
    "chromium".into()
}

/// Loads `page` in headless Chromium: the console messages, the DOM after
/// load, and a screenshot.
fn browse(page: &Path, png: &Path) -> (String, String) {
    let url = format!("file://{}", std::fs::canonicalize(page).unwrap().display());
    let flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
    ];
    let dom = Command::new(chromium())
        .args(flags)
        .args(["--enable-logging=stderr", "--v=0", "--dump-dom", &url])
        .output()
        .unwrap();
    let shot = Command::new(chromium())
        .args(flags)
        .args([
            "--window-size=1100,900",
            &format!("--screenshot={}", png.display()),
            &url,
        ])
        .output()
        .unwrap();
    assert!(
        shot.status.success() && png.is_file(),
        "{}",
        String::from_utf8_lossy(&shot.stderr)
    );
    (
        String::from_utf8_lossy(&dom.stderr).into_owned(),
        String::from_utf8_lossy(&dom.stdout).into_owned(),
    )
}

/// Pixels of the first series' colour (#0072B2) in a PNG.
fn series_pixels(png: &Path) -> usize {
    let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png).unwrap()));
    let mut r = dec.read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size().unwrap()];
    let info = r.next_frame(&mut buf).unwrap();
    let n = info.color_type.samples();
    buf[..info.buffer_size()]
        .chunks(n)
        .filter(|p| n >= 3 && p[0] < 30 && (100..130).contains(&p[1]) && (165..190).contains(&p[2]))
        .count()
}

#[test]
fn quick_scenarios_run_and_their_reports_load_in_a_browser() {
    let bin = Path::new(SERVER).parent().unwrap().to_path_buf();
    let extra: Vec<String> = [
        "--bin-dir",
        bin.to_str().unwrap(),
        "--linkem",
        linkem(&bin).to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec();
    let s = Scratch::new("scenarios");
    let certs_dir = s.path("certs");
    certs(&certs_dir);
    let mut failures = Vec::new();
    let mut pages = Vec::new();
    for f in scenario_files() {
        let plan = load(&f, Some("quick"), &bin, &extra).unwrap_or_else(|e| panic!("{e}"));
        let name = f.file_stem().unwrap().to_string_lossy().into_owned();
        let out = s.path(&format!("out/{name}"));
        std::fs::create_dir_all(&out).unwrap();
        let r = run_plan(
            &plan,
            &f,
            &s.path(&format!("work/{name}")),
            &certs_dir,
            &out,
        );
        if r.done_runs != r.planned_runs || r.stopped.is_some() {
            failures.push(format!(
                "{name}: {} of {} runs ({:?})",
                r.done_runs, r.planned_runs, r.stopped
            ));
        }
        for job in &r.jobs {
            for run in job.results.iter().flatten() {
                if run.outcome == interop::experiment::Outcome::Failed {
                    failures.push(format!("{name} {} {}: {:?}", run.row, run.loss, run.error));
                }
                let qlogs = run
                    .qlog_dir
                    .as_ref()
                    .and_then(|d| std::fs::read_dir(d).ok())
                    .map_or(0, |d| d.count());
                if qlogs < 2 {
                    failures.push(format!(
                        "{name} {} {}: {qlogs} qlog files",
                        run.row, run.loss
                    ));
                }
            }
            for run in job.compete.iter().flatten() {
                if let Some(e) = &run.error {
                    failures.push(format!("{name} {}: {e}", run.pair));
                }
            }
        }
        // One series per row (or per loss when x is the row), one point per
        // x value; nothing missing.
        let points: usize = r.series.iter().map(|s| s.points.len()).sum();
        let cells: usize = r
            .jobs
            .iter()
            .map(|j| j.cells.as_ref().map_or(j.options.loss.len(), Vec::len))
            .sum();
        if r.series.is_empty() || points != cells {
            failures.push(format!("{name}: {points} plotted points for {cells} cells"));
        }
        let json = out.join("results.json");
        std::fs::write(&json, serde_json::to_string(&r).unwrap()).unwrap();
        let res = Results::read(&json).unwrap();
        let (html, svg) = report::html(&res);
        assert!(svg.contains("class=\"series\""), "{name}");
        let page = out.join(format!("{name}.html"));
        std::fs::write(&page, html).unwrap();
        pages.push((name, page));
    }
    assert!(failures.is_empty(), "{failures:#?}");

    // Two pages in the browser: a matrix scenario with model curves and
    // the competing-flows one.
    for (name, page) in pages
        .iter()
        .filter(|(n, _)| n == "ctcp-fig2" || n == "ctcp-fig3")
    {
        let png = page.with_extension("png");
        let (console, dom) = browse(page, &png);
        for bad in ["Uncaught", "CONSOLE", "Failed to load", "net::ERR_"] {
            assert!(
                !console.contains(bad),
                "{name}: {bad} in the console:\n{console}"
            );
        }
        assert!(
            dom.contains("<svg") && dom.contains("class=\"series\""),
            "{name}: no plot in the DOM"
        );
        // Points, min-max bars, lines and the legend: a single point with
        // its legend entry is about 100 pixels.
        let px = series_pixels(&png);
        assert!(
            px > 60,
            "{name}: the screenshot shows {px} pixels of the series colour"
        );
    }
}
