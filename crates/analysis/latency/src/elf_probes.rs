//! What the boundaries need from the target's ELF files: a function's file offset (with
//! the nearest names when it is not there, and a clear word when the file is stripped),
//! the USDT probes of `.note.stapsdt`, and where the marker ring lies (section
//! `kairos_requests`).

use std::path::{Path, PathBuf};

use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SymbolKind};

/// The ELF section of the request markers' ring header (runtime/requests).
pub const MARKER_SECTION: &str = "kairos_requests";

/// One place to probe in one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    pub path: PathBuf,
    /// Offset of the instruction in the file.
    pub offset: u64,
    /// File offset of a USDT semaphore, counted up while the probe is attached.
    pub semaphore: Option<u64>,
}

/// Why a place cannot be probed: one sentence each.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    #[error("{path}: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("no function {name} in {where_}{nearest}")]
    NoFunction {
        name: String,
        where_: String,
        nearest: String,
    },
    #[error("{path} is stripped (it has no symbol table), so function {name} cannot be found in it: probe a function its libraries export, build it with symbols, mark requests with runtime/requests/kairos_requests.h, or give USDT probes")]
    Stripped { name: String, path: String },
    #[error("no USDT probe {provider}:{name} in {path}{present}")]
    NoUsdt {
        provider: String,
        name: String,
        path: String,
        present: String,
    },
}

fn map(path: &Path) -> Result<memmap2::Mmap, ProbeError> {
    let bad = |e: std::io::Error| ProbeError::Unreadable {
        path: path.display().to_string(),
        reason: e.to_string(),
    };
    let f = std::fs::File::open(path).map_err(bad)?;
    // SAFETY: a read-only map used within this call; binaries are replaced, not rewritten
    // in place, by linkers and package managers.
    unsafe { memmap2::Mmap::map(&f) }.map_err(bad)
}

fn parse<'a>(path: &Path, data: &'a [u8]) -> Result<object::File<'a>, ProbeError> {
    object::File::parse(data).map_err(|e| ProbeError::Unreadable {
        path: path.display().to_string(),
        reason: format!("not an ELF file ({e})"),
    })
}

/// The file offset of virtual address `vaddr` (in a loaded segment with file contents).
fn file_offset(file: &object::File<'_>, vaddr: u64) -> Option<u64> {
    file.segments().find_map(|s| {
        let (off, size) = s.file_range();
        let start = s.address();
        (vaddr >= start && vaddr - start < size).then(|| vaddr - start + off)
    })
}

/// The defined functions of a file: (name, file offset).
fn functions(file: &object::File<'_>) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text && s.is_definition() && s.size() > 0)
        .filter_map(|s| {
            let name = s.name().ok()?;
            // Versioned dynamic names ("memcpy@@GLIBC_2.14") are found by their base name.
            let name = name.split('@').next()?.to_string();
            Some((name, file_offset(file, s.address())?))
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Function `name` in the first of `files` that has it.
pub fn find_function(name: &str, files: &[PathBuf]) -> Result<Site, ProbeError> {
    let mut all_names: Vec<String> = Vec::new();
    let mut stripped = None;
    for path in files {
        let data = map(path)?;
        let file = parse(path, &data)?;
        let funcs = functions(&file);
        if let Some((_, offset)) = funcs.iter().find(|(n, _)| n == name) {
            return Ok(Site {
                path: path.clone(),
                offset: *offset,
                semaphore: None,
            });
        }
        if file.section_by_name(".symtab").is_none() && stripped.is_none() {
            stripped = Some(path.display().to_string());
        }
        all_names.extend(funcs.into_iter().map(|(n, _)| n));
    }
    let nearest = nearest(name, &all_names);
    if nearest.is_empty() {
        if let Some(path) = stripped {
            return Err(ProbeError::Stripped {
                name: name.into(),
                path,
            });
        }
    }
    Err(ProbeError::NoFunction {
        name: name.into(),
        where_: files
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        nearest: if nearest.is_empty() {
            String::new()
        } else {
            format!("; the nearest names are {}", nearest.join(", "))
        },
    })
}

/// Up to five names closest to `name`: those containing it first, then by edit distance.
pub fn nearest(name: &str, names: &[String]) -> Vec<String> {
    let lower = name.to_lowercase();
    let mut scored: Vec<(usize, &String)> = names
        .iter()
        .filter_map(|n| {
            let d = strsim::levenshtein(&lower, &n.to_lowercase());
            let contains = n.to_lowercase().contains(&lower) || lower.contains(&n.to_lowercase());
            let limit = (name.len() / 3).max(2);
            if contains && n.len() > 2 {
                Some((0, n))
            } else if d <= limit {
                Some((d, n))
            } else {
                None
            }
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(5).map(|(_, n)| n.clone()).collect()
}

/// One USDT probe of `.note.stapsdt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usdt {
    pub provider: String,
    pub name: String,
    pub site: Site,
}

/// The USDT probes of a file (SystemTap's `sys/sdt.h` notes, type 3, owner "stapsdt":
/// pc, base, semaphore as addresses, then provider, name and argument strings). Addresses
/// are moved by the difference between `.stapsdt.base`'s address and the recorded base,
/// as prelinking may have moved the file.
pub fn usdt_probes(path: &Path) -> Result<Vec<Usdt>, ProbeError> {
    let data = map(path)?;
    let file = parse(path, &data)?;
    let base_addr = file.section_by_name(".stapsdt.base").map(|s| s.address());
    let Some(notes) = file.section_by_name(".note.stapsdt") else {
        return Ok(Vec::new());
    };
    let Ok(bytes) = notes.data() else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (owner, kind, desc) in note_entries(bytes) {
        if owner != b"stapsdt" || kind != 3 || desc.len() < 24 {
            continue;
        }
        let word = |i: usize| u64::from_le_bytes(desc[i..i + 8].try_into().unwrap_or([0; 8]));
        let (mut pc, base, mut sem) = (word(0), word(8), word(16));
        if let Some(actual) = base_addr {
            pc = pc.wrapping_add(actual).wrapping_sub(base);
            if sem != 0 {
                sem = sem.wrapping_add(actual).wrapping_sub(base);
            }
        }
        let mut strings = desc[24..].split(|&b| b == 0);
        let provider = String::from_utf8_lossy(strings.next().unwrap_or(&[])).into_owned();
        let name = String::from_utf8_lossy(strings.next().unwrap_or(&[])).into_owned();
        let Some(offset) = file_offset(&file, pc) else {
            continue;
        };
        out.push(Usdt {
            provider,
            name,
            site: Site {
                path: path.to_path_buf(),
                offset,
                semaphore: if sem == 0 {
                    None
                } else {
                    file_offset(&file, sem)
                },
            },
        });
    }
    Ok(out)
}

/// (owner, type, descriptor) of each ELF note in a note section (4-byte aligned fields).
fn note_entries(mut b: &[u8]) -> Vec<(&[u8], u32, &[u8])> {
    let align = |n: usize| (n + 3) & !3;
    let mut out = Vec::new();
    while b.len() >= 12 {
        let u = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]) as usize;
        let (namesz, descsz, kind) = (u(0), u(4), u(8) as u32);
        let name_end = 12 + align(namesz);
        let desc_end = name_end + align(descsz);
        if desc_end > b.len() || name_end + descsz > b.len() {
            break;
        }
        let owner = &b[12..12 + namesz.saturating_sub(1).min(namesz)];
        out.push((owner, kind, &b[name_end..name_end + descsz]));
        b = &b[desc_end..];
    }
    out
}

/// The USDT probe `provider:name` in the first of `files` that has it.
pub fn find_usdt(provider: &str, name: &str, files: &[PathBuf]) -> Result<Site, ProbeError> {
    let mut present = Vec::new();
    for path in files {
        for p in usdt_probes(path)? {
            if p.provider == provider && p.name == name {
                return Ok(p.site);
            }
            present.push(format!("{}:{}", p.provider, p.name));
        }
    }
    present.sort();
    present.dedup();
    Err(ProbeError::NoUsdt {
        provider: provider.into(),
        name: name.into(),
        path: files
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        present: if present.is_empty() {
            "; it has no USDT probes at all".into()
        } else {
            format!("; it has {}", present.join(", "))
        },
    })
}

/// The section holding the marker ring (`kairos_requests`): its file offset and link-time
/// address, or None.
pub fn marker_section(path: &Path) -> Option<(u64, u64)> {
    let data = map(path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    let s = file.section_by_name(MARKER_SECTION)?;
    s.file_range().map(|(off, _)| (off, s.address()))
}

/// The files a request function or USDT probe is looked for in: the program, then the
/// shared libraries it names (DT_NEEDED) where the dynamic loader's usual directories
/// have them.
pub fn program_and_libraries(program: &Path) -> Vec<PathBuf> {
    let mut out = vec![program.to_path_buf()];
    let Ok(data) = map(program) else {
        return out;
    };
    let Ok(file) = object::read::elf::ElfFile64::<object::Endianness>::parse(&*data) else {
        return out;
    };
    let dirs = library_dirs();
    for lib in needed(&file) {
        if let Some(p) = dirs.iter().map(|d| d.join(&lib)).find(|p| p.is_file()) {
            out.push(p);
        }
    }
    out
}

fn library_dirs() -> Vec<PathBuf> {
    let arch = std::env::consts::ARCH;
    [
        format!("/lib/{arch}-linux-gnu"),
        format!("/usr/lib/{arch}-linux-gnu"),
        "/lib64".into(),
        "/usr/lib64".into(),
        "/lib".into(),
        "/usr/lib".into(),
        "/usr/local/lib".into(),
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect()
}

fn needed(file: &object::read::elf::ElfFile64<'_, object::Endianness>) -> Vec<String> {
    use object::read::elf::{Dyn, FileHeader, SectionHeader};
    let endian = file.endian();
    let header = file.elf_header();
    let data = file.data();
    let Ok(sections) = header.sections(endian, data) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for section in sections.iter() {
        let Ok(Some((dyns, link))) = section.dynamic(endian, data) else {
            continue;
        };
        let Ok(strings) = sections.strings(endian, data, link) else {
            continue;
        };
        for d in dyns {
            if d.tag32(endian).map(i64::from) == Some(object::elf::DT_NEEDED.0) {
                if let Ok(name) = d.string(endian, strings) {
                    out.push(String::from_utf8_lossy(name).into_owned());
                }
            }
        }
    }
    out
}

/// The files mapped executable by a running process: its program first, then its
/// libraries, from /proc/PID/maps.
pub fn mapped_files(pid: i32) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_link(format!("/proc/{pid}/exe"))
        .into_iter()
        .collect();
    if let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) {
        for line in maps.lines() {
            let mut f = line.split_whitespace();
            let perms = f.nth(1).unwrap_or("");
            let path = f.nth(3).unwrap_or("");
            if perms.contains('x') && path.starts_with('/') {
                let p = PathBuf::from(path);
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_names_are_substrings_then_close_spellings() {
        let names: Vec<String> = [
            "process_order",
            "process_orders_batch",
            "main",
            "proc_order",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let n = nearest("process_ordr", &names);
        assert_eq!(n.first().map(String::as_str), Some("process_order"));
        assert!(!n.contains(&"main".to_string()));
        assert!(nearest("zzzzzzzzzz", &names).is_empty());
    }

    #[test]
    fn note_entries_reads_owner_type_and_descriptor() {
        let mut b = Vec::new();
        b.extend_from_slice(&8u32.to_le_bytes());
        b.extend_from_slice(&4u32.to_le_bytes());
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(b"stapsdt\0");
        b.extend_from_slice(&[1, 2, 3, 4]);
        let n = note_entries(&b);
        assert_eq!(n, vec![(&b"stapsdt"[..], 3, &[1u8, 2, 3, 4][..])]);
        assert!(note_entries(&b[..10]).is_empty());
    }
}
