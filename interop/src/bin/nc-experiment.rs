//! `nc-experiment`: a (row × loss) matrix of HTTP/3 downloads through
//! `linkem` (medians over interleaved runs, ratios to a reference row),
//! `--compete A,B`, the `bench-e2e` tables, the `bench-cellular` trace
//! benchmark, the `bench-fairness` check, or scenario files (`scenario`).
//! See `nc-experiment --help`, `nc-experiment SUBCOMMAND --help` and
//! docs/emulator.md.
#![deny(unsafe_op_in_unsafe_fn)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use interop::compete::{
    format_compete_summary, format_compete_table, pair_label, run_compete_table, CompeteReport,
};
use interop::experiment::bench::run_bench;
use interop::experiment::cellular::run_cellular;
use interop::experiment::{
    cells, format_cells, format_failures, format_runs, make_certs, matrix_caption, parse_args,
    prepare_rows, run_matrix, Command_, Layout, MatrixReport, Options, Outcome, INTERRUPTED,
};
use interop::peer::FlowSpec;

extern "C" fn on_signal(_sig: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

fn main() -> ExitCode {
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("."));
    let cmd = match parse_args(std::env::args().skip(1), &exe_dir) {
        Ok(Command_::Help(text)) => {
            println!("{text}");
            return ExitCode::SUCCESS;
        }
        Ok(c) => c,
        Err(e) => {
            eprintln!("nc-experiment: error: {e}");
            return ExitCode::from(2);
        }
    };
    if let Command_::Fairness(f) = &cmd {
        if !f.merge.is_empty() {
            return match interop::experiment::fairness_merge::merge_fairness(f) {
                Ok(code) => ExitCode::from(code),
                Err(e) => {
                    eprintln!("nc-experiment: error: {e}");
                    ExitCode::from(1)
                }
            };
        }
    }
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: installs a handler that only stores to an atomic.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
    let (bin_dir, keep) = match &cmd {
        Command_::Run(o) => (o.tools.bin_dir.clone(), o.keep),
        Command_::Bench(b) => (b.base.tools.bin_dir.clone(), b.base.keep),
        Command_::Cellular(c) => (c.base.tools.bin_dir.clone(), c.base.keep),
        Command_::Fairness(f) => (f.base.tools.bin_dir.clone(), f.base.keep),
        Command_::Scenario(s) => (s.bin_dir.clone().unwrap_or_else(|| exe_dir.clone()), s.keep),
        Command_::Help(_) => unreachable!(),
    };
    let work = std::env::temp_dir().join(format!("nc-experiment-{}", std::process::id()));
    let certs = work.join("certs");
    if let Err(e) = std::fs::create_dir_all(&certs)
        .map_err(|e| e.to_string())
        .and_then(|_| make_certs(&bin_dir, &certs))
    {
        eprintln!("nc-experiment: error: {e}");
        let _ = std::fs::remove_dir_all(&work);
        return ExitCode::from(1);
    }
    let code = match cmd {
        Command_::Bench(b) => match run_bench(&b, &work, &certs) {
            Ok(c) => ExitCode::from(c),
            Err(e) => {
                eprintln!("nc-experiment: error: {e}");
                ExitCode::from(1)
            }
        },
        Command_::Cellular(c) => match run_cellular(&c, &work, &certs) {
            Ok(code) => ExitCode::from(code),
            Err(e) => {
                eprintln!("nc-experiment: error: {e}");
                ExitCode::from(1)
            }
        },
        Command_::Fairness(f) => {
            match interop::experiment::fairness::run_fairness(&f, &work, &certs) {
                Ok(code) => ExitCode::from(code),
                Err(e) => {
                    eprintln!("nc-experiment: error: {e}");
                    ExitCode::from(1)
                }
            }
        }
        Command_::Scenario(s) => ExitCode::from(interop::scenario::cli::run_scenarios(
            &s, &exe_dir, &work, &certs,
        )),
        Command_::Run(o) => match o.compete.clone() {
            Some(pair) => run_compete_matrix(&o, &pair, &work, &certs),
            None => run_rows(&o, &work, &certs),
        },
        Command_::Help(_) => unreachable!(),
    };
    if keep {
        eprintln!("work directory kept: {}", work.display());
    } else {
        let _ = std::fs::remove_dir_all(&work);
    }
    code
}

/// The matrix: every row at every loss, `--runs` times, interleaved.
fn run_rows(opts: &Options, work: &Path, certs: &Path) -> ExitCode {
    if let Err(e) = prepare_rows(opts) {
        eprintln!("nc-experiment: error: {e}");
        return ExitCode::from(1);
    }
    let results = run_matrix(opts, work, certs, "");
    let cs = cells(&results, &opts.rows, &opts.loss, opts.reference_row());
    println!("{}", matrix_caption(opts));
    if opts.markdown {
        println!();
    }
    let layout = if opts.stream.is_some() {
        Layout::Stream
    } else if opts.direct {
        Layout::Cost
    } else {
        Layout::Bulk
    };
    print!(
        "{}",
        format_cells(&cs, layout, opts.markdown, opts.traced())
    );
    let failures = format_failures(&cs);
    if !failures.is_empty() {
        println!();
        print!("{failures}");
    }
    if opts.per_run {
        println!();
        print!("{}", format_runs(&results, opts.markdown, opts.traced()));
    }
    let mut code = ExitCode::SUCCESS;
    if let Some(p) = &opts.json {
        let text = serde_json::to_string_pretty(&MatrixReport {
            options: opts,
            results: &results,
            cells: &cs,
        })
        .unwrap_or_default();
        if let Err(e) = std::fs::write(p, text + "\n") {
            eprintln!("nc-experiment: error: cannot write {}: {e}", p.display());
            code = ExitCode::from(1);
        }
    }
    if INTERRUPTED.load(Ordering::SeqCst) {
        return ExitCode::from(130);
    }
    if !results.is_empty() && results.iter().all(|r| r.outcome == Outcome::Failed) {
        return ExitCode::from(1);
    }
    code
}

/// `--compete A,B`: for each loss and run, two flows through one linkem.
fn run_compete_matrix(opts: &Options, pair: &[String], work: &Path, certs: &Path) -> ExitCode {
    // Foreign stacks: install ngtcp2 / build the quic-go peer if needed.
    for s in pair {
        if let Err(e) = FlowSpec::parse(s).and_then(|f| f.prepare(&opts.tools)) {
            eprintln!("nc-experiment: error: {e}");
            return ExitCode::from(1);
        }
    }
    let label = pair_label(pair);
    let rows = run_compete_table(opts, pair, work, certs, "");
    println!(
        "# compete {label}: {} bytes each over {:.3} Mbit/s, RTT {:?}, buffer {}, loss position {}, \
         stagger {:?}, seed {}",
        opts.size,
        opts.rate_bps as f64 / 1e6,
        opts.rtt,
        opts.buffer,
        opts.loss_position,
        opts.stagger,
        opts.seed
    );
    if !opts.flow_rtt.is_empty() {
        let rtts: Vec<String> = opts.flow_rtt.iter().map(|r| format!("{r:?}")).collect();
        println!(
            "# round-trip propagation delay per flow: {}",
            rtts.join(", ")
        );
    }
    println!("# shares: Mbit/s each flow got from the bottleneck while both were active");
    println!("# flows without a STACK: prefix are quiche (qnc-server/qnc-client)");
    print!("{}", format_compete_table(&rows, opts.markdown));
    println!();
    print!("{}", format_compete_summary(&rows, opts.markdown));
    let mut code = ExitCode::SUCCESS;
    if let Some(p) = &opts.json {
        let text = serde_json::to_string_pretty(&CompeteReport {
            options: opts,
            results: &rows,
        })
        .unwrap_or_default();
        if let Err(e) = std::fs::write(p, text + "\n") {
            eprintln!("nc-experiment: error: cannot write {}: {e}", p.display());
            code = ExitCode::from(1);
        }
    }
    if INTERRUPTED.load(Ordering::SeqCst) {
        return ExitCode::from(130);
    }
    if !rows.is_empty() && rows.iter().all(|r| r.error.is_some()) {
        return ExitCode::from(1);
    }
    code
}
