//! A scenario's results file as the report reads it (plain JSON: the
//! report does not depend on the runner's types).

use std::path::{Path, PathBuf};

use serde_json::Value;

/// A results file, read.
#[derive(Clone, Debug)]
pub struct Results {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its JSON.
    pub json: Value,
}

impl Results {
    /// Reads `path`.
    pub fn read(path: &Path) -> Result<Results, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let json: Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if json.get("series").is_none() || json.get("jobs").is_none() {
            return Err(format!(
                "{}: not a scenario results file (no series/jobs)",
                path.display()
            ));
        }
        Ok(Results {
            path: std::fs::canonicalize(path).unwrap_or_else(|_| path.into()),
            json,
        })
    }

    pub(crate) fn str_at(&self, ptr: &str) -> String {
        self.json
            .pointer(ptr)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    }

    /// The scenario's title.
    pub fn title(&self) -> String {
        self.str_at("/scenario/title")
    }

    /// A file-name-safe name: the results directory's name, or the file stem.
    pub fn name(&self) -> String {
        let p = if self.path.file_name().is_some_and(|n| n == "results.json") {
            self.path.parent().and_then(Path::file_name)
        } else {
            self.path.file_stem()
        };
        p.map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "report".into())
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    }

    pub(crate) fn first_options(&self) -> Option<&Value> {
        self.json.pointer("/jobs/0/options")
    }
}

/// A number field of a JSON object.
pub(crate) fn f(v: &Value, k: &str) -> Option<f64> {
    v.get(k).and_then(Value::as_f64)
}
