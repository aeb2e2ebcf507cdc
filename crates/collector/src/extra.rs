//! Extra events recorded next to the sampling event, into the same per-CPU rings and the
//! same perf.data file (one attr each, records told apart by their id): software page
//! faults, tracepoints. Used by `kairos collect system-overview`.
//!
//! Every extra event counts each occurrence (sample_period 1) and shares the sampling
//! event's time stamps (CLOCK_MONOTONIC) and sample_id trailer layout, which perf requires
//! of the attrs of one file. Side-band records (mmap, comm, task) come from the sampling
//! event only, so they are not duplicated.

use std::io;
use std::path::Path;

use perf_event_open_sys::bindings as b;

use crate::attr::ATTR_SIZE;

/// tracefs, where tracepoint ids are listed.
pub const TRACEFS: &str = "/sys/kernel/tracing";

/// One extra event to open on every (task, CPU) pair of the sampling event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraEvent {
    /// perf's name, e.g. "minor-faults" or "raw_syscalls:sys_enter".
    pub name: String,
    pub type_: u32,
    pub config: u64,
    /// Record the faulting data address (PERF_SAMPLE_ADDR).
    pub addr: bool,
    /// Record the tracepoint's payload (PERF_SAMPLE_RAW): syscall and IRQ numbers.
    pub raw: bool,
    /// Record the user call chain (the kernel part is left out: it only names the
    /// tracepoint's own call path, at a high cost per event).
    pub user_callchain: bool,
    /// For a uprobe PMU event: the probed file and the offset of the probed instruction
    /// (the attr's config1 and config2; `config` holds the return-probe bit and the
    /// reference counter's offset).
    pub probe: Option<ProbeSite>,
    /// Opened once per CPU for every process (pid -1), enabled at once, not inherited:
    /// what a uprobe PMU event needs, as the kernel reads its path again in the target's
    /// own memory when an inherited copy is made at clone, which then fails (a program
    /// could not start threads). Its records name their process; keeping the target's
    /// is the reader's job.
    pub every_process: bool,
}

/// Where a uprobe PMU event is placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeSite {
    pub path: std::ffi::CString,
    pub offset: u64,
}

/// Whether an extra event could be opened, and why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraOutcome {
    pub name: String,
    /// None when recorded, else why not.
    pub missing: Option<String>,
}

impl ExtraEvent {
    /// A software page-fault event (`PERF_COUNT_SW_PAGE_FAULTS_MIN`/`_MAJ`): the kernel
    /// emits it at the end of handle_mm_fault (mm_account_fault), with the faulting
    /// instruction's registers and the faulting address.
    pub fn software(name: &str, config: u32) -> ExtraEvent {
        ExtraEvent {
            name: name.into(),
            type_: b::PERF_TYPE_SOFTWARE,
            config: config as u64,
            addr: true,
            raw: false,
            user_callchain: true,
            probe: None,
            every_process: false,
        }
    }

    /// Every minor page fault (no I/O).
    pub fn minor_faults() -> ExtraEvent {
        ExtraEvent::software("minor-faults", b::PERF_COUNT_SW_PAGE_FAULTS_MIN)
    }

    /// Every major page fault (waited for I/O).
    pub fn major_faults() -> ExtraEvent {
        ExtraEvent::software("major-faults", b::PERF_COUNT_SW_PAGE_FAULTS_MAJ)
    }

    /// A tracepoint by its tracefs id.
    pub fn tracepoint(
        system: &str,
        event: &str,
        raw: bool,
        user_callchain: bool,
    ) -> io::Result<ExtraEvent> {
        let id = tracepoint_id(system, event)?;
        Ok(ExtraEvent {
            name: format!("{system}:{event}"),
            type_: b::PERF_TYPE_TRACEPOINT,
            config: id,
            addr: false,
            raw,
            user_callchain,
            probe: None,
            every_process: false,
        })
    }

    /// A tracepoint (as opposed to a software event such as minor-faults).
    pub fn is_tracepoint(&self) -> bool {
        self.type_ == b::PERF_TYPE_TRACEPOINT
    }

    /// The attr: counting every occurrence, in the sampling event's clock and trailer layout.
    pub fn attr(
        &self,
        include_kernel: bool,
        enable_on_exec: bool,
        inherit: bool,
    ) -> b::perf_event_attr {
        // SAFETY: perf_event_attr is plain old data; all-zero is its documented default.
        let mut a: b::perf_event_attr = unsafe { std::mem::zeroed() };
        a.size = ATTR_SIZE;
        a.type_ = self.type_;
        a.config = self.config;
        if let Some(p) = &self.probe {
            // The kernel copies the path during perf_event_open; `self` outlives the call.
            a.__bindgen_anon_3.config1 = p.path.as_ptr() as u64;
            a.__bindgen_anon_4.config2 = p.offset;
        }
        a.__bindgen_anon_1.sample_period = 1;
        // IDENTIFIER, IP, TID, TIME first, as for the sampling event: readers (and the
        // collector's own record counting) find id and time at the same place.
        let mut t = (b::PERF_SAMPLE_IDENTIFIER
            | b::PERF_SAMPLE_IP
            | b::PERF_SAMPLE_TID
            | b::PERF_SAMPLE_TIME
            | b::PERF_SAMPLE_CPU
            | b::PERF_SAMPLE_PERIOD) as u64;
        if self.addr {
            t |= b::PERF_SAMPLE_ADDR as u64;
        }
        if self.raw {
            t |= b::PERF_SAMPLE_RAW as u64;
        }
        if self.user_callchain {
            t |= b::PERF_SAMPLE_CALLCHAIN as u64;
            a.set_exclude_callchain_kernel(1);
        }
        a.sample_type = t;
        a.set_disabled(1);
        a.set_enable_on_exec(enable_on_exec as u64);
        a.set_inherit(inherit as u64);
        a.set_sample_id_all(1);
        a.set_use_clockid(1);
        a.clockid = libc::CLOCK_MONOTONIC;
        // A tracepoint fires in the kernel, so exclude_kernel would silence it entirely
        // (perf_tp_event_match keeps only user-mode regs then): it is left to the user
        // call chain setting above to keep kernel frames out.
        if !include_kernel && !self.is_tracepoint() {
            a.set_exclude_kernel(1);
            a.set_exclude_hv(1);
        }
        a
    }
}

/// Mounts tracefs at /sys/kernel/tracing when nothing is there yet (root only): tracepoint
/// ids are read from it. Returns what was done, for the manifest.
pub fn ensure_tracefs() -> Result<Option<String>, String> {
    if Path::new(TRACEFS).join("events").is_dir() {
        return Ok(None);
    }
    if Path::new("/sys/kernel/debug/tracing/events").is_dir() {
        return Ok(None);
    }
    let src = c"nodev";
    let target = c"/sys/kernel/tracing";
    let fstype = c"tracefs";
    // SAFETY: all pointers are valid NUL-terminated strings; no data argument.
    let r = unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if r != 0 {
        let e = io::Error::last_os_error();
        return Err(format!("tracefs is not mounted and mounting it at {TRACEFS} failed ({e}); run as root or `mount -t tracefs nodev {TRACEFS}`"));
    }
    Ok(Some(format!(
        "mounted tracefs at {TRACEFS} to read tracepoint ids"
    )))
}

/// The id of tracepoint SYSTEM:EVENT from tracefs (or the older debugfs location).
pub fn tracepoint_id(system: &str, event: &str) -> io::Result<u64> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no tracefs");
    for root in [TRACEFS, "/sys/kernel/debug/tracing"] {
        let p = Path::new(root)
            .join("events")
            .join(system)
            .join(event)
            .join("id");
        match std::fs::read_to_string(&p) {
            Ok(s) => {
                return s.trim().parse().map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("{}: not a number", p.display()),
                    )
                })
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// A tracepoint's field offsets and sizes, by name, from its tracefs `format` file, so
/// kernel layout changes are followed.
#[derive(Debug, Clone, Default)]
pub struct TracepointFields(std::collections::HashMap<String, (usize, usize)>);

impl TracepointFields {
    /// Parses a tracefs `format` file (`field:unsigned int len; offset:16; size:4; ...`).
    pub fn parse(format: &str) -> TracepointFields {
        let mut out = std::collections::HashMap::new();
        for line in format.lines() {
            let mut name = None;
            let (mut offset, mut size) = (None, None);
            for part in line.split(';').map(str::trim) {
                if let Some(decl) = part.strip_prefix("field:") {
                    // The name is the last word, without an array suffix.
                    name = decl
                        .split_whitespace()
                        .last()
                        .map(|w| w.split('[').next().unwrap_or(w).to_string());
                } else if let Some(v) = part.strip_prefix("offset:") {
                    offset = v.parse().ok();
                } else if let Some(v) = part.strip_prefix("size:") {
                    size = v.parse().ok();
                }
            }
            if let (Some(n), Some(o), Some(s)) = (name, offset, size) {
                out.insert(n, (o, s));
            }
        }
        TracepointFields(out)
    }

    /// The format of SYSTEM:EVENT from tracefs (or the older debugfs location).
    pub fn read(system: &str, event: &str) -> Option<TracepointFields> {
        [TRACEFS, "/sys/kernel/debug/tracing"]
            .iter()
            .find_map(|root| {
                let p = Path::new(root)
                    .join("events")
                    .join(system)
                    .join(event)
                    .join("format");
                std::fs::read_to_string(p)
                    .ok()
                    .map(|f| TracepointFields::parse(&f))
            })
    }

    /// (offset, size) of field `name`.
    pub fn get(&self, name: &str) -> Option<(usize, usize)> {
        self.0.get(name).copied()
    }

    pub(crate) fn uint(&self, raw: &[u8], name: &str) -> Option<u64> {
        field_uint(raw, self.get(name)?)
    }

    pub(crate) fn text(&self, raw: &[u8], name: &str) -> Option<String> {
        field_text(raw, self.get(name)?)
    }
}

/// An unsigned field of 1, 2, 4 or 8 bytes at (offset, size) of a tracepoint's payload.
pub fn field_uint(raw: &[u8], (o, s): (usize, usize)) -> Option<u64> {
    let b = raw.get(o..o.checked_add(s)?)?;
    Some(match s {
        1 => b[0] as u64,
        2 => u16::from_le_bytes(b.try_into().ok()?) as u64,
        4 => u32::from_le_bytes(b.try_into().ok()?) as u64,
        8 => u64::from_le_bytes(b.try_into().ok()?),
        _ => return None,
    })
}

/// A fixed char array or a `__data_loc char[]` (u32: length << 16 | offset) at (offset,
/// size) of a tracepoint's payload.
pub fn field_text(raw: &[u8], (o, s): (usize, usize)) -> Option<String> {
    let bytes = if s == 4 {
        let loc = u32::from_le_bytes(raw.get(o..o.checked_add(4)?)?.try_into().ok()?);
        let (start, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
        raw.get(start..start + len)?
    } else {
        raw.get(o..o.checked_add(s)?)?
    };
    let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
    Some(String::from_utf8_lossy(&bytes[..end]).into_owned())
}

/// The HEADER_TRACING_DATA feature perf needs to read a file with tracepoint events: the
/// format description of each recorded tracepoint (from tracefs), in the layout of perf's
/// trace-event-info (magic, version "0.6", endianness, long size, page size, header_page,
/// header_event, ftrace formats, event formats by system, kallsyms, printk formats, saved
/// cmdlines). None when tracefs cannot be read.
pub fn tracing_data(events: &[ExtraEvent]) -> Option<Vec<u8>> {
    let root = [TRACEFS, "/sys/kernel/debug/tracing"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.join("events").is_dir())?;
    let read = |p: &Path| std::fs::read(p).ok();
    let mut out = vec![0x17, 0x08, 0x44];
    out.extend_from_slice(b"tracing0.6\0");
    out.push(0); // little endian
    out.push(std::mem::size_of::<libc::c_long>() as u8);
    out.extend_from_slice(&(crate::ring::page_size() as u32).to_le_bytes());
    for name in ["header_page", "header_event"] {
        let body = read(&root.join("events").join(name))?;
        out.extend_from_slice(name.as_bytes());
        out.push(0);
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&body);
    }
    out.extend_from_slice(&0u32.to_le_bytes()); // no ftrace internal formats
                                                // Tracepoints grouped by system, in first-seen order.
    let mut systems: Vec<(String, Vec<Vec<u8>>)> = Vec::new();
    for e in events.iter().filter(|e| e.type_ == b::PERF_TYPE_TRACEPOINT) {
        let Some((sys, ev)) = e.name.split_once(':') else {
            continue;
        };
        let Some(format) = read(&root.join("events").join(sys).join(ev).join("format")) else {
            continue;
        };
        match systems.iter_mut().find(|(s, _)| s == sys) {
            Some((_, v)) => v.push(format),
            None => systems.push((sys.to_string(), vec![format])),
        }
    }
    out.extend_from_slice(&(systems.len() as u32).to_le_bytes());
    for (sys, formats) in &systems {
        out.extend_from_slice(sys.as_bytes());
        out.push(0);
        out.extend_from_slice(&(formats.len() as u32).to_le_bytes());
        for f in formats {
            out.extend_from_slice(&(f.len() as u64).to_le_bytes());
            out.extend_from_slice(f);
        }
    }
    out.extend_from_slice(&0u32.to_le_bytes()); // kallsyms: kept in the result directory instead
    out.extend_from_slice(&0u32.to_le_bytes()); // printk formats
    out.extend_from_slice(&0u64.to_le_bytes()); // saved cmdlines
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_attr_counts_every_event_with_address() {
        let e = ExtraEvent::software("minor-faults", b::PERF_COUNT_SW_PAGE_FAULTS_MIN);
        let a = e.attr(true, true, true);
        assert_eq!(unsafe { a.__bindgen_anon_1.sample_period }, 1);
        assert_ne!(a.sample_type & b::PERF_SAMPLE_ADDR as u64, 0);
        assert_ne!(a.sample_type & b::PERF_SAMPLE_IDENTIFIER as u64, 0);
        assert_eq!(
            a.mmap(),
            0,
            "side-band records come from the sampling event only"
        );
        assert_eq!(a.exclude_callchain_kernel(), 1);
        assert_eq!(
            e.attr(false, true, true).exclude_kernel(),
            1,
            "user faults only when the kernel is excluded"
        );
    }

    #[test]
    fn a_tracepoint_is_never_silenced_by_exclude_kernel() {
        let e = ExtraEvent {
            name: "exceptions:page_fault_user".into(),
            type_: b::PERF_TYPE_TRACEPOINT,
            config: 1,
            addr: false,
            raw: true,
            user_callchain: true,
            probe: None,
            every_process: false,
        };
        assert_eq!(e.attr(false, true, true).exclude_kernel(), 0);
        assert_eq!(e.attr(false, true, true).exclude_callchain_kernel(), 1);
    }
}
