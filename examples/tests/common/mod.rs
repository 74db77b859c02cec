//! Shared helpers of the end-to-end tests: scratch directories, the three
//! tools as child processes, and output parsing.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use interop::link::{Buffer, LinkConfig};
use interop::loss::{LossModel, LossSchedule};
use interop::relay::{Relay, RelayConfig, RelayHandle};
use sha2::{Digest, Sha256};

pub const CERTS: &str = env!("CARGO_BIN_EXE_qnc-certs");
pub const SERVER: &str = env!("CARGO_BIN_EXE_qnc-server");
pub const CLIENT: &str = env!("CARGO_BIN_EXE_qnc-client");
pub const HANG_GUARD: Duration = Duration::from_secs(120);

/// A fresh scratch directory per test, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Scratch {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "qnc-e2e-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    pub fn path(&self, p: &str) -> PathBuf {
        self.0.join(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn certs(dir: &Path) {
    let out = Command::new(CERTS).arg("--out").arg(dir).output().unwrap();
    assert!(
        out.status.success(),
        "qnc-certs: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for f in ["ca.pem", "ca.key", "cert.pem", "key.pem"] {
        assert!(dir.join(f).is_file(), "{f}");
    }
}

/// A running server, killed on drop; its stdout lines arrive on `lines`.
pub struct Server {
    pub child: Child,
    pub port: u16,
    pub lines: Receiver<String>,
}

impl Server {
    pub fn start(s: &Scratch, extra: &[&str]) -> Server {
        Server::start_with_env(s, extra, &[])
    }

    pub fn start_with_env(s: &Scratch, extra: &[&str], env: &[(&str, &Path)]) -> Server {
        Server::start_on(s, "127.0.0.1:0", extra, env)
    }

    /// Starts a server listening on `listen` (e.g. `[::1]:0`).
    pub fn start_on(s: &Scratch, listen: &str, extra: &[&str], env: &[(&str, &Path)]) -> Server {
        let mut cmd = Command::new(SERVER);
        cmd.envs(env.iter().copied())
            .args(["--listen", listen, "--idle-timeout", "5000"])
            .arg("--root")
            .arg(s.path("root"))
            .arg("--cert")
            .arg(s.path("certs/cert.pem"))
            .arg("--key")
            .arg(s.path("certs/key.pem"))
            .args(extra);
        Server::spawn(cmd)
    }

    /// Runs `cmd`, which must start a qnc-server (directly or through a
    /// script), and waits for its `listening ADDR` line.
    pub fn spawn(mut cmd: Command) -> Server {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let first = lines
            .recv_timeout(HANG_GUARD)
            .expect("server printed nothing");
        let addr = first.strip_prefix("listening ").expect("listening line");
        let port = addr.rsplit(':').next().unwrap().parse().unwrap();
        Server { child, port, lines }
    }

    /// The JSON lines (`--stats-json`) of the next `n` connections to
    /// close, or fewer if none comes within the hang guard.
    pub fn json_lines(&self, n: usize) -> Vec<serde_json::Value> {
        let mut v = Vec::new();
        while v.len() < n {
            match self.lines.recv_timeout(HANG_GUARD) {
                Ok(l) => v.push(serde_json::from_str(&l).expect("JSON line")),
                Err(_) => break,
            }
        }
        v
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// Stops the server the way a user does (SIGTERM: it closes its
    /// connections and flushes their qlogs), killing it if it does not exit
    /// within the hang guard.
    pub fn stop(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let t0 = std::time::Instant::now();
        while t0.elapsed() < HANG_GUARD {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs a command to completion, killing it if it hangs.
pub fn run(cmd: &mut Command) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > HANG_GUARD {
            let _ = child.kill();
            panic!("command hung: {cmd:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
    }
}

pub fn client(s: &Scratch, args: &[&str]) -> Output {
    run(Command::new(CLIENT)
        .arg("--ca")
        .arg(s.path("certs/ca.pem"))
        .args(args))
}

pub fn stderr_lines(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .map(str::to_string)
        .collect()
}

pub fn json_lines(o: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

pub fn sha256(path: &Path) -> Vec<u8> {
    Sha256::digest(std::fs::read(path).unwrap()).to_vec()
}

/// Certificates plus a root with a 2 MB pseudo-random file.
pub fn setup(tag: &str) -> Scratch {
    let s = Scratch::new(tag);
    certs(&s.path("certs"));
    std::fs::create_dir_all(s.path("root")).unwrap();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let data: Vec<u8> = (0..2_000_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    std::fs::write(s.path("root/data.bin"), data).unwrap();
    s
}

/// A link of `rate_bps` with `delay` each way, a one-BDP buffer (at least
/// 16 packets) and `loss`.
pub fn link(rate_bps: u64, delay: Duration, loss: LossSchedule) -> LinkConfig {
    LinkConfig {
        rate_bps: Some(rate_bps),
        delay,
        buffer: Buffer::bdp(Some(rate_bps), 2 * delay, 16 * 1500),
        loss,
        ..LinkConfig::default()
    }
}

/// Bernoulli loss `p` (no loss model at all for 0).
pub fn bernoulli(p: f64) -> LossSchedule {
    if p > 0.0 {
        LossSchedule::constant(LossModel::Bernoulli { p })
    } else {
        LossSchedule::none()
    }
}

/// An in-process relay on a random loopback port to the server on
/// `server_port`, with `link` in both directions.
pub fn relay_with(server_port: u16, link: LinkConfig, seed: u64) -> RelayHandle {
    let upstream = format!("127.0.0.1:{server_port}").parse().unwrap();
    let mut cfg = RelayConfig::new("127.0.0.1:0".parse().unwrap(), upstream);
    cfg.up = link.clone();
    cfg.down = link;
    cfg.seed = seed;
    Relay::spawn(cfg).expect("relay")
}

/// The `https://` URL of `path` through relay `r`.
pub fn relay_url(r: &RelayHandle, path: &str) -> String {
    format!("https://127.0.0.1:{}{path}", r.local_addr().port())
}

/// Runs `interop/peers/setup-third-party.sh` once per test process and
/// returns its install directory (`<target>/third-party`); panics with the
/// script's message if the third-party QUIC peers (aioquic from PyPI,
/// quic-go through the Go module proxy, Debian's ngtcp2, ...) could not be
/// installed.
pub fn third_party_dir() -> &'static Path {
    static DIR: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    let r = DIR.get_or_init(|| {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../interop/peers/setup-third-party.sh");
        // <target>/debug/qnc-server -> <target>/third-party
        let dest = Path::new(SERVER)
            .parent()
            .and_then(Path::parent)
            .expect("target directory")
            .join("third-party");
        let out = Command::new("bash")
            .arg(&script)
            .arg(&dest)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} failed ({}): the third-party QUIC peers could not be installed:\n{}{}",
                script.display(),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(dest)
    });
    match r {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    }
}
