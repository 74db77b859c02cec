//! Per-connection qlog files in `$QLOGDIR`.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

use crate::Role;

/// Starts qlog output for `conn` into `$QLOGDIR/<role>-<scid hex>.sqlog`
/// when `QLOGDIR` is set; returns the file written, if any.
pub fn attach(conn: &mut quiche::Connection, role: Role) -> Result<Option<PathBuf>, String> {
    let dir = match std::env::var_os("QLOGDIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => return Ok(None),
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("cannot create QLOGDIR {}: {e}", dir.display()))?;
    let id = crate::hex(&conn.source_id());
    let path = dir.join(format!("{}-{id}.sqlog", role.as_str()));
    let file = File::create(&path)
        .map_err(|e| format!("cannot create qlog file {}: {e}", path.display()))?;
    conn.set_qlog(
        Box::new(BufWriter::new(file)),
        format!("qnc-{} qlog", role.as_str()),
        format!("qnc-{} id={id}", role.as_str()),
    );
    Ok(Some(path))
}
