//! Helpers for tests that build small C programs with gcc at test time.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// A program with an always-inlined static function inside a non-inlined one.
pub const INLINE_C: &str = r#"#include <stdio.h>
static inline __attribute__((always_inline)) int leaf(int x) {
    return x * 3 + (x >> 2);
}
__attribute__((noinline)) int outer(int x) {
    int s = 0;
    for (int i = 0; i < x; i++)
        s += leaf(i ^ s);
    return s;
}
int main(int argc, char **argv) {
    (void)argv;
    printf("%d\n", outer(argc * 100));
    return 0;
}
"#;

/// Run a command and return stdout; fail the test with stderr otherwise.
pub fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Compile `src` into `dir/name` with extra gcc flags.
pub fn gcc(dir: &Path, name: &str, src: &str, flags: &[&str]) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).unwrap();
    let bin = dir.join(name);
    run(Command::new("gcc")
        .args(flags)
        .arg("-Wl,--build-id")
        .arg("-o")
        .arg(&bin)
        .arg(&c));
    bin
}

/// `nm` address and size of a defined function symbol.
pub fn nm_symbol(bin: &Path, name: &str) -> (u64, u64) {
    let out = run(Command::new("nm").arg("-S").arg(bin));
    for line in out.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == 4 && f[3] == name {
            return (
                u64::from_str_radix(f[0], 16).unwrap(),
                u64::from_str_radix(f[1], 16).unwrap(),
            );
        }
    }
    panic!("{name} not in nm output of {}", bin.display());
}

/// One frame as `addr2line -f -i` prints it: function, file base name, line.
pub type OracleFrame = (String, String, Option<u32>);

/// `addr2line -f -i -C` for one address, outermost first (addr2line prints innermost first).
pub fn addr2line(bin: &Path, addr: u64) -> Vec<OracleFrame> {
    let out = run(Command::new("addr2line")
        .args(["-f", "-i", "-C", "-e"])
        .arg(bin)
        .arg(format!("{addr:x}")));
    let lines: Vec<&str> = out.lines().collect();
    let mut frames: Vec<OracleFrame> = lines
        .chunks(2)
        .filter(|c| c.len() == 2)
        .map(|c| {
            // "file.c:12 (discriminator 3)" or "??:0"
            let loc = c[1].split(" (").next().unwrap_or("");
            let (file, line) = loc.rsplit_once(':').unwrap_or((loc, ""));
            let base = Path::new(file)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            (
                c[0].to_string(),
                base,
                line.parse().ok().filter(|&l| l != 0),
            )
        })
        .collect();
    frames.reverse();
    frames
}

/// Our frames in the oracle's shape.
pub fn shape(frames: &[kairos_symbolize::SymFrame]) -> Vec<OracleFrame> {
    frames
        .iter()
        .map(|f| {
            let base = f
                .file
                .as_deref()
                .and_then(|p| Path::new(p).file_name())
                .map(|b| b.to_string_lossy().into_owned());
            (
                f.function.clone(),
                base.unwrap_or_else(|| "??".into()),
                f.line,
            )
        })
        .collect()
}

/// Build id of an ELF file, via our own reader (checked against `readelf` in a test).
pub fn build_id(bin: &Path) -> String {
    kairos_symbolize::ElfInfo::open(bin)
        .unwrap()
        .build_id
        .unwrap()
}
