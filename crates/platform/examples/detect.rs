//! Print what this machine can measure: `cargo run --release -p kairos-platform --example detect [--json]`.
fn main() {
    let caps = kairos_platform::detect();
    if std::env::args().any(|a| a == "--json") {
        println!("{}", caps.to_json());
    } else {
        print!("{}", caps.render_text());
    }
}
