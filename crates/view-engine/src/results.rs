//! The results a `kairos view` serves: opened once at start, each either loaded (profile
//! indexed, counters read) or holding the sentence that says why not, so a damaged result
//! is shown on the page instead of stopping the server. Profiles derived by a
//! time-assignment method are computed once, on first use or ahead of it (the default
//! branch method, see [`Data::ahead_need`]), and kept. What an analysis's page module
//! reads of a result is kept with it too ([`Data::extension`]).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use kairos_model::Profile;
use kairos_result::ResultDir;
use kairos_time_assignment::{derive_over, Method, RecordTimes};

use crate::error::Error;
use crate::index::{Functions, Index};
use crate::query::Timed;
use crate::totals::Totals;

/// One `-r` directory.
pub struct Loaded {
    pub id: usize,
    pub name: String,
    pub path: PathBuf,
    pub data: Result<Data, String>,
}

/// A result that opened.
pub struct Data {
    pub dir: ResultDir,
    pub base: Arc<Index>,
    /// First sample time (absolute ns): the page's time 0.
    pub start_ns: u64,
    pub duration_ns: u64,
    /// Whether the span covers anything yet: samples, or times a page module widened it to.
    spanned: bool,
    pub methods: Vec<Method>,
    pub notes: Vec<String>,
    derived: Mutex<HashMap<Method, Slot>>,
    /// Derivations run so far (at most one per method).
    computed: AtomicUsize,
    /// What page modules read of the result, by type, each read once.
    extensions: Mutex<HashMap<TypeId, Extension>>,
}

/// One page module's data of a result, or why it could not be read.
type Extension = Arc<OnceLock<Result<Arc<dyn Any + Send + Sync>, String>>>;

/// A method's derived profile, or why it could not be made: computed once, and waited
/// for by every request that comes while it is being computed.
type Slot = Arc<OnceLock<Result<Arc<Derived>, String>>>;

/// Bytes deriving adds per branch record and per sample, measured at 10M samples with
/// 16-deep records (bench/README.md): about 16 and 72.
const AHEAD_BYTES_PER_RECORD: u64 = 16;
const AHEAD_BYTES_PER_SAMPLE: u64 = 72;

/// A profile as one method makes it.
pub struct Derived {
    pub index: Arc<Index>,
    /// Time (absolute ns) the method gives each branch record, u64::MAX for records
    /// that got no point (already in the previous snapshot). Empty for `none`.
    pub record_time: RecordTimes,
    pub points_per_sample: f64,
    pub notes: Vec<String>,
}

/// What opening a result involves besides reading it, from the site: the page modules'
/// reading at open, and the reports of a result kind (for the sentence of a result with no
/// samples to draw).
pub struct Opening {
    pub opened: Vec<fn(&mut Data)>,
    pub reports: fn(&str) -> String,
}

impl Timed for Data {
    fn span(&self) -> (u64, u64) {
        (self.start_ns, self.duration_ns)
    }
}

impl Loaded {
    /// Opens `path`; never fails: failure is kept as a sentence.
    pub fn open(id: usize, path: &Path, opening: &Opening) -> Loaded {
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        Loaded {
            id,
            name,
            path: abs,
            data: Data::open(path, opening),
        }
    }
}

impl Data {
    pub(crate) fn open(path: &Path, opening: &Opening) -> Result<Data, String> {
        let dir = ResultDir::open(path).map_err(|e| {
            format!("cannot open result {}: {e}; give a directory made by `kairos collect` or `kairos import`", path.display())
        })?;
        let mut notes: Vec<String> = dir.manifest().notes.clone();
        let damaged = |e: kairos_result::Error| {
            format!(
                "result {} is damaged: {e}; collect or import it again",
                path.display()
            )
        };
        // Straight into columns where the result allows it, else through the model.
        let (profile, columns) = match crate::load::read(&dir) {
            Some(read) => {
                let r = read.map_err(damaged)?;
                (r.profile, Some((r.samples, r.totals, r.blocks)))
            }
            None if dir.manifest().table("samples").is_some() => {
                // One event at a time, as reports: the default (the first with samples).
                let p = kairos_result::read_profile_of_event(&dir, None).map_err(damaged)?;
                (p, None)
            }
            None => {
                let kind = dir
                    .manifest()
                    .kind
                    .clone()
                    .unwrap_or_else(|| "unknown".into());
                let reports = (opening.reports)(&kind);
                notes.push(format!(
                    "this {kind} result has no samples to draw; its reports are {reports}: kairos report NAME -r {}",
                    path.display()
                ));
                (Profile::default(), None)
            }
        };
        let l = profile.losses;
        if l.lost_records + l.lost_samples + l.throttled > 0 {
            notes.push(format!(
                "the kernel lost {} records and {} samples and throttled {} times during recording",
                l.lost_records, l.lost_samples, l.throttled
            ));
        }
        let methods = if profile.branches.is_empty() {
            vec![Method::None]
        } else {
            let cycles = profile.branch_info.as_ref().is_some_and(|b| b.has_cycles);
            Method::ALL
                .into_iter()
                .filter(|&m| m != Method::Cycles || cycles)
                .collect()
        };
        let span = match &columns {
            Some((s, _, _)) => s.time.first().zip(s.time.last()).map(|(&a, &b)| (a, b)),
            None => profile.time_span(),
        };
        let (start_ns, duration_ns) = span.map_or((0, 0), |(a, b)| (a, b - a));
        let funcs = Arc::new(Functions::new(&profile));
        let base = Arc::new(match columns {
            Some((samples, totals, blocks)) => {
                let ix = Index::with_samples(profile, samples, totals, funcs);
                if let Some(b) = blocks {
                    ix.set_blocks(b);
                }
                ix
            }
            None => Index::new(profile, funcs),
        });
        Index::build_blocks_later(&base);
        Ok(Data {
            dir,
            base,
            start_ns,
            duration_ns,
            spanned: span.is_some(),
            methods,
            notes,
            derived: Mutex::new(HashMap::new()),
            computed: AtomicUsize::new(0),
            extensions: Mutex::new(HashMap::new()),
        })
        .map(|mut d| {
            for opened in &opening.opened {
                opened(&mut d);
            }
            d
        })
    }

    /// Makes the page's time axis cover `t` (absolute ns) too: an analysis's own events
    /// (kernel entries) may start before the first sample or end after the last.
    pub fn widen_span(&mut self, t: u64) {
        let (a, b) = if self.spanned {
            let end = self.start_ns + self.duration_ns;
            (self.start_ns.min(t), end.max(t))
        } else {
            (t, t)
        };
        self.spanned = true;
        self.start_ns = a;
        self.duration_ns = b - a;
    }

    /// A page module's data of this result, `read` on first use; later requests wait for
    /// the first read rather than repeat it. The type names the data.
    pub fn extension<T: Any + Send + Sync>(
        &self,
        read: impl FnOnce(&ResultDir) -> Result<T, String>,
    ) -> Result<Arc<T>, String> {
        let slot = self
            .extensions
            .lock()
            .map_err(|_| "an extension cache lock".to_string())?
            .entry(TypeId::of::<T>())
            .or_default()
            .clone();
        let got =
            slot.get_or_init(|| read(&self.dir).map(|t| Arc::new(t) as Arc<dyn Any + Send + Sync>));
        match got {
            Ok(any) => any
                .clone()
                .downcast::<T>()
                .map_err(|_| "an extension of another type".to_string()),
            Err(e) => Err(e.clone()),
        }
    }

    /// The profile as `method` makes it, computed once.
    pub fn derived(&self, method: Method) -> Result<Arc<Derived>, Error> {
        if !self.methods.contains(&method) {
            return Err(Error::BadParam(format!(
                "method {method} is not available for this result (it has {}); branch records are needed for any method but none",
                self.methods.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(", ")
            )));
        }
        let slot = self
            .derived
            .lock()
            .map_err(|_| Error::Internal("a method cache lock".into()))?
            .entry(method)
            .or_default()
            .clone();
        // Computed outside the lock, so other methods and requests go on meanwhile; a
        // request for the same method waits for the one computation (seconds and
        // gigabytes at scale) rather than make a second.
        slot.get_or_init(|| {
            self.computed.fetch_add(1, Ordering::Relaxed);
            self.compute(method).map(Arc::new).map_err(|e| match e {
                Error::Internal(m) => m,
                e => e.to_string(),
            })
        })
        .clone()
        .map_err(Error::Internal)
    }

    /// What deriving the default branch method's profile is estimated to add to memory,
    /// in bytes; None for a result without branch records (its only method is `none`).
    /// The server derives it ahead when the results' estimates together are at most half
    /// of the memory available (see `derive_ahead` in lib.rs): the page's method switch,
    /// and the record times its sample inspector shows by default, then find it made.
    pub fn ahead_need(&self) -> Option<u64> {
        self.methods.contains(&Method::DEFAULT).then(|| {
            AHEAD_BYTES_PER_RECORD
                .saturating_mul(self.base.profile.branches.len() as u64)
                .saturating_add(
                    AHEAD_BYTES_PER_SAMPLE.saturating_mul(self.base.samples.len() as u64),
                )
        })
    }

    /// How many derivations have run (each method at most once).
    pub fn derivations(&self) -> usize {
        self.computed.load(Ordering::Relaxed)
    }

    fn compute(&self, method: Method) -> Result<Derived, Error> {
        if method == Method::None {
            return Ok(Derived {
                index: self.base.clone(),
                record_time: RecordTimes::default(),
                points_per_sample: 1.0,
                notes: Vec::new(),
            });
        }
        // One pass from the method to the derived profile (no list of points, no sort),
        // reading the index's sample columns as they are: the profile's branch records
        // (hundreds of millions at scale) and its samples are not copied.
        let d = derive_over(&self.base.profile, &self.base.samples, method)
            .map_err(|e| Error::Internal(format!("time assignment {method} failed: {e}")))?;
        // The derived points already are columns: indexed as they are.
        let totals = Totals::of(&d.samples, d.profile.threads.len(), d.profile.stacks.len());
        let index = Arc::new(Index::derived(
            d.profile,
            d.samples,
            totals,
            self.base.funcs.clone(),
        ));
        Index::build_blocks_later(&index);
        Ok(Derived {
            index,
            record_time: d.record_time,
            points_per_sample: d.points_per_sample,
            notes: d.notes,
        })
    }
}

/// MemAvailable of /proc/meminfo in bytes; None when it cannot be read.
pub(crate) fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    kairos_platform::parse::meminfo_field(&text, "MemAvailable")?.checked_mul(1024)
}
