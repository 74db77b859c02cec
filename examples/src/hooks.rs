//! The single place where per-connection extensions are installed.
//!
//! Both loops call [`on_new_connection`] exactly once for every connection,
//! right after `quiche::accept()` / `quiche::connect()` and after qlog and
//! key logging were attached, before any packet is processed.

use crate::args::TransportArgs;
use crate::Role;

/// Installs the congestion controller named by `--cc` (if it is one of
/// ours) and the QUIC-NC extension (coding as `--nc*` say, the
/// controller's and the coding layer's qlog events when `qlog`).
///
/// Returning an error aborts that connection (the server drops it, the
/// client exits with the message).
pub fn on_new_connection(
    conn: &mut quiche::Connection,
    role: Role,
    t: &TransportArgs,
    qlog: bool,
) -> Result<quic_nc::Handle, String> {
    quic_nc::install(
        conn,
        &quic_nc::Options {
            cc: t.cc.clone(),
            coding: t.coding(role),
            qlog,
        },
    )
}
