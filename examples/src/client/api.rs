//! The client library's runtime: one background thread per `host:port`
//! drives that host's connection; callers only hand in requests and wait
//! for (or are called back with) the results.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll as TaskPoll, Waker};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::config::ClientConfig;
use super::conn::{Command, Conn, WAKER};
use super::error::{Error, ErrorKind};
use super::request::{ChunkFn, ProgressFn, Request, Sink, Transferred};
use super::response::Response;
use super::stats::Stats;
use crate::upload::UploadSpec;
use crate::url::Url;

/// One request to issue: the URL, an optional body (making it a POST),
/// where the response body goes and who hears of progress.
pub struct RequestSpec {
    /// An `https://` URL.
    pub url: String,
    /// The request body; `Some` makes the request a POST.
    pub body: Option<UploadSpec>,
    /// Where the response body goes (default: memory).
    pub sink: Sink,
    /// Progress callback.
    pub progress: Option<ProgressFn>,
    /// Overrides the configuration's request timeout.
    pub timeout: Option<Duration>,
}

impl RequestSpec {
    /// A GET of `url`, body kept in memory.
    pub fn get(url: impl Into<String>) -> RequestSpec {
        RequestSpec {
            url: url.into(),
            body: None,
            sink: Sink::Memory,
            progress: None,
            timeout: None,
        }
    }

    /// A POST of `body` to `url`.
    pub fn post(url: impl Into<String>, body: UploadSpec) -> RequestSpec {
        RequestSpec {
            body: Some(body),
            ..RequestSpec::get(url)
        }
    }

    /// Saves the response body to `path` instead of memory.
    pub fn to_file(mut self, path: impl Into<PathBuf>) -> RequestSpec {
        self.sink = Sink::File(path.into());
        self
    }

    /// Hands the response body to `f` piece by piece instead.
    pub fn chunks(mut self, f: impl FnMut(&[u8]) + Send + 'static) -> RequestSpec {
        self.sink = Sink::Chunks(Box::new(f) as ChunkFn);
        self
    }

    /// Calls `f` with the request's progress.
    pub fn progress(mut self, f: impl FnMut(Transferred) + Send + 'static) -> RequestSpec {
        self.progress = Some(Box::new(f));
        self
    }

    /// Gives up the request after `d`.
    pub fn timeout(mut self, d: Duration) -> RequestSpec {
        self.timeout = Some(d);
        self
    }
}

/// The connection thread of one `host:port`.
struct Worker {
    tx: Sender<Command>,
    waker: Arc<mio::Waker>,
    stats: Arc<Mutex<Option<Stats>>>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    fn send(&self, c: Command) -> bool {
        let ok = self.tx.send(c).is_ok();
        let _ = self.waker.wake();
        ok
    }
}

/// An HTTP/3 client with coded transport: thread-safe, cheap to share; one
/// connection per `host:port`, reused by later requests.
pub struct Client {
    config: Arc<ClientConfig>,
    workers: Mutex<HashMap<String, Worker>>,
    next_id: AtomicU64,
}

impl Client {
    /// A client with `config`, checked now (CA file, pin, controller).
    pub fn new(config: ClientConfig) -> Result<Client, Error> {
        crate::cc::validate(&config.transport.cc).map_err(|m| Error::new(ErrorKind::Config, m))?;
        crate::transport::client_config(&config.transport, &config.trust, None)
            .map_err(|m| Error::new(ErrorKind::Config, m))?;
        Ok(Client {
            config: Arc::new(config),
            workers: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// Issues a request; the returned [`Call`] waits for, polls or cancels
    /// it.
    pub fn start(&self, spec: RequestSpec) -> Result<Call, Error> {
        let url = Url::parse(&spec.url).map_err(|m| Error::new(ErrorKind::Config, m))?;
        let body = match &spec.body {
            Some(b) => Some(b.open().map_err(|m| Error::new(ErrorKind::Io, m))?),
            None => None,
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let slot = Arc::new(Slot::default());
        let mut req = Request::with_sink(url.clone(), spec.sink);
        if let Some(b) = body {
            req = req.with_upload(b);
        }
        req.id = id;
        req.on_progress = spec.progress;
        req.deadline = spec
            .timeout
            .or(self.config.request_timeout)
            .map(|t| Instant::now() + t);
        let guard = Reply(slot.clone());
        req.reply = Some(Box::new(move |r| guard.0.fill(r)));
        let mut workers = lock(&self.workers);
        let key = format!("{}:{}", url.host, url.port);
        if !workers.contains_key(&key) {
            let w = spawn_worker(self.config.clone(), &key)?;
            workers.insert(key.clone(), w);
        }
        let w = &workers[&key];
        if !w.send(Command::Request(Box::new(req))) {
            return Err(Error::new(ErrorKind::Protocol, "connection thread ended"));
        }
        Ok(Call {
            id,
            slot,
            tx: w.tx.clone(),
            waker: w.waker.clone(),
        })
    }

    /// GET `url` into memory and wait for it.
    pub fn get(&self, url: &str) -> Result<Response, Error> {
        self.start(RequestSpec::get(url))?.wait()
    }

    /// Cancels every request in flight.
    pub fn cancel_all(&self) {
        for w in lock(&self.workers).values() {
            w.send(Command::CancelAll);
        }
    }

    /// The latest statistics of the connection to `host:port`, if one was
    /// opened (it may have closed since: see [`Stats::open`]).
    pub fn stats(&self, authority: &str) -> Option<Stats> {
        let workers = lock(&self.workers);
        let w = workers.get(authority)?;
        let s = lock(&w.stats).clone();
        s
    }

    /// Statistics of every connection this client opened, by `host:port`.
    pub fn all_stats(&self) -> Vec<(String, Stats)> {
        let mut v: Vec<_> = lock(&self.workers)
            .iter()
            .filter_map(|(k, w)| lock(&w.stats).clone().map(|s| (k.clone(), s)))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Cancels what is in flight, closes every connection and waits for
    /// the threads to end. Dropping the client does the same.
    pub fn close(&self) {
        // Take the workers out first: a callback running on a worker thread
        // may call into the client while we wait for that thread.
        let workers: Vec<Worker> = lock(&self.workers).drain().map(|(_, w)| w).collect();
        for w in &workers {
            w.send(Command::Close);
        }
        let me = std::thread::current().id();
        for mut w in workers {
            if let Some(t) = w.thread.take() {
                // A client dropped inside one of its own callbacks cannot
                // wait for its own thread; that thread ends by itself.
                if t.thread().id() != me {
                    let _ = t.join();
                }
            }
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.close();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn spawn_worker(config: Arc<ClientConfig>, key: &str) -> Result<Worker, Error> {
    let io = |e: std::io::Error| Error::new(ErrorKind::Protocol, format!("poll: {e}"));
    let poll = mio::Poll::new().map_err(io)?;
    let waker = Arc::new(mio::Waker::new(poll.registry(), WAKER).map_err(io)?);
    let (tx, rx) = mpsc::channel();
    let stats = Arc::new(Mutex::new(None));
    let st = stats.clone();
    let thread = std::thread::Builder::new()
        .name(format!("qnc {key}"))
        .spawn(move || worker_main(&config, &rx, poll, &st))
        .map_err(|e| Error::new(ErrorKind::Protocol, format!("cannot start thread: {e}")))?;
    Ok(Worker {
        tx,
        waker,
        stats,
        thread: Some(thread),
    })
}

/// A connection thread: opens a connection for the first request, runs it
/// while requests come, and opens a new one for the next request once it
/// closed (idle timeout, error).
fn worker_main(
    config: &ClientConfig,
    rx: &Receiver<Command>,
    mut poll: mio::Poll,
    stats: &Arc<Mutex<Option<Stats>>>,
) {
    loop {
        let mut first = match rx.recv() {
            Ok(Command::Request(r)) => *r,
            Ok(Command::Close) | Err(_) => return,
            Ok(Command::Cancel(_)) | Ok(Command::CancelAll) => continue,
        };
        let url = first.url.clone();
        let mut conn = match Conn::connect(config, &url, Vec::new(), true) {
            Ok(c) => c,
            Err(e) => {
                first.fail(e);
                if let Some(done) = first.reply.take() {
                    done(first.result(Instant::now()));
                }
                continue;
            }
        };
        conn.requests.push(first);
        conn.publish_stats(stats.clone());
        if let Err(e) = conn.run_loop(&mut poll, Some(rx), None, None) {
            conn.stop.fatal = Some(e);
        }
        conn.fail_outstanding();
        if let Err(e) = conn.remember(config) {
            eprintln!("warning: {e}");
        }
        if conn.stop.closed_by_caller {
            return;
        }
    }
}

/// Where a request's result lands.
#[derive(Default)]
struct Slot {
    state: Mutex<SlotState>,
    ready: Condvar,
}

#[derive(Default)]
struct SlotState {
    result: Option<Result<Response, Error>>,
    taken: bool,
    waker: Option<Waker>,
}

/// Answers a request that is dropped unanswered (its connection thread
/// panicked, say) with an error, so no caller waits forever.
struct Reply(Arc<Slot>);

impl Drop for Reply {
    fn drop(&mut self) {
        let answered = {
            let s = lock(&self.0.state);
            s.result.is_some() || s.taken
        };
        if !answered {
            self.0.fill(Err(Error::new(
                ErrorKind::Protocol,
                "the request was dropped unanswered (connection thread ended)",
            )));
        }
    }
}

impl Slot {
    fn fill(&self, r: Result<Response, Error>) {
        let mut s = lock(&self.state);
        s.result = Some(r);
        if let Some(w) = s.waker.take() {
            w.wake();
        }
        self.ready.notify_all();
    }

    fn take(s: &mut SlotState) -> Option<Result<Response, Error>> {
        if s.taken {
            return Some(Err(Error::new(ErrorKind::Config, "result already taken")));
        }
        let r = s.result.take()?;
        s.taken = true;
        Some(r)
    }
}

/// A request in flight.
pub struct Call {
    id: u64,
    slot: Arc<Slot>,
    tx: Sender<Command>,
    waker: Arc<mio::Waker>,
}

impl Call {
    /// The request's id within its client.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Waits for the result (once: a second call is an error).
    pub fn wait(&self) -> Result<Response, Error> {
        let mut s = lock(&self.slot.state);
        loop {
            if let Some(r) = Slot::take(&mut s) {
                return r;
            }
            s = self.slot.ready.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Waits at most `d`; `None` if the request is still running.
    pub fn wait_timeout(&self, d: Duration) -> Option<Result<Response, Error>> {
        let end = Instant::now() + d;
        let mut s = lock(&self.slot.state);
        loop {
            if let Some(r) = Slot::take(&mut s) {
                return Some(r);
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            s = self
                .slot
                .ready
                .wait_timeout(s, left)
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
    }

    /// Whether the result is there.
    pub fn is_done(&self) -> bool {
        let s = lock(&self.slot.state);
        s.result.is_some() || s.taken
    }

    /// Gives the request up: its stream is reset and the result is a
    /// [`ErrorKind::Cancelled`] error (unless it finished first).
    pub fn cancel(&self) {
        let _ = self.tx.send(Command::Cancel(self.id));
        let _ = self.waker.wake();
    }

    /// The result as a future, for async callers (any executor).
    pub fn into_future(self) -> CallFuture {
        CallFuture { slot: self.slot }
    }
}

/// The result of a [`Call`], awaited.
pub struct CallFuture {
    slot: Arc<Slot>,
}

impl Future for CallFuture {
    type Output = Result<Response, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> TaskPoll<Self::Output> {
        let mut s = lock(&self.slot.state);
        match Slot::take(&mut s) {
            Some(r) => TaskPoll::Ready(r),
            None => {
                s.waker = Some(cx.waker().clone());
                TaskPoll::Pending
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_dropped_unanswered_fails_its_call() {
        let slot = Arc::new(Slot::default());
        let guard = Reply(slot.clone());
        let done: crate::client::DoneFn = Box::new(move |r| guard.0.fill(r));
        drop(done);
        let s = &mut lock(&slot.state);
        let e = Slot::take(s).expect("answered").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Protocol);

        // An answered request keeps its answer.
        let slot = Arc::new(Slot::default());
        let guard = Reply(slot.clone());
        let done: crate::client::DoneFn = Box::new(move |r| guard.0.fill(r));
        done(Ok(Response::default()));
        assert!(Slot::take(&mut lock(&slot.state)).unwrap().is_ok());
    }
}
