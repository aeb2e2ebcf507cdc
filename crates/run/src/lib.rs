//! Running a program under changed conditions and undoing every change afterwards, so that
//! the CLI only parses and prints: `kairos run --hugepages` (malloc's huge pages, the 2 MiB
//! pool raised and restored, /proc watched), `kairos run --cache-ways` (a resctrl group of
//! the program's own: planned, applied with a journal, monitored, undone), and the same
//! set-up for `kairos collect --hugepages` and `kairos collect -k cache-group=...`.
//!
//! Each story is written once: [`hugepages`] and [`cache`] each hold one set-up, one watch
//! and one undo that both commands use. What happens along the way is told to the caller
//! as [`Notice`]s (it prints them); what went wrong is an [`Error`] whose text says what
//! to do.

pub mod cache;
mod error;
pub mod hugepages;
mod launch;
mod notice;
mod program;

pub use error::{Caller, Error, Undone};
pub use launch::Usage;
pub use notice::{Notice, Placement, Shrink, Sink};
