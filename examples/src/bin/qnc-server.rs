//! `qnc-server`: HTTP/3 file server over quiche.

use clap::Parser;
use quic_nc_examples::{args::ServerArgs, server, shutdown::Shutdown};

fn main() -> std::process::ExitCode {
    let args = ServerArgs::parse();
    let result = Shutdown::install().and_then(|s| server::run(&args, &s));
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
