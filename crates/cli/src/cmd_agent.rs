//! `kairos agent`: the command line of continuous fleet profiling. What it does lives in
//! `kairos-agent`; this reads the flags and OpenTelemetry's environment variables into
//! its options and turns its errors into one sentence each.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use kairos_agent::config::{self, Flags};
use kairos_agent::latency::LatencyOptions;
use kairos_agent::AgentOptions;
use kairos_collector::{Target, Unwinding};

use crate::error::{CliResult, UserError};

#[derive(Debug, Args)]
pub struct AgentArgs {
    /// Only this process (and the threads and children it creates); default: every process.
    #[arg(short = 'p', long = "pid", conflicts_with_all = ["comm", "cgroup"])]
    pub pid: Option<i32>,
    /// Only processes with this command name (as `ps -o comm` shows it).
    #[arg(long)]
    pub comm: Option<String>,
    /// Only processes in this cgroup v2 path or below (e.g. /system.slice/nginx.service).
    #[arg(long)]
    pub cgroup: Option<String>,
    /// Samples per second on each CPU.
    #[arg(short = 'F', long = "freq", default_value_t = 19)]
    pub freq: u32,
    /// Length of a window in seconds; each is sent as it closes.
    #[arg(long, default_value_t = 10.0)]
    pub window: f64,
    /// Stop after this many seconds (default: on Ctrl-C or SIGTERM).
    #[arg(short = 'd', long = "duration")]
    pub duration: Option<f64>,
    /// OpenTelemetry Collector endpoint, e.g. http://127.0.0.1:4318 (OTLP/HTTP) or http://127.0.0.1:4317 with --otlp-protocol grpc; default: OTEL_EXPORTER_OTLP_ENDPOINT.
    #[arg(long)]
    pub otlp: Option<String>,
    /// http/protobuf (default) or grpc; wins over OTEL_EXPORTER_OTLP_PROTOCOL.
    #[arg(long = "otlp-protocol")]
    pub otlp_protocol: Option<String>,
    /// pprof endpoint: Pyroscope's http://HOST:4040/ingest or Parca's http://HOST:7070/profiles/writeraw.
    #[arg(long)]
    pub pprof: Option<String>,
    /// Header sent with every request (Authorization=Bearer ..., X-Scope-OrgID=...); repeatable.
    #[arg(long = "header", value_name = "NAME=VALUE")]
    pub headers: Vec<String>,
    /// Resource attribute on every profile (service.name=orders, deployment.environment=prod); repeatable.
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
    /// Certificate authorities (PEM) to trust for https destinations instead of the built-in roots.
    #[arg(long = "tls-ca", value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// Where windows wait until their backend has them (default: $XDG_STATE_HOME/kairos-agent, or ~/.local/state/kairos-agent).
    #[arg(long)]
    pub spool: Option<PathBuf>,
    /// Megabytes each destination's spool may hold; past it the oldest windows are dropped and counted.
    #[arg(long = "spool-max-mb", default_value_t = 100)]
    pub spool_max_mb: u64,
    /// Seconds the last windows may take to send when the agent stops.
    #[arg(long = "flush-timeout", default_value_t = 10.0)]
    pub flush_timeout: f64,
    /// With -p: also a request-latency flight recorder, requests from REQUEST (marker, FUNCTION, usdt:PROVIDER:BEGIN,END), each slow request sent as a profile of its own (OTLP destinations).
    #[arg(long, value_name = "REQUEST", requires = "pid")]
    pub latency: Option<String>,
    /// A knob of the latency analysis for --latency (slower-than=200us, slowest=0.1%, ...); repeatable.
    #[arg(long = "latency-knob", value_name = "NAME=VALUE", requires = "latency")]
    pub latency_knobs: Vec<String>,
    /// Stack unwinding: fp (frame pointers) or dwarf (user stacks copied, unwound here).
    #[arg(long = "call-graph", default_value = "fp")]
    pub call_graph: String,
}

pub fn run(args: AgentArgs) -> CliResult {
    let opts = options(&args)?;
    let summary = kairos_agent::run(&opts).map_err(|e| UserError::failed(e.to_string()))?;
    if summary.windows == 0 {
        return Err(UserError::failed("the agent recorded no window"));
    }
    Ok(())
}

fn seconds(v: f64, what: &str) -> Result<Duration, UserError> {
    if v.is_finite() && v > 0.0 {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(UserError::usage(format!(
            "{what} must be a number of seconds above 0 (got {v})"
        )))
    }
}

fn options(args: &AgentArgs) -> Result<AgentOptions, UserError> {
    if args.freq == 0 || args.freq > 100_000 {
        return Err(UserError::usage(format!(
            "-F {}: the rate is samples per second per CPU, from 1 to 100000 (fleet profilers use 19)",
            args.freq
        )));
    }
    let flags = Flags {
        otlp: args.otlp.clone(),
        otlp_protocol: args.otlp_protocol.clone(),
        pprof: args.pprof.clone(),
        headers: args.headers.clone(),
        labels: args.labels.clone(),
        ca_file: args.tls_ca.clone(),
    };
    let env = |k: &str| std::env::var(k).ok();
    let destinations =
        config::destinations(&flags, &env).map_err(|e| UserError::usage(e.to_string()))?;
    let labels = config::labels(&flags, &env).map_err(|e| UserError::usage(e.to_string()))?;
    let unwinding = match args.call_graph.as_str() {
        "fp" => Unwinding::FramePointers,
        "dwarf" => Unwinding::Dwarf { stack_bytes: 8192 },
        other => {
            return Err(UserError::usage(format!(
                "--call-graph {other}: it is fp (frame pointers) or dwarf"
            )))
        }
    };
    Ok(AgentOptions {
        target: args.pid.map_or(Target::SystemWide, Target::Pid),
        comm: args.comm.clone(),
        cgroup: args.cgroup.clone(),
        hz: args.freq,
        window: seconds(args.window, "--window")?,
        duration: args.duration.map(|d| seconds(d, "-d")).transpose()?,
        unwinding,
        destinations,
        labels,
        spool_dir: args.spool.clone().unwrap_or_else(default_spool),
        spool_max_bytes: args.spool_max_mb.saturating_mul(1 << 20),
        flush_timeout: seconds(args.flush_timeout, "--flush-timeout")?,
        latency: args.latency.clone().map(|request| LatencyOptions {
            request,
            knobs: args.latency_knobs.clone(),
        }),
    })
}

fn default_spool() -> PathBuf {
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(std::env::temp_dir);
    state.join("kairos-agent")
}
