//! Progress display for long work (indicatif), silent when stderr is not a terminal or
//! when the user asked for quiet.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// A spinner with elapsed time and `message`; hidden when quiet or not on a terminal.
pub fn spinner(quiet: bool, message: &str) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    if let Ok(style) = ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}") {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(120));
    bar.set_message(message.to_string());
    bar
}

/// A byte bar for the conversion of a recording of `total` bytes.
pub(crate) fn bytes_bar(quiet: bool, total: u64) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total.max(1));
    if let Ok(style) =
        ProgressStyle::with_template("converting {bar:40} {bytes}/{total_bytes} {eta}")
    {
        bar.set_style(style);
    }
    bar
}

/// Records with `kairos_collector::collect`, showing what has been recorded so far
/// ("collecting: N records, K KiB") unless quiet.
pub fn collect_with_progress(
    opts: &kairos_collector::CollectOptions,
    quiet: bool,
) -> Result<kairos_collector::CollectSummary, kairos_collector::CollectError> {
    let bar = spinner(quiet, "collecting");
    let summary = kairos_collector::collect(opts, &mut |p| {
        bar.set_message(format!(
            "collecting: {} records, {} KiB",
            p.samples,
            p.bytes / 1024
        ));
    });
    bar.finish_and_clear();
    summary
}
