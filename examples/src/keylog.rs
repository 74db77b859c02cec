//! TLS key logging into `$SSLKEYLOGFILE` (NSS key log format).

use std::fs::OpenOptions;

/// Makes `conn` append its TLS secrets to `$SSLKEYLOGFILE` when set.
///
/// The configuration must also have had `log_keys()` called, which
/// [`crate::transport::configure`] does when the variable is set.
pub fn attach(conn: &mut quiche::Connection) -> Result<(), String> {
    let path = match std::env::var_os("SSLKEYLOGFILE") {
        Some(p) if !p.is_empty() => p,
        _ => return Ok(()),
    };
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| format!("cannot open SSLKEYLOGFILE {}: {e}", path.to_string_lossy()))?;
    conn.set_keylog(Box::new(file));
    Ok(())
}
