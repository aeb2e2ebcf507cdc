//! `kairos import`: the session sets the result up, the one converter converts the
//! recording, and the analyses that declare a claim are asked, in the registry's order
//! with the sampled profile (which claims everything) last, whose recording it is.

use kairos_analysis_api::{ClaimFn, Claimed, Failure};
use kairos_session::{self as session, ImportRequest};

use crate::ANALYSES;

/// Imports `req.file` into a new result and prints its summary.
pub fn import(req: &ImportRequest) -> Result<(), Failure> {
    let sampled = crate::sampled_profile();
    let mut imported = session::start_import(req, sampled.name, sampled.result_suffix)?;
    let claims: Vec<ClaimFn> = ANALYSES[1..]
        .iter()
        .chain(&ANALYSES[..1])
        .filter_map(|a| a.claims_import)
        .collect();
    // Asked beside the writing of the tables, on the profile they hold.
    let mut claimed: Option<Box<dyn Claimed>> = None;
    let mut c = session::convert_result_full(
        &mut imported.dir,
        &imported.options,
        &imported.background,
        req.quiet,
        &mut |p, acc| claimed = claims.iter().find_map(|claim| claim(p, acc)),
    )?;
    if let Some(claim) = claimed {
        claim.finish(&mut imported.dir, &mut c, &imported.header)?;
    }
    // The process ends next: freeing a large profile object by object would only cost time.
    std::mem::forget(c);
    Ok(())
}
