//! Child processes of the runners: spawning with a stdout line channel,
//! waiting with deadlines, termination, free loopback ports, test
//! certificates, and the CPU time of reaped children.
//!
//! Every child gets `PR_SET_PDEATHSIG` (killed if the runner dies) and is
//! killed when its `Proc` is dropped. [`INTERRUPTED`] (set by the
//! binary's SIGINT/SIGTERM handler) makes every wait return
//! `Err("interrupted")`.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Set (e.g. from a SIGINT handler) to abort the runner; children are killed.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// `Err("interrupted")` once [`INTERRUPTED`] is set.
pub(crate) fn check_interrupted() -> Result<(), String> {
    if INTERRUPTED.load(Ordering::SeqCst) {
        Err("interrupted".into())
    } else {
        Ok(())
    }
}

/// A child process whose stdout lines arrive on a channel; killed on drop.
/// Its stderr goes to `DIR/NAME.stderr`.
pub(crate) struct Proc {
    name: String,
    child: Child,
    lines: Receiver<String>,
    stderr_path: PathBuf,
}

impl Proc {
    pub(crate) fn spawn(name: &str, cmd: &mut Command, dir: &Path) -> Result<Proc, String> {
        let stderr_path = dir.join(format!("{name}.stderr"));
        let err =
            File::create(&stderr_path).map_err(|e| format!("{}: {e}", stderr_path.display()))?;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(err));
        // SAFETY: the closure runs in the forked child before exec and only
        // calls prctl(2), which is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {name} ({:?}): {e}", cmd.get_program()))?;
        let out = child.stdout.take().ok_or("no stdout pipe")?;
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Proc {
            name: name.into(),
            child,
            lines: rx,
            stderr_path,
        })
    }

    /// Waits for a stdout line satisfying `pred`, up to `deadline`.
    pub(crate) fn wait_line(
        &mut self,
        deadline: Instant,
        pred: impl Fn(&str) -> bool,
    ) -> Result<String, String> {
        loop {
            check_interrupted()?;
            let now = Instant::now();
            if now >= deadline {
                return Err(format!(
                    "{}: timed out waiting for output{}",
                    self.name,
                    self.stderr_tail()
                ));
            }
            match self
                .lines
                .recv_timeout((deadline - now).min(Duration::from_millis(100)))
            {
                Ok(l) if pred(&l) => return Ok(l),
                Ok(_) | Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(Duration::from_millis(50));
                    let status = match self.child.try_wait() {
                        Ok(Some(s)) => s.to_string(),
                        _ => "closed its stdout".into(),
                    };
                    return Err(format!(
                        "{} exited ({status}){}",
                        self.name,
                        self.stderr_tail()
                    ));
                }
            }
        }
    }

    /// Waits for exit up to `deadline`; kills on timeout (the error then
    /// ends with "timeout").
    pub(crate) fn wait_exit(&mut self, deadline: Instant) -> Result<ExitStatus, String> {
        loop {
            if let Some(s) = self.child.try_wait().map_err(|e| e.to_string())? {
                return Ok(s);
            }
            check_interrupted()?;
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err(format!("{}: timeout", self.name));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGTERM, then SIGKILL after `grace`.
    pub(crate) fn terminate(&mut self, grace: Duration) -> Option<ExitStatus> {
        if let Ok(Some(s)) = self.child.try_wait() {
            return Some(s);
        }
        // SAFETY: kill(2) on our own child's pid, which has not been reaped yet.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(s)) = self.child.try_wait() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        self.child.wait().ok()
    }

    /// `": LAST STDERR LINE"`, or empty.
    pub(crate) fn stderr_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.stderr_path).unwrap_or_default();
        match text.lines().rev().find(|l| !l.trim().is_empty()) {
            Some(l) => format!(": {}", l.trim()),
            None => String::new(),
        }
    }

    /// The child's pid.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the child has exited (reaps it).
    pub(crate) fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// The stdout lines received so far and not yet consumed.
    pub(crate) fn drain_lines(&self) -> Vec<String> {
        self.lines.try_iter().collect()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// A currently free UDP port on 127.0.0.1 (chosen by the kernel).
pub fn free_port() -> Result<u16, String> {
    let s = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    s.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

/// Starts a process that listens on a fresh free port and prints
/// `listening ADDR` first; retries with another port (up to 3 attempts) if
/// it exits before that, e.g. because the port was taken meanwhile.
pub(crate) fn start_listening(
    name: &str,
    dir: &Path,
    deadline: Instant,
    mut make: impl FnMut(u16) -> Command,
) -> Result<(Proc, String), String> {
    let mut last = String::new();
    for _ in 0..3 {
        let port = free_port()?;
        let mut p = Proc::spawn(name, &mut make(port), dir)?;
        let until = deadline.min(Instant::now() + Duration::from_secs(20));
        match p.wait_line(until, |l| l.starts_with("listening ")) {
            Ok(line) => return Ok((p, line["listening ".len()..].trim().to_string())),
            Err(e) if e.contains(" exited ") => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// Creates the certificates with `BIN_DIR/qnc-certs --out DIR`.
pub fn make_certs(bin_dir: &Path, dir: &Path) -> Result<(), String> {
    make_cert_chain(bin_dir, dir, 1)
}

/// The same with `--chain LEN`: `cert.pem` holds the leaf and `LEN - 1`
/// intermediate CAs.
pub fn make_cert_chain(bin_dir: &Path, dir: &Path, len: usize) -> Result<(), String> {
    let certs = bin_dir.join("qnc-certs");
    let out = Command::new(&certs)
        .arg("--out")
        .arg(dir)
        .arg("--chain")
        .arg(len.to_string())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start {}: {e}", certs.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "qnc-certs failed: {}",
            err.lines().last().unwrap_or("").trim()
        ));
    }
    for f in ["ca.pem", "cert.pem", "key.pem"] {
        if !dir.join(f).exists() {
            return Err(format!("qnc-certs did not write {f}"));
        }
    }
    Ok(())
}

/// User + system CPU seconds of all reaped children of this process
/// (`getrusage(RUSAGE_CHILDREN)`). The difference around reaping one child
/// is that child's CPU time, provided no other child is reaped meanwhile.
pub(crate) fn children_cpu_s() -> f64 {
    // SAFETY: getrusage(2) writes into the zeroed struct we pass.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// `s` reduced to a file-name-safe tag (alphanumerics and dots, at most 40).
pub(crate) fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect()
}

/// Compresses a finished run's qlog directory, if it has one; a failure
/// is a warning (the run's results stand).
pub fn compress_qlogs(dir: Option<&Path>) {
    if let Some(d) = dir {
        if let Err(e) = gzip_files(d) {
            eprintln!("warning: qlog files not compressed: {e}");
        }
    }
}

/// Compresses every file of `dir` that is not yet compressed into
/// `NAME.gz` (fast gzip) and removes the original: the qlog files a run
/// leaves are large (tens of MB for a 10 MB download) and shrink about
/// tenfold. Runs after the run ended, so it costs the measurement nothing.
pub fn gzip_files(dir: &Path) -> Result<(), String> {
    let ctx = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    let entries = std::fs::read_dir(dir).map_err(|e| ctx(dir, e))?;
    for e in entries.flatten() {
        let p = e.path();
        if !p.is_file() || p.extension().is_some_and(|x| x == "gz") {
            continue;
        }
        let mut name = p.file_name().unwrap_or_default().to_os_string();
        name.push(".gz");
        let dst = p.with_file_name(name);
        let mut input = std::fs::File::open(&p).map_err(|e| ctx(&p, e))?;
        let out = std::fs::File::create(&dst).map_err(|e| ctx(&dst, e))?;
        let mut gz = flate2::write::GzEncoder::new(
            std::io::BufWriter::new(out),
            flate2::Compression::fast(),
        );
        std::io::copy(&mut input, &mut gz).map_err(|e| ctx(&dst, e))?;
        gz.finish()
            .and_then(|mut w| std::io::Write::flush(&mut w))
            .map_err(|e| ctx(&dst, e))?;
        std::fs::remove_file(&p).map_err(|e| ctx(&p, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_names() {
        assert_eq!(sanitize("hybrid+nc=fixed:1.25"), "hybrid_nc_fixed_1.25");
        assert_eq!(sanitize(&"x".repeat(50)).len(), 40);
    }

    #[test]
    fn cpu_of_a_reaped_child() {
        let before = children_cpu_s();
        let dir = std::env::temp_dir();
        // A short busy loop in a shell child.
        let mut p = Proc::spawn(
            &format!("cpu-test-{}", std::process::id()),
            Command::new("sh").args(["-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"]),
            &dir,
        )
        .unwrap();
        let st = p
            .wait_exit(Instant::now() + Duration::from_secs(20))
            .unwrap();
        assert!(st.success());
        let d = children_cpu_s() - before;
        let _ = std::fs::remove_file(dir.join(format!("cpu-test-{}.stderr", std::process::id())));
        assert!((0.0..20.0).contains(&d), "{d}");
    }
}
