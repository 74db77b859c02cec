//! `nc-interop`: the quic-interop-runner's test cases between QUIC
//! implementations, run locally over linkem. See `nc-interop --help`,
//! `interop::runner` and docs/interop.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use interop::experiment::process::{make_cert_chain, INTERRUPTED};
use interop::runner::cases::{self, Case, NOT_RUN};
use interop::runner::cell::{self, Outcome, Setup};
use interop::runner::endpoints::{self, Implementation};
use interop::runner::options::{self, Options, USAGE};
use interop::runner::report::Matrix;

extern "C" fn on_signal(_sig: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

fn main() -> ExitCode {
    let o = match options::parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("nc-interop: error: {e}");
            return ExitCode::from(2);
        }
    };
    if o.help {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    match run(&o) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("nc-interop: error: {e}");
            ExitCode::from(2)
        }
    }
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Runs the matrix; `Ok(false)` if a cell failed.
fn run(o: &Options) -> Result<bool, String> {
    let bin = match &o.bin {
        Some(b) => b.clone(),
        None => std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(PathBuf::from))
            .ok_or("cannot find this program's directory; give --bin")?,
    };
    let repo = o
        .repo
        .clone()
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
    let repo = repo.canonicalize().unwrap_or(repo);
    let known = endpoints::all(&repo, &bin);
    let cross = endpoints::cross_traffic(&known);
    let all_names = known.iter().map(|i| i.name).collect::<Vec<_>>().join(",");
    let clients = endpoints::select(&known, o.clients.as_deref().unwrap_or(&all_names))?;
    let servers = endpoints::select(&known, o.servers.as_deref().unwrap_or(&all_names))?;
    let cases: Vec<Case> = match &o.cases {
        None => cases::all(),
        Some(names) => names
            .iter()
            .map(|n| {
                cases::find(n).ok_or_else(|| match NOT_RUN.iter().find(|c| c.0 == n) {
                    Some((_, why)) => format!("test case '{n}' is not run: {why}"),
                    None => format!("unknown test case '{n}' (see --list)"),
                })
            })
            .collect::<Result<_, _>>()?,
    };
    if o.list {
        list(&known, &cases);
        return Ok(true);
    }
    // SAFETY: installing an async-signal-safe handler that only stores to
    // an atomic.
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
        libc::signal(
            libc::SIGTERM,
            on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
    let stamp = interop::experiment::bench::utc_stamp(SystemTime::now());
    let out = o
        .out
        .clone()
        .unwrap_or_else(|| repo.join("results").join(format!("interop-{stamp}")));
    // One set of certificates per chain length the chosen cases use.
    let mut chains: Vec<usize> = cases.iter().map(|c| c.chain).collect();
    chains.push(1);
    chains.sort_unstable();
    chains.dedup();
    for &len in &chains {
        let dir = certs_dir(&out, len);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        make_cert_chain(&bin, &dir, len)?;
        std::fs::copy(dir.join("key.pem"), dir.join("priv.key")).map_err(|e| e.to_string())?;
    }

    let start = unix_now();
    let pairs: Vec<(&Implementation, &Implementation)> = clients
        .iter()
        .flat_map(|c| servers.iter().map(move |s| (c, s)))
        .filter(|(c, s)| o.all_pairs || c.ours || s.ours)
        .collect();
    let total: usize = cases
        .iter()
        .map(|c| if c.timed { o.runs } else { 1 })
        .sum::<usize>()
        * pairs.len();
    let mut done = 0;
    let mut cells = BTreeMap::new();
    for &(c, s) in &pairs {
        {
            for case in &cases {
                let reps = if case.timed { o.runs } else { 1 };
                let mut results = Vec::new();
                for rep in 0..reps {
                    if INTERRUPTED.load(Ordering::SeqCst) {
                        return Err("interrupted".into());
                    }
                    done += 1;
                    let r = run_cell(o, c, s, case, rep, &out, cross.as_ref());
                    eprintln!(
                        "[{done}/{total}] {} → {} {}{}: {}{}",
                        c.name,
                        s.name,
                        case.name,
                        if reps > 1 {
                            format!(" run {}", rep + 1)
                        } else {
                            String::new()
                        },
                        r.0.outcome.as_str(),
                        describe(&r.0, r.1),
                    );
                    let stop = r.0.outcome != Outcome::Succeeded;
                    results.push(r.0);
                    if stop {
                        break;
                    }
                }
                cells.insert(
                    (
                        c.name.to_string(),
                        s.name.to_string(),
                        case.name.to_string(),
                    ),
                    results,
                );
            }
        }
    }
    let m = Matrix {
        clients: clients.iter().map(|i| i.name.to_string()).collect(),
        servers: servers.iter().map(|i| i.name.to_string()).collect(),
        cases,
        cells,
        start_time: start,
        end_time: unix_now(),
        log_dir: out.display().to_string(),
    };
    let write = |name: &str, text: String| {
        std::fs::write(out.join(name), text).map_err(|e| format!("{name}: {e}"))
    };
    write(
        "results.json",
        serde_json::to_string_pretty(&m.runner_json()).unwrap_or_default() + "\n",
    )?;
    let md = m.markdown() + "\n" + &m.goodput_markdown();
    write("matrix.md", md.clone())?;
    write("index.html", m.html())?;
    println!("{md}");
    println!(
        "Results: {}/results.json, matrix.md, index.html",
        out.display()
    );
    let failed = m
        .cells
        .values()
        .flatten()
        .any(|r| r.outcome == Outcome::Failed);
    Ok(!failed)
}

fn run_cell(
    o: &Options,
    c: &Implementation,
    s: &Implementation,
    case: &Case,
    rep: usize,
    out: &Path,
    cross: Option<&Implementation>,
) -> (cell::CellResult, f64) {
    let certs = &certs_dir(out, case.chain);
    let mut dir = out.join(format!("{}_{}", s.name, c.name)).join(case.name);
    if case.timed {
        dir = dir.join((rep + 1).to_string());
    }
    let t0 = Instant::now();
    let setup = Setup {
        dir,
        certs,
        seed: o.seed + rep as u64,
        cross,
    };
    let r = cell::run(case, c, s, &setup);
    (r, t0.elapsed().as_secs_f64())
}

fn describe(r: &cell::CellResult, secs: f64) -> String {
    let mut s = format!(" ({secs:.1} s");
    if let Some(k) = r.kbps {
        s += &format!(", {k:.0} kbit/s");
    }
    s += ")";
    if !r.reason.is_empty() {
        s += &format!(": {}", r.reason);
    }
    s
}

/// Certificates for servers with a chain of `len` (`certs`, `certs-chainN`).
fn certs_dir(out: &Path, len: usize) -> PathBuf {
    if len <= 1 {
        out.join("certs")
    } else {
        out.join(format!("certs-chain{len}"))
    }
}

fn list(known: &[Implementation], cases: &[Case]) {
    println!("implementations:");
    for i in known {
        match &i.missing {
            None => println!("  {:14} {}", i.name, i.script.display()),
            Some(m) => println!("  {:14} missing: {m}", i.name),
        }
    }
    println!("test cases:");
    for c in cases {
        println!("  {:14} {:3} {}", c.name, c.abbr, c.desc);
    }
    println!("not run:");
    for (n, why) in NOT_RUN {
        println!("  {n:14} {why}");
    }
}
