//! `kairos publish -r DIR... --root ROOT`: results copied into the fleet layout
//! (`TABLE/host=H/date=D/result=R/TABLE.parquet`) that query engines partition on; the
//! layout is `kairos_result::fleet`'s, this turns its errors into one sentence each.

use std::path::PathBuf;

use clap::Args;

use crate::error::{CliResult, UserError};

#[derive(Debug, Args)]
pub struct PublishArgs {
    /// Result directories to publish; repeatable.
    #[arg(short = 'r', long = "result-dir", required = true)]
    pub result_dirs: Vec<PathBuf>,
    /// The root of the fleet layout (created when missing).
    #[arg(long)]
    pub root: PathBuf,
}

pub fn run(args: PublishArgs) -> CliResult {
    for r in &args.result_dirs {
        let dir = kairos_session::open_result(r)?;
        let p = kairos_result::fleet::publish(&dir, &args.root).map_err(|e| match e {
            kairos_result::Error::AlreadyExists { path } => UserError::failed(format!(
                "{} is already published ({}); results are never overwritten",
                r.display(),
                path.display()
            )),
            other => UserError::failed(format!(
                "cannot publish {}: {other}; check that {} is writable and has space",
                r.display(),
                args.root.display()
            )),
        })?;
        println!(
            "{} -> {}: host={} date={} result={} ({} tables)",
            r.display(),
            args.root.display(),
            p.host,
            p.date,
            p.result,
            p.tables.len()
        );
    }
    Ok(())
}
