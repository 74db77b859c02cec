//! Between the SDK's foreign-facing types and the client library's.

use std::time::Duration;

use quic_nc_examples::client::{self, ClientConfig, Trust};

/// The client configuration from the SDK's fields (one place for both
/// foreign interfaces).
pub(crate) struct Settings<'a> {
    pub ca_file: Option<&'a str>,
    pub pin_sha256: Option<&'a str>,
    pub insecure: bool,
    pub coding: bool,
    pub policy: Option<&'a str>,
    pub controller: Option<&'a str>,
    pub connect_timeout_ms: u64,
    pub request_timeout_ms: Option<u64>,
    pub idle_timeout_ms: Option<u64>,
    pub qlog_dir: Option<&'a str>,
}

impl Settings<'_> {
    pub fn config(&self) -> Result<ClientConfig, client::Error> {
        let bad = |m: String| client::Error::new(client::ErrorKind::Config, m);
        let trust = match (self.ca_file, self.pin_sha256, self.insecure) {
            (Some(ca), None, false) => Trust::CaFile(ca.into()),
            (None, Some(pin), false) => Trust::Pinned(pin.into()),
            (None, None, true) => Trust::NoVerify,
            (None, None, false) => Trust::System,
            _ => {
                return Err(bad(
                    "give at most one of ca_file, pin_sha256 and insecure".into()
                ))
            }
        };
        let mut c = ClientConfig {
            trust,
            ..ClientConfig::default()
        };
        c.transport.nc = if self.coding { "auto" } else { "off" }.into();
        if let Some(p) = self.policy {
            c.transport.nc_policy = quic_nc::coding::config::parse_policy(p).map_err(bad)?;
        }
        if let Some(cc) = self.controller {
            quic_nc_examples::cc::validate(cc).map_err(bad)?;
            c.transport.cc = cc.into();
        }
        if self.connect_timeout_ms > 0 {
            c.connect_timeout = Duration::from_millis(self.connect_timeout_ms);
        }
        c.request_timeout = self
            .request_timeout_ms
            .filter(|&t| t > 0)
            .map(Duration::from_millis);
        if let Some(t) = self.idle_timeout_ms.filter(|&t| t > 0) {
            c.transport.idle_timeout = t;
        }
        c.qlog_dir = self.qlog_dir.map(Into::into);
        Ok(c)
    }
}
