//! AFL++ target: the converter (see `kairos_fuzz::converter`).
fn main() {
    afl::fuzz!(|data: &[u8]| kairos_fuzz::converter(data));
}
