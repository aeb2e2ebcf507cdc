//! `kairos info`: what this machine can measure, and why not where it cannot.

use crate::args::InfoArgs;
use crate::error::{CliResult, UserError};

pub fn run(args: InfoArgs) -> CliResult {
    let caps = kairos_platform::detect();
    match args.format.as_str() {
        "text" => print!("{}", caps.render_text()),
        "json" => println!("{}", caps.to_json()),
        other => return Err(UserError::usage(format!("unknown format '{other}' for info; use text or json"))),
    }
    Ok(())
}
