//! One window to one backend over HTTP, and what the answer means: accepted, refused for
//! good (a 4xx other than 429: the backend said why, and sending it again would be refused
//! again), or to be tried again later (429, 502, 503, 504, a timeout, no connection), as
//! OTLP's retry rules say. The body is the spooled payload: an OTLP request (gzipped on
//! the wire when asked) or a gzipped pprof profile, in the form each backend takes.

use std::time::Duration;

use base64::Engine;
use opentelemetry_proto::tonic::collector::profiles::v1development::{
    ExportProfilesServiceRequest, ExportProfilesServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue};
use opentelemetry_proto::tonic::profiles::v1development::KeyValueAndUnit;
use prost::Message;

use crate::config::{Destination, Kind};
use crate::spool::Entry;

/// The attribute that reports windows the spool dropped (on every profile of the first
/// request accepted after the drops).
pub const DROPPED_ATTRIBUTE: &str = "kairos.agent.dropped_windows";

pub use crate::outcome::Outcome;

/// A request to make: URL, content type, body, content encoding.
type Request = (String, &'static str, Vec<u8>, Option<&'static str>);

/// An HTTP client for one destination (its timeout and certificate authorities).
pub struct Sender {
    dest: Destination,
    agent: ureq::Agent,
    /// The gRPC client of an OTLP/gRPC destination.
    grpc: Option<crate::grpc::GrpcSender>,
}

impl Sender {
    pub fn new(dest: Destination) -> Result<Sender, String> {
        let mut tls = ureq::tls::TlsConfig::builder();
        if let Some(ca) = &dest.ca_file {
            let pem = std::fs::read(ca)
                .map_err(|e| format!("cannot read the certificate file {}: {e}", ca.display()))?;
            let certs: Vec<_> = ureq::tls::parse_pem(&pem)
                .filter_map(|item| match item {
                    Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                    _ => None,
                })
                .collect();
            if certs.is_empty() {
                return Err(format!(
                    "{} holds no PEM certificate; give the certificate authority that signed the backend's",
                    ca.display()
                ));
            }
            tls = tls.root_certs(ureq::tls::RootCerts::new_with_certs(&certs));
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(dest.timeout))
            .http_status_as_error(false)
            .tls_config(tls.build())
            .user_agent(concat!("kairos-agent/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        let grpc = match dest.kind {
            Kind::OtlpGrpc => Some(crate::grpc::GrpcSender::new(&dest)?),
            _ => None,
        };
        Ok(Sender { dest, agent, grpc })
    }

    pub fn destination(&self) -> &Destination {
        &self.dest
    }

    /// Sends a spooled window, with `dropped` windows to report.
    pub fn send(
        &self,
        entry: &Entry,
        payload: &[u8],
        dropped: u64,
        labels: &[(String, String)],
    ) -> Outcome {
        if let Some(grpc) = &self.grpc {
            return match otlp_request(payload, dropped) {
                Ok(message) => grpc.send(&self.dest, message),
                Err(why) => Outcome::Refused(why),
            };
        }
        let (url, content_type, body, encoding) = match self.body(entry, payload, dropped, labels) {
            Ok(b) => b,
            Err(why) => return Outcome::Refused(why),
        };
        let mut req = self.agent.post(&url).header("Content-Type", content_type);
        if let Some(enc) = encoding {
            req = req.header("Content-Encoding", enc);
        }
        for (k, v) in &self.dest.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        match req.send(&body[..]) {
            Ok(mut resp) => {
                let status = resp.status().as_u16();
                let retry_after = resp
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse().ok())
                    .map(Duration::from_secs);
                let answer = resp
                    .body_mut()
                    .with_config()
                    .limit(1 << 20)
                    .read_to_vec()
                    .unwrap_or_default();
                classify(self.dest.kind, status, &answer, retry_after)
            }
            Err(e) => Outcome::Retry(describe(&e), None),
        }
    }

    /// (URL, content type, body, content encoding) of a window for this backend.
    fn body(
        &self,
        entry: &Entry,
        payload: &[u8],
        dropped: u64,
        labels: &[(String, String)],
    ) -> Result<Request, String> {
        match self.dest.kind {
            Kind::Otlp | Kind::OtlpGrpc => {
                let raw = with_dropped_if(payload, dropped)?;
                if self.dest.gzip {
                    Ok((
                        self.dest.url.clone(),
                        "application/x-protobuf",
                        gzip(&raw),
                        Some("gzip"),
                    ))
                } else {
                    Ok((self.dest.url.clone(), "application/x-protobuf", raw, None))
                }
            }
            Kind::Pyroscope => {
                let mut labels = labels.to_vec();
                if dropped > 0 {
                    labels.push((DROPPED_ATTRIBUTE.into(), dropped.to_string()));
                }
                let url = pyroscope_url(&self.dest.url, entry, &labels);
                Ok((url, "application/octet-stream", payload.to_vec(), None))
            }
            Kind::Parca => {
                let mut labels = labels.to_vec();
                if dropped > 0 {
                    labels.push((DROPPED_ATTRIBUTE.into(), dropped.to_string()));
                }
                Ok((
                    self.dest.url.clone(),
                    "application/json",
                    parca_body(payload, &labels),
                    None,
                ))
            }
        }
    }
}

/// A label name as Prometheus-style backends take it: `[a-zA-Z_][a-zA-Z0-9_]*`.
pub fn label_name(key: &str) -> String {
    let mut s: String = key
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    s
}

/// Pyroscope's ingest query: `name=APP.cpu{k=v,...}&from&until&format=pprof&spyName`.
fn pyroscope_url(base: &str, entry: &Entry, labels: &[(String, String)]) -> String {
    let app = labels
        .iter()
        .find(|(k, _)| k == "service.name")
        .map_or("kairos-agent", |(_, v)| v.as_str());
    let tags: Vec<String> = labels
        .iter()
        .filter(|(k, _)| k != "service.name")
        .map(|(k, v)| format!("{}={}", label_name(k), v.replace([',', '}', '{', '='], "_")))
        .collect();
    let name = format!("{app}.cpu{{{}}}", tags.join(","));
    let sep = if base.contains('?') { '&' } else { '?' };
    format!(
        "{base}{sep}name={}&from={}&until={}&format=pprof&spyName=kairos&units=samples&aggregationType=sum",
        query_escape(&name),
        entry.from_s,
        entry.until_s.max(entry.from_s + 1)
    )
}

/// Everything but RFC 3986's unreserved characters is escaped in a query value.
const QUERY_VALUE: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

fn query_escape(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, QUERY_VALUE).to_string()
}

/// Parca's WriteRaw request as its HTTP gateway takes it (JSON, the profile in base64).
fn parca_body(pprof: &[u8], labels: &[(String, String)]) -> Vec<u8> {
    let mut label_list = vec![serde_json::json!({"name": "__name__", "value": "process_cpu"})];
    for (k, v) in labels {
        label_list.push(serde_json::json!({"name": label_name(k), "value": v}));
    }
    let body = serde_json::json!({
        "normalized": false,
        "series": [{
            "labels": {"labels": label_list},
            "samples": [{"rawProfile": base64::engine::general_purpose::STANDARD.encode(pprof)}],
        }],
    });
    body.to_string().into_bytes()
}

/// The request with the dropped-window count on every profile.
/// An OTLP request's bytes with the dropped count on its profiles when there is one to
/// report (the spooled bytes as they are otherwise).
fn with_dropped_if(raw: &[u8], dropped: u64) -> Result<Vec<u8>, String> {
    if dropped > 0 {
        Ok(otlp_request(raw, dropped)?.encode_to_vec())
    } else {
        Ok(raw.to_vec())
    }
}

/// The spooled OTLP request, with the dropped count on its profiles when there is one to
/// report.
fn otlp_request(raw: &[u8], dropped: u64) -> Result<ExportProfilesServiceRequest, String> {
    let mut req = ExportProfilesServiceRequest::decode(raw)
        .map_err(|e| format!("the spooled window is damaged ({e}); it is dropped"))?;
    if dropped == 0 {
        return Ok(req);
    }
    let dict = req.dictionary.get_or_insert_with(Default::default);
    if dict.string_table.is_empty() {
        dict.string_table.push(String::new());
    }
    if dict.attribute_table.is_empty() {
        dict.attribute_table.push(KeyValueAndUnit::default());
    }
    let key = dict.string_table.len() as i32;
    dict.string_table.push(DROPPED_ATTRIBUTE.into());
    let index = dict.attribute_table.len() as i32;
    dict.attribute_table.push(KeyValueAndUnit {
        key_strindex: key,
        value: Some(AnyValue {
            value: Some(any_value::Value::IntValue(dropped as i64)),
        }),
        unit_strindex: 0,
    });
    for rp in &mut req.resource_profiles {
        for sp in &mut rp.scope_profiles {
            for p in &mut sp.profiles {
                p.attribute_indices.push(index);
            }
        }
    }
    Ok(req)
}

fn gzip(raw: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    // Writing to a Vec cannot fail.
    let _ = enc.write_all(raw);
    enc.finish().unwrap_or_default()
}

/// What an HTTP answer means, by OTLP's rules (which Pyroscope and Parca follow too).
pub fn classify(kind: Kind, status: u16, answer: &[u8], retry_after: Option<Duration>) -> Outcome {
    let text = || {
        let t: String = String::from_utf8_lossy(answer)
            .trim()
            .chars()
            .take(300)
            .collect();
        if t.is_empty() {
            t
        } else {
            format!(": {t}")
        }
    };
    match status {
        200..=299 => Outcome::Accepted {
            status,
            note: if kind.is_otlp() {
                partial_success(answer)
            } else {
                None
            },
        },
        429 | 502 | 503 | 504 => Outcome::Retry(format!("HTTP {status}{}", text()), retry_after),
        _ => Outcome::Refused(format!("HTTP {status}{}", text())),
    }
}

/// An OTLP answer that accepted only part of the request says so; that part is not sent
/// again (the spec says not to retry it).
fn partial_success(answer: &[u8]) -> Option<String> {
    let resp = ExportProfilesServiceResponse::decode(answer).ok()?;
    let p = resp.partial_success?;
    (p.rejected_profiles > 0 || !p.error_message.is_empty()).then(|| {
        format!(
            "the backend rejected {} profiles of it: {}",
            p.rejected_profiles, p.error_message
        )
    })
}

fn describe(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Timeout(_) => "no answer within the timeout".into(),
        ureq::Error::ConnectionFailed | ureq::Error::Io(_) => format!("cannot connect ({e})"),
        ureq::Error::HostNotFound => "the host name does not resolve".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
#[path = "send_tests.rs"]
mod tests;
