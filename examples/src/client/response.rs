//! A completed response, as the client library returns it.

use std::path::PathBuf;
use std::time::Duration;

use super::error::Error;

/// The answer to one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Response {
    /// The URL requested.
    pub url: String,
    /// HTTP status.
    pub status: u16,
    /// Response headers (name, value), pseudo-headers included.
    pub headers: Vec<(String, String)>,
    /// The body, when it was kept in memory.
    pub body: Vec<u8>,
    /// The file the body was saved to, when it was.
    pub saved_to: Option<PathBuf>,
    /// Body bytes received.
    pub bytes: u64,
    /// From issuing the request to its last byte.
    pub elapsed: Duration,
}

impl Response {
    /// The first value of header `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The response, or a [`super::ErrorKind::Status`] error for a status
    /// of 400 or more.
    pub fn error_for_status(self) -> Result<Response, Error> {
        if self.status >= 400 {
            Err(Error::status(
                self.status,
                format!("GET {}: status {}", self.url, self.status),
            ))
        } else {
            Ok(self)
        }
    }
}
