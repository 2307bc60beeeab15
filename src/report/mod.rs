//! Printing results for people and machines. Secret values are masked here, once, for every
//! format: nothing that prints an object bypasses [`crate::plan::diff::mask_secret`].

pub mod chaos;
#[cfg(test)]
mod fixtures;
pub mod formats;
pub mod markdown;
pub mod objects;
pub mod run;
mod units;
mod waves;

pub use formats::Shown;

/// The formats of a `diff`/`apply` report (`-o`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    Text { color: bool, shown: Shown },
    Json,
    Markdown { shown: Shown },
}

/// A `diff`/`apply` report in `format`.
pub fn format_run(report: &run::RunReport, format: ReportFormat) -> String {
    match format {
        ReportFormat::Text { color, shown } => formats::text(report, color, shown),
        ReportFormat::Json => formats::json(report),
        ReportFormat::Markdown { shown } => markdown::markdown(report, shown),
    }
}
