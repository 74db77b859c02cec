//! The single place where per-connection extensions are installed.
//!
//! Both loops call [`on_new_connection`] exactly once for every connection,
//! right after `quiche::accept()` / `quiche::connect()` and after qlog and
//! key logging were attached, before any packet is processed. The QUIC-NC
//! extension object is meant to be installed here.

use crate::Role;

/// Installs per-connection extensions on a fresh connection: our
/// congestion controller `cc` (if it is one of ours) with its state logged
/// to the connection's qlog.
///
/// Returning an error aborts that connection (the server drops it, the
/// client exits with the message).
pub fn on_new_connection(
    conn: &mut quiche::Connection,
    role: Role,
    cc: &str,
) -> Result<(), String> {
    let _ = role;
    quic_nc::telemetry::install(conn, cc)?;
    Ok(())
}
