//! A small HTTP/1.1 server for one local user: GET and HEAD only, no request bodies,
//! bounded request heads, keep-alive. Written on std + httparse rather than taken from a
//! server crate because the limits are the point: the common small servers read header
//! lines of any length, and a page on localhost must not be a way to exhaust memory.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The longest request target we accept (bytes); longer is 414.
pub const MAX_TARGET: usize = 8 * 1024;
/// The longest request head (request line + headers); longer is 431.
pub const MAX_HEAD: usize = 16 * 1024;
/// Connections served at once; more are refused with 503.
const MAX_CONNECTIONS: usize = 64;
/// A connection idle this long is closed.
const IDLE: Duration = Duration::from_secs(30);

/// A parsed request: only what the router needs.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// The request target as sent (path and query, still percent-encoded).
    pub target: String,
    pub host: Option<String>,
}

/// A response to write.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    pub extra_headers: Vec<(&'static str, String)>,
}

impl Response {
    pub fn new(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            content_type,
            body: body.into(),
            extra_headers: Vec::new(),
        }
    }
    /// `{"error": sentence}` with `status`.
    pub fn error(status: u16, sentence: &str) -> Response {
        Response::new(
            status,
            "application/json",
            serde_json::json!({ "error": sentence }).to_string(),
        )
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        414 => "URI Too Long",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Internal Server Error",
    }
}

/// Serves `listener` forever, one thread per connection, answering with `handle`.
pub fn serve(listener: TcpListener, handle: Arc<dyn Fn(&Request) -> Response + Send + Sync>) {
    let open = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            open.fetch_sub(1, Ordering::SeqCst);
            let _ = write_response(
                &mut stream,
                &Response::error(503, "too many connections; close some tabs and retry"),
                false,
                false,
            );
            continue;
        }
        let (open2, handle) = (open.clone(), handle.clone());
        let spawned = std::thread::Builder::new()
            .name("kairos-view-conn".into())
            .spawn(move || {
                let _ = connection(stream, &*handle);
                open2.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            // The closure (and its decrement) never ran.
            open.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Why a request head could not be read.
#[derive(Debug)]
enum HeadError {
    Closed,
    TooLong { target: bool },
    Malformed,
    Io,
}

fn connection(
    stream: TcpStream,
    handle: &(dyn Fn(&Request) -> Response + Send + Sync),
) -> io::Result<()> {
    stream.set_read_timeout(Some(IDLE))?;
    stream.set_write_timeout(Some(IDLE))?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::with_capacity(MAX_HEAD, stream);
    loop {
        let (req, keep_alive) = match read_head(&mut reader) {
            Ok(r) => r,
            Err(HeadError::Closed | HeadError::Io) => return Ok(()),
            Err(HeadError::TooLong { target }) => {
                let r = if target {
                    Response::error(
                        414,
                        "the request target is longer than 8 KiB; nothing Kairos serves needs that",
                    )
                } else {
                    Response::error(
                        431,
                        "the request head is larger than 16 KiB and was refused",
                    )
                };
                return write_response(&mut writer, &r, false, false);
            }
            Err(HeadError::Malformed) => {
                return write_response(
                    &mut writer,
                    &Response::error(400, "the request is not valid HTTP/1.1"),
                    false,
                    false,
                );
            }
        };
        let resp = if req.1 {
            Response::error(413, "Kairos view takes no request bodies; use GET")
        } else if req.0.method != "GET" && req.0.method != "HEAD" {
            let mut r = Response::error(405, "only GET is served");
            r.extra_headers.push(("Allow", "GET, HEAD".into()));
            r
        } else {
            handle(&req.0)
        };
        // A request that sent a body we did not read cannot be followed on this connection.
        let keep = keep_alive && !req.1;
        write_response(&mut writer, &resp, keep, req.0.method == "HEAD")?;
        if !keep {
            return Ok(());
        }
    }
}

/// Reads one request head, at most [`MAX_HEAD`] bytes. Returns the request, whether it
/// announced a body, and whether the connection may be kept.
fn read_head(reader: &mut BufReader<TcpStream>) -> Result<((Request, bool), bool), HeadError> {
    let mut head = Vec::with_capacity(1024);
    loop {
        let before = head.len();
        let n = reader
            .by_ref()
            .take((MAX_HEAD + 1 - head.len()) as u64)
            .read_until(b'\n', &mut head)
            .map_err(|_| HeadError::Io)?;
        if n == 0 {
            return Err(if head.is_empty() {
                HeadError::Closed
            } else {
                HeadError::Malformed
            });
        }
        // The request line is the first line: check it on its own for 414.
        if before == 0 && head.len() > MAX_TARGET + 64 {
            return Err(HeadError::TooLong { target: true });
        }
        if head.len() > MAX_HEAD {
            let first_line_done = head
                .iter()
                .position(|&b| b == b'\n')
                .is_some_and(|p| p + 1 < head.len());
            return Err(HeadError::TooLong {
                target: !first_line_done,
            });
        }
        if head.ends_with(b"\r\n\r\n") || head.ends_with(b"\n\n") || head == b"\r\n" {
            if head == b"\r\n" {
                // Tolerated blank line between requests (RFC 9112 2.2).
                head.clear();
                continue;
            }
            break;
        }
    }
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut parsed = httparse::Request::new(&mut headers);
    match parsed.parse(&head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) | Err(_) => return Err(HeadError::Malformed),
    }
    let method = parsed.method.ok_or(HeadError::Malformed)?.to_string();
    let target = parsed.path.ok_or(HeadError::Malformed)?.to_string();
    if target.len() > MAX_TARGET {
        return Err(HeadError::TooLong { target: true });
    }
    let version = parsed.version.unwrap_or(0);
    let mut host = None;
    let mut has_body = false;
    let mut keep_alive = version == 1;
    for h in parsed.headers.iter() {
        let value = String::from_utf8_lossy(h.value).trim().to_string();
        match h.name.to_ascii_lowercase().as_str() {
            "host" => host = Some(value),
            "content-length" => has_body |= value != "0",
            "transfer-encoding" => has_body = true,
            "connection" if value.eq_ignore_ascii_case("close") => keep_alive = false,
            "connection" if value.eq_ignore_ascii_case("keep-alive") => keep_alive = true,
            _ => {}
        }
    }
    Ok((
        (
            Request {
                method,
                target,
                host,
            },
            has_body,
        ),
        keep_alive,
    ))
}

fn write_response(
    w: &mut TcpStream,
    r: &Response,
    keep_alive: bool,
    head_only: bool,
) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\n\
         X-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n\
         Content-Security-Policy: default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:\r\n\
         Connection: {}\r\n",
        r.status,
        reason(r.status),
        r.content_type,
        r.body.len(),
        if keep_alive { "keep-alive" } else { "close" }
    );
    for (k, v) in &r.extra_headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    w.write_all(head.as_bytes())?;
    if !head_only {
        w.write_all(&r.body)?;
    }
    w.flush()
}

/// Binds 127.0.0.1:`port` (never another interface).
pub fn bind(port: u16) -> io::Result<(TcpListener, SocketAddr)> {
    let l = TcpListener::bind(("127.0.0.1", port))?;
    let addr = l.local_addr()?;
    Ok((l, addr))
}
