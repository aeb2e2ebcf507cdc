//! What every collection shares, so an analysis crate holds only what is its own: the
//! result directory (created, saved, opened, described), the target of `kairos collect`,
//! the recording's conversion through kairos-convert with a progress bar, the end of a
//! sampling collection (kallsyms snapshot, stop reason, collector errors as sentences),
//! interrupts of a launched program, this host, and the memory-bandwidth timeline that
//! every collection records beside its own data (`bandwidth`). Every failure is a
//! [`kairos_analysis_api::Failure`] worded for the user.

pub mod bandwidth;
mod convert;
pub mod device_use;
mod host;
mod import;
pub mod interrupt;
mod progress;
mod recording;
mod result;
mod target;

pub use convert::{
    convert_options, convert_result, convert_result_full, convert_result_with,
    convert_result_with_side, Meanwhile,
};
pub use host::{children_rusage, snapshot_kallsyms, this_host};
pub use import::{header_nodes, start_import, ImportRequest, Imported};
pub use kairos_convert::Conversion;
pub use progress::{collect_with_progress, spinner};
pub use recording::{
    collect_error, exit_of, finish_collection, paranoid_advice, stop_reason, warn_write_error,
};
pub use result::{
    clock_offset_ns, create_result_dir, meta, meta_for, notes_text, open, open_event, open_result,
    platform_capabilities, print_notes, report_format, save, start_manifest, PERF_DATA,
};
pub use target::{
    check_duration, describe, launched, refuse_cpu_list, refuse_target_step, resolve_program,
    target, target_hook,
};
