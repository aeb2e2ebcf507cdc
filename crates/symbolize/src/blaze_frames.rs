//! Our frames from blazesym's answer for one address: outermost function first, inlined
//! callees after it. The symboliser's DWARF lookups and the symbol-table lookups
//! (`symtab_names`, which the symboliser holds) both turn blazesym's symbols into frames,
//! so the conversion lives here, one layer below both.

use blazesym::symbolize::Symbolized;

use crate::SymFrame;

/// blazesym reports the outer function with the call-site location of its first inlined
/// callee, and each inlined callee with the location inside it; that is our frame order.
pub(crate) fn to_frames(sym: &Symbolized<'_>) -> Vec<SymFrame> {
    to_frames_named(sym, &mut |n| n.to_string())
}

/// As [`to_frames`], with `demangle` giving each function's name from blazesym's.
pub(crate) fn to_frames_named(
    sym: &Symbolized<'_>,
    demangle: &mut dyn FnMut(&str) -> String,
) -> Vec<SymFrame> {
    let Some(sym) = sym.as_sym() else {
        return Vec::new();
    };
    let loc = |ci: Option<&blazesym::symbolize::CodeInfo<'_>>| match ci {
        Some(ci) => (Some(ci.to_path().display().to_string()), ci.line),
        None => (None, None),
    };
    let mut name = |n: &str| {
        let n = demangle(n);
        if n.is_empty() {
            "[unknown]".to_string()
        } else {
            n
        }
    };
    let (file, line) = loc(sym.code_info.as_deref());
    let mut frames = vec![SymFrame {
        function: name(&sym.name),
        file,
        line,
    }];
    for f in sym.inlined.iter() {
        let (file, line) = loc(f.code_info.as_ref());
        frames.push(SymFrame {
            function: name(&f.name),
            file,
            line,
        });
    }
    frames
}
