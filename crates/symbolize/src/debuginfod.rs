//! debuginfod: executables and debug files served by build id over HTTP, as elfutils'
//! client (and gdb, perf, systemd-coredump) uses them. Configured as elfutils' client
//! is, by environment: `DEBUGINFOD_URLS` (servers, separated by spaces; none means no
//! fetching), `DEBUGINFOD_CACHE_PATH` (default `$XDG_CACHE_HOME/debuginfod_client`, else
//! `~/.cache/debuginfod_client`), `DEBUGINFOD_TIMEOUT` (seconds, default 90).
//!
//! The client cache is shared with elfutils: `<cache>/<build id>/debuginfo` and
//! `<cache>/<build id>/executable`, written through a temporary file and a rename; an
//! empty file there is elfutils' record of a miss, honoured for `cache_miss_s` seconds
//! (default 600) and written the same way when no server has the file.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Where debuginfod files come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DebuginfodOptions {
    /// Server base URLs (`http://host:8002`); empty: only the client cache is read.
    pub urls: Vec<String>,
    /// The client cache; None: neither read nor written (files are fetched only when
    /// there is a cache to put them in).
    pub cache: Option<PathBuf>,
    /// For connecting and for each read of a response.
    pub timeout: Duration,
}

impl DebuginfodOptions {
    /// Nothing: no cache, no servers.
    pub fn none() -> Self {
        DebuginfodOptions {
            urls: Vec::new(),
            cache: None,
            timeout: Duration::from_secs(90),
        }
    }

    /// As elfutils' client reads its environment.
    pub fn from_env() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let urls = var("DEBUGINFOD_URLS")
            .map(|u| u.split_whitespace().map(str::to_string).collect())
            .unwrap_or_default();
        let cache = var("DEBUGINFOD_CACHE_PATH")
            .map(PathBuf::from)
            .or_else(|| var("XDG_CACHE_HOME").map(|x| Path::new(&x).join("debuginfod_client")))
            .or_else(|| var("HOME").map(|h| Path::new(&h).join(".cache/debuginfod_client")));
        let timeout = var("DEBUGINFOD_TIMEOUT")
            .and_then(|t| t.trim().parse::<u64>().ok())
            .filter(|&t| t > 0)
            .map_or(Duration::from_secs(90), Duration::from_secs);
        DebuginfodOptions {
            urls,
            cache,
            timeout,
        }
    }
}

/// Which file of a build id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Executable,
    Debuginfo,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Executable => "executable",
            Kind::Debuginfo => "debuginfo",
        }
    }
}

/// What a fetch found.
#[derive(Debug)]
pub(crate) enum Fetched {
    /// In the cache now, from this server.
    File { path: PathBuf, url: String },
    /// No server has it (or a recent miss says so).
    Missing,
    /// No server answered, or no cache to write to: the reasons.
    Failed(Vec<String>),
}

/// A debuginfod client for one conversion: servers that failed once are not asked again.
pub(crate) struct Client {
    opts: DebuginfodOptions,
    agent: Option<ureq::Agent>,
    dead: HashSet<String>,
}

impl Client {
    pub(crate) fn new(opts: DebuginfodOptions) -> Self {
        Client {
            opts,
            agent: None,
            dead: HashSet::new(),
        }
    }

    fn cache_file(&self, build_id: &str, kind: Kind) -> Option<PathBuf> {
        let valid = build_id.len() >= 2 && build_id.bytes().all(|b| b.is_ascii_hexdigit());
        valid.then(|| {
            self.opts
                .cache
                .as_ref()
                .map(|c| c.join(build_id).join(kind.name()))
        })?
    }

    /// The file in the client cache, when it holds one (not a recorded miss).
    pub(crate) fn cached(&self, build_id: &str, kind: Kind) -> Option<PathBuf> {
        let path = self.cache_file(build_id, kind)?;
        let meta = std::fs::metadata(&path).ok()?;
        (meta.is_file() && meta.len() > 0).then_some(path)
    }

    /// A recent miss recorded in the cache (an empty file younger than `cache_miss_s`).
    fn recent_miss(&self, path: &Path) -> bool {
        let Ok(meta) = std::fs::metadata(path) else {
            return false;
        };
        let miss_s = self
            .opts
            .cache
            .as_ref()
            .and_then(|c| std::fs::read_to_string(c.join("cache_miss_s")).ok())
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(600);
        let age = meta
            .modified()
            .ok()
            .and_then(|m| SystemTime::now().duration_since(m).ok())
            .unwrap_or(Duration::MAX);
        meta.len() == 0 && age < Duration::from_secs(miss_s)
    }

    /// Whether any server is configured (and still answering).
    pub(crate) fn can_fetch(&self) -> bool {
        self.opts.cache.is_some() && self.opts.urls.iter().any(|u| !self.dead.contains(u))
    }

    /// Asks the servers in turn for the file and stores the first answer in the cache.
    pub(crate) fn fetch(&mut self, build_id: &str, kind: Kind) -> Fetched {
        let Some(dest) = self.cache_file(build_id, kind) else {
            return Fetched::Failed(vec![
                "no debuginfod client cache (set HOME or DEBUGINFOD_CACHE_PATH)".into(),
            ]);
        };
        if self.recent_miss(&dest) {
            return Fetched::Missing;
        }
        let timeout = self.opts.timeout;
        let agent = self
            .agent
            .get_or_insert_with(|| {
                ureq::Agent::config_builder()
                    .timeout_connect(Some(timeout))
                    .timeout_recv_response(Some(timeout))
                    .timeout_per_read(Some(timeout))
                    .http_status_as_error(false)
                    .user_agent(concat!("kairos/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .into()
            })
            .clone();
        let mut failures = Vec::new();
        let mut answered = false;
        for url in self.opts.urls.clone() {
            if self.dead.contains(&url) {
                continue;
            }
            let full = format!(
                "{}/buildid/{build_id}/{}",
                url.trim_end_matches('/'),
                kind.name()
            );
            match agent.get(&full).call() {
                Ok(mut resp) if resp.status() == 200 => {
                    answered = true;
                    match store(&dest, &mut resp.body_mut().as_reader()) {
                        Ok(()) => return Fetched::File { path: dest, url },
                        Err(e) => failures.push(format!("{full}: {e}")),
                    }
                }
                Ok(resp) => {
                    // 404 is the server's "not here"; other statuses say the same here.
                    answered = true;
                    if resp.status() != 404 {
                        failures.push(format!("{full}: HTTP {}", resp.status()));
                    }
                }
                Err(e) => {
                    self.dead.insert(url.clone());
                    failures.push(format!(
                        "debuginfod server {url} not reached ({e}); not asked again"
                    ));
                }
            }
        }
        if answered && failures.is_empty() {
            record_miss(&dest);
            return Fetched::Missing;
        }
        if failures.is_empty() {
            Fetched::Missing
        } else {
            Fetched::Failed(failures)
        }
    }
}

/// Writes `body` to `dest` through a temporary file beside it and a rename, so that no
/// reader (elfutils' client included) ever sees half a file.
fn store(dest: &Path, body: &mut dyn std::io::Read) -> std::io::Result<()> {
    let dir = dest.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    let n = std::io::copy(body, &mut tmp)?;
    if n == 0 {
        return Err(std::io::Error::other("the server sent an empty file"));
    }
    tmp.flush()?;
    tmp.persist(dest).map_err(|e| e.error)?;
    Ok(())
}

/// An empty, unreadable file: elfutils' record that no server had it.
fn record_miss(dest: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let Some(dir) = dest.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() || dest.exists() {
        return;
    }
    if std::fs::write(dest, b"").is_ok() {
        let _ = std::fs::set_permissions(dest, std::fs::Permissions::from_mode(0o000));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::net::TcpListener;

    const ID: &str = "00112233445566778899aabbccddeeff00112233";

    /// A one-file HTTP server on 127.0.0.1 answering `requests` requests: 200 with
    /// `body` for `/buildid/ID/debuginfo`, 404 otherwise. Returns its URL.
    fn serve(
        body: &'static [u8],
        requests: usize,
    ) -> (String, std::thread::JoinHandle<Vec<String>>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        let h = std::thread::spawn(move || {
            let mut seen = Vec::new();
            for _ in 0..requests {
                let (mut s, _) = l.accept().unwrap();
                let mut line = String::new();
                let mut r = BufReader::new(s.try_clone().unwrap());
                r.read_line(&mut line).unwrap();
                loop {
                    let mut h = String::new();
                    if r.read_line(&mut h).unwrap() == 0 || h == "\r\n" {
                        break;
                    }
                }
                let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
                let resp: Vec<u8> = if path == format!("/buildid/{ID}/debuginfo") {
                    let mut v = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .into_bytes();
                    v.extend_from_slice(body);
                    v
                } else {
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                        .to_vec()
                };
                s.write_all(&resp).unwrap();
                seen.push(path);
            }
            seen
        });
        (url, h)
    }

    #[test]
    fn fetches_into_elfutils_cache_layout_and_records_misses() {
        let cache = tempfile::tempdir().unwrap();
        let (url, server) = serve(b"DEBUG BYTES", 2);
        let mut c = Client::new(DebuginfodOptions {
            urls: vec![format!("{url}/")],
            cache: Some(cache.path().to_path_buf()),
            timeout: Duration::from_secs(5),
        });
        assert!(c.cached(ID, Kind::Debuginfo).is_none());
        match c.fetch(ID, Kind::Debuginfo) {
            Fetched::File { path, url: from } => {
                assert_eq!(path, cache.path().join(ID).join("debuginfo"));
                assert_eq!(std::fs::read(&path).unwrap(), b"DEBUG BYTES");
                assert_eq!(from, format!("{url}/"));
            }
            other => panic!("{other:?}"),
        }
        assert!(c.cached(ID, Kind::Debuginfo).is_some());
        // The executable is not served: a miss, recorded as elfutils does, and not
        // asked again while it is recent.
        assert!(matches!(c.fetch(ID, Kind::Executable), Fetched::Missing));
        let miss = cache.path().join(ID).join("executable");
        assert_eq!(std::fs::metadata(&miss).unwrap().len(), 0);
        assert!(c.cached(ID, Kind::Executable).is_none());
        assert!(matches!(c.fetch(ID, Kind::Executable), Fetched::Missing));
        assert_eq!(
            server.join().unwrap(),
            [
                format!("/buildid/{ID}/debuginfo"),
                format!("/buildid/{ID}/executable")
            ]
        );
        // A build id that is not hex never becomes a path.
        assert!(c.cached("../../etc", Kind::Executable).is_none());
    }

    #[test]
    fn an_unreachable_server_is_asked_once() {
        // A port that was free a moment ago: connections are refused.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cache = tempfile::tempdir().unwrap();
        let mut c = Client::new(DebuginfodOptions {
            urls: vec![format!("http://127.0.0.1:{port}")],
            cache: Some(cache.path().to_path_buf()),
            timeout: Duration::from_secs(2),
        });
        assert!(c.can_fetch());
        match c.fetch(ID, Kind::Debuginfo) {
            Fetched::Failed(why) => assert!(why[0].contains("not reached"), "{why:?}"),
            other => panic!("{other:?}"),
        }
        assert!(!c.can_fetch());
        // No miss recorded for a server that never answered.
        assert!(!cache.path().join(ID).join("debuginfo").exists());
    }
}
