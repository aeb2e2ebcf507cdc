//! The derived profiles a result keeps: one computation per method however many ask at
//! once, and the default branch method's started ahead when the server starts.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kairos_model::{BranchKind, BranchRecord, Profile};
use kairos_time_assignment::Method;

use crate::fast_path_tests::profile;
use crate::results::{Data, Derived};

fn write(dir: &Path, name: &str, p: &Profile) -> PathBuf {
    let path = dir.join(name);
    let mut rd = kairos_result::ResultDir::create(&path).expect("create");
    *rd.manifest_mut() = kairos_result::Manifest::new("hotspots");
    kairos_result::write_profile(&mut rd, p).expect("write");
    path
}

/// `n` samples (thread indices within the table, as a result needs), each with four new
/// branch records when `branches`.
fn sampled(n: usize, branches: bool) -> Profile {
    let mut p = profile(n, 5);
    p.samples.iter_mut().for_each(|s| s.thread %= 5);
    if branches {
        p.branches = (0..n as u32)
            .flat_map(|k| {
                (0..4u32).map(move |pos| BranchRecord {
                    sample: k,
                    position: pos as u16,
                    from_address: 100 + u64::from(pos),
                    to_address: 200 + u64::from(pos),
                    from_frame: Some((k + pos) % 12),
                    to_frame: Some((k + pos + 1) % 12),
                    kind: BranchKind::Call,
                    cycles: None,
                    mispredicted: false,
                    is_new: true,
                })
            })
            .collect();
    }
    p
}

#[test]
fn a_method_is_derived_once_however_many_ask_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = Data::open(
        &write(dir.path(), "b", &sampled(20_000, true)),
        &crate::site::bare().opening(),
    )
    .expect("opens");
    assert!(d.methods.contains(&Method::DEFAULT), "{:?}", d.methods);
    let got: Vec<Arc<Derived>> = std::thread::scope(|s| {
        let asks: Vec<_> = (0..4)
            .map(|_| s.spawn(|| d.derived(Method::DEFAULT).expect("derives")))
            .collect();
        asks.into_iter().map(|a| a.join().expect("joins")).collect()
    });
    assert!(got.windows(2).all(|w| Arc::ptr_eq(&w[0], &w[1])));
    assert_eq!(d.derivations(), 1);
    d.derived(Method::Equal).expect("derives");
    d.derived(Method::DEFAULT).expect("kept");
    assert_eq!(d.derivations(), 2);
}

#[test]
fn only_a_result_with_branch_records_is_derived_ahead() {
    let dir = tempfile::tempdir().expect("tempdir");
    let plain = write(dir.path(), "plain", &sampled(2_000, false));
    let branches = write(dir.path(), "branches", &sampled(2_000, true));
    assert_eq!(
        Data::open(&plain, &crate::site::bare().opening())
            .expect("opens")
            .ahead_need(),
        None
    );
    // 8,000 records and 2,000 samples.
    let need = Data::open(&branches, &crate::site::bare().opening())
        .expect("opens")
        .ahead_need();
    assert_eq!(need, Some(8_000 * 16 + 2_000 * 72));

    let server = crate::Server::start(crate::site::bare(), &[plain, branches], Some(0), |_| {})
        .expect("starts");
    let said: Vec<&String> = server
        .notes
        .iter()
        .filter(|n| n.contains("in the background"))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", server.notes);
    assert!(
        said[0].starts_with("branches: deriving the covered method"),
        "{said:?}"
    );
    let data = |i: usize| server.results()[i].data.as_ref().expect("loaded");
    // The derivation runs on its own; wait for it (no request is made).
    let until = Instant::now() + Duration::from_secs(120);
    while data(1).derivations() == 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(data(1).derivations(), 1);
    assert_eq!(data(0).derivations(), 0);
    // The page's request finds it made.
    data(1).derived(Method::DEFAULT).expect("derived");
    assert_eq!(data(1).derivations(), 1);
}

#[test]
fn results_are_derived_ahead_while_their_needs_fit_in_half_the_memory() {
    use crate::server::ahead_plan;
    assert_eq!(ahead_plan(&[], 100), Vec::<bool>::new());
    // Half of 100 is 50: 30 fits, 30 more does not, 20 still does; none never.
    assert_eq!(
        ahead_plan(&[Some(30), None, Some(30), Some(20)], 100),
        [true, false, false, true]
    );
    assert_eq!(ahead_plan(&[Some(1)], 0), [false]);
    assert_eq!(ahead_plan(&[Some(0)], 0), [true]);
}
