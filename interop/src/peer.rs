//! Flow specs and the QUIC stacks behind them.
//!
//! A *flow spec* names who runs a download and how; it is the one syntax
//! for the rows of `nc-experiment`'s tables and for `--compete A,B`:
//!
//! ```text
//! [STACK:]CC[+nc=POLICY|off][+mode=systematic|full][+window=N]
//! ```
//!
//! * `CC` alone (or `quiche:CC`) is ours: `qnc-server`/`qnc-client` with
//!   `--cc CC`, coding on (`--nc auto`, adaptive, systematic: the tools'
//!   defaults). `+nc=off` turns coding off (plain QUIC); `+nc=POLICY` picks
//!   the sender's redundancy policy (`adaptive[:BETA]`, `fixed:R` with R in
//!   1..=4, `ctcp[:N]`, `von`, `fnc`; `auto`/`on` = adaptive); `+mode=full`
//!   the full-coding mode; `+window=N` the largest coding window both ends
//!   offer (`--nc-window`, 1..=4096 symbols). Server and client both get
//!   `--nc`, `--nc-policy`, `--nc-mode` (and `--nc-window`). Examples:
//!   `hybrid`, `hybrid+nc=off`, `hybrid+nc=fixed:1.25`, `cubic+nc=off`,
//!   `hybrid+mode=full`, `hybrid+window=4096`.
//! * With a prefix, that stack's server replaces ours for that flow; coding
//!   options are refused (only our stack codes). linkem and the bottleneck
//!   accounting stay the same (linkem counts bytes per client, so the share
//!   does not depend on the stack).
//!
//! Stacks:
//!
//! * `ngtcp2:CC` (CC = cubic, reno, bbr, bbr2): ngtcp2's GnuTLS example
//!   programs from Debian's `ngtcp2-server`/`ngtcp2-client` packages
//!   (`gtlsserver`, `gtlsclient`; installed with apt-get when missing and
//!   running as root). The server serves a file of `--size` bytes from a
//!   document root; it prints no `listening` line, so the runner waits until
//!   its port shows up in `/proc/net/udp`. The client prints nothing
//!   useful: success is exit status 0 plus a downloaded file of exactly
//!   `--size` bytes; the completion time is the wall time from spawning the
//!   client to noticing its exit (polled every 2-10 ms; it includes process
//!   start-up and the handshake). ngtcp2's client does not verify the
//!   server's certificate.
//! * `quic-go:cubic`: our small quic-go program (`interop/peers/quic-go`,
//!   built by `make peers` into `target/peers/quic-go-peer`, or by the
//!   runner with `go build` when `go` is on PATH). Its server serves
//!   `/bytes/N` like `qnc-server` and prints `listening ADDR`; its client
//!   verifies against our CA and prints the same JSON line as `qnc-client`
//!   (`bytes`, `duration_s`, `status`). quic-go has only CUBIC.
//! * `quinn:CC` (CC = bbr, cubic, newreno): the quinn peer
//!   (`interop/peers/quinn`, `target/peers/quinn-peer`, built by `make
//!   peers` or by the runner with cargo when missing), the BBRv1-style
//!   reference: its *server* sends the download with quinn's controller;
//!   the client is our `qnc-client` with `--nc off` (quinn has no coding)
//!   and its default controller, which only sends ACKs and the request.
//!   The server prints `listening ADDR` and a qnc-server-style JSON line
//!   per connection (`retrans_bytes` = quinn's `lost_bytes`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::experiment::process::{free_port, start_listening, Proc};

/// The implementation behind one flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stack {
    /// Ours: `qnc-server`/`qnc-client` (patched quiche).
    Quiche,
    /// ngtcp2 0.12 example programs (`gtlsserver`/`gtlsclient`).
    Ngtcp2,
    /// `quic-go-peer` (quic-go's http3 package).
    QuicGo,
    /// `quinn-peer` server (quinn + h3), downloaded with our `qnc-client`.
    Quinn,
}

/// `gtlsserver` (Debian package `ngtcp2-server`).
pub const NGTCP2_SERVER: &str = "/usr/sbin/gtlsserver";
/// `gtlsclient` (Debian package `ngtcp2-client`).
pub const NGTCP2_CLIENT: &str = "/usr/bin/gtlsclient";
/// The file the ngtcp2 server serves from its document root.
const NGTCP2_FILE: &str = "download.bin";

impl Stack {
    /// The prefix used in flow specs and reports.
    pub fn name(self) -> &'static str {
        match self {
            Stack::Quiche => "quiche",
            Stack::Ngtcp2 => "ngtcp2",
            Stack::QuicGo => "quic-go",
            Stack::Quinn => "quinn",
        }
    }

    /// The controllers this stack accepts (empty: any, checked by the tool).
    fn controllers(self) -> &'static [&'static str] {
        match self {
            Stack::Quiche => &[],
            Stack::Ngtcp2 => &["cubic", "reno", "bbr", "bbr2"],
            Stack::QuicGo => &["cubic"],
            Stack::Quinn => &["bbr", "cubic", "newreno"],
        }
    }
}

/// Where the programs of the stacks are.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Tools {
    /// Directory of `qnc-certs`, `qnc-server`, `qnc-client`.
    pub bin_dir: PathBuf,
    /// The quic-go peer binary.
    pub quic_go_peer: PathBuf,
    /// The quinn peer binary.
    pub quinn_peer: PathBuf,
}

/// Network coding of one of our flows (`+nc=`, `+mode=`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Coding {
    /// `--nc off`: plain QUIC.
    Off,
    /// `--nc auto --nc-policy POLICY --nc-mode MODE [--nc-window N]`.
    On {
        /// Redundancy policy, as `--nc-policy` spells it.
        policy: String,
        /// `systematic` or `full`.
        mode: String,
        /// `--nc-window` (None: the tools' default).
        window: Option<usize>,
    },
}

impl Default for Coding {
    fn default() -> Self {
        Coding::On {
            policy: "adaptive".into(),
            mode: "systematic".into(),
            window: None,
        }
    }
}

/// Checks a `--nc-policy` value (the syntax of `quic_nc::coding::config::parse_policy`).
fn check_policy(p: &str) -> Result<(), String> {
    let num = |v: &str, lo: f64, hi: f64| {
        v.parse::<f64>()
            .is_ok_and(|x| x.is_finite() && (lo..=hi).contains(&x))
    };
    let ok = match p.split_once(':') {
        None => matches!(p, "adaptive" | "ctcp" | "von" | "fnc"),
        Some(("adaptive", b)) => num(b, 0.0, 10.0),
        Some(("fixed", r)) => num(r, 1.0, 4.0),
        Some(("ctcp", n)) => n.parse::<u32>().is_ok_and(|n| (1..=4096).contains(&n)),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "coding policy '{p}' is not adaptive[:BETA], fixed:R (1..=4), ctcp[:N], von or fnc"
        ))
    }
}

/// One flow: a stack, its congestion controller and (ours) its coding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    /// Who runs the flow.
    pub stack: Stack,
    /// Congestion controller name, as the stack spells it.
    pub cc: String,
    /// Coding (always [`Coding::Off`] for foreign stacks).
    pub coding: Coding,
}

impl FlowSpec {
    /// Parses `[STACK:]CC[+nc=POLICY|off][+mode=systematic|full][+window=N]`.
    pub fn parse(s: &str) -> Result<FlowSpec, String> {
        let s = s.trim();
        let mut parts = s.split('+');
        let head = parts.next().unwrap_or("");
        let (stack, cc) = match head.split_once(':') {
            None => (Stack::Quiche, head),
            Some(("quiche", cc)) => (Stack::Quiche, cc),
            Some(("ngtcp2", cc)) => (Stack::Ngtcp2, cc),
            Some(("quic-go", cc)) => (Stack::QuicGo, cc),
            Some(("quinn", cc)) => (Stack::Quinn, cc),
            Some((p, _)) => {
                return Err(format!(
                    "'{s}': unknown stack '{p}' (quiche, ngtcp2, quic-go, quinn)"
                ))
            }
        };
        if cc.is_empty() {
            return Err(format!("'{s}': no congestion controller"));
        }
        let allowed = stack.controllers();
        if !allowed.is_empty() && !allowed.contains(&cc) {
            return Err(format!(
                "'{s}': {} controllers are {}",
                stack.name(),
                allowed.join(", ")
            ));
        }
        let (mut nc, mut mode, mut window): (Option<&str>, Option<&str>, Option<&str>) =
            (None, None, None);
        for opt in parts {
            let (k, v) = opt.split_once('=').ok_or_else(|| {
                format!("'{s}': '+{opt}' is not +nc=..., +mode=... or +window=...")
            })?;
            let slot = match k {
                "nc" => &mut nc,
                "mode" => &mut mode,
                "window" => &mut window,
                _ => return Err(format!("'{s}': unknown option '{k}' (nc, mode, window)")),
            };
            if slot.replace(v).is_some() {
                return Err(format!("'{s}': '{k}' given twice"));
            }
        }
        if stack != Stack::Quiche {
            if nc.is_some() || mode.is_some() || window.is_some() {
                return Err(format!(
                    "'{s}': coding options apply to our stack only ({} does not code)",
                    stack.name()
                ));
            }
            return Ok(FlowSpec {
                stack,
                cc: cc.into(),
                coding: Coding::Off,
            });
        }
        if let Some(m) = mode {
            if m != "systematic" && m != "full" {
                return Err(format!("'{s}': mode '{m}' is not systematic or full"));
            }
        }
        let window = match window {
            None => None,
            Some(w) => Some(
                w.parse::<usize>()
                    .ok()
                    .filter(|n| (1..=4096).contains(n))
                    .ok_or_else(|| format!("'{s}': window '{w}' is not 1..=4096 symbols"))?,
            ),
        };
        let coding = match nc {
            Some("off") => {
                if mode.is_some() || window.is_some() {
                    return Err(format!(
                        "'{s}': +mode and +window need coding (not +nc=off)"
                    ));
                }
                Coding::Off
            }
            nc => {
                let policy = match nc {
                    None | Some("auto") | Some("on") => "adaptive",
                    Some(p) => {
                        check_policy(p).map_err(|e| format!("'{s}': {e}"))?;
                        p
                    }
                };
                Coding::On {
                    policy: policy.into(),
                    mode: mode.unwrap_or("systematic").into(),
                    window,
                }
            }
        };
        Ok(FlowSpec {
            stack,
            cc: cc.into(),
            coding,
        })
    }

    /// Name of the flow's `role` ("server"/"client") program in logs and
    /// errors: `qnc-server`, `ngtcp2-client`, `quinn-server`, ...
    pub fn program(&self, role: &str) -> String {
        match (self.stack, role) {
            (Stack::Quiche, _) | (Stack::Quinn, "client") => format!("qnc-{role}"),
            (s, _) => format!("{}-{role}", s.name()),
        }
    }

    /// The canonical spec: `hybrid`, `hybrid+nc=off`, `hybrid+nc=fixed:1.25`,
    /// `hybrid+mode=full`, `quinn:bbr`, ... (defaults left out).
    pub fn label(&self) -> String {
        match self.stack {
            Stack::Quiche => {
                let mut l = self.cc.clone();
                match &self.coding {
                    Coding::Off => l += "+nc=off",
                    Coding::On {
                        policy,
                        mode,
                        window,
                    } => {
                        if policy != "adaptive" {
                            l += &format!("+nc={policy}");
                        }
                        if mode != "systematic" {
                            l += &format!("+mode={mode}");
                        }
                        if let Some(w) = window {
                            l += &format!("+window={w}");
                        }
                    }
                }
                l
            }
            s => format!("{}:{}", s.name(), self.cc),
        }
    }

    /// A readable name for tables: `coded+hybrid`, `coded+hybrid fixed:1.25`,
    /// `coded+hybrid (full)`, `hybrid (no coding)`, `quinn bbr (BBRv1)`, ...
    pub fn title(&self) -> String {
        match (self.stack, &self.coding) {
            (Stack::Quiche, Coding::Off) => format!("{} (no coding)", self.cc),
            (
                Stack::Quiche,
                Coding::On {
                    policy,
                    mode,
                    window,
                },
            ) => {
                let mut t = format!("coded+{}", self.cc);
                if policy != "adaptive" {
                    t += &format!(" {policy}");
                }
                if mode != "systematic" {
                    t += &format!(" ({mode})");
                }
                if let Some(w) = window {
                    t += &format!(" window {w}");
                }
                t
            }
            (Stack::Quinn, _) if self.cc == "bbr" => "quinn bbr (BBRv1)".into(),
            (s, _) => format!("{} {}", s.name(), self.cc),
        }
    }

    /// Checks (and if possible provides) what this flow needs before the
    /// first run: ngtcp2's packages, the quic-go or quinn peer binary.
    pub fn prepare(&self, tools: &Tools) -> Result<(), String> {
        match self.stack {
            Stack::Quiche => Ok(()),
            Stack::Ngtcp2 => ensure_ngtcp2(),
            Stack::QuicGo => ensure_quic_go(&tools.quic_go_peer),
            Stack::Quinn => ensure_quinn(
                &tools.quinn_peer,
                tools.quinn_peer == default_quinn_peer(&tools.bin_dir),
            ),
        }
    }

    /// Starts this flow's server (for ngtcp2, writing a file of `size`
    /// bytes into `root`, which it serves); returns it and its address.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start_server(
        &self,
        tools: &Tools,
        label: &str,
        root: &Path,
        dir: &Path,
        certs: &Path,
        deadline: Instant,
        idle_ms: u64,
        size: u64,
        qlog: Option<&Path>,
    ) -> Result<(Proc, String), String> {
        let command = |port| {
            let mut c = self.server_command(tools, port, root, certs, idle_ms);
            if let Some(q) = qlog {
                self.qlog_to(&mut c, q);
            }
            c
        };
        match self.stack {
            Stack::Quiche | Stack::QuicGo | Stack::Quinn => {
                start_listening(label, dir, deadline, command)
            }
            Stack::Ngtcp2 => {
                write_pattern_file(&root.join(NGTCP2_FILE), size)?;
                let mut last = String::new();
                for _ in 0..3 {
                    let port = free_port()?;
                    let mut cmd = command(port);
                    let mut p = Proc::spawn(label, &mut cmd, dir)?;
                    let until = deadline.min(Instant::now() + Duration::from_secs(20));
                    loop {
                        if p.exited() {
                            last = format!("{label} exited{}", p.stderr_tail());
                            break;
                        }
                        if udp_port_bound(port) {
                            return Ok((p, format!("127.0.0.1:{port}")));
                        }
                        if Instant::now() >= until {
                            return Err(format!("{label} did not bind port {port}"));
                        }
                        std::thread::sleep(Duration::from_millis(5));
                    }
                }
                Err(last)
            }
        }
    }

    /// The server command listening on 127.0.0.1:`port`; `root` is the
    /// document root (qnc-server, ngtcp2).
    pub fn server_command(
        &self,
        tools: &Tools,
        port: u16,
        root: &Path,
        certs: &Path,
        idle_ms: u64,
    ) -> Command {
        match self.stack {
            Stack::Quiche => {
                let mut c = Command::new(tools.bin_dir.join("qnc-server"));
                c.arg("--listen")
                    .arg(format!("127.0.0.1:{port}"))
                    .arg("--root")
                    .arg(root)
                    .arg("--cert")
                    .arg(certs.join("cert.pem"))
                    .arg("--key")
                    .arg(certs.join("key.pem"))
                    .arg("--cc")
                    .arg(&self.cc);
                coding_args(&mut c, &self.coding);
                c.arg("--idle-timeout")
                    .arg(idle_ms.to_string())
                    .arg("--stats-json");
                c
            }
            Stack::Ngtcp2 => {
                let mut c = Command::new(NGTCP2_SERVER);
                c.arg("-q")
                    .arg(format!("--htdocs={}", root.display()))
                    .arg(format!("--cc={}", self.cc))
                    .arg(format!("--timeout={idle_ms}ms"))
                    .arg("127.0.0.1")
                    .arg(port.to_string())
                    .arg(certs.join("key.pem"))
                    .arg(certs.join("cert.pem"));
                c
            }
            Stack::QuicGo => {
                let mut c = Command::new(&tools.quic_go_peer);
                c.arg("server")
                    .arg("-addr")
                    .arg(format!("127.0.0.1:{port}"))
                    .arg("-cert")
                    .arg(certs.join("cert.pem"))
                    .arg("-key")
                    .arg(certs.join("key.pem"))
                    .arg("-idle-timeout")
                    .arg(format!("{idle_ms}ms"));
                c
            }
            Stack::Quinn => {
                let mut c = Command::new(&tools.quinn_peer);
                c.arg("server")
                    .arg("--addr")
                    .arg(format!("127.0.0.1:{port}"))
                    .arg("--cert")
                    .arg(certs.join("cert.pem"))
                    .arg("--key")
                    .arg(certs.join("key.pem"))
                    .arg("--cc")
                    .arg(&self.cc)
                    .arg("--idle-timeout-ms")
                    .arg(idle_ms.to_string());
                c
            }
        }
    }

    /// The client command fetching `path` (`/bytes/N`, `/stream/...`) from
    /// `addr` (`127.0.0.1:PORT`: linkem, or the server directly), giving up
    /// after `timeout_s`; an ngtcp2 client fetches its file instead of
    /// `path` and saves it into `out_dir`.
    pub fn client_command(
        &self,
        tools: &Tools,
        addr: &str,
        path: &str,
        out_dir: &Path,
        certs: &Path,
        timeout_s: f64,
    ) -> Command {
        let url = format!("https://{addr}{path}");
        let timeout = format!("{:.3}", timeout_s.max(0.001));
        let timeout = timeout.trim_end_matches('0').trim_end_matches('.');
        match self.stack {
            Stack::Quiche | Stack::Quinn => {
                let mut c = Command::new(tools.bin_dir.join("qnc-client"));
                c.arg("--ca").arg(certs.join("ca.pem"));
                if self.stack == Stack::Quiche {
                    c.arg("--cc").arg(&self.cc);
                }
                coding_args(&mut c, &self.coding);
                c.arg("--json").arg("--timeout").arg(timeout).arg(url);
                c
            }
            Stack::Ngtcp2 => {
                let (host, port) = addr.rsplit_once(':').unwrap_or((addr, "443"));
                let mut c = Command::new(NGTCP2_CLIENT);
                c.arg("-q")
                    .arg("--exit-on-all-streams-close")
                    .arg("--disable-early-data")
                    .arg(format!("--download={}", out_dir.display()))
                    .arg(format!("--cc={}", self.cc))
                    .arg(host)
                    .arg(port)
                    .arg(format!("https://{addr}/{NGTCP2_FILE}"));
                c
            }
            Stack::QuicGo => {
                let mut c = Command::new(&tools.quic_go_peer);
                c.arg("client")
                    .arg("-url")
                    .arg(url)
                    .arg("-ca")
                    .arg(certs.join("ca.pem"))
                    .arg("-timeout")
                    .arg(format!("{timeout}s"));
                c
            }
        }
    }

    /// Makes this flow's server or client `c` write its qlog files into
    /// `dir`: `$QLOGDIR` for our programs and quic-go's, `--qlog-dir` for
    /// ngtcp2's (one file per connection, named by its source CID).
    pub fn qlog_to(&self, c: &mut Command, dir: &Path) {
        c.env("QLOGDIR", dir);
        if self.stack == Stack::Ngtcp2 {
            c.arg(format!("--qlog-dir={}", dir.display()));
        }
    }

    /// Whether the client prints a JSON line `{"role":"client",...}`
    /// (else: exit status and the size of the downloaded file count).
    pub fn client_prints_json(&self) -> bool {
        self.stack != Stack::Ngtcp2
    }

    /// Whether this flow's server answers `GET /stamped/N` (ours and the
    /// quinn peer).
    pub fn serves_stamped(&self) -> bool {
        matches!(self.stack, Stack::Quiche | Stack::Quinn)
    }

    /// Where a client that saves the body puts it, given its `out_dir`.
    pub fn downloaded_file(&self, out_dir: &Path) -> Option<PathBuf> {
        (self.stack == Stack::Ngtcp2).then(|| out_dir.join(NGTCP2_FILE))
    }

    /// Whether the server prints qnc-server's `{"role":"server",...}` line.
    pub fn server_prints_json(&self) -> bool {
        matches!(self.stack, Stack::Quiche | Stack::Quinn)
    }
}

/// `--nc off`, or `--nc auto --nc-policy P --nc-mode M [--nc-window N]`.
fn coding_args(c: &mut Command, coding: &Coding) {
    match coding {
        Coding::Off => {
            c.arg("--nc").arg("off");
        }
        Coding::On {
            policy,
            mode,
            window,
        } => {
            c.arg("--nc")
                .arg("auto")
                .arg("--nc-policy")
                .arg(policy)
                .arg("--nc-mode")
                .arg(mode);
            if let Some(w) = window {
                c.arg("--nc-window").arg(w.to_string());
            }
        }
    }
}

/// Writes `n` bytes of the `/bytes/<n>` pattern (byte i = 'a' + i % 26).
fn write_pattern_file(path: &Path, n: u64) -> Result<(), String> {
    use std::io::Write;
    let chunk: Vec<u8> = (0..(65_536 + 26)).map(|i| b'a' + (i % 26) as u8).collect();
    let f = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut w = std::io::BufWriter::new(f);
    let mut off = 0u64;
    while off < n {
        let len = (n - off).min(65_536) as usize;
        let s = (off % 26) as usize;
        w.write_all(&chunk[s..s + len])
            .map_err(|e| format!("{}: {e}", path.display()))?;
        off += len as u64;
    }
    w.flush().map_err(|e| format!("{}: {e}", path.display()))
}

/// Whether some socket is bound to UDP 127.0.0.1:`port` (per /proc/net/udp).
fn udp_port_bound(port: u16) -> bool {
    let want = format!("0100007F:{port:04X}");
    std::fs::read_to_string("/proc/net/udp")
        .map(|t| {
            t.lines()
                .skip(1)
                .any(|l| l.split_whitespace().nth(1) == Some(want.as_str()))
        })
        .unwrap_or(false)
}

/// Installs ngtcp2's example programs with apt-get if they are missing
/// (only as root); otherwise a clear error.
fn ensure_ngtcp2() -> Result<(), String> {
    let have = || Path::new(NGTCP2_SERVER).exists() && Path::new(NGTCP2_CLIENT).exists();
    if have() {
        return Ok(());
    }
    // SAFETY: geteuid(2) has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(format!(
            "ngtcp2 flows need {NGTCP2_SERVER} and {NGTCP2_CLIENT}: \
             apt-get install ngtcp2-server ngtcp2-client (as root)"
        ));
    }
    eprintln!("nc-experiment: installing ngtcp2-server ngtcp2-client with apt-get");
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "ngtcp2-client", "ngtcp2-server"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !install() {
        let _ = Command::new("apt-get")
            .arg("update")
            .stdin(Stdio::null())
            .status();
        install();
    }
    if have() {
        Ok(())
    } else {
        Err("apt-get install ngtcp2-client ngtcp2-server failed".into())
    }
}

/// Where `make peers` puts the quic-go peer: `<target>/peers/quic-go-peer`
/// for binaries in `<target>/release` (or `<target>/debug`).
pub fn default_quic_go_peer(bin_dir: &Path) -> PathBuf {
    peers_dir(bin_dir).join("quic-go-peer")
}

/// Where `make peers` puts the quinn peer: `<target>/peers/quinn-peer`.
pub fn default_quinn_peer(bin_dir: &Path) -> PathBuf {
    peers_dir(bin_dir).join("quinn-peer")
}

/// `<target>/peers` for binaries in `<target>/release`.
fn peers_dir(bin_dir: &Path) -> PathBuf {
    bin_dir.parent().unwrap_or(Path::new(".")).join("peers")
}

/// Makes sure the quinn peer exists: if it is missing, or (at its default
/// place, `default`) older than its sources, builds it like `make peers`
/// does (`cargo build --release --locked` in `interop/peers/quinn` with
/// `CARGO_TARGET_DIR=<target>/peers-build`, where `<target>` is the
/// directory above the binary's `peers/`) and copies it to `bin`. A binary
/// given with `--quinn-peer` is used as it is.
fn ensure_quinn(bin: &Path, default: bool) -> Result<(), String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/quinn");
    if bin.exists() && !(default && older_than_sources(bin, &src)) {
        return Ok(());
    }
    let hint = format!(
        "{} is missing or older than its sources: run `make peers` or pass --quinn-peer",
        bin.display()
    );
    if !src.join("Cargo.toml").exists() {
        return Err(hint);
    }
    let dir = bin.parent().unwrap_or(Path::new("."));
    let target = dir.parent().unwrap_or(Path::new(".")).join("peers-build");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!(
        "nc-experiment: building {} (cargo build --release in {})",
        bin.display(),
        src.display()
    );
    let status = Command::new(cargo)
        .args(["build", "--release", "--locked"])
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(&src)
        .stdin(Stdio::null())
        .status();
    let built = target.join("release/quinn-peer");
    match status {
        Ok(s) if s.success() && built.exists() => {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            std::fs::copy(&built, bin).map_err(|e| format!("{hint} (copy: {e})"))?;
            Ok(())
        }
        Ok(s) => Err(format!("{hint} (cargo build: {s})")),
        Err(e) => Err(format!("{hint} (cargo: {e})")),
    }
}

/// Whether `bin` was modified before any of the quinn peer's sources in
/// `src` (`Cargo.toml`, `Cargo.lock`, `src/*.rs`); false when unknown.
fn older_than_sources(bin: &Path, src: &Path) -> bool {
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let Some(built) = mtime(bin) else {
        return false;
    };
    let rs = std::fs::read_dir(src.join("src"))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()));
    [src.join("Cargo.toml"), src.join("Cargo.lock")]
        .into_iter()
        .chain(rs)
        .filter_map(|p| mtime(&p))
        .any(|t| t > built)
}

/// Makes sure the quic-go peer exists: builds it with `go build` from
/// `interop/peers/quic-go` if it is missing and `go` is available.
fn ensure_quic_go(bin: &Path) -> Result<(), String> {
    if bin.exists() {
        return Ok(());
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/quic-go");
    let hint = format!(
        "{} is missing: run `make peers` (needs Go) or pass --quic-go-peer",
        bin.display()
    );
    if !src.join("main.go").exists() {
        return Err(hint);
    }
    eprintln!("nc-experiment: building {} with go build", bin.display());
    match Command::new("go")
        .arg("build")
        .arg("-o")
        .arg(bin)
        .arg(".")
        .current_dir(&src)
        .stdin(Stdio::null())
        .status()
    {
        Ok(s) if s.success() && bin.exists() => Ok(()),
        Ok(s) => Err(format!("{hint} (go build: {s})")),
        Err(e) => Err(format!("{hint} (go: {e})")),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_peer_binary_older_than_its_sources_is_stale() {
        use std::time::{Duration, SystemTime};
        let d = std::env::temp_dir().join(format!("qnc-stale-{}", std::process::id()));
        std::fs::create_dir_all(d.join("src/src")).unwrap();
        let touch = |p: &Path, t: SystemTime| {
            std::fs::File::create(p).unwrap().set_modified(t).unwrap();
        };
        let t0 = SystemTime::now() - Duration::from_secs(100);
        let (src, bin) = (d.join("src"), d.join("quinn-peer"));
        touch(&src.join("Cargo.toml"), t0);
        touch(&src.join("src/main.rs"), t0);
        touch(&bin, t0 + Duration::from_secs(10));
        assert!(!older_than_sources(&bin, &src));
        touch(&src.join("src/server.rs"), t0 + Duration::from_secs(20));
        assert!(older_than_sources(&bin, &src));
        assert!(!older_than_sources(&d.join("absent"), &src));
        let _ = std::fs::remove_dir_all(&d);
    }
    use super::*;

    fn tools() -> Tools {
        Tools {
            bin_dir: "/t/release".into(),
            quic_go_peer: default_quic_go_peer(Path::new("/t/release")),
            quinn_peer: default_quinn_peer(Path::new("/t/release")),
        }
    }

    fn args(c: &Command) -> Vec<String> {
        c.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn parse_specs() {
        let f = FlowSpec::parse("hybrid").unwrap();
        assert_eq!(
            (f.stack, f.cc.as_str(), f.label()),
            (Stack::Quiche, "hybrid", "hybrid".into())
        );
        assert_eq!(f.coding, Coding::default());
        assert_eq!(FlowSpec::parse("quiche:cubic").unwrap().label(), "cubic");
        assert_eq!(f.program("client"), "qnc-client");
        let n = FlowSpec::parse("ngtcp2:bbr").unwrap();
        assert_eq!((n.stack, n.label()), (Stack::Ngtcp2, "ngtcp2:bbr".into()));
        assert_eq!(n.program("server"), "ngtcp2-server");
        assert_eq!(n.coding, Coding::Off);
        assert_eq!(
            FlowSpec::parse("quic-go:cubic").unwrap().stack,
            Stack::QuicGo
        );
        let q = FlowSpec::parse("quinn:bbr").unwrap();
        assert_eq!((q.stack, q.label()), (Stack::Quinn, "quinn:bbr".into()));
        assert_eq!(
            (q.program("server"), q.program("client")),
            ("quinn-server".into(), "qnc-client".into())
        );
        for bad in [
            "",
            "ngtcp2:",
            "ngtcp2:vegas",
            "quic-go:reno",
            "msquic:cubic",
            "quiche:",
            "quinn:bbr2",
            "quinn:bbr+nc=off",
            "hybrid+nc=fixed:0.5",
            "hybrid+nc=fixed:x",
            "hybrid+nc=bogus",
            "hybrid+nc=ctcp:0",
            "hybrid+mode=partial",
            "hybrid+nc=off+mode=full",
            "hybrid+nc=off+nc=von",
            "hybrid+window",
            "hybrid+window=0",
            "hybrid+window=4097",
            "hybrid+window=x",
            "hybrid+nc=off+window=64",
            "hybrid+window=64+window=64",
            "quinn:cubic+window=64",
            "hybrid+nc",
            "+nc=off",
        ] {
            assert!(FlowSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn coding_options_labels_and_titles() {
        let cases = [
            ("hybrid", "hybrid", "coded+hybrid"),
            ("hybrid+nc=auto", "hybrid", "coded+hybrid"),
            (
                "hybrid+nc=adaptive+mode=systematic",
                "hybrid",
                "coded+hybrid",
            ),
            ("hybrid+nc=off", "hybrid+nc=off", "hybrid (no coding)"),
            ("cubic", "cubic", "coded+cubic"),
            ("cubic+nc=off", "cubic+nc=off", "cubic (no coding)"),
            (
                "hybrid+nc=fixed:1.25",
                "hybrid+nc=fixed:1.25",
                "coded+hybrid fixed:1.25",
            ),
            ("hybrid+nc=ctcp", "hybrid+nc=ctcp", "coded+hybrid ctcp"),
            (
                "hybrid+nc=ctcp:16",
                "hybrid+nc=ctcp:16",
                "coded+hybrid ctcp:16",
            ),
            ("hybrid+nc=von", "hybrid+nc=von", "coded+hybrid von"),
            ("hybrid+nc=fnc", "hybrid+nc=fnc", "coded+hybrid fnc"),
            (
                "hybrid+nc=adaptive:2",
                "hybrid+nc=adaptive:2",
                "coded+hybrid adaptive:2",
            ),
            (
                "hybrid+mode=full",
                "hybrid+mode=full",
                "coded+hybrid (full)",
            ),
            (
                "hybrid+mode=full+nc=von",
                "hybrid+nc=von+mode=full",
                "coded+hybrid von (full)",
            ),
            ("bbr2+nc=off", "bbr2+nc=off", "bbr2 (no coding)"),
            (
                "hybrid+window=4096+nc=von",
                "hybrid+nc=von+window=4096",
                "coded+hybrid von window 4096",
            ),
            ("quinn:bbr", "quinn:bbr", "quinn bbr (BBRv1)"),
            ("quinn:cubic", "quinn:cubic", "quinn cubic"),
            ("quic-go:cubic", "quic-go:cubic", "quic-go cubic"),
        ];
        for (spec, label, title) in cases {
            let f = FlowSpec::parse(spec).unwrap();
            assert_eq!(f.label(), label, "{spec}");
            assert_eq!(f.title(), title, "{spec}");
            // The canonical label parses back to the same flow.
            assert_eq!(FlowSpec::parse(&f.label()).unwrap(), f, "{spec}");
        }
        assert_eq!(
            FlowSpec::parse("hybrid+nc=fixed:1.25+mode=full")
                .unwrap()
                .coding,
            Coding::On {
                policy: "fixed:1.25".into(),
                mode: "full".into(),
                window: None,
            }
        );
    }

    #[test]
    fn qlog_dir_reaches_every_stack() {
        let t = tools();
        let dir = Path::new("/q/run-0");
        for (spec, arg) in [
            ("hybrid", false),
            ("quic-go:cubic", false),
            ("ngtcp2:cubic", true),
        ] {
            let f = FlowSpec::parse(spec).unwrap();
            let mut c = f.server_command(&t, 4433, Path::new("/r"), Path::new("/c"), 5000);
            f.qlog_to(&mut c, dir);
            let env: Vec<_> = c.get_envs().collect();
            assert!(
                env.contains(&(std::ffi::OsStr::new("QLOGDIR"), Some(dir.as_os_str()))),
                "{spec}"
            );
            assert_eq!(
                args(&c).contains(&"--qlog-dir=/q/run-0".to_string()),
                arg,
                "{spec}"
            );
        }
    }

    #[test]
    fn commands() {
        let t = tools();
        assert_eq!(t.quic_go_peer, PathBuf::from("/t/peers/quic-go-peer"));
        assert_eq!(t.quinn_peer, PathBuf::from("/t/peers/quinn-peer"));
        let certs = Path::new("/c");
        let n = FlowSpec::parse("ngtcp2:reno").unwrap();
        let s = n.server_command(&t, 4433, Path::new("/r"), certs, 5000);
        assert_eq!(s.get_program(), NGTCP2_SERVER);
        assert_eq!(
            args(&s),
            [
                "-q",
                "--htdocs=/r",
                "--cc=reno",
                "--timeout=5000ms",
                "127.0.0.1",
                "4433",
                "/c/key.pem",
                "/c/cert.pem"
            ]
        );
        let c = n.client_command(
            &t,
            "127.0.0.1:9000",
            "/bytes/1",
            Path::new("/d"),
            certs,
            30.0,
        );
        assert_eq!(
            args(&c)[2..],
            [
                "--disable-early-data",
                "--download=/d",
                "--cc=reno",
                "127.0.0.1",
                "9000",
                "https://127.0.0.1:9000/download.bin"
            ]
        );
        assert_eq!(
            n.downloaded_file(Path::new("/d")),
            Some(PathBuf::from("/d/download.bin"))
        );
        assert!(!n.client_prints_json() && !n.server_prints_json());

        let g = FlowSpec::parse("quic-go:cubic").unwrap();
        let c = g.client_command(
            &t,
            "127.0.0.1:9000",
            "/bytes/1000000",
            Path::new("/d"),
            certs,
            30.0,
        );
        assert_eq!(c.get_program(), "/t/peers/quic-go-peer");
        assert_eq!(
            args(&c),
            [
                "client",
                "-url",
                "https://127.0.0.1:9000/bytes/1000000",
                "-ca",
                "/c/ca.pem",
                "-timeout",
                "30s"
            ]
        );
        assert_eq!(
            args(&g.server_command(&t, 1, Path::new("/r"), certs, 5000))[..3],
            ["server", "-addr", "127.0.0.1:1"]
        );
        assert!(g.client_prints_json() && g.downloaded_file(Path::new("/d")).is_none());

        let q = FlowSpec::parse("hybrid+nc=fixed:1.25+mode=full").unwrap();
        let c = q.client_command(
            &t,
            "127.0.0.1:9000",
            "/stream/8mbit/20s",
            Path::new("/d"),
            certs,
            12.5,
        );
        assert_eq!(c.get_program(), "/t/release/qnc-client");
        assert_eq!(
            args(&c)[2..],
            [
                "--cc",
                "hybrid",
                "--nc",
                "auto",
                "--nc-policy",
                "fixed:1.25",
                "--nc-mode",
                "full",
                "--json",
                "--timeout",
                "12.5",
                "https://127.0.0.1:9000/stream/8mbit/20s"
            ]
        );
        let s = q.server_command(&t, 1, Path::new("/r"), certs, 5000);
        assert_eq!(s.get_program(), "/t/release/qnc-server");
        let sa = args(&s);
        assert!(sa.contains(&"--stats-json".to_string()));
        assert!(
            sa.windows(2).any(|w| w == ["--nc-policy", "fixed:1.25"]),
            "{sa:?}"
        );
        assert!(sa.windows(2).any(|w| w == ["--nc-mode", "full"]), "{sa:?}");
        let off = FlowSpec::parse("cubic+nc=off").unwrap();
        let sa = args(&off.server_command(&t, 1, Path::new("/r"), certs, 5000));
        assert!(sa.windows(2).any(|w| w == ["--nc", "off"]), "{sa:?}");
        assert!(!sa.iter().any(|a| a == "--nc-policy"), "{sa:?}");
        assert!(!sa.iter().any(|a| a == "--nc-window"), "{sa:?}");
        let w = FlowSpec::parse("hybrid+window=4096").unwrap();
        for c in [
            w.server_command(&t, 1, Path::new("/r"), certs, 5000),
            w.client_command(&t, "127.0.0.1:9000", "/", Path::new("/d"), certs, 1.0),
        ] {
            let a = args(&c);
            assert!(a.windows(2).any(|w| w == ["--nc-window", "4096"]), "{a:?}");
        }

        // quinn: its server, our client without coding and without --cc.
        let b = FlowSpec::parse("quinn:bbr").unwrap();
        let s = b.server_command(&t, 7, Path::new("/r"), certs, 5000);
        assert_eq!(s.get_program(), "/t/peers/quinn-peer");
        assert_eq!(
            args(&s),
            [
                "server",
                "--addr",
                "127.0.0.1:7",
                "--cert",
                "/c/cert.pem",
                "--key",
                "/c/key.pem",
                "--cc",
                "bbr",
                "--idle-timeout-ms",
                "5000"
            ]
        );
        let c = b.client_command(
            &t,
            "127.0.0.1:9000",
            "/bytes/5",
            Path::new("/d"),
            certs,
            90.0,
        );
        assert_eq!(c.get_program(), "/t/release/qnc-client");
        assert_eq!(
            args(&c),
            [
                "--ca",
                "/c/ca.pem",
                "--nc",
                "off",
                "--json",
                "--timeout",
                "90",
                "https://127.0.0.1:9000/bytes/5"
            ]
        );
        assert!(b.client_prints_json() && b.server_prints_json());
    }

    #[test]
    fn pattern_file() {
        let p = std::env::temp_dir().join(format!("peer-pattern-{}", std::process::id()));
        write_pattern_file(&p, 70_000).unwrap();
        let b = std::fs::read(&p).unwrap();
        let _ = std::fs::remove_file(&p);
        assert_eq!(b.len(), 70_000);
        assert!(b
            .iter()
            .enumerate()
            .all(|(i, &x)| x == b'a' + (i % 26) as u8));
    }
}
