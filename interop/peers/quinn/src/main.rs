//! quinn-peer: an HTTP/3 server and client on quinn + h3 whose default
//! congestion controller is quinn's BBR (BBRv1-style), the "BBRv1-style
//! reference peer" of the QUIC-NC benchmarks. See README.md.
//!
//!   quinn-peer server --addr 127.0.0.1:0 --cert cert.pem --key key.pem
//!   quinn-peer client --url https://127.0.0.1:PORT/bytes/N --ca ca.pem

mod args;
mod client;
mod common;
mod server;

use std::process::ExitCode;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mode = match args::parse(&argv) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("quinn-peer: {e}\n{}", args::USAGE);
            return ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("quinn-peer: tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = match mode {
        args::Mode::Help => {
            println!("{}", args::USAGE);
            Ok(())
        }
        args::Mode::Server(a) => rt.block_on(server::run(a)),
        args::Mode::Client(a) => rt.block_on(client::run(a)),
    };
    // Do not wait for tasks still blocked on sockets.
    rt.shutdown_timeout(std::time::Duration::from_millis(100));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("quinn-peer: {}", e.replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}
