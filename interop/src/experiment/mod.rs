//! The experiment runner behind `nc-experiment`.
//!
//! It only spawns processes (`qnc-certs`, `qnc-server`, `linkem`,
//! `qnc-client`, the peers) and reads their JSON output; it has no QUIC
//! dependency. Each run gets fresh loopback ports, a per-run cap, and its
//! children are killed when the run ends (also if the runner dies: children
//! get `PR_SET_PDEATHSIG`). A failed run is reported, never dropped.
//!
//! One job per module, layered without cycles (each uses only those above
//! it, plus [`crate::peer`] for flow specs and their commands):
//!
//! * [`process`]: child processes, ports, certificates, CPU of children.
//! * [`lines`]: the tools' JSON lines (client, server, stream delivery).
//! * [`loss_case`]: one loss setting of a table and its label.
//! * [`options`]: the matrix's command line, traces, and the parsing
//!   helpers the subcommands share.
//! * [`bench_options`], [`cellular_options`]: the `bench-e2e` and
//!   `bench-cellular` command lines.
//! * [`command`]: the whole command line (which subcommand).
//! * [`emulator`]: the linkem command, stats snapshots and the figures
//!   taken from its stats.
//! * [`run`]: one run → [`RunResult`] (ok / capped / failed).
//! * [`matrix`]: the interleaved (run × loss × row) schedule of a table.
//! * [`stats`]: medians, ranges, ratios, per-cell summaries.
//! * [`table`]: plain/markdown rendering of cells and runs.
//! * [`targets`]: the `bench-e2e` target check.
//! * [`bench`](mod@bench): the `bench-e2e` tables.
//! * [`cellular_targets`]: the `bench-cellular` target check.
//! * [`cellular_saved`]: `bench-cellular --from`, runs read back from reports.
//! * [`scatter`]: SVG scatter plots.
//! * [`cellular`]: the `bench-cellular` tables and plots.
//! * [`fairness_options`], [`fairness_targets`], [`fairness`],
//!   [`fairness_merge`]: the `bench-fairness` command line, figures and
//!   targets, cells and tables, and reports merged from earlier runs.

pub mod bench;
pub mod bench_options;
pub mod cellular;
pub mod cellular_options;
pub mod cellular_saved;
pub mod cellular_targets;
pub mod command;
pub mod emulator;
pub mod fairness;
pub mod fairness_merge;
pub mod fairness_options;
pub mod fairness_targets;
pub mod lines;
pub mod loss_case;
pub mod matrix;
pub mod options;
pub mod process;
pub mod run;
pub mod scatter;
pub mod stats;
pub mod table;
pub mod targets;

pub use bench_options::{BenchOptions, TableKind};
pub use cellular_options::CellularOptions;
pub use command::{parse_args, Command_};
pub use fairness_options::FairnessOptions;
pub use matrix::{prepare_rows, run_matrix, MatrixReport};
pub use options::{LossCase, Options, USAGE};
pub use process::{free_port, make_certs, INTERRUPTED};
pub use run::{run_one, Outcome, RunResult};
pub use stats::{cells, Cell};
pub use table::{format_cells, format_failures, format_runs, matrix_caption, Layout};
