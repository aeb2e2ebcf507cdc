//! `kairos compare DIR_A DIR_B`: the figures two results share, A against B, with the
//! difference in words ("page faults: 96.3x fewer"). The logic is in crates/compare.

use std::path::PathBuf;
use std::str::FromStr;

use clap::Args;
use kairos_report::{Document, Format};
use kairos_result::ResultDir;

use crate::error::{CliResult, UserError};

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The result before (A).
    pub a: PathBuf,
    /// The result after (B).
    pub b: PathBuf,
    /// text, csv or json.
    #[arg(long, default_value = "text")]
    pub format: String,
}

fn open(p: &std::path::Path) -> CliResult<ResultDir> {
    ResultDir::open(p).map_err(|e| {
        UserError::failed(format!("cannot open result {}: {e}; give directories made by `kairos collect` or `kairos run -r`", p.display()))
    })
}

pub fn run(args: CompareArgs) -> CliResult {
    let format = Format::from_str(&args.format).map_err(|e| UserError::usage(format!("{e}")))?;
    let (da, db) = (open(&args.a)?, open(&args.b)?);
    let ((fa, mut notes), (fb, nb)) = (
        kairos_compare::Facts::read(&da),
        kairos_compare::Facts::read(&db),
    );
    notes.extend(nb);
    let mut t = kairos_compare::compare(&fa, &fb);
    for n in notes {
        t.push_note(n);
    }
    if format != Format::Text {
        print!("{}", t.render(format));
        return Ok(());
    }
    let mut d = Document::new(format!(
        "Comparison: A = {} ({}), B = {} ({})",
        args.a.display(),
        fa.kind,
        args.b.display(),
        fb.kind
    ));
    d.push_table(t);
    print!("{}", d.to_text());
    println!("\nIn short:");
    let width = kairos_report::text_layout().width;
    for s in kairos_compare::sentences(&fa, &fb) {
        print!("{}", kairos_report::wrap(&s, width, "  ", "    "));
    }
    Ok(())
}
