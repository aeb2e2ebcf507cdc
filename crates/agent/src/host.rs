//! What every profile says about the host, under OpenTelemetry's semantic-convention names:
//! `host.name`, `host.arch`, `os.type`, and `os.version` (the kernel release), as the
//! backends index them; the user's labels come after and may replace them.

use kairos_export::otlp::AttrValue;

/// The host's attributes, then `labels` (each replacing a host attribute of its key).
pub fn resource(labels: &[(String, String)]) -> Vec<(String, AttrValue)> {
    let mut out: Vec<(String, AttrValue)> =
        vec![("os.type".into(), AttrValue::Str("linux".into()))];
    let host = kairos_session::this_host();
    if let Some(name) = host.name {
        out.push(("host.name".into(), AttrValue::Str(name)));
    }
    // OpenTelemetry's names for the architecture this binary (so the host) runs.
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    out.push(("host.arch".into(), AttrValue::Str(arch.into())));
    if let Some(release) = host.kernel_release {
        out.push(("os.version".into(), AttrValue::Str(release)));
    }
    for (k, v) in labels {
        out.retain(|(key, _)| key != k);
        out.push((k.clone(), AttrValue::Str(v.clone())));
    }
    out
}

/// The same as plain strings, for the pprof backends' labels.
pub fn as_labels(resource: &[(String, AttrValue)]) -> Vec<(String, String)> {
    resource
        .iter()
        .map(|(k, v)| {
            let v = match v {
                AttrValue::Str(s) => s.clone(),
                AttrValue::Int(i) => i.to_string(),
            };
            (k.clone(), v)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_then_labels_win() {
        let r = resource(&[
            ("host.name".into(), "given".into()),
            ("team".into(), "a".into()),
        ]);
        let get = |k: &str| r.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
        assert_eq!(get("host.name"), Some(AttrValue::Str("given".into())));
        assert_eq!(get("os.type"), Some(AttrValue::Str("linux".into())));
        assert!(matches!(get("os.version"), Some(AttrValue::Str(v)) if !v.is_empty()));
        assert_eq!(r.iter().filter(|(k, _)| k == "host.name").count(), 1);
        assert_eq!(
            as_labels(&r).last(),
            Some(&("team".to_string(), "a".to_string()))
        );
    }
}
