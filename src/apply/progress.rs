//! Progress bars on a terminal; nothing otherwise (CI logs get one line per stage instead).

use indicatif::{ProgressBar, ProgressStyle};

/// A bar for `total` requests labelled `what`, hidden unless `enabled` and worth drawing.
pub fn bar(enabled: bool, total: usize, what: &str) -> ProgressBar {
    if !enabled || total < 2 {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total as u64);
    let style = ProgressStyle::with_template("{msg:>12} [{bar:30}] {pos}/{len} {elapsed}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(what.to_string());
    bar
}

/// Advances a progress bar when one request is done, however it ends.
pub struct Tick<'a>(pub &'a ProgressBar);

impl Drop for Tick<'_> {
    fn drop(&mut self) {
        self.0.inc(1);
        if self.0.length() == Some(self.0.position()) {
            self.0.finish_and_clear();
        }
    }
}
