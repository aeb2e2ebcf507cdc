//! AFL++ target: the perf.data reader (see `kairos_fuzz::reader`).
fn main() {
    afl::fuzz!(|data: &[u8]| kairos_fuzz::reader(data));
}
