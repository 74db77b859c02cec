//! `qnc-certs`: writes a test CA and a localhost leaf certificate.

use clap::Parser;
use quic_nc_examples::{args::CertsArgs, certs};

fn main() -> std::process::ExitCode {
    let args = CertsArgs::parse();
    match certs::generate_chain(&args.out, args.chain.into()) {
        Ok(p) => {
            println!(
                "wrote {} {} {} {}",
                p.ca_cert.display(),
                p.ca_key.display(),
                p.cert.display(),
                p.key.display()
            );
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
