//! The server: binds 127.0.0.1, opens the results, derives the default branch method's
//! profiles ahead where memory allows, and answers: the token and Host checks, the page's
//! files, and the API.

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;

use crate::error::Error;
use crate::results::{self, Loaded};
use crate::site::{Site, State};
use crate::{api, http, query, token};

/// The port tried first when none is given, so a bookmark usually keeps working.
pub const DEFAULT_PORT: u16 = 7680;

/// A bound, loaded server, ready to run.
pub struct Server {
    listener: TcpListener,
    addr: SocketAddr,
    state: Arc<State>,
    /// Said on the terminal: e.g. that the default port was busy.
    pub notes: Vec<String>,
}

impl Server {
    /// Binds 127.0.0.1 (`port`: exactly that one, 0 = any free; None = [`DEFAULT_PORT`]
    /// or any free one), then opens every result, calling `loading` before each.
    pub fn start(
        site: Site,
        dirs: &[PathBuf],
        port: Option<u16>,
        mut loading: impl FnMut(&std::path::Path),
    ) -> Result<Server, Error> {
        let mut notes = Vec::new();
        let (listener, addr) = match port {
            Some(p) => http::bind(p).map_err(|e| bind_error(p, e))?,
            None => match http::bind(DEFAULT_PORT) {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                    let b = http::bind(0).map_err(|e| bind_error(0, e))?;
                    notes.push(format!(
                        "port {DEFAULT_PORT} is in use, so port {} was taken",
                        b.1.port()
                    ));
                    b
                }
                Err(e) => return Err(bind_error(DEFAULT_PORT, e)),
            },
        };
        let token = token::new().map_err(Error::Token)?;
        let opening = site.opening();
        let results = dirs
            .iter()
            .enumerate()
            .map(|(i, d)| {
                loading(d);
                Loaded::open(i, d, &opening)
            })
            .collect();
        let host_names = [
            format!("127.0.0.1:{}", addr.port()),
            format!("localhost:{}", addr.port()),
        ];
        let state = Arc::new(State {
            results,
            site,
            token,
            host_names,
        });
        notes.extend(derive_ahead(&state));
        Ok(Server {
            listener,
            addr,
            state,
            notes,
        })
    }

    /// The page's address, token included.
    pub fn url(&self) -> String {
        format!("http://{}/{}/", self.addr, self.state.token)
    }

    pub fn results(&self) -> &[Loaded] {
        &self.state.results
    }

    /// Serves until the process ends.
    pub fn run(self) {
        let state = self.state;
        http::serve(
            self.listener,
            Arc::new(move |req: &http::Request| route(&state, req)),
        );
    }
}

/// Starts deriving the default branch method's profile of the results with branch
/// records, in order, while their estimated needs together stay within half of the
/// available memory (see [`results::Data::ahead_need`]), each on a background thread of
/// the lowest priority, so that the page's first answers are not slowed and its method
/// switch finds the profile ready, or being made. Returns what to say on the terminal.
fn derive_ahead(state: &Arc<State>) -> Vec<String> {
    let method = kairos_time_assignment::Method::DEFAULT;
    let needs: Vec<Option<u64>> = state
        .results
        .iter()
        .map(|r| r.data.as_ref().ok().and_then(|d| d.ahead_need()))
        .collect();
    let plan = ahead_plan(&needs, results::available_memory().unwrap_or(0));
    let mut said = Vec::new();
    for (i, (r, ahead)) in state.results.iter().zip(plan).enumerate() {
        match (ahead, needs[i]) {
            (false, Some(need)) => said.push(format!(
                "{}: the {method} method's profile is derived when the page first asks for it (about {} MiB: more than is left of half the available memory)",
                r.name,
                need >> 20
            )),
            (false, None) => {}
            (true, _) => {
                let s = state.clone();
                let started = std::thread::Builder::new()
                    .name("view-derive-ahead".into())
                    .spawn(move || {
                        lowest_priority();
                        if let Some(Ok(d)) = s.results.get(i).map(|r| &r.data) {
                            // A failure is kept in the method's slot and said when the
                            // page asks.
                            let _ = d.derived(method);
                        }
                    });
                if started.is_ok() {
                    said.push(format!(
                        "{}: deriving the {method} method's profile in the background, for the page's method switch",
                        r.name
                    ));
                }
            }
        }
    }
    said
}

/// Which results to derive ahead: in order, those with a need while the needs taken stay
/// within half of `available` bytes.
pub(crate) fn ahead_plan(needs: &[Option<u64>], available: u64) -> Vec<bool> {
    let mut budget = available / 2;
    needs
        .iter()
        .map(|n| match n {
            Some(n) if *n <= budget => {
                budget -= n;
                true
            }
            _ => false,
        })
        .collect()
}

/// Gives the calling thread the lowest scheduling priority (nice 19); on Linux a
/// thread's nice value is its own. Failure only leaves the priority as it was.
fn lowest_priority() {
    // SAFETY: gettid takes no arguments; setpriority only reads its arguments, and
    // PRIO_PROCESS with a thread id changes that thread alone.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS as _, tid, 19);
    }
}

fn bind_error(port: u16, e: std::io::Error) -> Error {
    if e.kind() == std::io::ErrorKind::AddrInUse {
        Error::PortInUse { port }
    } else {
        Error::Bind { port, source: e }
    }
}

fn not_found() -> http::Response {
    http::Response::new(404, "text/plain; charset=utf-8", "not found\n")
}

fn route(state: &State, req: &http::Request) -> http::Response {
    // A page elsewhere could make the browser talk to us under another host name (DNS
    // rebinding); only the names we printed are answered.
    if !req
        .host
        .as_deref()
        .is_some_and(|h| state.host_names.iter().any(|n| n == h))
    {
        return http::Response::error(
            403,
            "requests must address 127.0.0.1 or localhost with this server's port",
        );
    }
    let (path, query) = req.target.split_once('?').unwrap_or((&req.target, ""));
    let Some(rest) = path.strip_prefix('/') else {
        return not_found();
    };
    let (first, rest) = rest
        .split_once('/')
        .map_or((rest, None), |(a, b)| (a, Some(b)));
    if !token::matches(first, &state.token) {
        return not_found();
    }
    match rest {
        None => {
            let mut r = http::Response::new(301, "text/plain; charset=utf-8", "");
            r.extra_headers
                .push(("Location", format!("/{}/", state.token)));
            r
        }
        Some("") | Some("index.html") => http::Response::new(
            200,
            "text/html; charset=utf-8",
            state.site.assets.index_html,
        ),
        Some("app.js") => http::Response::new(
            200,
            "text/javascript; charset=utf-8",
            state.site.assets.app_js,
        ),
        Some("style.css") => {
            http::Response::new(200, "text/css; charset=utf-8", state.site.assets.style_css)
        }
        Some(other) => match other.strip_prefix("api/") {
            Some(name) if !name.contains('/') => api_response(state, name, query),
            _ => not_found(),
        },
    }
}

fn api_response(state: &State, name: &str, query: &str) -> http::Response {
    let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let q = query::Query::parse(query)?;
        api::handle(state, name, &q)
    }));
    match answer {
        Ok(Ok(v)) => http::Response::new(200, "application/json", v.to_string()),
        Ok(Err(e)) => http::Response::error(e.status(), &e.to_string()),
        Err(_) => http::Response::error(
            500,
            "the server failed on this request (a bug); the terminal shows where",
        ),
    }
}
