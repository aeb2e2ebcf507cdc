//! The memory-consumption reports: summary, allocations (bottom-up by memory object),
//! sizes (power-of-two histogram), heap-timeline.

use kairos_report::{Cell, Column, Document, Section, Table};

use crate::replay::Stats;
use crate::Site;

fn b(v: u64) -> Cell {
    Cell::UInt(v)
}

/// VTune-style object name: `file:line (size B)`.
pub fn object_name(site: Option<&Site>, size: u64) -> String {
    let loc = site
        .map(Site::location)
        .unwrap_or_else(|| "[no stack: below min-object-size]".into());
    format!("{loc} ({size} B)")
}

/// Totals, peak, leaks, mmap and the tracker's own figures for a result of `events` rows;
/// `meta` comes first (target, knobs). The DHAT-comparable line says how Kairos' totals
/// map onto DHAT's.
pub fn summary(
    events: u64,
    sites: &[Site],
    st: &Stats,
    meta: &[(String, String)],
    top: usize,
) -> Document {
    let mut d = Document::new("Memory consumption");
    let mut s = Section::new("Collection");
    for (k, v) in meta {
        s.push(k.clone(), Cell::text(v.clone()));
    }
    s.push("Elapsed", Cell::ns(st.end_ns));
    s.push("Processes", b(st.processes));
    s.push("Threads", b(st.threads));
    s.push("Events", b(events));
    d.push_section(s);

    let mut h =
        Section::new("Heap (malloc, calloc, realloc, memalign family; C++ new through malloc)");
    h.push("Total allocated (B)", b(st.heap_bytes));
    h.push("Total blocks", b(st.heap_blocks));
    h.push("of which realloc", b(st.reallocs));
    h.push("of which zero-size", b(st.zero_size));
    h.push("Frees", b(st.frees));
    h.push("Peak heap (B)", b(st.peak_heap_bytes));
    h.push("Peak heap blocks", b(st.peak_heap_blocks));
    h.push("Peak at", Cell::ns(st.peak_time_ns));
    h.push("Still allocated at exit (B)", b(st.leaked_bytes));
    h.push("Still allocated at exit (blocks)", b(st.leaked_blocks));
    h.push("DHAT-comparable total (B)", b(st.heap_bytes + st.zero_size));
    d.push_section(h);

    let mut m = Section::new("Anonymous mmap (not seen by DHAT or malloc statistics)");
    m.push("Mapped (B)", b(st.mmap_bytes));
    m.push("Regions", b(st.mmap_regions));
    m.push("Peak mapped (B)", b(st.mmap_peak));
    m.push("Mapped at exit (B)", b(st.mmap_at_exit));
    m.push("File mappings (not counted)", b(st.file_mappings));
    d.push_section(m);

    let mut t = allocations(sites, st, Some(top));
    t.title = Some(format!("Top {top} memory objects by allocated bytes"));
    d.push_table(t);
    d
}

/// Bottom-up by memory object (allocation site and block size), most bytes first.
pub fn allocations(sites: &[Site], st: &Stats, limit: Option<usize>) -> Table {
    let mut t = Table::new(vec![
        Column::left("Memory object"),
        Column::left("Function"),
        Column::right("Allocated").with_unit("B"),
        Column::right("Blocks"),
        Column::right("At exit").with_unit("B"),
        Column::right("Blocks at exit"),
        Column::left("Stack"),
    ]);
    let mut objs: Vec<_> = st.objects.iter().collect();
    objs.sort_by(|a, b| {
        b.1.bytes
            .cmp(&a.1.bytes)
            .then(b.1.blocks.cmp(&a.1.blocks))
            .then(a.0.cmp(b.0))
    });
    let n = objs.len();
    for (&(site, size), o) in objs.into_iter().take(limit.unwrap_or(usize::MAX)) {
        let s = site.and_then(|i| sites.get(i as usize));
        t.push_row(vec![
            Cell::text(object_name(s, size)),
            Cell::text(s.map(|s| s.function.clone()).unwrap_or_default()),
            b(o.bytes),
            b(o.blocks),
            b(o.leaked_bytes),
            b(o.leaked_blocks),
            Cell::text(s.map(|s| s.stack.clone()).unwrap_or_default()),
        ]);
    }
    if let Some(l) = limit {
        if n > l {
            t.push_note(format!(
                "{} more objects not shown (--limit 0 shows all)",
                n - l
            ));
        }
    }
    t
}

/// Blocks and bytes per power-of-two size class.
pub fn sizes(st: &Stats) -> Table {
    let mut t = Table::new(vec![
        Column::left("Size"),
        Column::right("Blocks"),
        Column::right("Bytes").with_unit("B"),
        Column::right("Blocks %"),
    ]);
    let total = st.heap_blocks.max(1) as f64;
    for (i, &(blocks, bytes)) in st.histogram.iter().enumerate() {
        if blocks == 0 {
            continue;
        }
        let label = if i == 0 {
            "0".to_string()
        } else {
            let lo = 1u128 << (i - 1);
            format!("{lo}-{}", (lo << 1) - 1)
        };
        t.push_row(vec![
            Cell::text(label),
            b(blocks),
            b(bytes),
            Cell::Percent(blocks as f64 * 100.0 / total),
        ]);
    }
    t
}

/// Heap and anonymous mmap in use over time.
pub fn heap_timeline(st: &Stats) -> Table {
    let mut t = Table::new(vec![
        Column::right("Start"),
        Column::right("Heap in use").with_unit("B"),
        Column::right("Heap max").with_unit("B"),
        Column::right("Mapped").with_unit("B"),
        Column::right("Allocations"),
        Column::right("Allocated").with_unit("B"),
        Column::right("Frees"),
    ]);
    for k in &st.timeline {
        t.push_row(vec![
            Cell::ns(k.start_ns),
            b(k.heap_end),
            b(k.heap_max),
            b(k.mmap_end),
            b(k.allocations),
            b(k.allocated_bytes),
            b(k.frees),
        ]);
    }
    t
}

/// Why Kairos' totals may differ from valgrind DHAT's, for the notes of every report.
pub fn accounting_notes(st: &Stats) -> Vec<String> {
    let mut v = vec![
        "Accounting as valgrind DHAT's: a realloc counts as one more block of its new size; \
         DHAT counts malloc(0) as 1 byte where Kairos counts 0 (the DHAT-comparable total adds them back); \
         anonymous mmap is counted apart, DHAT does not see it."
            .to_string(),
        format!(
            "Expected differences from DHAT: each thread created under the tracker gets a 16-byte larger TLS vector              (glibc's allocate_dtv, one slot for the tracker's thread-local variables): +16 B per thread, here {} B;              and DHAT's 'At t-end' is smaller because valgrind runs __libc_freeres at exit, freeing libc's own blocks              (stdio buffers, thread vectors) that a normal run leaves allocated.",
            16 * st.threads.saturating_sub(st.processes)
        ),
    ];
    if st.unknown_frees > 0 {
        v.push(format!(
            "{} frees of blocks allocated before tracking started (e.g. by the dynamic loader) were ignored",
            st.unknown_frees
        ));
    }
    v
}
