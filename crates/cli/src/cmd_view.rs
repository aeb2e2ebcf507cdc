//! `kairos view -r DIR [-r DIR2] [--port P] [--no-browser]`: the result page in a browser
//! (crate kairos-view). Results that cannot be opened are said here and on the page; the
//! server still starts, so the page can say it too.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use crate::error::{CliResult, UserError};

#[derive(Debug, Args)]
pub struct ViewArgs {
    /// Result directory; give -r twice to compare two results.
    #[arg(short = 'r', long = "result-dir", required = true)]
    pub result_dirs: Vec<PathBuf>,
    /// Port on 127.0.0.1 (0: any free port). Default: 7680, or a free one if that is taken.
    #[arg(long)]
    pub port: Option<u16>,
    /// Only print the address; do not open a browser.
    #[arg(long = "no-browser")]
    pub no_browser: bool,
}

pub fn run(a: ViewArgs) -> CliResult {
    if a.result_dirs.len() > 8 {
        return Err(UserError::usage(
            "kairos view takes at most 8 result directories",
        ));
    }
    let bar = kairos_session::spinner(false, "loading");
    let server = kairos_view::start(&a.result_dirs, a.port, |d| {
        bar.set_message(format!("loading {}", d.display()))
    })
    .map_err(|e| UserError::failed(e.to_string()))?;
    bar.finish_and_clear();
    for l in server.results() {
        if let Err(e) = &l.data {
            eprintln!("kairos: {e}");
        }
    }
    for n in &server.notes {
        eprintln!("kairos: {n}");
    }
    let url = server.url();
    println!("Kairos view: {url}");
    let _ = std::io::stdout().flush();
    if !a.no_browser {
        open_browser(&url);
    }
    eprintln!("Serving on 127.0.0.1 only; press Ctrl-C to stop.");
    server.run();
    Ok(())
}

/// Opens the page where there is a display; otherwise says how to reach it.
fn open_browser(url: &str) {
    let display =
        std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some();
    let opened = display
        && std::process::Command::new("xdg-open")
            .arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .is_ok();
    if !opened {
        eprintln!(
            "kairos: no browser here; open the address above (from another machine: ssh -L PORT:127.0.0.1:PORT this-host, \
             then the same address)"
        );
    }
}
