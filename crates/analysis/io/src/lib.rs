//! `kairos collect io`: I/O traffic over time, system-wide. With Intel uncore PMUs (SKX,
//! ICX, SPR): inbound PCIe reads and writes and outbound MMIO per IIO stack (each stack's
//! root bus from its `dieN` attribute, with the devices behind it), DDIO hits and misses
//! and the perfmon `io_*` metrics per socket. Everywhere: each network interface's and
//! block device's own byte counters, with its NUMA node, PCIe block and link. See the
//! README for the files and what is measured where.

mod collect;
mod compare;
pub mod ddio;
pub mod encode;
pub mod findings;
pub mod kernel;
pub mod model;
mod opcode;
mod page;
pub mod report;
mod sampler;
mod spec;
pub mod uncore;
pub mod use_table;

pub use spec::SPEC;

#[cfg(test)]
mod ddio_tests;
#[cfg(test)]
mod golden_tests;
#[cfg(test)]
mod kernel_tests;
#[cfg(test)]
mod tests;
