//! The client library (`quic_nc_examples::client::Client`) against a real
//! `qnc-server`: bodies to memory, file and callback, several requests on
//! one reused connection, progress, cancellation, typed errors, uploads,
//! statistics, and a coded download over a lossy emulated link.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use quic_nc_examples::client::{Client, ClientConfig, ErrorKind, RequestSpec, Transferred, Trust};
use quic_nc_examples::upload::UploadSpec;

mod common;
use common::*;

fn config(s: &Scratch) -> ClientConfig {
    ClientConfig {
        trust: Trust::CaFile(s.path("certs/ca.pem")),
        ..ClientConfig::default()
    }
}

fn digest(b: &[u8]) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    Sha256::digest(b).to_vec()
}

#[test]
fn memory_file_and_chunks_on_one_reused_connection() {
    let s = setup("lib-basic");
    let srv = Server::start(&s, &["--stats-json"]);
    let client = Client::new(config(&s)).unwrap();
    let want = std::fs::read(s.path("root/data.bin")).unwrap();

    // Two requests in flight at once, then a third after they finished.
    let a = client
        .start(RequestSpec::get(srv.url("/data.bin")))
        .unwrap();
    let file = s.path("saved.bin");
    let b = client
        .start(RequestSpec::get(srv.url("/data.bin")).to_file(&file))
        .unwrap();
    let ra = a.wait().unwrap();
    let rb = b.wait().unwrap();
    assert_eq!(ra.status, 200);
    assert_eq!(digest(&ra.body), digest(&want));
    assert_eq!(ra.header("content-length"), Some("2000000"));
    assert!(rb.body.is_empty());
    assert_eq!(rb.saved_to.as_deref(), Some(file.as_path()));
    assert_eq!(sha256(&file), digest(&want));
    assert!(a.wait().is_err(), "a result is taken once");

    let got = Arc::new(Mutex::new(Vec::new()));
    let g = got.clone();
    let progress = Arc::new(Mutex::new(Vec::<Transferred>::new()));
    let p = progress.clone();
    let c = client
        .start(
            RequestSpec::get(srv.url("/data.bin"))
                .chunks(move |d| g.lock().unwrap().extend_from_slice(d))
                .progress(move |t| p.lock().unwrap().push(t)),
        )
        .unwrap();
    let rc = c.wait().unwrap();
    assert_eq!(rc.bytes, 2_000_000);
    assert_eq!(digest(&got.lock().unwrap()), digest(&want));
    let last = *progress.lock().unwrap().last().expect("progress reported");
    assert_eq!((last.bytes, last.total), (2_000_000, Some(2_000_000)));
    assert!(last.goodput_bps > 0.0);

    let key = format!("127.0.0.1:{}", srv.port);
    let st = client.stats(&key).expect("stats of the connection");
    assert!(st.open && st.packets_received > 0 && st.rtt.is_some());
    assert_eq!(st.controller, "hybrid");
    assert!(st.coding, "both ends offer coding by default");
    client.close();
    // One connection carried all three bodies.
    let lines = srv.json_lines(1);
    assert!(
        lines[0]["bytes_sent"].as_u64().unwrap() > 3 * 2_000_000,
        "{}",
        lines[0]
    );
    srv.stop();
}

#[test]
fn statuses_uploads_and_typed_errors() {
    let s = setup("lib-errors");
    let srv = Server::start(&s, &[]);
    let client = Client::new(config(&s)).unwrap();

    let r = client.get(&srv.url("/missing")).unwrap();
    assert_eq!(r.status, 404);
    let e = r.error_for_status().unwrap_err();
    assert_eq!((e.kind, e.status), (ErrorKind::Status, Some(404)));

    let body: Vec<u8> = (0..300_000u32).map(|i| (i * 7) as u8).collect();
    let r = client
        .start(RequestSpec::post(
            srv.url("/upload"),
            UploadSpec::Bytes(body.clone().into()),
        ))
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(r.status, 200);
    let hex: String = digest(&body).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(r.header("x-sha256"), Some(hex.as_str()));

    assert_eq!(client.get("ftp://x/").unwrap_err().kind, ErrorKind::Config);
    let bad = ClientConfig {
        trust: Trust::CaFile(s.path("nope.pem")),
        ..ClientConfig::default()
    };
    assert_eq!(Client::new(bad).err().unwrap().kind, ErrorKind::Config);

    // A pin that does not match is a TLS error; the right one works.
    let wrong = Client::new(ClientConfig {
        trust: Trust::Pinned("00".repeat(32)),
        ..ClientConfig::default()
    })
    .unwrap();
    assert_eq!(
        wrong.get(&srv.url("/data.bin")).unwrap_err().kind,
        ErrorKind::Tls
    );
    let pem = std::fs::read(s.path("certs/cert.pem")).unwrap();
    let pin = quic_nc_examples::transport::pin_of_pem(&pem).unwrap();
    let pinned = Client::new(ClientConfig {
        trust: Trust::Pinned(pin),
        ..ClientConfig::default()
    })
    .unwrap();
    assert_eq!(pinned.get(&srv.url("/data.bin")).unwrap().bytes, 2_000_000);

    // Nothing listens: unreachable, quickly.
    let dead = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = dead.local_addr().unwrap().port();
    drop(dead);
    let quick = Client::new(ClientConfig {
        connect_timeout: Duration::from_secs(2),
        ..config(&s)
    })
    .unwrap();
    let e = quick
        .get(&format!("https://127.0.0.1:{port}/x"))
        .unwrap_err();
    assert!(
        matches!(e.kind, ErrorKind::Unreachable | ErrorKind::Timeout),
        "{e:?}"
    );
    srv.stop();
}

#[test]
fn cancel_and_timeout_leave_the_connection_usable() {
    let s = setup("lib-cancel");
    let srv = Server::start(&s, &[]);
    // 4 Mbit/s, 20 ms each way: a 50 MB body takes far longer than the test.
    let relay = relay_with(
        srv.port,
        link(4_000_000, Duration::from_millis(20), bernoulli(0.0)),
        1,
    );
    let client = Client::new(config(&s)).unwrap();
    let seen = Arc::new(Mutex::new(0u64));
    let sn = seen.clone();
    let big = client
        .start(
            RequestSpec::get(relay_url(&relay, "/bytes/50000000"))
                .progress(move |t| *sn.lock().unwrap() = t.bytes),
        )
        .unwrap();
    assert!(big.wait_timeout(Duration::from_millis(1500)).is_none());
    assert!(*seen.lock().unwrap() > 0, "progress while running");
    big.cancel();
    let e = big
        .wait_timeout(Duration::from_secs(5))
        .expect("cancel is prompt")
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Cancelled);

    let slow = client
        .start(
            RequestSpec::get(relay_url(&relay, "/bytes/50000000")).timeout(Duration::from_secs(1)),
        )
        .unwrap();
    let e = slow
        .wait_timeout(Duration::from_secs(10))
        .expect("timed out")
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Timeout, "{e}");

    let r = client.get(&relay_url(&relay, "/bytes/100000")).unwrap();
    assert_eq!(r.body.len(), 100_000);
    client.close();
    srv.stop();
}

#[test]
fn coded_download_over_ten_percent_loss() {
    let s = setup("lib-loss");
    let srv = Server::start(&s, &[]);
    let relay = relay_with(
        srv.port,
        link(20_000_000, Duration::from_millis(20), bernoulli(0.10)),
        7,
    );
    let client = Client::new(config(&s)).unwrap();
    let r = client
        .start(RequestSpec::get(relay_url(&relay, "/data.bin")).timeout(Duration::from_secs(60)))
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(digest(&r.body), sha256(&s.path("root/data.bin")));
    let key = format!("127.0.0.1:{}", relay.local_addr().port());
    let st = client.stats(&key).unwrap();
    assert!(st.coding);
    assert!(st.recovered > 0, "losses recovered by decoding: {st:?}");
    assert!(st.repair_overhead > 0.0);
    srv.stop();
}

#[test]
fn async_callers_await_the_same_calls() {
    let s = setup("lib-async");
    let srv = Server::start(&s, &[]);
    let client = Client::new(config(&s)).unwrap();
    let fut = client
        .start(RequestSpec::get(srv.url("/bytes/12345")))
        .unwrap()
        .into_future();
    let r = block_on(fut).unwrap();
    assert_eq!(r.body.len(), 12_345);
    srv.stop();
}

/// A minimal executor: polls on the calling thread, parks between wakes.
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park_timeout(Duration::from_millis(100));
    }
}
