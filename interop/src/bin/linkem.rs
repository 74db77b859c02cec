//! `linkem`: user-space UDP link emulator. See `linkem --help` and docs/emulator.md.
#![deny(unsafe_op_in_unsafe_fn)]

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use interop::cli::{parse_linkem_args, LinkemCommand, LINKEM_USAGE};
use interop::relay::Relay;

static TERMINATE: AtomicBool = AtomicBool::new(false);
static DUMP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only async-signal-safe work here: atomic stores.
    if sig == libc::SIGUSR1 {
        DUMP.store(true, Ordering::SeqCst);
    } else {
        TERMINATE.store(true, Ordering::SeqCst);
    }
}

fn install_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGUSR1] {
        // SAFETY: sigaction with a zeroed mask and a handler that only
        // performs atomic stores; the struct is fully initialised.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

fn main() -> ExitCode {
    let opts = match parse_linkem_args(std::env::args().skip(1)) {
        Ok(LinkemCommand::Help) => {
            println!("{LINKEM_USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(LinkemCommand::Run(o)) => o,
        Err(e) => {
            eprintln!("linkem: error: {e}");
            return ExitCode::from(2);
        }
    };
    install_signals();
    let handle = match Relay::spawn(opts.relay.clone()) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("linkem: error: {e}");
            return ExitCode::from(1);
        }
    };
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "listening {}", handle.local_addr());
        let _ = out.flush();
    }
    let started = Instant::now();
    let write = |stats: &interop::relay::Stats| -> bool {
        match &opts.stats {
            Some(p) => match stats.write_file(p) {
                Ok(()) => true,
                Err(e) => {
                    eprintln!("linkem: error: cannot write {}: {e}", p.display());
                    false
                }
            },
            None => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{}", serde_json::to_string(stats).unwrap_or_default());
                let _ = out.flush();
                true
            }
        }
    };
    loop {
        if TERMINATE.load(Ordering::SeqCst) {
            break;
        }
        if opts.duration.is_some_and(|d| started.elapsed() >= d) {
            break;
        }
        if DUMP.swap(false, Ordering::SeqCst) {
            write(&handle.stats());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let stats = handle.stop();
    if write(&stats) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
