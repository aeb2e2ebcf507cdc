//! The counts `perf c2c report --stats` shows ("Load L1D hit", "Load Local HITM", "Load
//! Remote DRAM", ...), computed the way perf 6.1 computes them from the `mem_lvl`,
//! `mem_snoop`, `mem_snoopx`, `mem_remote`/`mem_hops`, lock and block fields, so a report
//! can put perf's familiar numbers next to our own levels (which also read `mem_lvl_num`).
//! Checked against perf c2c by tests/perf_oracle.rs.

use serde::Serialize;

use crate::data_src::{blk, lock, lvl, op, snoop, snoopx, DataSrc};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct C2cStats {
    pub records: u64,
    pub locks: u64,
    pub blk_data: u64,
    pub blk_addr: u64,
    pub loads: u64,
    pub ld_no_addr: u64,
    pub ld_uncached: u64,
    pub ld_io: u64,
    pub ld_fb_hit: u64,
    pub ld_l1_hit: u64,
    pub ld_l2_hit: u64,
    /// Every L3 hit, HITM ones included (as perf 6.1 counts).
    pub ld_llc_hit: u64,
    pub local_hitm: u64,
    pub remote_hitm: u64,
    pub remote_hit: u64,
    pub local_peer: u64,
    pub remote_peer: u64,
    pub local_dram: u64,
    pub remote_dram: u64,
    /// DRAM loads with a clean snoop hit (MESI shared) or without (exclusive).
    pub ld_shared: u64,
    pub ld_excl: u64,
    pub ld_miss: u64,
    pub stores: u64,
    pub st_no_addr: u64,
    pub st_uncached: u64,
    pub st_l1_hit: u64,
    pub st_l1_miss: u64,
    pub st_na: u64,
    /// Neither load nor store.
    pub no_parse: u64,
}

impl C2cStats {
    /// Loads that missed the LLC: perf's "Load LLC Misses".
    pub fn llc_misses(&self) -> u64 {
        self.local_dram + self.remote_dram + self.remote_hitm + self.remote_hit
    }

    /// Counts one sample; `addr` is its data address (0 or none: counted as no address).
    pub fn add(&mut self, d: &DataSrc, addr: Option<u64>) {
        let l = d.lvl;
        let has = |bit: u16| l & bit != 0;
        // Skylake reports a remote source of unknown level with the remote bit alone;
        // with hops set the remote bit means something nearer (POWER: another core).
        let mrem = d.remote && d.hops == 0;
        self.records += 1;
        self.locks += u64::from(d.lock & lock::LOCKED != 0);
        self.blk_data += u64::from(d.blk & blk::DATA != 0);
        self.blk_addr += u64::from(d.blk & blk::ADDR != 0);
        let has_addr = addr.is_some_and(|a| a != 0);
        if d.op & op::LOAD != 0 {
            self.loads += 1;
            if !has_addr {
                self.ld_no_addr += 1;
                return;
            }
            let peer = d.snoopx & snoopx::PEER != 0;
            if has(lvl::HIT) {
                self.ld_uncached += u64::from(has(lvl::UNC));
                self.ld_io += u64::from(has(lvl::IO));
                self.ld_fb_hit += u64::from(has(lvl::LFB));
                self.ld_l1_hit += u64::from(has(lvl::L1));
                if has(lvl::L2) {
                    self.ld_l2_hit += 1;
                    self.local_peer += u64::from(peer);
                }
                if has(lvl::L3) {
                    // perf 6.1 counts a HITM load as an LLC hit too (later versions do not).
                    self.local_hitm += u64::from(d.snoop & snoop::HITM != 0);
                    self.ld_llc_hit += 1;
                    self.local_peer += u64::from(peer);
                }
                if has(lvl::LOC_RAM) {
                    self.local_dram += 1;
                    self.dram_state(d);
                }
                if has(lvl::REM_RAM1) || has(lvl::REM_RAM2) || mrem {
                    self.remote_dram += 1;
                    self.dram_state(d);
                }
            }
            if has(lvl::REM_CCE1) || has(lvl::REM_CCE2) || mrem {
                if d.snoop & snoop::HIT != 0 {
                    self.remote_hit += 1;
                } else if d.snoop & snoop::HITM != 0 {
                    self.remote_hitm += 1;
                } else if peer {
                    self.remote_hit += 1;
                    self.remote_peer += 1;
                }
            }
            self.ld_miss += u64::from(has(lvl::MISS));
        } else if d.op & op::STORE != 0 {
            self.stores += 1;
            if !has_addr {
                self.st_no_addr += 1;
                return;
            }
            if has(lvl::HIT) {
                self.st_uncached += u64::from(has(lvl::UNC));
                self.st_l1_hit += u64::from(has(lvl::L1));
            }
            if has(lvl::MISS) && has(lvl::L1) {
                self.st_l1_miss += 1;
            }
            self.st_na += u64::from(has(lvl::NA));
        } else {
            self.no_parse += 1;
        }
    }

    fn dram_state(&mut self, d: &DataSrc) {
        if d.snoop & snoop::HIT != 0 {
            self.ld_shared += 1;
        } else {
            self.ld_excl += 1;
        }
    }
}
