//! Demangling of names that do not come through blazesym (perf maps, kallsyms).

/// Demangle a Rust (legacy or v0) or Itanium C++ name; other names are returned as is.
pub(crate) fn demangle(name: &str) -> String {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        // `{:#}` drops the hash suffix, as perf and blazesym show Rust names.
        return format!("{d:#}");
    }
    // Only Itanium-looking names: cpp_demangle accepts some plain words as types.
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            if let Ok(s) = sym.demangle() {
                return s;
            }
        }
    }
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::demangle;

    #[test]
    fn demangles_rust_cpp_and_keeps_plain() {
        assert_eq!(
            demangle("_ZN4core3fmt5write17h0123456789abcdefE"),
            "core::fmt::write"
        );
        assert_eq!(demangle("_ZN3foo3barEv"), "foo::bar()");
        assert_eq!(demangle("schedule"), "schedule");
        assert_eq!(demangle("_Zbroken"), "_Zbroken");
    }
}
