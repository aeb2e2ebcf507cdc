//! The variable a heap object is known by in its program: the name its allocation site's
//! source line assigns (`double *a = malloc(n)` gives `a`), when that source file is
//! readable where the report runs. Objects are named by site and size otherwise.

/// Allocation calls whose result a line assigns to a variable.
const ALLOCATORS: [&str; 10] = [
    "malloc",
    "calloc",
    "realloc",
    "aligned_alloc",
    "memalign",
    "valloc",
    "pvalloc",
    "mmap",
    "numa_alloc",
    "new",
];

/// The variable assigned by the source line `path:line`, if the file is readable.
pub fn variable_of(source: &str) -> Option<String> {
    let (path, line) = source.rsplit_once(':')?;
    let line: usize = line.parse().ok()?;
    let text = std::fs::read_to_string(path).ok()?;
    variable_in(text.lines().nth(line.checked_sub(1)?)?)
}

/// The variable a line of C or C++ assigns an allocation to: `T *NAME = alloc(...)`,
/// `NAME = alloc(...)`, `x.NAME = ...`, or `posix_memalign((void **)&NAME, ...)`.
pub fn variable_in(line: &str) -> Option<String> {
    let code = line.split("//").next().unwrap_or(line);
    if let Some(at) = code.find("posix_memalign") {
        let rest = &code[at..];
        let amp = rest.find('&')?;
        return identifier_from(&rest[amp + 1..]);
    }
    let eq = code
        .find('=')
        .filter(|&i| !code[i + 1..].starts_with('='))?;
    let (lhs, rhs) = (&code[..eq], &code[eq + 1..]);
    if !ALLOCATORS.iter().any(|a| rhs.contains(a)) {
        return None;
    }
    // The last identifier before '=': the declared or assigned name (`a`, `s->buf`: `buf`).
    let lhs = lhs.trim_end().trim_end_matches(']').trim_end();
    let start = lhs
        .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    let name = &lhs[start..];
    (!name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit())).then(|| name.to_string())
}

fn identifier_from(s: &str) -> Option<String> {
    let s = s.trim_start();
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    (end > 0).then(|| s[..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignments_of_allocations_name_their_variable() {
        assert_eq!(
            variable_in("    double *a = malloc(bytes);"),
            Some("a".into())
        );
        assert_eq!(
            variable_in("  b = (double *)aligned_alloc(64, n * sizeof *b);"),
            Some("b".into())
        );
        assert_eq!(
            variable_in("s->counts = calloc(8, 8); // zeroed"),
            Some("counts".into())
        );
        assert_eq!(variable_in("auto *buf = new char[n];"), Some("buf".into()));
        assert_eq!(
            variable_in("if (posix_memalign((void **)&c, 4096, bytes)) return 1;"),
            Some("c".into())
        );
        assert_eq!(variable_in("if (x == malloc_count) return;"), None);
        assert_eq!(variable_in("n = strlen(s);"), None);
        assert_eq!(variable_in("return malloc(n);"), None);
    }

    #[test]
    fn a_missing_file_gives_no_name() {
        assert_eq!(variable_of("/nonexistent/triad.c:31"), None);
        assert_eq!(variable_of("triad.c"), None);
    }
}
