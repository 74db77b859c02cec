//! `nc-experiment`: runs a (cc × loss) matrix of HTTP/3 downloads through
//! `linkem` and prints a table. See `nc-experiment --help` and docs/emulator.md.
#![deny(unsafe_op_in_unsafe_fn)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use interop::compete::{
    format_compete_summary, format_compete_table, pair_label, run_compete, CompeteReport,
};
use interop::experiment::{
    compute_ratios, format_table, make_certs, parse_args, run_one, Command_, Options, Report,
    INTERRUPTED, USAGE,
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
    let opts = match parse_args(std::env::args().skip(1), &exe_dir) {
        Ok(Command_::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(Command_::Run(o)) => o,
        Err(e) => {
            eprintln!("nc-experiment: error: {e}");
            return ExitCode::from(2);
        }
    };
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: installs a handler that only stores to an atomic.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
    let work = std::env::temp_dir().join(format!("nc-experiment-{}", std::process::id()));
    let certs = work.join("certs");
    if let Err(e) = std::fs::create_dir_all(&certs)
        .map_err(|e| e.to_string())
        .and_then(|_| make_certs(&opts, &certs))
    {
        eprintln!("nc-experiment: error: {e}");
        let _ = std::fs::remove_dir_all(&work);
        return ExitCode::from(1);
    }
    if let Some(pair) = opts.compete.clone() {
        return run_compete_matrix(&opts, &pair, &work, &certs);
    }
    let total = opts.cc.len() * opts.loss.len() * opts.runs;
    let mut rows = Vec::new();
    'outer: for loss in &opts.loss {
        for run in 0..opts.runs {
            for cc in &opts.cc {
                if INTERRUPTED.load(Ordering::SeqCst) {
                    break 'outer;
                }
                eprint!(
                    "[{}/{}] cc={cc} loss={} run={run} ... ",
                    rows.len() + 1,
                    total,
                    loss.label
                );
                let r = run_one(&opts, cc, loss, run, &work, &certs);
                match (&r.error, r.completion_s, r.goodput_mbps) {
                    (Some(e), _, _) => eprintln!("FAILED: {e}"),
                    (None, Some(t), Some(g)) => eprintln!("{t:.2} s, {g:.2} Mbit/s"),
                    _ => eprintln!("done"),
                }
                rows.push(r);
            }
        }
    }
    compute_ratios(&mut rows);
    println!(
        "# {} bytes over {:.3} Mbit/s, RTT {:?}, buffer {}, loss position {}, seed {}",
        opts.size,
        opts.rate_bps as f64 / 1e6,
        opts.rtt,
        opts.buffer,
        opts.loss_position,
        opts.seed
    );
    print!("{}", format_table(&rows, opts.markdown));
    let mut code = ExitCode::SUCCESS;
    if let Some(p) = &opts.json {
        let text = serde_json::to_string_pretty(&Report {
            options: &opts,
            results: &rows,
        })
        .unwrap_or_default();
        if let Err(e) = std::fs::write(p, text + "\n") {
            eprintln!("nc-experiment: error: cannot write {}: {e}", p.display());
            code = ExitCode::from(1);
        }
    }
    if opts.keep {
        eprintln!("work directory kept: {}", work.display());
    } else {
        let _ = std::fs::remove_dir_all(&work);
    }
    if INTERRUPTED.load(Ordering::SeqCst) {
        return ExitCode::from(130);
    }
    if !rows.is_empty() && rows.iter().all(|r| r.error.is_some()) {
        return ExitCode::from(1);
    }
    code
}

/// `--compete A,B`: for each loss and run, two flows through one linkem.
fn run_compete_matrix(
    opts: &Options,
    pair: &[String],
    work: &std::path::Path,
    certs: &std::path::Path,
) -> ExitCode {
    // Foreign stacks: install ngtcp2 / build the quic-go peer if needed.
    for s in pair {
        if let Err(e) = FlowSpec::parse(s).and_then(|f| f.prepare(opts)) {
            eprintln!("nc-experiment: error: {e}");
            let _ = std::fs::remove_dir_all(work);
            return ExitCode::from(1);
        }
    }
    let label = pair_label(pair);
    let total = opts.loss.len() * opts.runs;
    let mut rows = Vec::new();
    'outer: for loss in &opts.loss {
        for run in 0..opts.runs {
            if INTERRUPTED.load(Ordering::SeqCst) {
                break 'outer;
            }
            eprint!(
                "[{}/{}] compete {label} loss={} run={run} ... ",
                rows.len() + 1,
                total,
                loss.label
            );
            let r = run_compete(opts, pair, loss, run, work, certs);
            match (&r.error, r.ratio, r.jain) {
                (Some(e), _, _) => eprintln!("FAILED: {e}"),
                (None, Some(q), Some(j)) => eprintln!("A/B {q:.2}, Jain {j:.3}"),
                _ => eprintln!("done"),
            }
            rows.push(r);
        }
    }
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
    if opts.keep {
        eprintln!("work directory kept: {}", work.display());
    } else {
        let _ = std::fs::remove_dir_all(work);
    }
    if INTERRUPTED.load(Ordering::SeqCst) {
        return ExitCode::from(130);
    }
    if !rows.is_empty() && rows.iter().all(|r| r.error.is_some()) {
        return ExitCode::from(1);
    }
    code
}
