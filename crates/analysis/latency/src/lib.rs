//! Request latency: why was this request slow. A service's requests are found from their
//! boundaries (uprobes at a function's entry and return, the marker header of
//! runtime/requests, USDT probes, or the application's own log), and each request's time
//! is accounted for on the CPU (by function, from samples; page faults, system calls and
//! interrupts, measured) and off it (blocked: where, who woke it and what that thread
//! ran meanwhile; runnable while another thread held the CPU). The slowest requests each
//! get their main cause in one sentence, and `slow-vs-normal` ranks what slow requests do
//! that normal ones do not by the extra time it explains.
//!
//! Stages: `collect` records (with `marker` reading the program's ring meanwhile),
//! `finish` pairs (`requests`), accounts (`sched`, `account`) and explains (`cause`) into
//! `latency.json` (`model`) and the `requests` table (`requests_table`); `run_report`
//! and `reports` print it, `page` serves it.

mod account;
mod boundary;
mod branch_time;
mod cause;
mod collect;
mod compare;
mod elf_probes;
mod finish;
mod flight;
mod log_file;
mod marker;
pub mod model;
mod page;
mod reports;
mod requests;
mod requests_table;
mod run_report;
mod sched;
mod softirq;
mod spec;
mod threshold;

pub use flight::WINDOWS_DIR;
pub use spec::SPEC;
