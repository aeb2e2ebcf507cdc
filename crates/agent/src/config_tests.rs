//! Flags against the OpenTelemetry environment variables, as an SDK user would set them.

use std::collections::HashMap;

use super::*;

fn env_of(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn dests(flags: &Flags, pairs: &[(&str, &str)]) -> Result<Vec<Destination>, AgentError> {
    let env = env_of(pairs);
    destinations(flags, &|k: &str| env.get(k).cloned())
}

#[test]
fn base_endpoint_gets_the_signal_path_and_a_flag_wins() {
    let d = dests(
        &Flags::default(),
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")],
    )
    .unwrap();
    assert_eq!(d[0].url, "http://collector:4318/v1development/profiles");
    assert_eq!(d[0].kind, Kind::Otlp);
    assert!(d[0].gzip);
    let flags = Flags {
        otlp: Some("http://127.0.0.1:9/v1development/profiles".into()),
        ..Flags::default()
    };
    let d = dests(
        &flags,
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")],
    )
    .unwrap();
    assert_eq!(d[0].url, "http://127.0.0.1:9/v1development/profiles");
    // The per-signal endpoint is taken as it is.
    let d = dests(
        &Flags::default(),
        &[
            ("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "https://x/custom"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
        ],
    )
    .unwrap();
    assert_eq!(d[0].url, "https://x/custom");
}

#[test]
fn headers_timeout_compression_and_protocol() {
    let flags = Flags {
        otlp: Some("http://c:4318".into()),
        headers: vec!["authorization=Bearer flag".into()],
        ..Flags::default()
    };
    let d = dests(
        &flags,
        &[
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "Authorization=Bearer%20env,X-Scope-OrgID=team%2Da",
            ),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "none"),
        ],
    )
    .unwrap();
    assert_eq!(
        d[0].headers,
        [
            ("X-Scope-OrgID".to_string(), "team-a".to_string()),
            ("authorization".to_string(), "Bearer flag".to_string())
        ]
    );
    assert_eq!(d[0].timeout, Duration::from_millis(2500));
    assert!(!d[0].gzip);
    let grpc = dests(&flags, &[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]).unwrap();
    assert_eq!(grpc[0].kind, Kind::OtlpGrpc);
    assert!(
        !grpc[0].url.ends_with(OTLP_PROFILES_PATH),
        "gRPC takes the collector's address: {}",
        grpc[0].url
    );
    let env_grpc = dests(
        &Flags::default(),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317/"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ],
    )
    .unwrap();
    assert_eq!(env_grpc[0].url, "http://collector:4317");
    let unknown = dests(&flags, &[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")]);
    assert!(unknown.unwrap_err().to_string().contains("grpc"));
    let flag_wins = Flags {
        otlp_protocol: Some("http/protobuf".into()),
        ..flags.clone()
    };
    let d = dests(&flag_wins, &[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]).unwrap();
    assert_eq!(d[0].kind, Kind::Otlp);
    let bad = dests(&flags, &[("OTEL_EXPORTER_OTLP_TIMEOUT", "soon")]);
    assert!(bad.unwrap_err().to_string().contains("milliseconds"));
}

#[test]
fn pprof_backend_by_path_and_no_destination_explained() {
    let flags = |url: &str| Flags {
        pprof: Some(url.into()),
        ..Flags::default()
    };
    let d = dests(&flags("http://pyro:4040/ingest"), &[]).unwrap();
    assert_eq!(d[0].kind, Kind::Pyroscope);
    let d = dests(&flags("http://parca:7070/profiles/writeraw"), &[]).unwrap();
    assert_eq!(d[0].kind, Kind::Parca);
    let e = dests(&flags("http://x/other"), &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("/ingest") && e.contains("writeraw"), "{e}");
    let e = dests(&Flags::default(), &[]).unwrap_err().to_string();
    assert!(e.contains("OTEL_EXPORTER_OTLP_ENDPOINT"), "{e}");
    let e = dests(&flags("pyro:4040/ingest"), &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("http://"), "{e}");
}

#[test]
fn labels_from_environment_then_flags() {
    let env = env_of(&[
        (
            "OTEL_RESOURCE_ATTRIBUTES",
            "service.name=a,deployment.environment=prod%20eu",
        ),
        ("OTEL_SERVICE_NAME", "b"),
    ]);
    let flags = Flags {
        labels: vec!["team=orders".into(), "deployment.environment=canary".into()],
        ..Flags::default()
    };
    let l = labels(&flags, &|k: &str| env.get(k).cloned()).unwrap();
    assert_eq!(
        l,
        [
            ("service.name".to_string(), "b".to_string()),
            ("team".to_string(), "orders".to_string()),
            ("deployment.environment".to_string(), "canary".to_string()),
        ]
    );
    let bad = Flags {
        labels: vec!["novalue".into()],
        ..Flags::default()
    };
    assert!(labels(&bad, &|_: &str| None).is_err());
}
