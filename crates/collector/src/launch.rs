//! Launching the program to profile so that sampling starts with its first instruction.
//!
//! fork(); the child blocks on a "go" pipe while the parent opens the events on its pid
//! with enable_on_exec; then the parent writes "go" and the child execs, which arms the
//! events. An exec failure travels back as an errno on a close-on-exec pipe: end of file
//! on that pipe means the exec succeeded.

use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::{CollectError, TargetExit};

pub struct Launched {
    pub pid: i32,
    go_w: i32,
    err_r: i32,
    program: PathBuf,
    exit: Option<TargetExit>,
}

/// Finds the program like execvp would, but before fork, so that "not found" and "not
/// executable" are plain errors and the child only has to call execv.
pub fn resolve(program: &Path) -> Result<PathBuf, CollectError> {
    let check = |p: &Path| -> Option<Result<PathBuf, CollectError>> {
        let md = std::fs::metadata(p).ok()?;
        if md.is_file() && md.permissions().mode() & 0o111 != 0 {
            Some(Ok(p.to_path_buf()))
        } else {
            Some(Err(CollectError::NotExecutable {
                path: p.to_path_buf(),
                detail: if md.is_dir() {
                    "is a directory".into()
                } else {
                    "no execute permission".into()
                },
            }))
        }
    };
    if program.as_os_str().is_empty() {
        return Err(CollectError::ProgramNotFound(program.to_path_buf()));
    }
    if program.as_os_str().as_bytes().contains(&b'/') {
        return check(program)
            .unwrap_or_else(|| Err(CollectError::ProgramNotFound(program.to_path_buf())));
    }
    let path =
        std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
    let mut not_exec = None;
    for dir in std::env::split_paths(&path) {
        let cand = dir.join(program);
        match check(&cand) {
            Some(Ok(p)) => return Ok(p),
            Some(Err(e)) if not_exec.is_none() => not_exec = Some(e),
            _ => {}
        }
    }
    Err(not_exec.unwrap_or_else(|| CollectError::ProgramNotFound(program.to_path_buf())))
}

fn cstr(s: &OsStr) -> Result<CString, CollectError> {
    CString::new(s.as_bytes())
        .map_err(|_| CollectError::InvalidOptions("argument contains a NUL byte".into()))
}

fn pipe_cloexec() -> std::io::Result<(i32, i32)> {
    let mut fds = [0i32; 2];
    // SAFETY: fds is a valid array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

fn close(fd: i32) {
    if fd >= 0 {
        // SAFETY: closing an fd we own.
        unsafe { libc::close(fd) };
    }
}

/// Forks the child, stopped before exec until `release`.
pub fn spawn_waiting(program: &Path, args: &[OsString]) -> Result<Launched, CollectError> {
    spawn_waiting_with(program, args, &[])
}

/// [`spawn_waiting`], with `env` set (or replaced) in the program's environment, e.g. an
/// `LD_PRELOAD` runtime that records next to the sampling.
pub fn spawn_waiting_with(
    program: &Path,
    args: &[OsString],
    env: &[(OsString, OsString)],
) -> Result<Launched, CollectError> {
    let resolved = resolve(program)?;
    // Everything the child needs is allocated here: after fork, in a multi-threaded
    // process, the child may only call async-signal-safe functions.
    let path_c = cstr(resolved.as_os_str())?;
    let mut argv_c = vec![cstr(program.as_os_str())?];
    for a in args {
        argv_c.push(cstr(a)?);
    }
    let mut argv: Vec<*const libc::c_char> = argv_c.iter().map(|c| c.as_ptr()).collect();
    argv.push(std::ptr::null());
    let mut envp_c = Vec::new();
    for (k, v) in std::env::vars_os()
        .filter(|(k, _)| !env.iter().any(|(e, _)| e == k))
        .chain(env.iter().cloned())
    {
        let mut kv = k;
        kv.push("=");
        kv.push(v);
        envp_c.push(cstr(&kv)?);
    }
    let mut envp: Vec<*const libc::c_char> = envp_c.iter().map(|c| c.as_ptr()).collect();
    envp.push(std::ptr::null());

    let io = |e: std::io::Error| CollectError::Io {
        context: "creating the launch pipes".into(),
        source: e,
    };
    let (go_r, go_w) = pipe_cloexec().map_err(io)?;
    let (err_r, err_w) = match pipe_cloexec() {
        Ok(p) => p,
        Err(e) => {
            close(go_r);
            close(go_w);
            return Err(io(e));
        }
    };
    // SAFETY: fork; the child branch below only uses async-signal-safe calls.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        let e = std::io::Error::last_os_error();
        for fd in [go_r, go_w, err_r, err_w] {
            close(fd);
        }
        return Err(CollectError::Io {
            context: "fork".into(),
            source: e,
        });
    }
    if pid == 0 {
        // Child.
        // SAFETY: only async-signal-safe calls; never returns.
        unsafe {
            libc::close(go_w);
            libc::close(err_r);
            let mut byte = 0u8;
            let n = loop {
                let n = libc::read(go_r, &mut byte as *mut u8 as *mut libc::c_void, 1);
                if n < 0 && *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                break n;
            };
            if n != 1 {
                // The parent gave up (error path or died): never run the program.
                libc::_exit(127);
            }
            libc::execve(path_c.as_ptr(), argv.as_ptr(), envp.as_ptr());
            let errno = *libc::__errno_location();
            let b = errno.to_le_bytes();
            libc::write(err_w, b.as_ptr() as *const libc::c_void, 4);
            libc::_exit(127);
        }
    }
    close(go_r);
    close(err_w);
    Ok(Launched {
        pid,
        go_w,
        err_r,
        program: program.to_path_buf(),
        exit: None,
    })
}

impl Launched {
    /// Lets the child exec, and reports whether the exec succeeded.
    pub fn release(&mut self) -> Result<(), CollectError> {
        let b = [1u8];
        // SAFETY: writing one byte to our pipe end.
        let n = unsafe { libc::write(self.go_w, b.as_ptr() as *const libc::c_void, 1) };
        close(self.go_w);
        self.go_w = -1;
        if n != 1 {
            return Err(CollectError::Io {
                context: "releasing the launched program".into(),
                source: std::io::Error::last_os_error(),
            });
        }
        let mut buf = [0u8; 4];
        let mut got = 0usize;
        while got < 4 {
            // SAFETY: reading into our buffer.
            let n = unsafe {
                libc::read(
                    self.err_r,
                    buf[got..].as_mut_ptr() as *mut libc::c_void,
                    4 - got,
                )
            };
            if n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            if n <= 0 {
                break;
            }
            got += n as usize;
        }
        close(self.err_r);
        self.err_r = -1;
        if got < 4 {
            return Ok(()); // end of file: exec succeeded
        }
        let errno = i32::from_le_bytes(buf);
        self.wait_blocking();
        let path = self.program.clone();
        Err(match errno {
            libc::ENOENT | libc::ENOTDIR => CollectError::ProgramNotFound(path),
            _ => CollectError::NotExecutable {
                path,
                detail: std::io::Error::from_raw_os_error(errno).to_string(),
            },
        })
    }

    /// Non-blocking check; once the child is reaped its exit status is kept.
    pub fn try_wait(&mut self) -> Option<TargetExit> {
        if self.exit.is_some() {
            return self.exit;
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
        if r == self.pid {
            self.exit = Some(decode_status(status));
        } else if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD) {
            // Reaped elsewhere (should not happen); treat as gone.
            self.exit = Some(TargetExit::Code(-1));
        }
        self.exit
    }

    fn wait_blocking(&mut self) -> Option<TargetExit> {
        while self.exit.is_none() {
            let mut status = 0;
            // SAFETY: waiting for our own child.
            let r = unsafe { libc::waitpid(self.pid, &mut status, 0) };
            if r == self.pid {
                self.exit = Some(decode_status(status));
            } else if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                self.exit = Some(TargetExit::Code(-1));
            }
        }
        self.exit
    }

    pub fn signal(&self, sig: i32) {
        if self.exit.is_none() {
            // SAFETY: signalling our own, not yet reaped, child (its pid cannot be reused).
            unsafe { libc::kill(self.pid, sig) };
        }
    }

    /// Waits up to `timeout` for the child, calling `tick` (which drains the buffers)
    /// between checks.
    pub fn wait_for(&mut self, timeout: Duration, tick: &mut dyn FnMut()) -> Option<TargetExit> {
        let end = Instant::now() + timeout;
        loop {
            if let Some(e) = self.try_wait() {
                return Some(e);
            }
            if Instant::now() >= end {
                return None;
            }
            tick();
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM, then SIGKILL after `grace`; always reaps.
    pub fn terminate(&mut self, grace: Duration, tick: &mut dyn FnMut()) -> Option<TargetExit> {
        self.signal(libc::SIGTERM);
        if let Some(e) = self.wait_for(grace, tick) {
            return Some(e);
        }
        self.signal(libc::SIGKILL);
        self.wait_blocking()
    }
}

impl Drop for Launched {
    /// Error paths: never leave a child behind, waiting or running.
    fn drop(&mut self) {
        close(self.go_w);
        close(self.err_r);
        if self.exit.is_none() {
            self.signal(libc::SIGKILL);
            self.wait_blocking();
        }
    }
}

pub fn decode_status(status: i32) -> TargetExit {
    if libc::WIFSIGNALED(status) {
        TargetExit::Signal(libc::WTERMSIG(status))
    } else {
        TargetExit::Code(libc::WEXITSTATUS(status))
    }
}
