//! The answers' meaning, the bodies each backend takes, and one real exchange with a
//! server on 127.0.0.1 that reads what was sent.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;

use super::*;
use crate::config::Destination;

fn entry() -> Entry {
    Entry {
        seq: 4,
        from_s: 1000,
        until_s: 1010,
        path: "unused".into(),
        bytes: 0,
    }
}

#[test]
fn answers_by_otlp_rules() {
    assert!(matches!(
        classify(Kind::Otlp, 200, b"", None),
        Outcome::Accepted { .. }
    ));
    assert_eq!(
        classify(Kind::Otlp, 400, b"bad profile", None),
        Outcome::Refused("HTTP 400: bad profile".into())
    );
    assert_eq!(
        classify(Kind::Otlp, 503, b"", Some(Duration::from_secs(7))),
        Outcome::Retry("HTTP 503".into(), Some(Duration::from_secs(7)))
    );
    assert!(matches!(
        classify(Kind::Pyroscope, 429, b"", None),
        Outcome::Retry(..)
    ));
    assert!(matches!(
        classify(Kind::Otlp, 500, b"", None),
        Outcome::Refused(_)
    ));
    let partial = ExportProfilesServiceResponse {
        partial_success: Some(
            opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesPartialSuccess {
                rejected_profiles: 2,
                error_message: "too old".into(),
            },
        ),
    };
    match classify(Kind::Otlp, 200, &partial.encode_to_vec(), None) {
        Outcome::Accepted { note: Some(n), .. } => {
            assert!(n.contains("2 profiles") && n.contains("too old"))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn dropped_count_on_every_profile() {
    use opentelemetry_proto::tonic::profiles::v1development as pd;
    let req = ExportProfilesServiceRequest {
        resource_profiles: vec![pd::ResourceProfiles {
            scope_profiles: vec![pd::ScopeProfiles {
                profiles: vec![pd::Profile::default(), pd::Profile::default()],
                ..Default::default()
            }],
            ..Default::default()
        }],
        dictionary: Some(pd::ProfilesDictionary {
            string_table: vec![String::new()],
            attribute_table: vec![pd::KeyValueAndUnit::default()],
            ..Default::default()
        }),
    };
    let out = ExportProfilesServiceRequest::decode(
        with_dropped_if(&req.encode_to_vec(), 5).unwrap().as_slice(),
    )
    .unwrap();
    let d = out.dictionary.unwrap();
    for p in &out.resource_profiles[0].scope_profiles[0].profiles {
        let a = &d.attribute_table[p.attribute_indices[0] as usize];
        assert_eq!(d.string_table[a.key_strindex as usize], DROPPED_ATTRIBUTE);
        assert_eq!(
            a.value.clone().unwrap().value,
            Some(any_value::Value::IntValue(5))
        );
    }
    assert!(
        with_dropped_if(b"\xff\xff\xff", 1).is_err(),
        "damage is said, not hidden"
    );
}

#[test]
fn pyroscope_and_parca_bodies() {
    let labels = vec![
        ("service.name".to_string(), "orders".to_string()),
        ("host.name".to_string(), "h{1}".to_string()),
    ];
    let url = pyroscope_url("http://p:4040/ingest", &entry(), &labels);
    assert!(
        url.starts_with("http://p:4040/ingest?name=orders.cpu%7Bhost_name%3Dh_1_%7D&"),
        "{url}"
    );
    assert!(url.contains("&from=1000&until=1010&format=pprof"), "{url}");
    let body: serde_json::Value = serde_json::from_slice(&parca_body(b"pp", &labels)).unwrap();
    let series = &body["series"][0];
    assert_eq!(series["samples"][0]["rawProfile"], "cHA=");
    assert_eq!(series["labels"]["labels"][0]["value"], "process_cpu");
    assert_eq!(series["labels"]["labels"][1]["name"], "service_name");
    assert_eq!(label_name("9.a-b"), "_9_a_b");
}

/// Serves one request with `status`, returning (request head, body) through the channel.
fn one_shot(status: u16) -> (String, std::sync::mpsc::Receiver<(String, Vec<u8>)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut head = String::new();
        let mut len = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap();
            }
            if line == "\r\n" {
                break;
            }
            head.push_str(&line);
        }
        let mut body = vec![0; len];
        reader.read_exact(&mut body).unwrap();
        let mut stream = stream;
        write!(
            stream,
            "HTTP/1.1 {status} X\r\ncontent-length: 4\r\nconnection: close\r\n\r\nnope"
        )
        .unwrap();
        tx.send((head, body)).unwrap();
    });
    (format!("http://{addr}"), rx)
}

fn destination(url: String) -> Destination {
    Destination {
        kind: Kind::Otlp,
        url,
        headers: vec![("Authorization".into(), "Bearer t".into())],
        gzip: true,
        timeout: Duration::from_secs(5),
        ca_file: None,
    }
}

#[test]
fn a_real_exchange_gzip_headers_and_refusal() {
    let (url, rx) = one_shot(400);
    let sender = Sender::new(destination(format!("{url}/v1development/profiles"))).unwrap();
    let out = sender.send(&entry(), b"\x0a\x00", 0, &[]);
    assert_eq!(out, Outcome::Refused("HTTP 400: nope".into()));
    let (head, body) = rx.recv().unwrap();
    let head = head.to_ascii_lowercase();
    assert!(head.starts_with("post /v1development/profiles "), "{head}");
    assert!(head.contains("content-encoding: gzip") && head.contains("authorization: bearer t"));
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(&body[..])
        .read_to_end(&mut raw)
        .unwrap();
    assert_eq!(raw, b"\x0a\x00");
}

#[test]
fn nobody_listening_is_retried() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let sender = Sender::new(destination(format!("http://127.0.0.1:{port}/x"))).unwrap();
    assert!(matches!(
        sender.send(&entry(), b"", 0, &[]),
        Outcome::Retry(..)
    ));
    let bad_ca = Destination {
        ca_file: Some("/nonexistent/ca.pem".into()),
        ..destination("https://x".into())
    };
    assert!(Sender::new(bad_ca)
        .err()
        .unwrap()
        .contains("/nonexistent/ca.pem"));
}
