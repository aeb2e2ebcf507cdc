//! perf.data writer (the "PERFILE2" file format that `perf script` and `perf report` read).
//!
//! File layout we produce:
//!
//! ```text
//! 0    perf_file_header (104 bytes; written as a placeholder by `create`, final by `finish`)
//! 104  data section: the records, copied verbatim from the ring buffers
//! ...  feature index: one perf_file_section {offset, size} per set feature bit, in bit order
//! ...  the feature bodies
//! ...  ids of every attr (u64 each)
//! ...  attr section: perf_file_attr { perf_event_attr (attr.size bytes), perf_file_section ids }
//! ```
//!
//! The readers (perf's and ours) find everything through the header, so the order after
//! the data is free, except that the feature index must start right at
//! `data.offset + data.size`. Attributes go after the data because they are only known
//! for sure once recording has started, and the data has to be streamed from the start.
//!
//! Data is buffered here and written in whole records. When a write fails (disk full),
//! the file is cut back to the last record boundary that reached the disk, so that
//! `finish` still produces a valid file holding everything written before the error.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// `"PERFILE2"` read as a little-endian u64 (how perf detects the file's endianness).
pub const PERF_MAGIC: u64 = 0x3245_4c49_4652_4550;
/// Size of `perf_file_header`: magic, size, attr_size, 3 sections, 256-bit feature bitmap.
pub const HEADER_SIZE: u64 = 104;
/// perf's strings in feature sections are padded to this alignment (NAME_ALIGN).
const NAME_ALIGN: usize = 64;
/// Records are buffered up to this many bytes before one write.
const BUFFER_BYTES: usize = 1 << 20;

/// Feature bits of the perf.data header (`HEADER_*` in perf's header.h).
pub mod feature {
    pub const TRACING_DATA: u32 = 1;
    pub const BUILD_ID: u32 = 2;
    pub const HOSTNAME: u32 = 3;
    pub const OSRELEASE: u32 = 4;
    pub const VERSION: u32 = 5;
    pub const ARCH: u32 = 6;
    pub const NRCPUS: u32 = 7;
    pub const CPUDESC: u32 = 8;
    pub const CPUID: u32 = 9;
    pub const TOTAL_MEM: u32 = 10;
    pub const CMDLINE: u32 = 11;
    pub const EVENT_DESC: u32 = 12;
    pub const CPU_TOPOLOGY: u32 = 13;
    pub const NUMA_TOPOLOGY: u32 = 14;
    pub const BRANCH_STACK: u32 = 15;
    pub const PMU_MAPPINGS: u32 = 16;
    pub const GROUP_DESC: u32 = 17;
    pub const AUXTRACE: u32 = 18;
    pub const STAT: u32 = 19;
    pub const CACHE: u32 = 20;
    pub const SAMPLE_TIME: u32 = 21;
    pub const MEM_TOPOLOGY: u32 = 22;
    pub const CLOCKID: u32 = 23;
    pub const DIR_FORMAT: u32 = 24;
    pub const BPF_PROG_INFO: u32 = 25;
    pub const BPF_BTF: u32 = 26;
    pub const COMPRESSED: u32 = 27;
    pub const CPU_PMU_CAPS: u32 = 28;
    pub const CLOCK_DATA: u32 = 29;
    pub const HYBRID_TOPOLOGY: u32 = 30;
    pub const PMU_CAPS: u32 = 31;
}

/// Header features whose body is a single `perf_header_string`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StringFeature {
    Hostname,
    OsRelease,
    /// Version of the recording tool (perf writes its own version here).
    Version,
    Arch,
    CpuDesc,
    CpuId,
}

impl StringFeature {
    pub fn bit(self) -> u32 {
        match self {
            StringFeature::Hostname => feature::HOSTNAME,
            StringFeature::OsRelease => feature::OSRELEASE,
            StringFeature::Version => feature::VERSION,
            StringFeature::Arch => feature::ARCH,
            StringFeature::CpuDesc => feature::CPUDESC,
            StringFeature::CpuId => feature::CPUID,
        }
    }
}

struct AttrEntry {
    bytes: Vec<u8>,
    ids: Vec<u64>,
    name: String,
}

/// Streaming writer of one perf.data file.
pub struct PerfDataWriter {
    file: File,
    buf: Vec<u8>,
    /// Data bytes known to be in the file (always a record boundary).
    committed: u64,
    /// First write error; after it, records are refused and the data ends at `committed`.
    failed: Option<io::ErrorKind>,
    attrs: Vec<AttrEntry>,
    /// Raw feature bodies indexed by bit; EVENT_DESC is generated from the attrs.
    features: std::collections::BTreeMap<u32, Vec<u8>>,
}

impl PerfDataWriter {
    /// Starts a perf.data file: writes a placeholder header (magic left zero so that an
    /// unfinished file is never mistaken for a complete one).
    pub fn create(file: File) -> io::Result<Self> {
        file.set_len(0)?;
        file.write_all_at(&[0u8; HEADER_SIZE as usize], 0)?;
        Ok(Self {
            file,
            buf: Vec::with_capacity(BUFFER_BYTES),
            committed: 0,
            failed: None,
            attrs: Vec::new(),
            features: std::collections::BTreeMap::new(),
        })
    }

    /// Appends one complete record (its 8-byte `perf_event_header` included), verbatim.
    pub fn write_record(&mut self, bytes: &[u8]) -> io::Result<()> {
        if let Some(kind) = self.failed {
            return Err(io::Error::new(
                kind,
                "an earlier write to the perf.data file failed",
            ));
        }
        if bytes.len() < 8 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "record shorter than its header",
            ));
        }
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= BUFFER_BYTES {
            self.flush_data()?;
        }
        Ok(())
    }

    /// Writes the buffered records to the file. On failure the file is cut back to the
    /// last complete flush, later records are refused, and `finish` still works.
    pub fn flush_data(&mut self) -> io::Result<()> {
        if let Some(kind) = self.failed {
            self.buf.clear();
            return Err(io::Error::new(
                kind,
                "an earlier write to the perf.data file failed",
            ));
        }
        if self.buf.is_empty() {
            return Ok(());
        }
        match self
            .file
            .write_all_at(&self.buf, HEADER_SIZE + self.committed)
        {
            Ok(()) => {
                self.committed += self.buf.len() as u64;
                self.buf.clear();
                Ok(())
            }
            Err(e) => {
                self.failed = Some(e.kind());
                self.buf.clear();
                // Drop the partly written tail; freeing it also gives back the space that
                // finish() needs for the attrs, features and header.
                let _ = self.file.set_len(HEADER_SIZE + self.committed);
                Err(e)
            }
        }
    }

    /// Bytes of records accepted so far (written or buffered).
    pub fn data_bytes(&self) -> u64 {
        self.committed + self.buf.len() as u64
    }

    /// True once a write has failed (see `flush_data`).
    pub fn has_failed(&self) -> bool {
        self.failed.is_some()
    }

    /// Declares one event: its `perf_event_attr` bytes (as given to perf_event_open; the
    /// size field at bytes 4..8 is what readers trust), the sample ids of its file
    /// descriptors (PERF_EVENT_IOC_ID), and its name for the EVENT_DESC feature.
    pub fn add_attr(&mut self, attr_bytes: Vec<u8>, ids: Vec<u64>, name: String) {
        self.attrs.push(AttrEntry {
            bytes: attr_bytes,
            ids,
            name,
        });
    }

    /// Sets a string feature (HOSTNAME, OSRELEASE, VERSION, ARCH, CPUDESC, CPUID).
    pub fn set_feature_string(&mut self, feature: StringFeature, value: impl Into<String>) {
        let mut body = Vec::new();
        put_string(&mut body, &value.into());
        self.features.insert(feature.bit(), body);
    }

    /// NRCPUS: CPUs available (possible) and online.
    pub fn set_nr_cpus(&mut self, available: u32, online: u32) {
        let mut body = Vec::new();
        body.extend_from_slice(&available.to_le_bytes());
        body.extend_from_slice(&online.to_le_bytes());
        self.features.insert(feature::NRCPUS, body);
    }

    /// TOTAL_MEM in kB (MemTotal of /proc/meminfo).
    pub fn set_total_mem_kb(&mut self, kb: u64) {
        self.features
            .insert(feature::TOTAL_MEM, kb.to_le_bytes().to_vec());
    }

    /// CMDLINE: the command line of the recording tool, one string per argument.
    pub fn set_cmdline(&mut self, args: &[String]) {
        let mut body = Vec::new();
        body.extend_from_slice(&(args.len() as u32).to_le_bytes());
        for a in args {
            put_string(&mut body, a);
        }
        self.features.insert(feature::CMDLINE, body);
    }

    /// CLOCKID: resolution in ns of the clock given with use_clockid.
    pub fn set_clockid_res_ns(&mut self, res_ns: u64) {
        self.features
            .insert(feature::CLOCKID, res_ns.to_le_bytes().to_vec());
    }

    /// CLOCK_DATA (version 1): the clock id and one simultaneous reading of the wall clock
    /// and of that clock, so sample times can be shown as wall-clock time.
    pub fn set_clock_data(&mut self, clockid: u32, tod_ns: u64, clockid_ns: u64) {
        let mut body = Vec::new();
        body.extend_from_slice(&1u32.to_le_bytes());
        body.extend_from_slice(&clockid.to_le_bytes());
        body.extend_from_slice(&tod_ns.to_le_bytes());
        body.extend_from_slice(&clockid_ns.to_le_bytes());
        self.features.insert(feature::CLOCK_DATA, body);
    }

    /// SAMPLE_TIME: time of the first and the last sample.
    pub fn set_sample_time(&mut self, first: u64, last: u64) {
        let mut body = Vec::new();
        body.extend_from_slice(&first.to_le_bytes());
        body.extend_from_slice(&last.to_le_bytes());
        self.features.insert(feature::SAMPLE_TIME, body);
    }

    /// The BUILD_ID table: one `perf_record_header_build_id` per (build id, file) of user
    /// space on this host (pid -1, as perf writes it), the id's length in its size byte.
    pub fn set_build_ids(&mut self, entries: &[(Vec<u8>, String)]) {
        let mut body = Vec::new();
        for (id, name) in entries {
            let id = &id[..id.len().min(20)];
            let name_len = (name.len() + 1).div_ceil(NAME_ALIGN) * NAME_ALIGN;
            let size = 8 + 4 + 24 + name_len;
            let Ok(size16) = u16::try_from(size) else {
                continue;
            };
            body.extend_from_slice(&0u32.to_le_bytes());
            let misc = crate::consts::PERF_RECORD_MISC_USER
                | crate::consts::PERF_RECORD_MISC_BUILD_ID_SIZE;
            body.extend_from_slice(&misc.to_le_bytes());
            body.extend_from_slice(&size16.to_le_bytes());
            body.extend_from_slice(&(-1i32).to_le_bytes());
            let mut data = [0u8; 24];
            data[..id.len()].copy_from_slice(id);
            data[20] = id.len() as u8;
            body.extend_from_slice(&data);
            let mut n = name.as_bytes().to_vec();
            n.resize(name_len, 0);
            body.extend_from_slice(&n);
        }
        self.features.insert(feature::BUILD_ID, body);
    }

    /// PMU_MAPPINGS: each PMU type number of the kernel with its name (`cpu_core`), from
    /// `/sys/bus/event_source/devices/*/type`; `perf report --header` lists them and a
    /// hybrid CPU's events are named by them.
    pub fn set_pmu_mappings(&mut self, pmus: &[(u32, &str)]) {
        let mut body = Vec::new();
        body.extend_from_slice(&(pmus.len() as u32).to_le_bytes());
        for (type_, name) in pmus {
            body.extend_from_slice(&type_.to_le_bytes());
            put_string(&mut body, name);
        }
        self.features.insert(feature::PMU_MAPPINGS, body);
    }

    /// Any other feature, body already encoded. EVENT_DESC set this way replaces the one
    /// generated from the attrs.
    pub fn set_feature_raw(&mut self, bit: u32, body: Vec<u8>) {
        if bit > 0 && bit < 256 {
            self.features.insert(bit, body);
        }
    }

    /// Writes what follows the data (features, ids, attrs) and then the final header.
    /// Returns the size of the data section. After a failed data write, the file holds
    /// the records written before the failure and is still complete.
    pub fn finish(mut self) -> io::Result<u64> {
        let _ = self.flush_data();
        if self.failed.is_some() {
            self.file.set_len(HEADER_SIZE + self.committed)?;
        }
        let data_size = self.committed;

        // Every perf_file_attr in the section has the same size: the attr_size of the header.
        let attr_len = match self.attrs.first() {
            Some(a) => declared_attr_size(&a.bytes),
            None => 0,
        };
        if self
            .attrs
            .iter()
            .any(|a| declared_attr_size(&a.bytes) != attr_len)
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "all perf_event_attr of one perf.data file must have the same size",
            ));
        }
        if !self.attrs.is_empty() && !self.features.contains_key(&feature::EVENT_DESC) {
            let desc = self.event_desc(attr_len);
            self.features.insert(feature::EVENT_DESC, desc);
        }

        let mut tail = Vec::new();
        let feat_offset = HEADER_SIZE + data_size;
        let nr_feat = self.features.len() as u64;
        let mut body_offset = feat_offset + nr_feat * 16;
        for body in self.features.values() {
            tail.extend_from_slice(&body_offset.to_le_bytes());
            tail.extend_from_slice(&(body.len() as u64).to_le_bytes());
            body_offset += body.len() as u64;
        }
        for body in self.features.values() {
            tail.extend_from_slice(body);
        }
        // Keep the ids and attrs 8-byte aligned.
        while tail.len() & 7 != 0 {
            tail.push(0);
        }
        let mut id_sections = Vec::new();
        for a in &self.attrs {
            let off = feat_offset + tail.len() as u64;
            id_sections.push((off, a.ids.len() as u64 * 8));
            for id in &a.ids {
                tail.extend_from_slice(&id.to_le_bytes());
            }
        }
        let attrs_offset = feat_offset + tail.len() as u64;
        for (a, (off, size)) in self.attrs.iter().zip(&id_sections) {
            tail.extend_from_slice(&sized_attr(&a.bytes, attr_len));
            tail.extend_from_slice(&off.to_le_bytes());
            tail.extend_from_slice(&size.to_le_bytes());
        }
        let attrs_size = attrs_offset_size(&self.attrs, attr_len);
        self.file.write_all_at(&tail, feat_offset)?;
        self.file.set_len(feat_offset + tail.len() as u64)?;

        let mut header = Vec::with_capacity(HEADER_SIZE as usize);
        header.extend_from_slice(&PERF_MAGIC.to_le_bytes());
        header.extend_from_slice(&HEADER_SIZE.to_le_bytes());
        let file_attr_size = if self.attrs.is_empty() {
            0
        } else {
            attr_len as u64 + 16
        };
        header.extend_from_slice(&file_attr_size.to_le_bytes());
        for (off, size) in [(attrs_offset, attrs_size), (HEADER_SIZE, data_size), (0, 0)] {
            header.extend_from_slice(&off.to_le_bytes());
            header.extend_from_slice(&size.to_le_bytes());
        }
        let mut bitmap = [0u64; 4];
        for bit in self.features.keys() {
            bitmap[(*bit / 64) as usize] |= 1u64 << (bit % 64);
        }
        for word in bitmap {
            header.extend_from_slice(&word.to_le_bytes());
        }
        self.file.write_all_at(&header, 0)?;
        self.file.sync_data()?;
        Ok(data_size)
    }

    /// EVENT_DESC: u32 nr, u32 attr_size, then per event: attr, u32 nr_ids, string name,
    /// u64 ids[nr_ids].
    fn event_desc(&self, attr_len: usize) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&(self.attrs.len() as u32).to_le_bytes());
        body.extend_from_slice(&(attr_len as u32).to_le_bytes());
        for a in &self.attrs {
            body.extend_from_slice(&sized_attr(&a.bytes, attr_len));
            body.extend_from_slice(&(a.ids.len() as u32).to_le_bytes());
            put_string(&mut body, &a.name);
            for id in &a.ids {
                body.extend_from_slice(&id.to_le_bytes());
            }
        }
        body
    }
}

fn attrs_offset_size(attrs: &[AttrEntry], attr_len: usize) -> u64 {
    attrs.len() as u64 * (attr_len as u64 + 16)
}

/// The size a reader will use for this attr: its own `size` field (0 means the first
/// ABI, 64 bytes), or the byte length when the field is missing.
fn declared_attr_size(bytes: &[u8]) -> usize {
    if bytes.len() < 8 {
        return 64;
    }
    let size = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
    if size == 0 {
        64
    } else {
        size
    }
}

/// The attr cut or zero-padded to exactly `len` bytes.
fn sized_attr(bytes: &[u8], len: usize) -> Vec<u8> {
    let mut v = bytes[..bytes.len().min(len)].to_vec();
    v.resize(len, 0);
    v
}

/// perf_header_string: u32 length (NUL included, padded to NAME_ALIGN), then the bytes.
fn put_string(out: &mut Vec<u8>, s: &str) {
    let len = s.len() + 1;
    let padded = len.div_ceil(NAME_ALIGN) * NAME_ALIGN;
    out.extend_from_slice(&(padded as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
    out.resize(out.len() + (padded - s.len()), 0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn u64_at(b: &[u8], o: usize) -> u64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[o..o + 8]);
        u64::from_le_bytes(a)
    }

    #[test]
    fn header_sections_and_features_are_consistent() {
        let dir = std::env::temp_dir().join(format!("kairos-write-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_default();
        let path = dir.join("t.perf.data");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .expect("create");
        let mut w = PerfDataWriter::create(file).expect("writer");
        let mut attr = vec![0u8; 128];
        attr[0..4].copy_from_slice(&1u32.to_le_bytes());
        attr[4..8].copy_from_slice(&128u32.to_le_bytes());
        w.add_attr(attr, vec![7, 8], "cpu-clock".into());
        w.set_feature_string(StringFeature::Hostname, "host");
        w.set_nr_cpus(2, 2);
        // A FINISHED_ROUND record (type 68) is the smallest valid record.
        let rec = [68u8, 0, 0, 0, 0, 0, 8, 0];
        w.write_record(&rec).expect("record");
        w.write_record(&rec).expect("record");
        assert!(w.write_record(&[1, 2]).is_err());
        let data = w.finish().expect("finish");
        assert_eq!(data, 16);
        let mut bytes = Vec::new();
        std::fs::File::open(&path)
            .expect("open")
            .read_to_end(&mut bytes)
            .expect("read");
        assert_eq!(u64_at(&bytes, 0), PERF_MAGIC);
        assert_eq!(u64_at(&bytes, 8), HEADER_SIZE);
        assert_eq!(u64_at(&bytes, 16), 144);
        let (ao, asz) = (u64_at(&bytes, 24) as usize, u64_at(&bytes, 32) as usize);
        assert_eq!(asz, 144);
        assert_eq!(u64_at(&bytes, 40), 104);
        assert_eq!(u64_at(&bytes, 48), 16);
        let bitmap = u64_at(&bytes, 72);
        assert_eq!(bitmap, (1 << 3) | (1 << 7) | (1 << 12));
        // ids of the attr
        let (io, isz) = (
            u64_at(&bytes, ao + 128) as usize,
            u64_at(&bytes, ao + 136) as usize,
        );
        assert_eq!(isz, 16);
        assert_eq!(u64_at(&bytes, io), 7);
        assert_eq!(u64_at(&bytes, io + 8), 8);
        // first feature index entry (HOSTNAME) points to "host" padded to 64
        let fo = 104 + 16;
        let (ho, hs) = (u64_at(&bytes, fo) as usize, u64_at(&bytes, fo + 8) as usize);
        assert_eq!(hs, 4 + 64);
        assert_eq!(&bytes[ho + 4..ho + 8], b"host");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A 128-byte perf_event_attr of `type_` and `config`.
    fn attr(type_: u32, config: u64) -> Vec<u8> {
        let mut a = vec![0u8; 128];
        a[0..4].copy_from_slice(&type_.to_le_bytes());
        a[4..8].copy_from_slice(&128u32.to_le_bytes());
        a[8..16].copy_from_slice(&config.to_le_bytes());
        a
    }

    /// Writes a file of `attrs` (type, config, name) with PMU_MAPPINGS and reads it back.
    fn hybrid_file(attrs: &[(u32, u64, &str)], mappings: bool) -> crate::PerfFile {
        static FILES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = FILES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "kairos-write-hybrid-{}-{n}.data",
            std::process::id()
        ));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .expect("create");
        let mut w = PerfDataWriter::create(file).expect("writer");
        for (i, (t, c, name)) in attrs.iter().enumerate() {
            w.add_attr(attr(*t, *c), vec![100 + i as u64], (*name).into());
        }
        if mappings {
            w.set_pmu_mappings(&[(4, "cpu_core"), (10, "cpu_atom"), (1, "software")]);
        }
        w.write_record(&[68u8, 0, 0, 0, 0, 0, 8, 0])
            .expect("record");
        w.finish().expect("finish");
        let bytes = std::fs::read(&path).expect("read");
        let _ = std::fs::remove_file(&path);
        crate::PerfFile::from_bytes(bytes).expect("read back")
    }

    fn names(f: &crate::PerfFile) -> Vec<String> {
        f.attrs()
            .iter()
            .map(|a| a.name.clone().unwrap_or_default())
            .collect()
    }

    #[test]
    fn pmu_mappings_are_written_read_and_name_a_hybrid_cpus_events() {
        let hybrid = [
            (0, 4 << 32, "cycles"),
            (0, 10 << 32, "cycles"),
            (0, (4 << 32) | 1, "instructions:u"),
            (1, 0, "cpu-clock"),
        ];
        let f = hybrid_file(&hybrid, true);
        assert_eq!(
            f.features().pmu_mappings,
            [
                (4, "cpu_core".to_string()),
                (10, "cpu_atom".into()),
                (1, "software".into())
            ]
        );
        assert_eq!(f.features().pmu_name(10), Some("cpu_atom"));
        assert_eq!(f.attrs()[0].attr.hybrid_pmu_type(), Some(4));
        assert_eq!(f.attrs()[3].attr.hybrid_pmu_type(), None);
        assert_eq!(
            names(&f),
            [
                "cpu_core/cycles/",
                "cpu_atom/cycles/",
                "cpu_core/instructions/u",
                "cpu-clock"
            ]
        );
        // As perf names them: left as they are.
        let f = hybrid_file(
            &[
                (0, 4 << 32, "cpu_core/cycles/"),
                (0, 10 << 32, "cpu_atom/cycles/"),
            ],
            true,
        );
        assert_eq!(names(&f), ["cpu_core/cycles/", "cpu_atom/cycles/"]);
        // Without PMU_MAPPINGS the type number tells them apart.
        let f = hybrid_file(&[(0, 4 << 32, "cycles"), (0, 10 << 32, "cycles")], false);
        assert!(f.features().pmu_mappings.is_empty());
        assert_eq!(names(&f), ["pmu4/cycles/", "pmu10/cycles/"]);
    }

    #[test]
    fn strings_are_padded_to_64() {
        let mut v = Vec::new();
        put_string(&mut v, &"x".repeat(63));
        assert_eq!(v.len(), 4 + 64);
        let mut v = Vec::new();
        put_string(&mut v, &"x".repeat(64));
        assert_eq!(v.len(), 4 + 128);
    }
}
