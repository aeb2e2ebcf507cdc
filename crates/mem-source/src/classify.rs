//! Our reading of a `data_src` word for reports: one level among the buckets users ask
//! for (L1, fill buffer, L2, LLC, local/remote DRAM, remote cache, ...), and flags.
//! The newer `mem_lvl_num` field wins over the older `mem_lvl` bits when both are set
//! (Skylake and later set both; older kernels only `mem_lvl`).

use serde::Serialize;

use crate::data_src::{blk, hops, lock, lvl, lvl_num, op, snoop, snoopx, tlb, DataSrc};

/// How far a remote source is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Distance {
    /// Remote, distance not given.
    Unknown,
    /// Old `mem_lvl` encoding: REM_RAM1 / REM_CCE1.
    OneHop,
    /// Old `mem_lvl` encoding: REM_RAM2 / REM_CCE2.
    TwoHops,
    /// `mem_hops` 0: another core of the same node.
    OtherCoreSameNode,
    /// `mem_hops` 1: another node of the same socket.
    OtherNodeSameSocket,
    /// `mem_hops` 2: another socket.
    OtherSocket,
    /// `mem_hops` 3: another board.
    OtherBoard,
    /// A `mem_hops` value no kernel defines yet (5-7).
    Reserved(u8),
}

/// Where the access was served from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Level {
    L1,
    /// Line fill buffer (Intel) / miss address buffer (AMD): the line was already on its way.
    Lfb,
    L2,
    /// Last-level cache (L3) of this socket.
    Llc,
    /// L4 or another memory-side cache level (lvl_num 4-7).
    MemorySideCache(u8),
    /// A cache of unknown level (lvl_num ANY_CACHE, local).
    AnyCache,
    LocalDram,
    RemoteDram(Distance),
    /// Another socket's (or core's) cache.
    RemoteCache(Distance),
    Pmem {
        remote: bool,
    },
    Cxl,
    Io,
    Uncached,
    /// No level given (N/A, or no level bit set).
    Unknown,
}

/// The breakdown of item 4: levels, with HITM loads counted apart from the level they
/// hit in (as perf c2c counts local HITM instead of an LLC hit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Bucket {
    L1,
    Lfb,
    L2,
    Llc,
    LocalHitm,
    LocalDram,
    RemoteDram,
    RemoteCache,
    RemoteHitm,
    /// PMEM, CXL, I/O, uncached, memory-side cache, unknown.
    Other,
}

/// The kind of access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Access {
    Load,
    Store,
    Prefetch,
    Exec,
    Unknown,
}

/// Our classification of one `data_src` word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Class {
    pub access: Access,
    pub level: Level,
    /// More than one old-style level bit was set ("L1 or L2"): `level` is the nearest.
    pub ambiguous: bool,
    /// `mem_lvl` HIT / MISS: Some(true) hit, Some(false) miss (e.g. store L1 miss).
    pub hit: Option<bool>,
    /// Snoop hit a modified line in another core's cache.
    pub hitm: bool,
    /// Snoop hit (clean) in another cache.
    pub snoop_hit: bool,
    /// Transferred from a peer cache (snoopx PEER).
    pub peer: bool,
    /// Forwarded (snoopx FWD).
    pub fwd: bool,
    /// Locked access; None when not available.
    pub locked: Option<bool>,
    /// TLB: Some(true) hit, Some(false) miss, None when not given.
    pub tlb_hit: Option<bool>,
    /// Page walk by the hardware walker / OS fault handler.
    pub tlb_walk: bool,
    pub tlb_fault: bool,
    /// Blocked: data could not be forwarded / address conflict.
    pub blocked_data: bool,
    pub blocked_addr: bool,
}

fn distance_from_hops(h: u8) -> Distance {
    match h {
        0 => Distance::Unknown,
        hops::HOPS_0 => Distance::OtherCoreSameNode,
        hops::HOPS_1 => Distance::OtherNodeSameSocket,
        hops::HOPS_2 => Distance::OtherSocket,
        hops::HOPS_3 => Distance::OtherBoard,
        other => Distance::Reserved(other),
    }
}

fn level_from_num(d: &DataSrc) -> Option<Level> {
    // hops imply remote (the kernel sets both; POWER uses hops 0 for another core).
    let remote = d.remote || d.hops != 0;
    let dist = distance_from_hops(d.hops);
    let cache = |local: Level| {
        if remote {
            Level::RemoteCache(dist)
        } else {
            local
        }
    };
    Some(match d.lvl_num {
        0 | lvl_num::NA => return None,
        lvl_num::L1 => cache(Level::L1),
        lvl_num::L2 => cache(Level::L2),
        lvl_num::L3 => cache(Level::Llc),
        n @ 4..=7 => cache(Level::MemorySideCache(n)),
        lvl_num::UNC => Level::Uncached,
        lvl_num::CXL => Level::Cxl,
        lvl_num::IO => Level::Io,
        lvl_num::ANY_CACHE => cache(Level::AnyCache),
        lvl_num::LFB => Level::Lfb,
        lvl_num::RAM if remote => Level::RemoteDram(dist),
        lvl_num::RAM => Level::LocalDram,
        lvl_num::PMEM => Level::Pmem { remote },
        _ => return None,
    })
}

/// The nearest level named by the old bits, and whether several were named.
fn level_from_bits(d: &DataSrc) -> (Level, bool) {
    let table = [
        (lvl::L1, Level::L1),
        (lvl::LFB, Level::Lfb),
        (lvl::L2, Level::L2),
        (lvl::L3, Level::Llc),
        (lvl::LOC_RAM, Level::LocalDram),
        (lvl::REM_RAM1, Level::RemoteDram(Distance::OneHop)),
        (lvl::REM_RAM2, Level::RemoteDram(Distance::TwoHops)),
        (lvl::REM_CCE1, Level::RemoteCache(Distance::OneHop)),
        (lvl::REM_CCE2, Level::RemoteCache(Distance::TwoHops)),
        (lvl::IO, Level::Io),
        (lvl::UNC, Level::Uncached),
    ];
    let mut named = table.iter().filter(|(bit, _)| d.lvl & bit != 0);
    match named.next() {
        Some((_, first)) => (*first, named.next().is_some()),
        None => (Level::Unknown, false),
    }
}

/// Classifies one word. Total: every u64 gives a class.
pub fn classify(d: &DataSrc) -> Class {
    let access = [
        (op::LOAD, Access::Load),
        (op::STORE, Access::Store),
        (op::PFETCH, Access::Prefetch),
        (op::EXEC, Access::Exec),
    ]
    .iter()
    .find(|(bit, _)| d.op & bit != 0)
    .map_or(Access::Unknown, |(_, a)| *a);
    let (old, ambiguous) = level_from_bits(d);
    let (level, ambiguous) = match level_from_num(d) {
        Some(l) => (l, false),
        // Skylake reports a remote source of unknown level with the remote bit alone.
        None if d.remote && old == Level::Llc => {
            (Level::RemoteCache(distance_from_hops(d.hops)), ambiguous)
        }
        None => (old, ambiguous),
    };
    let hit = if d.lvl & lvl::HIT != 0 {
        Some(true)
    } else if d.lvl & lvl::MISS != 0 {
        Some(false)
    } else {
        None
    };
    let tlb_hit = if d.dtlb & tlb::HIT != 0 {
        Some(true)
    } else if d.dtlb & tlb::MISS != 0 {
        Some(false)
    } else {
        None
    };
    Class {
        access,
        level,
        ambiguous,
        hit,
        hitm: d.snoop & snoop::HITM != 0,
        snoop_hit: d.snoop & snoop::HIT != 0,
        peer: d.snoopx & snoopx::PEER != 0,
        fwd: d.snoopx & snoopx::FWD != 0,
        locked: if d.lock & lock::NA != 0 {
            None
        } else {
            Some(d.lock & lock::LOCKED != 0)
        },
        tlb_hit,
        tlb_walk: d.dtlb & tlb::WK != 0,
        tlb_fault: d.dtlb & tlb::OS != 0,
        blocked_data: d.blk & blk::DATA != 0,
        blocked_addr: d.blk & blk::ADDR != 0,
    }
}

impl Class {
    /// The bucket of the item-4 breakdown.
    pub fn bucket(&self) -> Bucket {
        match self.level {
            Level::L1 => Bucket::L1,
            Level::Lfb => Bucket::Lfb,
            Level::L2 => Bucket::L2,
            Level::Llc | Level::AnyCache if self.hitm => Bucket::LocalHitm,
            Level::Llc => Bucket::Llc,
            Level::LocalDram => Bucket::LocalDram,
            Level::RemoteDram(_) => Bucket::RemoteDram,
            Level::RemoteCache(_) if self.hitm => Bucket::RemoteHitm,
            Level::RemoteCache(_) => Bucket::RemoteCache,
            _ => Bucket::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(v: u64) -> Class {
        classify(&DataSrc::from_raw(v))
    }

    #[test]
    fn fixture_and_remote_words() {
        assert_eq!(c(0x118_6810_0242).level, Level::Lfb);
        assert_eq!(c(0x102_6a10_0142).locked, Some(true));
        let l3_stlb_miss = c(0x106_5010_0842);
        assert_eq!(
            (
                l3_stlb_miss.level,
                l3_stlb_miss.tlb_hit,
                l3_stlb_miss.bucket()
            ),
            (Level::Llc, Some(false), Bucket::Llc)
        );
        // Remote DRAM two sockets away: lvl_num RAM, remote, hops 2 (value 3).
        let d = DataSrc {
            op: op::LOAD,
            lvl: lvl::HIT,
            lvl_num: lvl_num::RAM,
            remote: true,
            hops: hops::HOPS_2,
            ..Default::default()
        };
        assert_eq!(classify(&d).level, Level::RemoteDram(Distance::OtherSocket));
        // Remote HITM, old encoding.
        let d = DataSrc {
            op: op::LOAD,
            lvl: lvl::HIT | lvl::REM_CCE1,
            snoop: snoop::HITM,
            ..Default::default()
        };
        assert_eq!(classify(&d).bucket(), Bucket::RemoteHitm);
        // Local HITM in the LLC.
        let d = DataSrc {
            op: op::LOAD,
            lvl: lvl::HIT | lvl::L3,
            lvl_num: lvl_num::L3,
            snoop: snoop::HITM,
            ..Default::default()
        };
        assert_eq!(classify(&d).bucket(), Bucket::LocalHitm);
        let store = DataSrc {
            op: op::STORE,
            lvl: lvl::MISS | lvl::L1,
            ..Default::default()
        };
        assert_eq!(
            (classify(&store).access, classify(&store).hit),
            (Access::Store, Some(false))
        );
    }

    /// Every u64 decodes, prints and classifies: edge words, every lvl_num x remote x hops
    /// (reserved hop values 5-7 included), and a million pseudo-random words.
    #[test]
    fn total_on_every_word() {
        let mut words = vec![0, u64::MAX, 1 << 63];
        for num in 0..16u64 {
            for rh in 0..16u64 {
                words.push((num << 33) | ((rh & 1) << 37) | ((rh >> 1) << 43) | 0x42);
            }
        }
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        words.extend((0..1_000_000).map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }));
        let mut stats = crate::C2cStats::default();
        for w in words {
            let d = DataSrc::from_raw(w);
            let c = classify(&d);
            let _ = c.bucket();
            assert!(crate::perf_text(&d).starts_with("|OP "));
            assert!(crate::perf_script_column(w).len() <= 99);
            stats.add(&d, Some(w));
        }
        assert_eq!(stats.records, 1_000_259);
    }
}
