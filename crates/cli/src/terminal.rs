//! The width text output wraps its sentences to: the terminal's, when standard output is
//! one, else 100 columns (a file or a pipe is read later, in any window).

/// Columns of the terminal on standard output, or [`kairos_report::DEFAULT_LINE_WIDTH`].
pub fn line_width() -> usize {
    columns().unwrap_or(kairos_report::DEFAULT_LINE_WIDTH)
}

fn columns() -> Option<usize> {
    // SAFETY: isatty and TIOCGWINSZ only read the descriptor's state into `ws`, which is a
    // plain struct owned here.
    unsafe {
        if libc::isatty(libc::STDOUT_FILENO) != 1 {
            return None;
        }
        let mut ws: libc::winsize = std::mem::zeroed();
        if libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) != 0 || ws.ws_col == 0 {
            return None;
        }
        Some(usize::from(ws.ws_col))
    }
}
