//! `/proc/PID/maps` of traced processes: which file (and offset in it) a run-time address
//! comes from. The parser is the shared one of `kairos-procfs`.

pub use kairos_procfs::maps::{find, parse, Mapping};
