//! Where the agent sends its windows and what it says about the host: the command's flags
//! and the OpenTelemetry exporter's standard environment variables
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`, `_PROFILES_ENDPOINT`, `_PROTOCOL`, `_HEADERS`,
//! `_COMPRESSION`, `_TIMEOUT`, `_CERTIFICATE`, `OTEL_RESOURCE_ATTRIBUTES`,
//! `OTEL_SERVICE_NAME`), so that an agent configured for any OpenTelemetry SDK points at
//! the same collector. A flag wins over the environment.

use std::path::PathBuf;
use std::time::Duration;

use crate::AgentError;

/// The OTLP signal path of profiles, appended to a base endpoint.
pub const OTLP_PROFILES_PATH: &str = "/v1development/profiles";
/// The end of a Pyroscope ingest URL.
pub const PYROSCOPE_PATH: &str = "/ingest";
/// The end of Parca's HTTP WriteRaw URL.
pub const PARCA_PATH: &str = "/profiles/writeraw";

/// What a destination speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// OTLP profiles over HTTP/protobuf.
    Otlp,
    /// OTLP profiles over gRPC (`ProfilesService/Export`).
    OtlpGrpc,
    /// pprof to a Pyroscope-style `/ingest`.
    Pyroscope,
    /// pprof in Parca's WriteRaw (its HTTP gateway's JSON).
    Parca,
}

impl Kind {
    /// OTLP over either protocol: the windows are OTLP requests.
    pub fn is_otlp(self) -> bool {
        matches!(self, Kind::Otlp | Kind::OtlpGrpc)
    }

    /// The spool folder and the name in the log.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Otlp => "otlp",
            Kind::OtlpGrpc => "otlp-grpc",
            Kind::Pyroscope => "pyroscope",
            Kind::Parca => "parca",
        }
    }
}

/// One backend the windows go to.
#[derive(Debug, Clone, PartialEq)]
pub struct Destination {
    pub kind: Kind,
    pub url: String,
    /// Sent with every request (authorisation, tenant...).
    pub headers: Vec<(String, String)>,
    pub gzip: bool,
    pub timeout: Duration,
    /// PEM file of the certificate authorities to trust instead of the built-in roots.
    pub ca_file: Option<PathBuf>,
}

/// What the command line says about destinations and labels.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    pub otlp: Option<String>,
    /// `--otlp-protocol`: http/protobuf (default) or grpc.
    pub otlp_protocol: Option<String>,
    pub pprof: Option<String>,
    /// `--header K=V`, repeatable.
    pub headers: Vec<String>,
    /// `--label k=v`, repeatable.
    pub labels: Vec<String>,
    pub ca_file: Option<PathBuf>,
}

/// Reads one environment variable (the process's, or a test's table).
pub type Env<'e> = &'e dyn Fn(&str) -> Option<String>;

/// The destinations the flags and the environment name, OTLP first.
pub fn destinations(flags: &Flags, env: Env<'_>) -> Result<Vec<Destination>, AgentError> {
    let mut out = Vec::new();
    let get = |name: &str| -> Option<String> {
        env(&format!("OTEL_EXPORTER_OTLP_PROFILES_{name}"))
            .or_else(|| env(&format!("OTEL_EXPORTER_OTLP_{name}")))
            .filter(|v| !v.trim().is_empty())
    };
    let mut headers = get("HEADERS")
        .map(|h| key_values(&h, "OTEL_EXPORTER_OTLP_HEADERS"))
        .transpose()?
        .unwrap_or_default();
    for h in &flags.headers {
        let (k, v) = one_key_value(h, "--header")?;
        headers.retain(|(key, _)| !key.eq_ignore_ascii_case(&k));
        headers.push((k, v));
    }
    let timeout = match get("TIMEOUT") {
        Some(ms) => Duration::from_millis(ms.trim().parse().map_err(|_| {
            AgentError::Config(format!(
                "OTEL_EXPORTER_OTLP_TIMEOUT is '{ms}'; it is a number of milliseconds"
            ))
        })?),
        None => Duration::from_secs(10),
    };
    let gzip = match get("COMPRESSION").as_deref().map(str::trim) {
        None | Some("gzip") => true,
        Some("none") => false,
        Some(other) => {
            return Err(AgentError::Config(format!(
                "OTEL_EXPORTER_OTLP_COMPRESSION is '{other}'; it is gzip or none"
            )))
        }
    };
    let ca_file = flags
        .ca_file
        .clone()
        .or_else(|| get("CERTIFICATE").map(PathBuf::from));
    let protocol = flags
        .otlp_protocol
        .clone()
        .or_else(|| get("PROTOCOL"))
        .unwrap_or_else(|| "http/protobuf".into());
    let kind = match protocol.trim() {
        "http/protobuf" => Kind::Otlp,
        "grpc" => Kind::OtlpGrpc,
        other => {
            return Err(AgentError::Config(format!(
                "the OTLP protocol '{other}' is not one kairos speaks; use http/protobuf (the default) or grpc"
            )))
        }
    };
    let otlp_url = match (&flags.otlp, kind) {
        // gRPC names no signal path: the endpoint is the collector's address.
        (Some(url), Kind::OtlpGrpc) => Some(url.trim_end_matches('/').to_string()),
        (Some(url), _) => Some(signal_url(url)),
        (None, _) => env("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT")
            .filter(|v| !v.trim().is_empty())
            .or_else(|| {
                env("OTEL_EXPORTER_OTLP_ENDPOINT")
                    .filter(|v| !v.trim().is_empty())
                    .map(|base| match kind {
                        Kind::OtlpGrpc => base.trim_end_matches('/').to_string(),
                        _ => format!("{}{OTLP_PROFILES_PATH}", base.trim_end_matches('/')),
                    })
            }),
    };
    if let Some(url) = otlp_url {
        check_url(&url, "--otlp")?;
        out.push(Destination {
            kind,
            url,
            headers: headers.clone(),
            gzip,
            timeout,
            ca_file: ca_file.clone(),
        });
    }
    if let Some(url) = &flags.pprof {
        check_url(url, "--pprof")?;
        let path = url.split('?').next().unwrap_or("").trim_end_matches('/');
        let kind = if path.ends_with(PYROSCOPE_PATH) {
            Kind::Pyroscope
        } else if path.ends_with(PARCA_PATH) {
            Kind::Parca
        } else {
            return Err(AgentError::Config(format!(
                "--pprof {url}: say which backend by the path: .../ingest (Pyroscope) or .../profiles/writeraw (Parca)"
            )));
        };
        out.push(Destination {
            kind,
            url: url.clone(),
            headers: headers.clone(),
            gzip,
            timeout,
            ca_file: ca_file.clone(),
        });
    }
    if out.is_empty() {
        return Err(AgentError::Config(
            "no destination: give --otlp URL (an OpenTelemetry Collector), --pprof URL (Pyroscope's /ingest or Parca's /profiles/writeraw), or set OTEL_EXPORTER_OTLP_ENDPOINT".into(),
        ));
    }
    Ok(out)
}

/// A `--otlp` URL is a base endpoint unless it already names the signal's path.
fn signal_url(url: &str) -> String {
    let trimmed = url.trim_end_matches('/');
    if trimmed.ends_with(OTLP_PROFILES_PATH) {
        trimmed.to_string()
    } else {
        format!("{trimmed}{OTLP_PROFILES_PATH}")
    }
}

fn check_url(url: &str, what: &str) -> Result<(), AgentError> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(())
    } else {
        Err(AgentError::Config(format!(
            "{what} {url}: the URL must start with http:// or https://"
        )))
    }
}

/// The resource attributes every profile carries: OpenTelemetry's from the environment
/// (`OTEL_RESOURCE_ATTRIBUTES`, then `OTEL_SERVICE_NAME`), then `--label`s, each later one
/// replacing an earlier one of the same key.
pub fn labels(flags: &Flags, env: Env<'_>) -> Result<Vec<(String, String)>, AgentError> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut set = |k: String, v: String| {
        out.retain(|(key, _)| *key != k);
        out.push((k, v));
    };
    if let Some(attrs) = env("OTEL_RESOURCE_ATTRIBUTES").filter(|a| !a.trim().is_empty()) {
        for (k, v) in key_values(&attrs, "OTEL_RESOURCE_ATTRIBUTES")? {
            set(k, v);
        }
    }
    if let Some(name) = env("OTEL_SERVICE_NAME").filter(|n| !n.trim().is_empty()) {
        set("service.name".into(), name.trim().to_string());
    }
    for l in &flags.labels {
        let (k, v) = one_key_value(l, "--label")?;
        set(k, v);
    }
    Ok(out)
}

/// `k=v,k2=v2` with percent-encoded values, as the OpenTelemetry variables have them.
fn key_values(list: &str, what: &str) -> Result<Vec<(String, String)>, AgentError> {
    list.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            let (k, v) = one_key_value(p, what)?;
            let v = percent_encoding::percent_decode_str(&v).decode_utf8_lossy();
            Ok((k, v.into_owned()))
        })
        .collect()
}

fn one_key_value(s: &str, what: &str) -> Result<(String, String), AgentError> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(AgentError::Config(format!(
            "{what}: '{s}' is not KEY=VALUE"
        ))),
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
