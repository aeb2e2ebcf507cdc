//! Pinning threads to CPUs and binding memory to a node: the two things a per-node
//! measurement needs, as thin wrappers over the syscalls.

use std::io;

use crate::Error;

/// linux/mempolicy.h
const MPOL_BIND: i32 = 2;

/// Pins the calling thread to `cpu`.
pub fn pin_to(cpu: u32) -> Result<(), Error> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if cpu as usize >= libc::CPU_SETSIZE as usize {
        return Err(Error::Bad(format!(
            "CPU {cpu} is beyond the {} CPUs a cpu_set_t holds",
            libc::CPU_SETSIZE
        )));
    }
    // SAFETY: cpu is below CPU_SETSIZE.
    unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    // SAFETY: set is a valid cpu_set_t of the size given.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(Error::Pin {
            cpu,
            source: io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// Binds `len` bytes at `addr` (page-aligned, not yet touched) to `node`'s memory. The
/// address is a number: mbind(2) only sets the range's policy (a range we do not map is
/// the kernel's EFAULT), nothing is read or written through it here.
pub fn bind(addr: usize, len: usize, node: u32) -> Result<(), Error> {
    let mut mask = [0u64; 16];
    let (word, bit) = (node as usize / 64, node % 64);
    let Some(w) = mask.get_mut(word) else {
        return Err(Error::Bad(format!(
            "node {node} is beyond the {} nodes a mask holds here",
            16 * 64
        )));
    };
    *w |= 1 << bit;
    // SAFETY: the kernel reads only `mask`, which outlives the call and holds maxnode
    // bits; addr/len name a range, checked by the kernel.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            addr,
            len,
            MPOL_BIND,
            mask.as_ptr(),
            (mask.len() * 64) as u64,
            0u32,
        )
    };
    if r != 0 {
        let source = io::Error::last_os_error();
        let hint = match source.raw_os_error() {
            Some(libc::ENOSYS) => ": the kernel was built without NUMA support",
            Some(libc::EPERM) => ": not permitted (a cpuset or seccomp policy forbids it)",
            Some(libc::EINVAL) => ": the node has no memory",
            _ => "",
        };
        return Err(Error::Bind { node, source, hint });
    }
    Ok(())
}
