//! `nc-interop`: the quic-interop-runner's test cases, run locally.
//!
//! No Docker engine runs here, so each cell (client implementation, server
//! implementation, test case) starts both endpoints as processes through
//! their endpoint scripts (the runner's contract: `ROLE`, `TESTCASE`,
//! `REQUESTS`, …; ours is `docker/run_endpoint.sh` itself), puts an
//! in-process [`crate::relay`] shaped like the runner's simulator between
//! them, and checks what the runner checks: the downloaded files, and on
//! the wire (the relay's [`crate::wire`] tally) the number of handshakes,
//! Retry and 0-RTT packets.
//!
//! * [`cases`]: the test cases, their links, files and expectations;
//! * [`endpoints`]: the implementations and how to start them;
//! * [`cell`]: one cell, run;
//! * [`checks`]: what the runner checks after a cell;
//! * [`report`]: the runner's result JSON, a markdown matrix, a static
//!   HTML page;
//! * [`options`]: the command line.

pub mod cases;
pub mod cell;
pub mod checks;
pub mod endpoints;
pub mod options;
pub mod report;
