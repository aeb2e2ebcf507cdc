//! No two source files of a crate import each other, directly or around a circle: within a
//! crate, as between crates, names go one way, so that each file can be read knowing only
//! those below it. Read from the sources: every `crate::` and `super::` path of a file's
//! code (not its comments or its tests) is resolved to the file of the longest module
//! prefix it names. The crate root (lib.rs, main.rs), which declares and re-exports the
//! modules, is not a node.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module path (as `a::b`) to its file, for every module file under `src`.
fn modules(src: &Path) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let rel = p.strip_prefix(src).unwrap().to_string_lossy().to_string();
            let Some(stem) = rel.strip_suffix(".rs") else {
                continue;
            };
            if stem.ends_with("_tests") || stem == "tests" || stem.starts_with("bin/") {
                continue;
            }
            let name = stem.trim_end_matches("/mod").replace('/', "::");
            if name != "lib" && name != "main" {
                out.insert(name, p);
            }
        }
    }
    out
}

/// The code of a file without its comments and its `#[cfg(test)]` tail.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Paths (as lists of names, starting with `crate` or `super`) that the code names,
/// with `use` groups (`crate::{a, b::c}`) expanded.
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let rest: String = bytes[i..bytes.len().min(i + 7)].iter().collect();
        let start = if rest.starts_with("crate::") {
            Some("crate")
        } else if rest.starts_with("super::") {
            Some("super")
        } else {
            None
        };
        let boundary = i == 0 || !(bytes[i - 1].is_alphanumeric() || bytes[i - 1] == '_');
        match start {
            Some(s) if boundary => {
                let (found, end) = expand(&bytes, i + s.len() + 2, vec![s.to_string()]);
                out.extend(found);
                i = end;
            }
            _ => i += 1,
        }
    }
    out
}

/// From `at` (just after a `::`), the paths continuing `prefix`, and where they end.
fn expand(b: &[char], mut at: usize, prefix: Vec<String>) -> (Vec<Vec<String>>, usize) {
    let mut path = prefix;
    loop {
        if b.get(at) == Some(&'{') {
            let mut out = Vec::new();
            at += 1;
            loop {
                while b.get(at).is_some_and(|c| c.is_whitespace() || *c == ',') {
                    at += 1;
                }
                match b.get(at) {
                    None => return (out, at),
                    Some('}') => return (out, at + 1),
                    _ => {
                        let (found, end) = expand(b, at, path.clone());
                        out.extend(found);
                        at = end.max(at + 1);
                    }
                }
            }
        }
        let word: String = b[at..]
            .iter()
            .take_while(|c| c.is_alphanumeric() || **c == '_')
            .collect();
        if word.is_empty() {
            return (vec![path], at);
        }
        at += word.chars().count();
        path.push(word);
        if b.get(at) == Some(&':') && b.get(at + 1) == Some(&':') {
            at += 2;
        } else {
            return (vec![path], at);
        }
    }
}

/// The module a path names: the longest prefix that is a module of the crate.
fn resolve(me: &str, path: &[String], mods: &BTreeMap<String, PathBuf>) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    let mut rest = path;
    if rest.first().map(String::as_str) == Some("crate") {
        rest = &rest[1..];
    } else {
        parts = me.split("::").map(String::from).collect();
        while rest.first().map(String::as_str) == Some("super") {
            parts.pop();
            rest = &rest[1..];
        }
    }
    let mut best = None;
    for n in rest {
        parts.push(n.clone());
        let name = parts.join("::");
        if mods.contains_key(&name) {
            best = Some(name);
        }
    }
    best.filter(|b| b != me && !me.starts_with(&format!("{b}::")))
}

/// The circles (strongly connected groups of two or more modules) of a crate's sources.
fn circles(src: &Path) -> Vec<Vec<String>> {
    let mods = modules(src);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, file) in &mods {
        let text = code(&std::fs::read_to_string(file).unwrap());
        let to: BTreeSet<String> = paths(&text)
            .iter()
            .filter_map(|p| resolve(name, p, &mods))
            .collect();
        edges.insert(name.clone(), to);
    }
    // Modules that reach each other both ways are in one circle.
    let reach = |from: &String| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(m) = todo.pop() {
            for n in edges.get(&m).into_iter().flatten() {
                if seen.insert(n.clone()) {
                    todo.push(n.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> = mods.keys().map(|m| (m, reach(m))).collect();
    let mut out: Vec<Vec<String>> = Vec::new();
    for m in mods.keys() {
        let group: Vec<String> = reaches[m]
            .iter()
            .filter(|n| reaches.get(n).is_some_and(|r| r.contains(m)))
            .cloned()
            .collect();
        if group.len() > 1 && !out.iter().any(|g| g.contains(m)) {
            out.push(group);
        }
    }
    out
}

#[test]
fn no_files_of_a_crate_import_each_other_in_a_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut found = Vec::new();
    for parent in ["crates", "crates/analysis"] {
        for e in std::fs::read_dir(root.join(parent)).unwrap() {
            let src = e.unwrap().path().join("src");
            if src.is_dir() {
                for c in circles(&src) {
                    found.push(format!("{}: {}", src.display(), c.join(" <-> ")));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "give the shared names a module below their users:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_circle_is_found_through_use_groups_and_super() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("w")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a; mod w;").unwrap();
    std::fs::write(
        src.join("a.rs"),
        "use crate::{w::{x::X}, b};\n// crate::c in a comment\n",
    )
    .unwrap();
    std::fs::write(src.join("w/mod.rs"), "mod x; mod y;").unwrap();
    std::fs::write(src.join("w/x.rs"), "use super::y::Y;").unwrap();
    std::fs::write(
        src.join("w/y.rs"),
        "pub fn f() { crate::a::g() }\n#[cfg(test)]\nuse crate::w::x;",
    )
    .unwrap();
    let c = circles(src);
    assert_eq!(
        c,
        vec![vec!["a".to_string(), "w::x".into(), "w::y".into()]],
        "{c:?}"
    );
}
