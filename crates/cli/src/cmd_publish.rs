//! `kairos publish -r DIR... --root ROOT`: results copied into the fleet layout
//! (`TABLE/host=H/date=D/result=R/TABLE.parquet`) that query engines partition on, in a
//! local folder or an S3-compatible bucket (`s3://BUCKET/PREFIX`); the layout is
//! `kairos_result::fleet`'s, the transport kairos-fleet's, this says their errors in one
//! sentence each.

use std::path::PathBuf;

use clap::Args;
use kairos_fleet::{FleetError, Root, S3_SETTINGS};

use crate::error::{CliResult, UserError};

#[derive(Debug, Args)]
pub struct PublishArgs {
    /// Result directories to publish; repeatable.
    #[arg(short = 'r', long = "result-dir", required = true)]
    pub result_dirs: Vec<PathBuf>,
    /// The root of the fleet layout: a local folder (created when missing) or
    /// s3://BUCKET/PREFIX (credentials and endpoint from the AWS_* variables).
    #[arg(long)]
    pub root: String,
}

pub fn run(args: PublishArgs) -> CliResult {
    let root = Root::parse(&args.root).map_err(|e| UserError::usage(e.to_string()))?;
    for r in &args.result_dirs {
        let dir = kairos_session::open_result(r)?;
        let p = kairos_fleet::publish(&dir, &root).map_err(|e| match e {
            FleetError::AlreadyPublished { place, .. } => UserError::failed(format!(
                "{} is already published ({place}); results are never overwritten",
                r.display(),
            )),
            FleetError::Store { .. } => UserError::failed(format!(
                "cannot publish {}: {e}; {S3_SETTINGS}",
                r.display(),
            )),
            other => UserError::failed(format!(
                "cannot publish {}: {other}; check that {} is writable and has space",
                r.display(),
                root.describe()
            )),
        })?;
        println!(
            "{} -> {}: host={} date={} result={} ({} tables)",
            r.display(),
            root.describe(),
            p.host,
            p.date,
            p.result,
            p.tables.len()
        );
    }
    Ok(())
}
