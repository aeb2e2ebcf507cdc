//! Golden-file assertions for report tests.
//!
//! Reports are compared as whole rendered strings: a change in any column, rounding or
//! sort order shows up as a readable line diff, and `KAIROS_BLESS=1` accepts it. A golden
//! of a machine format must also be valid in it (see [`format_of`]), blessed or not.

use std::path::Path;

/// Lines of context around each change in [`line_diff`].
const CONTEXT: usize = 3;
/// Above this many cells the LCS table would be too big; the diff then shows the whole
/// differing middle as removed + added, which is still correct, just less precise.
const MAX_LCS_CELLS: usize = 4_000_000;

/// Compares `actual` with the golden file at `path`.
///
/// - `KAIROS_BLESS=1`: writes `path` (creating directories) when it is missing or differs.
/// - otherwise, on a missing file or a mismatch: writes `<path>.actual` next to it and
///   panics with a unified-style diff and the command that accepts the new output.
///
/// Line endings of the golden file are normalised (`\r\n` → `\n`) so a checkout with
/// autocrlf still matches.
///
/// Output that a golden's name says is JSON or CSV ([`format_of`]) must first pass
/// [`crate::strict`]: a repeated JSON key or a CSV row of the wrong width fails the test
/// even when the golden holds the same mistake.
#[allow(clippy::panic)] // a failing assertion is the point of this test helper
pub fn assert_golden(path: &Path, actual: &str) {
    if let Some(format) = format_of(path) {
        if let Err(e) = crate::strict::check(format, actual) {
            panic!(
                "the output for golden file {} is not valid {format}: {e}\n{actual}",
                path.display()
            );
        }
    }
    let expected = std::fs::read_to_string(path)
        .ok()
        .map(|s| s.replace("\r\n", "\n"));
    let bless = std::env::var("KAIROS_BLESS").is_ok_and(|v| v == "1");
    let actual_path = {
        let mut p = path.as_os_str().to_owned();
        p.push(".actual");
        std::path::PathBuf::from(p)
    };
    if expected.as_deref() == Some(actual) {
        let _ = std::fs::remove_file(&actual_path);
        return;
    }
    if bless {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Err(e) = std::fs::write(path, actual) {
            panic!("cannot write golden file {}: {e}", path.display());
        }
        let _ = std::fs::remove_file(&actual_path);
        eprintln!("blessed {}", path.display());
        return;
    }
    let written = match std::fs::write(&actual_path, actual) {
        Ok(()) => format!("wrote {}", actual_path.display()),
        Err(e) => format!("could not write {}: {e}", actual_path.display()),
    };
    let pkg = std::env::var("CARGO_PKG_NAME").unwrap_or_else(|_| "<package>".to_string());
    let bless_cmd = format!("KAIROS_BLESS=1 cargo test --release -p {pkg}");
    match expected {
        None => panic!(
            "golden file {} is missing ({written}).\nTo create it, run: {bless_cmd}",
            path.display()
        ),
        Some(expected) => {
            let diff = line_diff(
                &expected,
                actual,
                &path.display().to_string(),
                &actual_path.display().to_string(),
            );
            panic!("golden file {} does not match ({written}):\n{diff}\nIf the new output is right, run: {bless_cmd}", path.display())
        }
    }
}

/// The machine format a golden holds, told by its name: `*.json` and `*_json.txt` hold
/// JSON, `*.csv` and `*_csv.txt` CSV; None for text.
pub fn format_of(path: &Path) -> Option<crate::Format> {
    let name = path.file_name()?.to_str()?;
    if name.ends_with(".json") || name.ends_with("_json.txt") {
        Some(crate::Format::Json)
    } else if name.ends_with(".csv") || name.ends_with("_csv.txt") {
        Some(crate::Format::Csv)
    } else {
        None
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Equal,
    Delete,
    Insert,
}

/// A unified-style line diff (`---`/`+++` headers, `@@ -a,b +c,d @@` hunks with three
/// lines of context) from `old` to `new`. Empty when the texts are equal.
pub fn line_diff(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    if old == new {
        return String::new();
    }
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let mut out = format!("--- {old_name}\n+++ {new_name}\n");
    if a == b {
        out.push_str("(the texts differ only in line endings or a trailing newline)\n");
        return out;
    }
    let ops = diff_ops(&a, &b);
    // Position in old and new before each op, for hunk headers.
    let mut pos = Vec::with_capacity(ops.len() + 1);
    let (mut i, mut j) = (0usize, 0usize);
    for op in &ops {
        pos.push((i, j));
        match op {
            Op::Equal => (i, j) = (i + 1, j + 1),
            Op::Delete => i += 1,
            Op::Insert => j += 1,
        }
    }
    pos.push((i, j));
    let changes: Vec<usize> = (0..ops.len()).filter(|&k| ops[k] != Op::Equal).collect();
    let mut k = 0;
    while k < changes.len() {
        // Extend the hunk while the next change is within 2*CONTEXT equal lines.
        let first = changes[k];
        let mut last = first;
        while k + 1 < changes.len() && changes[k + 1] - last <= 2 * CONTEXT + 1 {
            k += 1;
            last = changes[k];
        }
        k += 1;
        let start = first.saturating_sub(CONTEXT);
        let end = (last + CONTEXT + 1).min(ops.len());
        let (oi, nj) = pos[start];
        let (oe, ne) = pos[end];
        out.push_str(&format!(
            "@@ -{},{} +{},{} @@\n",
            oi + 1,
            oe - oi,
            nj + 1,
            ne - nj
        ));
        for op_idx in start..end {
            let (oi, nj) = pos[op_idx];
            match ops[op_idx] {
                Op::Equal => out.push_str(&format!(" {}\n", a[oi])),
                Op::Delete => out.push_str(&format!("-{}\n", a[oi])),
                Op::Insert => out.push_str(&format!("+{}\n", b[nj])),
            }
        }
    }
    out
}

/// Edit script from `a` to `b`: common prefix and suffix, and a longest-common-subsequence
/// alignment of the middle (golden files are small, so O(n·m) is fine; see MAX_LCS_CELLS).
fn diff_ops(a: &[&str], b: &[&str]) -> Vec<Op> {
    let pre = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suf = a[pre..]
        .iter()
        .rev()
        .zip(b[pre..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (am, bm) = (&a[pre..a.len() - suf], &b[pre..b.len() - suf]);
    let mut ops = vec![Op::Equal; pre];
    let (n, m) = (am.len(), bm.len());
    if (n + 1).saturating_mul(m + 1) > MAX_LCS_CELLS {
        ops.extend(std::iter::repeat_n(Op::Delete, n));
        ops.extend(std::iter::repeat_n(Op::Insert, m));
    } else {
        // lcs[i][j] = LCS length of am[i..] and bm[j..].
        let w = m + 1;
        let mut lcs = vec![0u32; (n + 1) * w];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                lcs[i * w + j] = if am[i] == bm[j] {
                    lcs[(i + 1) * w + j + 1] + 1
                } else {
                    lcs[(i + 1) * w + j].max(lcs[i * w + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if i < n && j < m && am[i] == bm[j] {
                ops.push(Op::Equal);
                (i, j) = (i + 1, j + 1);
            } else if i < n && (j == m || lcs[(i + 1) * w + j] >= lcs[i * w + j + 1]) {
                // Deletions first on ties, as `diff -u` prints them.
                ops.push(Op::Delete);
                i += 1;
            } else {
                ops.push(Op::Insert);
                j += 1;
            }
        }
    }
    ops.extend(std::iter::repeat_n(Op::Equal, suf));
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_shows_hunks_with_context() {
        // Changes 7 equal lines apart: two hunks (diff -u merges at <= 6).
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n";
        let new = "a\nb\nc\nD\ne\nf\ng\nh\ni\nj\nk\nl\n";
        let d = line_diff(old, new, "old", "new");
        let expected = "--- old\n+++ new\n@@ -1,7 +1,7 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n@@ -9,3 +9,4 @@\n i\n j\n k\n+l\n";
        assert_eq!(d, expected);
        // 6 equal lines apart: one hunk.
        let d = line_diff(
            "a\nb\nc\nd\ne\nf\ng\nh\n",
            "A\nb\nc\nd\ne\nf\ng\nH\n",
            "o",
            "n",
        );
        assert_eq!(d.matches("@@ -").count(), 1, "{d}");
        assert_eq!(line_diff("x\n", "x\n", "o", "n"), "");
        assert!(line_diff("x\n", "x", "o", "n").contains("trailing newline"));
        assert_eq!(
            line_diff("", "a\n", "o", "n"),
            "--- o\n+++ n\n@@ -1,0 +1,1 @@\n+a\n"
        );
    }

    #[test]
    fn machine_goldens_must_be_valid() {
        assert_eq!(
            format_of(Path::new("a/summary.json")),
            Some(crate::Format::Json)
        );
        assert_eq!(
            format_of(Path::new("hotspots_json.txt")),
            Some(crate::Format::Json)
        );
        assert_eq!(format_of(Path::new("x/io.csv")), Some(crate::Format::Csv));
        assert_eq!(
            format_of(Path::new("numa_csv.txt")),
            Some(crate::Format::Csv)
        );
        assert_eq!(format_of(Path::new("summary.txt")), None);
        // Refused before the comparison, so never blessed: the file is not even read.
        let path = Path::new("/nonexistent/kairos-golden/dup.json");
        let r = std::panic::catch_unwind(|| assert_golden(path, "{\"a\": 1, \"a\": 2}"));
        let msg = r
            .err()
            .and_then(|e| e.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        assert!(
            msg.contains("not valid json") && msg.contains("duplicate key"),
            "{msg}"
        );
    }

    #[test]
    fn golden_roundtrip_mismatch_and_missing() {
        let dir = std::env::temp_dir().join(format!("kairos-report-golden-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("t.txt");
        // Missing and not blessing (the test run must not have KAIROS_BLESS set for this
        // check to be meaningful; with it set the file is simply written).
        if std::env::var("KAIROS_BLESS").is_err() {
            let r = std::panic::catch_unwind(|| assert_golden(&path, "one\n"));
            assert!(r.is_err());
            assert_eq!(
                std::fs::read_to_string(dir.join("t.txt.actual"))
                    .ok()
                    .as_deref(),
                Some("one\n")
            );
            std::fs::write(&path, "one\r\ntwo\r\n").expect("write");
            assert_golden(&path, "one\ntwo\n"); // CRLF normalised
            assert!(!dir.join("t.txt.actual").exists());
            let r = std::panic::catch_unwind(|| assert_golden(&path, "one\nthree\n"));
            let msg = r
                .err()
                .and_then(|e| e.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            assert!(msg.contains("-two\n+three"), "{msg}");
            assert!(msg.contains("KAIROS_BLESS=1 cargo test"), "{msg}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
