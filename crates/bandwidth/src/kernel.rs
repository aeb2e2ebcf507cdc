//! The loops: a triad and a copy over arrays split among threads pinned to CPUs, started
//! together; the time is from the common start to the last thread's end.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use crate::numa::{bind, pin_to};
use crate::Error;

/// An anonymous mapping of f64s, optionally bound to one node before its first touch.
pub struct Array {
    ptr: *mut f64,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone; threads get disjoint slices of it.
unsafe impl Send for Array {}
// SAFETY: shared access is only through `&[f64]` (read-only).
unsafe impl Sync for Array {}

impl Array {
    pub fn new(elements: usize, node: Option<u32>) -> Result<Array, Error> {
        let bytes = elements
            .checked_mul(8)
            .filter(|&b| b > 0)
            .ok_or_else(|| Error::Bad("the array size must be at least one element".into()))?;
        // SAFETY: a fresh private anonymous mapping; checked for failure below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::Alloc {
                mib: bytes >> 20,
                source: std::io::Error::last_os_error(),
            });
        }
        let a = Array {
            ptr: p.cast(),
            len: elements,
        };
        if let Some(n) = node {
            bind(p as usize, bytes, n)?;
        }
        Ok(a)
    }

    pub fn as_slice(&self) -> &[f64] {
        // SAFETY: ptr/len describe our live mapping (zero-filled by the kernel).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [f64] {
        // SAFETY: as above, and &mut self makes this the only access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Array {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping we made, once.
        unsafe { libc::munmap(self.ptr.cast(), self.len * 8) };
    }
}

/// What each thread does to its part: (a, b, c) chunks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kernel {
    /// a = b + s * c, `passes` times.
    Triad { passes: u32 },
    /// a = b, `passes` times.
    Copy { passes: u32 },
    /// First touch of all three arrays by the pinned threads.
    Init,
}

/// Runs `k` on `cpus` (one thread each) over the arrays; the elapsed time.
pub fn run(
    k: Kernel,
    cpus: &[u32],
    a: &mut Array,
    b: &mut Array,
    c: &mut Array,
) -> Result<Duration, Error> {
    if cpus.is_empty() {
        return Err(Error::Bad("no CPU to run on".into()));
    }
    let chunk = a.len.div_ceil(cpus.len()).max(1);
    match k {
        Kernel::Init => {
            let parts = a
                .as_mut_slice()
                .chunks_mut(chunk)
                .zip(b.as_mut_slice().chunks_mut(chunk))
                .zip(c.as_mut_slice().chunks_mut(chunk));
            parallel(cpus, parts.collect(), |((x, y), z)| {
                x.fill(1.0);
                y.fill(2.0);
                z.fill(0.5);
            })
        }
        Kernel::Triad { passes } => {
            let parts = a
                .as_mut_slice()
                .chunks_mut(chunk)
                .zip(b.as_slice().chunks(chunk))
                .zip(c.as_slice().chunks(chunk));
            parallel(cpus, parts.collect(), |((x, y), z)| {
                for _ in 0..passes {
                    for ((o, p), q) in x.iter_mut().zip(y.iter()).zip(z.iter()) {
                        *o = p + 3.0 * q;
                    }
                    std::hint::black_box(&x);
                }
            })
        }
        Kernel::Copy { passes } => {
            let parts = a
                .as_mut_slice()
                .chunks_mut(chunk)
                .zip(b.as_slice().chunks(chunk));
            parallel(cpus, parts.collect(), |(x, y)| {
                for _ in 0..passes {
                    x.copy_from_slice(y);
                    std::hint::black_box(&x);
                }
            })
        }
    }
}

/// One thread per part, part i pinned to cpus[i % len], all started together.
fn parallel<T: Send>(
    cpus: &[u32],
    parts: Vec<T>,
    work: impl Fn(T) + Sync,
) -> Result<Duration, Error> {
    let barrier = Barrier::new(parts.len() + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = parts
            .into_iter()
            .enumerate()
            .map(|(i, part)| {
                let (cpu, barrier, work) = (cpus[i % cpus.len()], &barrier, &work);
                s.spawn(move || -> Result<(), Error> {
                    let pinned = pin_to(cpu);
                    // Waits even when pinning failed, so that the others are not left waiting.
                    barrier.wait();
                    pinned?;
                    work(part);
                    Ok(())
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let mut first_err = None;
        for h in handles {
            match h.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => first_err = first_err.or(Some(e)),
                Err(_) => {
                    first_err = first_err.or(Some(Error::Bad("a measuring thread panicked".into())))
                }
            }
        }
        first_err.map_or(Ok(start.elapsed()), Err)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triad_and_copy_compute_what_they_claim() {
        let mk = || Array::new(1000, None).unwrap_or_else(|e| panic!("{e}"));
        let (mut a, mut b, mut c) = (mk(), mk(), mk());
        let cpus = [0, 0, 0];
        run(Kernel::Init, &cpus, &mut a, &mut b, &mut c).unwrap_or_else(|e| panic!("{e}"));
        assert!(b.as_slice().iter().all(|&x| x == 2.0) && c.as_slice().iter().all(|&x| x == 0.5));
        run(Kernel::Triad { passes: 2 }, &cpus, &mut a, &mut b, &mut c)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(a.as_slice().iter().all(|&x| x == 3.5), "2 + 3 * 0.5");
        run(Kernel::Copy { passes: 1 }, &cpus, &mut a, &mut b, &mut c)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(a.as_slice().iter().all(|&x| x == 2.0));
    }

    #[test]
    fn a_cpu_that_does_not_exist_is_an_error() {
        let mk = || Array::new(64, None).unwrap_or_else(|e| panic!("{e}"));
        let (mut a, mut b, mut c) = (mk(), mk(), mk());
        let e = run(Kernel::Init, &[1000], &mut a, &mut b, &mut c).expect_err("no CPU 1000");
        assert!(e.to_string().contains("CPU 1000"), "{e}");
    }
}
