//! DWARF unwinding of user stacks copied with each sample (stack-unwinding=dwarf).

use crate::callchain::ChainEntry;
use crate::processes::Mapping;
use crate::ElfCache;

/// Per-process unwinders fed by the mapping records.
#[derive(Default)]
pub struct DwarfUnwinder {
    notes: Vec<String>,
}

impl DwarfUnwinder {
    pub fn mmap(&mut self, _pid: i32, _mapping: &Mapping, _elves: &mut ElfCache) {}

    pub fn unwind(&mut self, _pid: i32, _regs: &kairos_perf_data::Regs, _stack: &[u8], _chain: &mut Vec<ChainEntry>) {}

    pub fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }
}
