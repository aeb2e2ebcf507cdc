//! One window to an OpenTelemetry Collector over OTLP/gRPC (`ProfilesService/Export`),
//! and what the status means by OTLP's rules: OK accepted (a partial success said),
//! the transient codes (UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED,
//! CANCELLED, OUT_OF_RANGE, DATA_LOSS) tried again later, any other refused for good with
//! the collector's message. The gRPC client sends a message, not bytes: the sender
//! decodes the spooled request for it.

use std::time::Duration;

use opentelemetry_proto::tonic::collector::profiles::v1development::profiles_service_client::ProfilesServiceClient;
use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceRequest;
use tonic::codec::CompressionEncoding;
use tonic::metadata::{MetadataKey, MetadataValue};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};
use tonic::Code;

use crate::config::Destination;
use crate::outcome::Outcome;

/// A gRPC client of one collector, with the thread that drives it.
pub struct GrpcSender {
    rt: tokio::runtime::Runtime,
    channel: Channel,
}

impl GrpcSender {
    /// The client of `dest`; it connects at the first window (an absent collector is a
    /// window to retry, not a failure to start).
    pub fn new(dest: &Destination) -> Result<GrpcSender, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the gRPC client's thread: {e}"))?;
        let mut endpoint = Endpoint::from_shared(dest.url.clone())
            .map_err(|e| format!("--otlp {}: not a gRPC address ({e})", dest.url))?
            .timeout(dest.timeout)
            .connect_timeout(dest.timeout.min(Duration::from_secs(10)))
            .user_agent(concat!("kairos-agent/", env!("CARGO_PKG_VERSION")))
            .map_err(|e| e.to_string())?;
        if dest.url.starts_with("https://") {
            let mut tls = ClientTlsConfig::new().with_webpki_roots();
            if let Some(ca) = &dest.ca_file {
                let pem = std::fs::read(ca).map_err(|e| {
                    format!("cannot read the certificate file {}: {e}", ca.display())
                })?;
                tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem));
            }
            endpoint = endpoint
                .tls_config(tls)
                .map_err(|e| format!("TLS for {}: {e}", dest.url))?;
        }
        let channel = {
            let _in_runtime = rt.enter();
            endpoint.connect_lazy()
        };
        Ok(GrpcSender { rt, channel })
    }

    /// Sends `message` with `dest`'s headers and compression.
    pub fn send(&self, dest: &Destination, message: ExportProfilesServiceRequest) -> Outcome {
        let mut request = tonic::Request::new(message);
        request.set_timeout(dest.timeout);
        for (k, v) in &dest.headers {
            let key = MetadataKey::from_bytes(k.to_ascii_lowercase().as_bytes());
            let value = MetadataValue::try_from(v.as_str());
            match (key, value) {
                (Ok(key), Ok(value)) => {
                    request.metadata_mut().insert(key, value);
                }
                _ => {
                    return Outcome::Refused(format!(
                        "the header {k} cannot be sent as gRPC metadata"
                    ))
                }
            }
        }
        let mut client = ProfilesServiceClient::new(self.channel.clone());
        if dest.gzip {
            client = client
                .send_compressed(CompressionEncoding::Gzip)
                .accept_compressed(CompressionEncoding::Gzip);
        }
        match self.rt.block_on(client.export(request)) {
            Ok(answer) => Outcome::Accepted {
                status: 200,
                note: answer.into_inner().partial_success.and_then(|p| {
                    (p.rejected_profiles > 0 || !p.error_message.is_empty()).then(|| {
                        format!(
                            "the collector rejected {} profiles: {}",
                            p.rejected_profiles, p.error_message
                        )
                    })
                }),
            },
            Err(status) => classify(status.code(), status.message()),
        }
    }
}

/// What a gRPC status means for the window (OTLP's retryable codes).
pub fn classify(code: Code, message: &str) -> Outcome {
    let said = if message.is_empty() {
        format!("gRPC {code:?}")
    } else {
        format!(
            "gRPC {code:?}: {}",
            message.chars().take(300).collect::<String>()
        )
    };
    match code {
        Code::Ok => Outcome::Accepted {
            status: 200,
            note: None,
        },
        Code::Unavailable
        | Code::DeadlineExceeded
        | Code::ResourceExhausted
        | Code::Aborted
        | Code::Cancelled
        | Code::OutOfRange
        | Code::DataLoss => Outcome::Retry(said, None),
        _ => Outcome::Refused(said),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_codes_are_retried_and_others_refused() {
        assert!(
            matches!(classify(Code::Unavailable, "down"), Outcome::Retry(s, None) if s.contains("Unavailable: down"))
        );
        assert!(matches!(
            classify(Code::DeadlineExceeded, ""),
            Outcome::Retry(..)
        ));
        assert!(
            matches!(classify(Code::Unauthenticated, "no token"), Outcome::Refused(s) if s.contains("no token"))
        );
        assert!(matches!(
            classify(Code::InvalidArgument, "bad"),
            Outcome::Refused(..)
        ));
        assert!(matches!(classify(Code::Ok, ""), Outcome::Accepted { .. }));
    }
}
