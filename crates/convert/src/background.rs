//! Symbolisation on other threads while records are still being decoded.
//!
//! Symbolising (ELF symbol tables, DWARF, demangling, kallsyms) costs about as much as
//! decoding a large recording, and it only needs each new address once. So the decoding
//! thread sends the frames it creates in batches to a second thread, which symbolises
//! them as they come; a third copies /proc/kallsyms when asked (the kernel takes tens of
//! milliseconds to print it), reads and indexes the kernel's symbols meanwhile, and
//! symbolises the kernel frames at the end. The result is the same as symbolising
//! everything at the end on one thread: each module's addresses go to its symboliser in
//! frame order, and the notes are reported by module, in module order.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender};

use kairos_model::ModuleIdx;
use kairos_symbolize::{ModuleKey, SymFrame, Symbolizer, SymbolizerOptions};

/// Work for the symbolising threads besides symbolising.
#[derive(Debug, Clone, Default)]
pub struct Background {
    /// Copy /proc/kallsyms into this directory (as `kallsyms`) first, and read kernel
    /// symbols from the copy; when the copy cannot be made, kernel symbols come from
    /// `SymbolizerOptions::kallsyms` as given.
    pub kallsyms_snapshot: Option<PathBuf>,
    /// Symbolise on this thread, which outlives the conversion, instead of new ones.
    pub lasting: Option<LastingSymbolizer>,
}

/// Modules a lasting symboliser holds at most between conversions.
pub const LASTING_MODULES: usize = 512;

/// One conversion's frames for a lasting symboliser, and where its symbols go.
type LastingJob = (Receiver<Batch>, Sender<Symbols>);

/// A symbolising thread that outlives conversions and keeps what it has read (each
/// binary's debug information and symbol table, the kernel's symbols), for a caller
/// that converts recording after recording of one machine: the agent's windows would
/// otherwise read and decompress the same debug files every time. Between two
/// conversions it forgets only what may have changed ([`Symbolizer::forget_changeable`]),
/// and everything once it holds more than [`LASTING_MODULES`] modules (a machine that runs
/// ever new binaries would otherwise grow it without end). Its options (`kallsyms` among
/// them) are those it was started with. The thread ends when the last handle is dropped.
#[derive(Clone)]
pub struct LastingSymbolizer {
    jobs: Sender<LastingJob>,
}

impl std::fmt::Debug for LastingSymbolizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LastingSymbolizer")
    }
}

impl LastingSymbolizer {
    pub fn start(opts: SymbolizerOptions) -> std::io::Result<LastingSymbolizer> {
        let (jobs, inbox) = std::sync::mpsc::channel::<LastingJob>();
        std::thread::Builder::new()
            .name("kairos-symbolize".into())
            .spawn(move || {
                let mut symbolizer = Symbolizer::new(opts.clone());
                for (batches, reply) in inbox {
                    let mut w = Worker::with(symbolizer, Part::All);
                    for batch in batches {
                        w.add(batch);
                    }
                    let symbols;
                    (symbols, symbolizer) = w.finish_keeping();
                    symbolizer.forget_changeable();
                    if symbolizer.modules_held() > LASTING_MODULES {
                        symbolizer = Symbolizer::new(opts.clone());
                    }
                    // The conversion may have given up waiting; nothing to do then.
                    let _ = reply.send(symbols);
                }
            })?;
        Ok(LastingSymbolizer { jobs })
    }

    /// Hands the thread one conversion's batches; the symbols come back on the receiver
    /// once the batches' sender hangs up. None when the thread is gone.
    pub(crate) fn submit(&self, batches: Receiver<Batch>) -> Option<Receiver<Symbols>> {
        let (reply, symbols) = std::sync::mpsc::channel();
        self.jobs.send((batches, reply)).ok()?;
        Some(symbols)
    }
}

/// Frames made since the previous batch.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    /// Keys of the modules made since the previous batch, in module order.
    pub keys: Vec<ModuleKey>,
    /// (raw frame id, module, address to look up), in frame order.
    pub frames: Vec<(u32, ModuleIdx, u64)>,
}

/// Symbols of every raw frame with a module (empty for the others), and the
/// symboliser's notes by module.
#[derive(Debug, Default)]
pub(crate) struct Symbols {
    pub frames: Vec<Vec<SymFrame>>,
    pub notes: Vec<Vec<String>>,
}

impl Symbols {
    /// Adds what another symboliser did for other modules.
    pub(crate) fn merge(&mut self, other: Symbols) {
        for (i, syms) in other
            .frames
            .into_iter()
            .enumerate()
            .filter(|(_, s)| !s.is_empty())
        {
            if self.frames.len() <= i {
                self.frames.resize(i + 1, Vec::new());
            }
            self.frames[i] = syms;
        }
        for (m, notes) in other.notes.into_iter().enumerate() {
            if self.notes.len() <= m {
                self.notes.resize(m + 1, Vec::new());
            }
            self.notes[m].extend(notes);
        }
    }

    /// The notes in module order, as one symboliser going through the modules in order
    /// would have made them.
    pub(crate) fn notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
            .into_iter()
            .flatten()
            .collect()
    }
}

/// Which modules a symboliser takes: the kernel on the kernel-symbols thread, everything
/// else on the second thread (all of them on the decoding thread if a thread failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    All,
    Kernel,
    NotKernel,
}

impl Part {
    fn takes(self, key: &ModuleKey) -> bool {
        match self {
            Part::All => true,
            Part::Kernel => *key == ModuleKey::Kernel,
            Part::NotKernel => *key != ModuleKey::Kernel,
        }
    }
}

/// Copies /proc/kallsyms into `dir` when its addresses are visible, so kernel frames stay
/// symbolisable later. Returns the copy's path, or why there is none.
pub fn snapshot_kallsyms(dir: &Path) -> Result<PathBuf, String> {
    let text = std::fs::read_to_string("/proc/kallsyms")
        .map_err(|e| format!("/proc/kallsyms is not readable ({e})"))?;
    let hidden = text
        .lines()
        .take(100)
        .all(|l| l.starts_with("0000000000000000"));
    if hidden {
        return Err("kernel addresses are hidden (kernel.kptr_restrict); run as root or set kernel.kptr_restrict=0".into());
    }
    let dest = dir.join("kallsyms");
    std::fs::write(&dest, text).map_err(|e| format!("cannot write {}: {e}", dest.display()))?;
    Ok(dest)
}

/// The kernel-symbols thread's body: copies /proc/kallsyms when asked, reads and indexes
/// the kernel's symbols while records are decoded (when `preload`: kernel frames are
/// symbolised), then symbolises the kernel frames of the one batch it gets.
pub(crate) fn kernel(
    mut opts: SymbolizerOptions,
    snapshot: Option<&Path>,
    preload: bool,
    batch: Receiver<Batch>,
) -> Symbols {
    if let Some(copy) = snapshot.and_then(|dir| snapshot_kallsyms(dir).ok()) {
        opts.kallsyms = Some(copy);
    }
    let mut w = Worker::new(opts, Part::Kernel);
    // Notes of the preload belong to the kernel module, once there is one.
    let early = if preload {
        let _ = w.symbolizer.symbolize(&ModuleKey::Kernel, &[]);
        w.notes_seen = w.symbolizer.notes().len();
        w.symbolizer.notes()
    } else {
        Vec::new()
    };
    if let Ok(batch) = batch.recv() {
        if let Some(m) = batch
            .keys
            .iter()
            .position(|k| *k == ModuleKey::Kernel)
            .filter(|_| !early.is_empty())
        {
            w.notes.resize(w.notes.len().max(m + 1), Vec::new());
            w.notes[m].extend(early);
        }
        w.add(batch);
    }
    w.finish()
}

/// The symbolising thread's body: batches until the sender hangs up.
pub(crate) fn run(opts: SymbolizerOptions, part: Part, batches: Receiver<Batch>) -> Symbols {
    let mut w = Worker::new(opts, part);
    for batch in batches {
        w.add(batch);
    }
    w.finish()
}

pub(crate) struct Worker {
    part: Part,
    symbolizer: Symbolizer,
    keys: Vec<ModuleKey>,
    out: Vec<Vec<SymFrame>>,
    /// Notes by the module whose symbolisation produced them.
    notes: Vec<Vec<String>>,
    notes_seen: usize,
}

impl Worker {
    pub(crate) fn new(opts: SymbolizerOptions, part: Part) -> Self {
        Worker::with(Symbolizer::new(opts), part)
    }

    /// A worker on a symboliser that may have worked before (its old notes are not this
    /// worker's).
    fn with(symbolizer: Symbolizer, part: Part) -> Self {
        Worker {
            part,
            notes_seen: symbolizer.notes().len(),
            symbolizer,
            keys: Vec::new(),
            out: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub(crate) fn add(&mut self, batch: Batch) {
        self.keys.extend(batch.keys);
        let mut frames = batch.frames;
        // Stable: frame order within each module.
        frames.sort_by_key(|f| f.1);
        for group in frames.chunk_by(|a, b| a.1 == b.1) {
            let m = group[0].1 as usize;
            let Some(key) = self.keys.get(m).filter(|k| self.part.takes(k)) else {
                continue;
            };
            let addrs: Vec<u64> = group.iter().map(|f| f.2).collect();
            let results = self.symbolizer.symbolize(key, &addrs);
            let notes = self.symbolizer.notes();
            if notes.len() > self.notes_seen {
                if self.notes.len() <= m {
                    self.notes.resize(m + 1, Vec::new());
                }
                let seen = std::mem::replace(&mut self.notes_seen, notes.len());
                self.notes[m].extend(notes.into_iter().skip(seen));
            }
            for (&(id, _, _), syms) in group.iter().zip(results) {
                let id = id as usize;
                if self.out.len() <= id {
                    self.out.resize(id + 1, Vec::new());
                }
                self.out[id] = syms;
            }
        }
    }

    pub(crate) fn finish(self) -> Symbols {
        self.finish_keeping().0
    }

    /// The symbols, and the symboliser for more work.
    fn finish_keeping(self) -> (Symbols, Symbolizer) {
        (
            Symbols {
                frames: self.out,
                notes: self.notes,
            },
            self.symbolizer,
        )
    }
}
