//! `kairos report hugepages -r DIR`: how many 2 MiB and 1 GiB pages the program of a
//! memory-consumption result needs, and the exact commands to reserve and use them.
//! The counting is in crates/analysis/hugepages; this file maps the rows onto its events
//! and presents the plans.

use kairos_analysis_api::{Failure, ReportOutput, ReportRequest};
use kairos_analysis_hugepages::{commands, parse_glibc, plan, Op, OpKind, Plan, GIB1, MIB2};
use kairos_platform::Prober;
use kairos_report::{Cell, Column, Document, Format, Table};

use crate::{AllocRow, Kind};

pub(crate) fn report(req: &ReportRequest) -> Result<ReportOutput, Failure> {
    let format = kairos_session::report_format(req)?;
    let dir = kairos_session::open_result(&req.result_dir)?;
    let data = crate::tables::read(&dir.tables_path()).map_err(|e| {
        Failure::failed(format!(
            "result {} is damaged: {e}; collect it again",
            req.result_dir.display()
        ))
    })?;
    let program = match &dir.manifest().target {
        Some(kairos_result::Target::Program { program, args }) => {
            format!("{program} {}", args.join(" "))
                .trim_end()
                .to_string()
        }
        _ => "PROGRAM".into(),
    };
    // The glibc Kairos runs on is the one the program gets on this machine.
    let glibc_text = kairos_platform::LiveProber.glibc_version();
    let glibc = glibc_text.as_deref().and_then(parse_glibc);
    let ops: Vec<Op> = data.rows.iter().map(op).collect();
    let plans = [plan(&ops, MIB2), plan(&ops, GIB1)];
    let t = pages_table(&plans);
    let mut cmds = Table::new(vec![Column::left("Command")]);
    for p in &plans {
        if p.pool_pages == 0 {
            continue;
        }
        for c in commands(p, glibc, &program) {
            cmds.push_row(vec![Cell::text(c)]);
        }
    }
    cmds.push_note(format!(
        "glibc on this machine: {}",
        glibc_text.unwrap_or_else(|| "not found (not a glibc system?)".into())
    ));
    Ok(render_report(format, t, cmds))
}

/// The pages each size needs, and how they are counted.
fn pages_table(plans: &[Plan; 2]) -> Table {
    let mut t = Table::new(vec![
        Column::left("Page size"),
        Column::right("Pool blocks"),
        Column::right("Their pages"),
        Column::right("Heap arena pages"),
        Column::right("Pages needed"),
        Column::right("ceil(total/page)"),
        Column::right("Own mmaps (not counted)"),
    ]);
    for p in plans {
        t.push_row(vec![
            Cell::text(if p.page_size == MIB2 {
                "2 MiB"
            } else {
                "1 GiB"
            }),
            Cell::UInt(p.pool_blocks),
            Cell::UInt(p.pool_pages),
            Cell::UInt(p.arena_pages),
            Cell::UInt(p.needed()),
            Cell::UInt(p.naive()),
            Cell::UInt(p.direct_mmap_pages),
        ]);
    }
    let p2 = &plans[0];
    t.push_note(format!(
        "Total allocated: {} bytes; ceil({} / 2 MiB) = {} pages. Each block of 2 MiB or more is its own mapping and rounds up \
         to whole pages separately ({} blocks live at the peak: {} bytes in {} pages, {:.1} pages of rounding), and the heap \
         arena (smaller blocks, {} bytes at its peak) is one more mapping: {} pages.",
        p2.total_bytes,
        p2.total_bytes,
        p2.naive(),
        p2.pool_blocks,
        p2.pool_bytes,
        p2.pool_pages,
        p2.pool_pages as f64 - p2.pool_bytes as f64 / MIB2 as f64,
        p2.arena_peak_bytes,
        p2.needed()
    ));
    t.push_note(
        "Pool blocks: heap blocks of at least one page, which glibc.malloc.hugetlb maps with MAP_HUGETLB; smaller blocks \
         stay in 4 KiB pages (the arena pages are headroom for thread arenas and for when brk fails). Pages are the peak held \
         at once: a block freed early gives its pages back."
            .to_string(),
    );
    if plans[1].pool_blocks == 0 {
        t.push_note("1 GiB: no block reaches 1 GiB, so glibc would put nothing in 1 GiB pages; use 2 MiB pages.".to_string());
    }
    if p2.direct_mmap_pages > 0 {
        t.push_note(format!(
            "The program maps {} anonymous regions itself ({} pages at 2 MiB): the glibc tunable does not reach them; they need \
             MAP_HUGETLB in the code, or transparent huge pages.",
            p2.direct_mmaps, p2.direct_mmap_pages
        ));
    }
    t
}

/// Text: the table cut to no width and the commands whole, to be pasted; else the
/// document in `format`.
fn render_report(format: Format, t: Table, cmds: Table) -> ReportOutput {
    let mut out = ReportOutput::default();
    if format == Format::Text {
        let mut d = Document::new("Huge pages");
        d.push_table(t.with_title("Pages needed"));
        out.push(&d.to_text_width(usize::MAX));
        // Commands are printed whole, never cut to the terminal width: they are meant to be pasted.
        out.line("\nSet-up (as root)\n----------------");
        for row in &cmds.rows {
            if let Some(Cell::Text(c)) = row.first() {
                out.line(&format!("  {c}"));
            }
        }
        for n in &cmds.notes {
            out.line(n);
        }
    } else {
        let mut d = Document::new("Huge pages");
        d.push_table(t);
        d.push_table(cmds);
        out.push(&d.render(format));
    }
    out
}

/// A row as the huge-page planner reads it.
fn op(r: &AllocRow) -> Op {
    let kind = match r.kind {
        k if k.is_heap_alloc() => OpKind::HeapAlloc,
        Kind::Free => OpKind::Free,
        Kind::Realloc => OpKind::Realloc,
        Kind::Mmap => OpKind::Mmap,
        Kind::Mremap => OpKind::Mremap,
        Kind::Munmap => OpKind::Munmap,
        _ => OpKind::Other,
    };
    Op {
        time_ns: r.time_ns,
        process: r.process,
        kind,
        address: r.address,
        size: r.size,
        old_address: r.old_address,
        anonymous: r.anonymous,
    }
}
