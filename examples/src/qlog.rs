//! Per-connection qlog files in `$QLOGDIR` (the tools) or a directory the
//! caller names (the client library).

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use crate::Role;

/// `$QLOGDIR`, when set and not empty.
pub fn dir_from_env() -> Option<PathBuf> {
    std::env::var_os("QLOGDIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
}

/// Starts qlog output for `conn` into `<dir>/<role>-<scid hex>.sqlog`
/// when `dir` is given; returns the file written, if any.
pub fn attach(
    conn: &mut quiche::Connection,
    role: Role,
    dir: Option<&Path>,
) -> Result<Option<PathBuf>, String> {
    let Some(dir) = dir else {
        return Ok(None);
    };
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create qlog directory {}: {e}", dir.display()))?;
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
