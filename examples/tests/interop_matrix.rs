//! A quick subset of the interop matrix (`make interop` runs all of it):
//! the quic-interop-runner's test cases through `interop::runner`, with
//! our endpoint (`docker/run_endpoint.sh`, coding on) against itself and
//! against ngtcp2 in both roles, over the runner's link shapes. Every cell
//! must succeed: files byte for byte, and the handshakes, Retry and 0-RTT
//! packets the relay saw on the wire, the server following a NAT
//! rebinding and keeping to the anti-amplification limit.

use std::path::Path;

use interop::runner::cases::find;
use interop::runner::cell::{run, Outcome, Setup};
use interop::runner::endpoints;

mod common;
use common::*;

const CASES: &[&str] = &[
    "handshake",
    "retry",
    "resumption",
    "zerortt",
    "http3",
    "multiplexing",
    "transferloss",
    "transfercorruption",
    "rebind-port",
    "amplificationlimit",
];

#[test]
fn quick_matrix_ours_and_ngtcp2() {
    third_party_dir(); // installs ngtcp2 when missing
    let bin = Path::new(SERVER).parent().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let all = endpoints::all(&repo, bin);
    let pick = |n| endpoints::select(&all, n).unwrap().remove(0);
    let (ours, ngtcp2) = (pick("quic-nc"), pick("ngtcp2"));
    assert!(ngtcp2.missing.is_none(), "{:?}", ngtcp2.missing);
    let s = Scratch::new("interop-matrix");
    let cert_dir = s.path("certs");
    certs(&cert_dir);
    std::fs::copy(cert_dir.join("key.pem"), cert_dir.join("priv.key")).unwrap();
    let chain_dir = s.path("certs-chain9");
    quic_nc_examples::certs::generate_chain(&chain_dir, 9).unwrap();
    std::fs::copy(chain_dir.join("key.pem"), chain_dir.join("priv.key")).unwrap();
    let mut failures = Vec::new();
    for (c, sv) in [(&ours, &ours), (&ours, &ngtcp2), (&ngtcp2, &ours)] {
        for name in CASES {
            let case = find(name).unwrap();
            let setup = Setup {
                dir: s.path(&format!("{}_{}/{name}", sv.name, c.name)),
                certs: if case.chain > 1 {
                    &chain_dir
                } else {
                    &cert_dir
                },
                seed: 1,
                cross: None,
            };
            let r = run(&case, c, sv, &setup);
            eprintln!(
                "{} → {} {name}: {:?} {}",
                c.name, sv.name, r.outcome, r.reason
            );
            if r.outcome != Outcome::Succeeded {
                failures.push(format!("{} → {} {name}: {}", c.name, sv.name, r.reason));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn unsupported_case_and_missing_peer_are_reported_as_such() {
    let bin = Path::new(SERVER).parent().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let all = endpoints::all(&repo, bin);
    let ours = endpoints::select(&all, "quic-nc").unwrap().remove(0);
    let s = Scratch::new("interop-unsupported");
    let cert_dir = s.path("certs");
    certs(&cert_dir);
    std::fs::copy(cert_dir.join("key.pem"), cert_dir.join("priv.key")).unwrap();
    let setup = |d: &str| Setup {
        dir: s.path(d),
        certs: &cert_dir,
        seed: 1,
        cross: None,
    };
    // keyupdate: quiche cannot initiate one, so our client exits 127.
    let r = run(&find("keyupdate").unwrap(), &ours, &ours, &setup("ku"));
    assert_eq!(r.outcome, Outcome::Unsupported, "{}", r.reason);
    let mut gone = ours.clone();
    gone.missing = Some("not installed".into());
    let r = run(&find("handshake").unwrap(), &gone, &ours, &setup("gone"));
    assert_eq!(r.outcome, Outcome::Missing);
}
