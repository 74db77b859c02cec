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
            // The leaf's pin, for `qnc-client --pin-sha256` and the SDK.
            if let Ok(pin) = std::fs::read(&p.cert)
                .map_err(|e| e.to_string())
                .and_then(|pem| quic_nc_examples::transport::pin_of_pem(&pem))
            {
                println!("leaf sha256 pin {pin}");
            }
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
