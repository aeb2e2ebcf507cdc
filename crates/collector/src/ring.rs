//! The kernel's per-event ring buffer: one metadata page followed by 2^n data pages.
//!
//! The kernel advances `data_head` as it writes records; we copy records out between our
//! `data_tail` and the head, then publish the new tail so the kernel may reuse the space.
//! A record may wrap around the end of the data area, so wrapped records are reassembled
//! in a scratch buffer.

use std::io;
use std::os::fd::RawFd;
use std::ptr::addr_of_mut;
use std::sync::atomic::{AtomicU64, Ordering};

use perf_event_open_sys::bindings::perf_event_mmap_page;

pub struct Ring {
    base: *mut u8,
    map_len: usize,
    data_offset: usize,
    data_size: u64,
    scratch: Vec<u8>,
}

// SAFETY: the mapping is owned by this value and only touched through &mut self.
unsafe impl Send for Ring {}

impl Ring {
    /// Maps the buffer of `fd` with `data_pages` data pages (rounded up to a power of two).
    pub fn map(fd: RawFd, data_pages: usize) -> io::Result<Ring> {
        let page = page_size();
        let pages = data_pages.max(1).next_power_of_two();
        let map_len = (pages + 1) * page;
        // SAFETY: mapping a perf fd; PROT_WRITE is needed to publish data_tail (and makes
        // the kernel stop, rather than overwrite, when we fall behind).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = p as *mut u8;
        // Kernels since 4.1 say where the data area is; older ones leave these zero.
        let meta = base as *mut perf_event_mmap_page;
        // SAFETY: the first page of the mapping is the metadata page.
        let (off, size) = unsafe { ((*meta).data_offset, (*meta).data_size) };
        let (data_offset, data_size) = if size == 0 {
            (page, (pages * page) as u64)
        } else {
            (off as usize, size)
        };
        Ok(Ring {
            base,
            map_len,
            data_offset,
            data_size,
            scratch: Vec::new(),
        })
    }

    fn head_tail(&self) -> (&AtomicU64, &AtomicU64) {
        let meta = self.base as *mut perf_event_mmap_page;
        // SAFETY: data_head/data_tail are naturally aligned u64 fields of the mapped
        // metadata page, shared with the kernel; atomics give the required ordering.
        unsafe {
            (
                AtomicU64::from_ptr(addr_of_mut!((*meta).data_head)),
                AtomicU64::from_ptr(addr_of_mut!((*meta).data_tail)),
            )
        }
    }

    /// Bytes waiting to be read.
    pub fn pending(&self) -> u64 {
        let (head, tail) = self.head_tail();
        head.load(Ordering::Acquire)
            .wrapping_sub(tail.load(Ordering::Relaxed))
    }

    /// Hands every complete record currently in the buffer to `sink` (header included),
    /// then frees their space. Returns the number of bytes consumed.
    pub fn drain(&mut self, sink: &mut dyn FnMut(&[u8])) -> u64 {
        let (head_a, tail_a) = self.head_tail();
        // Acquire pairs with the kernel's write barrier: the record bytes up to `head`
        // are visible once we see `head`.
        let head = head_a.load(Ordering::Acquire);
        let start = tail_a.load(Ordering::Relaxed);
        let mut tail = start;
        let size = self.data_size;
        // SAFETY: data area lies inside the mapping.
        let data = unsafe { self.base.add(self.data_offset) };
        while head.wrapping_sub(tail) >= 8 {
            let off = (tail % size) as usize;
            // Records are 8-byte aligned and the area a multiple of 8, so the header
            // never wraps.
            // SAFETY: off + 8 <= size.
            let hdr = unsafe { std::slice::from_raw_parts(data.add(off), 8) };
            let rec_len = u16::from_le_bytes([hdr[6], hdr[7]]) as u64;
            if rec_len < 8 || rec_len > head.wrapping_sub(tail) {
                // Corrupt or torn: skip to head rather than loop forever.
                tail = head;
                break;
            }
            let first = (size - off as u64).min(rec_len) as usize;
            if first as u64 == rec_len {
                // SAFETY: [off, off+rec_len) is inside the data area.
                let rec = unsafe { std::slice::from_raw_parts(data.add(off), rec_len as usize) };
                sink(rec);
            } else {
                self.scratch.clear();
                // SAFETY: both parts lie inside the data area.
                unsafe {
                    self.scratch
                        .extend_from_slice(std::slice::from_raw_parts(data.add(off), first));
                    self.scratch.extend_from_slice(std::slice::from_raw_parts(
                        data,
                        rec_len as usize - first,
                    ));
                }
                sink(&self.scratch);
            }
            tail = tail.wrapping_add(rec_len);
        }
        // Release: our reads of the records happen before the kernel may overwrite them.
        let (_, tail_a) = self.head_tail();
        tail_a.store(tail, Ordering::Release);
        tail.wrapping_sub(start)
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what map() mapped.
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, self.map_len);
        }
    }
}

pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}
