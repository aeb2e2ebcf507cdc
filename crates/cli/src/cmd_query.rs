//! `kairos query 'SQL' (-r DIR... | --root ROOT)`: SQL over many results' tables with the
//! fleet crate's engine, printed as text, CSV or JSON like every report; `--views` lists
//! the views for the common questions and whether these results allow each.

use std::path::PathBuf;
use std::str::FromStr;

use clap::Args;
use kairos_fleet::{Fleet, FleetError, Root, S3_SETTINGS};
use kairos_report::{Cell, Column, Format, Table};

use crate::error::{CliResult, UserError};

#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The SQL (DataFusion's dialect), or the name of a table or view to show whole.
    pub sql: Option<String>,
    /// Result directories to query together; repeatable.
    #[arg(short = 'r', long = "result-dir", conflicts_with = "root")]
    pub result_dirs: Vec<PathBuf>,
    /// A fleet root made by `kairos publish`: a local folder or s3://BUCKET/PREFIX.
    #[arg(long)]
    pub root: Option<String>,
    /// text, csv or json.
    #[arg(short = 'f', long, default_value = "text")]
    pub format: String,
    /// List the tables and views instead of querying.
    #[arg(long)]
    pub views: bool,
}

pub fn run(args: QueryArgs) -> CliResult {
    let format = Format::from_str(&args.format)
        .map_err(|e| UserError::usage(format!("{e}; the formats are text, csv and json")))?;
    let fleet = open(&args)?;
    let table = match (&args.sql, args.views) {
        (_, true) => catalogue(&fleet),
        (Some(sql), false) => kairos_fleet::table(&fleet.query(sql).map_err(failed(&fleet))?),
        (None, false) => {
            return Err(UserError::usage(
                "give the SQL to run, a table or view name, or --views to list them",
            ))
        }
    };
    print!("{}", table.render(format));
    Ok(())
}

fn open(args: &QueryArgs) -> Result<Fleet, UserError> {
    if let Some(root) = &args.root {
        let root = Root::parse(root).map_err(|e| UserError::usage(e.to_string()))?;
        return Fleet::open_root(&root).map_err(|e| opening(&root.describe(), e));
    }
    if args.result_dirs.is_empty() {
        return Err(UserError::usage(
            "say what to query: -r DIR (repeatable) or --root ROOT (a folder or s3://BUCKET/PREFIX of `kairos publish`)",
        ));
    }
    let dirs = args
        .result_dirs
        .iter()
        .map(|r| kairos_session::open_result(r))
        .collect::<Result<Vec<_>, _>>()?;
    Fleet::open_results(&dirs).map_err(|e| opening("the results", e))
}

fn opening(what: &str, e: FleetError) -> UserError {
    let fix = match &e {
        FleetError::Store { .. } => format!("; {S3_SETTINGS}"),
        FleetError::Empty { .. } => {
            "; publish results there first with `kairos publish -r DIR --root ROOT`".into()
        }
        FleetError::Query(_) => {
            "; the tables of these results do not agree (results of different Kairos versions?)"
                .into()
        }
        _ => String::new(),
    };
    UserError::failed(format!("cannot query {what}: {e}{fix}"))
}

fn failed(fleet: &Fleet) -> impl Fn(FleetError) -> UserError + '_ {
    move |e| {
        let tables = fleet.tables().join(", ");
        UserError::failed(format!(
            "the query failed: {e}; the tables here are {tables} (`kairos query --views` lists the views)"
        ))
    }
}

/// The tables and views, one row each.
fn catalogue(fleet: &Fleet) -> Table {
    let mut t = Table::new(vec![
        Column::left("Name"),
        Column::left("Kind"),
        Column::sentence("What"),
    ])
    .with_title(format!("Tables and views of {}", fleet.describe()));
    for name in fleet.tables() {
        t.push_row(vec![
            Cell::text(name),
            Cell::text("table"),
            Cell::text("partitioned by host, date, result (docs/SCHEMA.md)"),
        ]);
    }
    for v in fleet.views() {
        let what = match &v.missing {
            None => v.view.about.clone(),
            Some(table) => format!(
                "{} Not here: no result has the table {table}.",
                v.view.about
            ),
        };
        t.push_row(vec![
            Cell::text(&v.view.name),
            Cell::text("view"),
            Cell::text(what),
        ]);
    }
    t
}
