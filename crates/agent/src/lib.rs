//! `kairos agent`: continuous profiling for a fleet. The collector samples at a low rate
//! (19 Hz per CPU by default, as fleet profilers do) in windows (10 s); each window, while
//! the next one records, goes through the converter every Kairos recording goes through,
//! is symbolised on the host, and is spooled on disk as each destination's payload (OTLP
//! profiles for an OpenTelemetry Collector, pprof for Pyroscope or Parca). One sender
//! thread per destination sends the spool in order, retrying with backoff while the
//! backend is away; the spool is bounded, and what it drops is counted and reported. The
//! agent's own CPU and memory are said every window and sent with it. Ctrl-C, SIGTERM or
//! `-d` end the open window, which is sent first.
//!
//! | module | what |
//! |---|---|
//! | [`config`] | destinations and labels from the flags and OpenTelemetry's variables |
//! | [`window`] | a recorded window converted, filtered and made into payloads |
//! | [`spool`] | the bounded, ordered spool on disk |
//! | [`send`] | one window to one backend over HTTP, and what its answer means |
//! | [`host`] | the host's resource attributes |
//! | [`usage`] | the agent's own cost |
//! | [`latency`] | `--latency`: the flight recorder's slow requests as profiles of their own |

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::panic))]

pub mod config;
pub mod grpc;
pub mod host;
pub mod latency;
pub mod outcome;
pub mod send;
pub mod spool;
pub mod usage;
pub mod window;

mod run;

use std::path::PathBuf;
use std::time::Duration;

pub use run::run;

/// Everything `kairos agent` was asked to do.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// SystemWide, or Pid for one service.
    pub target: kairos_collector::Target,
    pub comm: Option<String>,
    pub cgroup: Option<String>,
    /// Samples per second per CPU.
    pub hz: u32,
    pub window: Duration,
    /// Stop after this long (None: on Ctrl-C or SIGTERM).
    pub duration: Option<Duration>,
    pub unwinding: kairos_collector::Unwinding,
    pub destinations: Vec<config::Destination>,
    /// Resource attributes from the environment and `--label`.
    pub labels: Vec<(String, String)>,
    pub spool_dir: PathBuf,
    /// Bytes each destination's spool may hold.
    pub spool_max_bytes: u64,
    /// How long the last windows may take to send when the agent stops.
    pub flush_timeout: Duration,
    /// `--latency`: a request-latency flight recorder on the process of `-p`.
    pub latency: Option<latency::LatencyOptions>,
}

/// Why the agent could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("{0}")]
    Config(String),
    #[error("the spool directory {dir} cannot be used ({source}); give --spool DIR on a disk this user may write to")]
    Spool {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Collect(String),
}

/// What a run of the agent did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    pub windows: u64,
    pub samples: u64,
    /// Windows accepted by a backend (per destination, summed).
    pub sent: u64,
    /// Windows a backend refused for good.
    pub refused: u64,
    /// Windows the spool dropped to stay within its bound.
    pub dropped: u64,
    /// Windows still in the spool (sent at the next start).
    pub waiting: u64,
}

/// `kairos info`'s line about the agent: what it can send to, and where the environment
/// points it.
pub fn info() -> String {
    let endpoint = [
        "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ]
    .iter()
    .find_map(|k| {
        std::env::var(k)
            .ok()
            .filter(|v| !v.is_empty())
            .map(|v| format!("{k} is {v}"))
    })
    .unwrap_or_else(|| "OTEL_EXPORTER_OTLP_ENDPOINT is not set (give --otlp or --pprof)".into());
    format!(
        "agent (kairos agent): sends windows as OTLP profiles over HTTP/protobuf or gRPC (an OpenTelemetry Collector) or as pprof (Pyroscope's /ingest, Parca's /profiles/writeraw); {endpoint}"
    )
}

/// One line of the agent's log on stderr, with its UTC time.
pub fn log(msg: &str) {
    eprintln!(
        "{} kairos agent: {msg}",
        kairos_result::rfc3339_utc(std::time::SystemTime::now())
    );
}
