//! The one installer: puts a connection's congestion controller and its
//! QUIC-NC extension (coding, controller feedback, qlog events) in place,
//! right after `quiche::connect()` / `quiche::accept()`.

use std::sync::{Arc, Mutex};

use crate::cc::{self, Choice, Factory};
use crate::channel::Channel;
use crate::coding::{CodingConfig, CodingStats, NcExtension};

/// What to install on a connection.
#[derive(Clone, Debug)]
pub struct Options {
    /// Congestion controller name ([`crate::cc::NAMES`]). quiche's own are
    /// configured on the `quiche::Config` ([`crate::cc::configure`]); ours
    /// also get a per-connection channel to the coding layer here.
    pub cc: String,
    /// Coding configuration, or `None` for plain QUIC (the extension then
    /// offers no `nc_parameters` and only writes the controller's qlog
    /// events).
    pub coding: Option<CodingConfig>,
    /// The connection has a qlog: record QUIC-NC's events into it.
    pub qlog: bool,
}

/// The application's view of an installed connection.
#[derive(Clone, Debug)]
pub struct Handle {
    stats: Arc<Mutex<CodingStats>>,
    cc: String,
}

impl Handle {
    /// The connection's coding statistics (both directions) so far.
    pub fn stats(&self) -> CodingStats {
        match self.stats.lock() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// The congestion controller's name.
    pub fn controller(&self) -> &str {
        &self.cc
    }
}

/// Installs controller `opts.cc` (if it is one of ours) and the QUIC-NC
/// extension on a fresh connection. Errors are one line.
pub fn install(conn: &mut quiche::Connection, opts: &Options) -> Result<Handle, String> {
    let channel = Channel::new(opts.qlog);
    if let Choice::Ours(algo) = cc::resolve(&opts.cc)? {
        let factory = Factory::new(algo).with_channel(channel.clone());
        conn.set_external_congestion_control(Arc::new(factory))
            .map_err(|e| format!("cannot install congestion controller {}: {e}", opts.cc))?;
    }
    let stats = Arc::new(Mutex::new(CodingStats::default()));
    let ext = NcExtension::new(opts.coding.clone(), Some(channel), stats.clone(), opts.qlog);
    conn.set_extension(Box::new(ext))
        .map_err(|e| format!("cannot install the QUIC-NC extension: {e}"))?;
    Ok(Handle {
        stats,
        cc: opts.cc.clone(),
    })
}
