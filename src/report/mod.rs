//! Printing results for people and machines. Secret values are masked here, once, for every
//! format: nothing that prints an object bypasses [`crate::plan::diff::mask_secret`].

pub mod chaos;
pub mod formats;
pub mod objects;
pub mod run;

/// The formats of a `diff`/`apply` report (`-o`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    Text { color: bool, verbose: bool },
    Json,
    Markdown,
}

/// A `diff`/`apply` report in `format`.
pub fn format_run(report: &run::RunReport, format: ReportFormat) -> String {
    match format {
        ReportFormat::Text { color, verbose } => formats::text(report, color, verbose),
        ReportFormat::Json => formats::json(report),
        ReportFormat::Markdown => formats::markdown(report),
    }
}
