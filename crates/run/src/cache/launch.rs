//! Starting the program inside its cache group: between fork and exec the child pins
//! itself to the group's CPUs and writes its own pid into the group's `tasks`, so that its
//! very first instruction already fills only its own ways.

use std::ffi::{CStr, CString};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use crate::Error;

/// How the program is placed.
pub(crate) struct Placing<'a> {
    /// The group's directory.
    pub(crate) group: &'a Path,
    /// Join the group (not for a pseudo-locked region, which holds no tasks).
    pub(crate) in_group: bool,
    /// Pin to these CPUs.
    pub(crate) cpus: Option<&'a [u32]>,
    /// `/dev/pseudo_lock/NAME`, handed to the program in $KAIROS_PSEUDO_LOCK.
    pub(crate) lock_device: Option<&'a Path>,
}

/// The command that starts `program` placed as `how` says.
pub(crate) fn command(program: &str, args: &[String], how: &Placing) -> Result<Command, Error> {
    let mut cmd = Command::new(program);
    cmd.args(args);
    if let Some(dev) = how.lock_device {
        cmd.env("KAIROS_PSEUDO_LOCK", dev);
    }
    let tasks = CString::new(how.group.join("tasks").as_os_str().as_encoded_bytes())
        .map_err(|_| Error::NulInPath)?;
    let in_group = how.in_group;
    // SAFETY: plain data, filled before the fork.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in how.cpus.into_iter().flatten() {
        // SAFETY: c < CPU_SETSIZE (checked when the list was read).
        unsafe { libc::CPU_SET(c as usize, &mut set) };
    }
    let pin = how.cpus.is_some();
    // SAFETY: between fork and exec only async-signal-safe calls: sched_setaffinity,
    // getpid, open, write, close, on memory prepared before the fork.
    unsafe {
        cmd.pre_exec(move || {
            if pin && libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            if in_group {
                join(&tasks)?;
            }
            Ok(())
        });
    }
    Ok(cmd)
}

/// Writes this process's pid into `tasks`. Async-signal-safe: no allocation, only
/// getpid, open, write and close.
fn join(tasks: &CStr) -> std::io::Result<()> {
    let mut buf = [0u8; 24];
    // SAFETY: getpid cannot fail.
    let start = decimal(unsafe { libc::getpid() } as u64, &mut buf);
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let fd = unsafe {
        libc::open(
            tasks.as_ptr(),
            libc::O_WRONLY | libc::O_APPEND | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let line = &buf[start..];
    // SAFETY: writes `line`, which lives until the call returns.
    let w = unsafe { libc::write(fd, line.as_ptr().cast(), line.len()) };
    let err = std::io::Error::last_os_error();
    // SAFETY: our own descriptor.
    unsafe { libc::close(fd) };
    if w < 0 {
        return Err(err);
    }
    Ok(())
}

/// `v` and a newline at the end of `buf`; where they start.
fn decimal(mut v: u64, buf: &mut [u8; 24]) -> usize {
    let mut i = buf.len() - 1;
    buf[i] = b'\n';
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            return i;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_pid_is_written_as_a_line_without_allocating() {
        let mut buf = [0u8; 24];
        let i = decimal(4711, &mut buf);
        assert_eq!(&buf[i..], b"4711\n");
        let i = decimal(0, &mut buf);
        assert_eq!(&buf[i..], b"0\n");
        let i = decimal(u64::MAX, &mut buf);
        assert_eq!(&buf[i..], b"18446744073709551615\n");
    }

    #[test]
    fn the_child_joins_the_group_before_it_runs() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("tasks"), "").unwrap();
        let how = Placing {
            group: t.path(),
            in_group: true,
            cpus: None,
            lock_device: None,
        };
        let out = command("sh", &["-c".into(), "echo $$".into()], &how)
            .unwrap()
            .output()
            .unwrap();
        let pid = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let tasks = std::fs::read_to_string(t.path().join("tasks")).unwrap();
        assert_eq!(tasks, format!("{pid}\n"));
    }
}
