//! SIGINT / SIGTERM handling: a flag the event loops poll.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Set once SIGINT or SIGTERM arrived.
#[derive(Clone, Debug)]
pub struct Shutdown(Arc<AtomicBool>);

impl Shutdown {
    /// Registers the signal handlers.
    pub fn install() -> Result<Shutdown, String> {
        let flag = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(sig, Arc::clone(&flag))
                .map_err(|e| format!("cannot install signal handler: {e}"))?;
        }
        Ok(Shutdown(flag))
    }

    /// A flag that is never raised by signals (for tests and embedding).
    pub fn never() -> Shutdown {
        Shutdown(Arc::new(AtomicBool::new(false)))
    }

    /// Whether a shutdown was requested.
    pub fn requested(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Requests a shutdown programmatically.
    pub fn request(&self) {
        self.0.store(true, Ordering::Relaxed)
    }
}
