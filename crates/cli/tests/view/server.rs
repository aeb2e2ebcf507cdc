//! A `kairos view` process for tests: started on a free port, its URL read from stdout,
//! killed when dropped; and a raw HTTP client, so malformed requests can be sent too.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::kairos_bin;

pub struct View {
    pub child: Child,
    pub url: String,
    pub port: u16,
    pub token: String,
}

impl Drop for View {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `kairos view ARGS --no-browser` (with `--port 0` unless ARGS has a port).
pub fn start(args: &[&str]) -> View {
    let mut cmd = Command::new(kairos_bin());
    cmd.arg("view").args(args).arg("--no-browser");
    if !args.contains(&"--port") {
        cmd.args(["--port", "0"]);
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("Kairos view: ")
        .unwrap_or_else(|| panic!("no URL line: {line:?}"))
        .to_string();
    let rest = url.strip_prefix("http://127.0.0.1:").unwrap();
    let (port, token) = rest.split_once('/').unwrap();
    View {
        port: port.parse().unwrap(),
        token: token.trim_end_matches('/').to_string(),
        url,
        child,
    }
}

/// Status and body of one raw request (`head` without the final blank line).
pub fn raw(port: u16, head: &str) -> (u16, String) {
    raw_bytes(port, format!("{head}\r\n\r\n").as_bytes())
}

pub fn raw_bytes(port: u16, bytes: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    // The server may answer and close before reading everything we send.
    let _ = s.write_all(bytes);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|x| x.1.to_string())
        .unwrap_or_default();
    (status, body)
}

impl View {
    /// GET `path` (relative to the page) with the right Host header.
    pub fn get(&self, path: &str) -> (u16, String) {
        raw(
            self.port,
            &format!(
                "GET /{}/{path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close",
                self.token, self.port
            ),
        )
    }

    /// GET an API call that must succeed, as JSON.
    pub fn api(&self, call: &str) -> serde_json::Value {
        let (status, body) = self.get(&format!("api/{call}"));
        assert_eq!(status, 200, "api/{call}: {body}");
        serde_json::from_str(&body).unwrap()
    }
}
