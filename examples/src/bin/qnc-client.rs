//! `qnc-client`: fetches URLs over HTTP/3, curl-style.

use clap::Parser;
use quic_nc_examples::{args::ClientArgs, client, server::print_line, shutdown::Shutdown};

fn main() -> std::process::ExitCode {
    let args = ClientArgs::parse();
    let shutdown = match Shutdown::install() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let outcome = client::run(&args, &shutdown);
    if let Some(r) = &outcome.report {
        print_line(&if args.json { r.json() } else { r.human() });
    }
    if let Some(e) = &outcome.error {
        eprintln!("error: {e}");
    }
    std::process::ExitCode::from(outcome.exit)
}
