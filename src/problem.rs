//! A problem with the input, reported as `path:line: message`. Shared by every stage that
//! reads user input, so all of them report in the same shape.

use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Problem {
    pub file: PathBuf,
    pub line: usize,
    pub message: String,
}

impl Problem {
    pub fn new(file: impl Into<PathBuf>, line: usize, message: impl Into<String>) -> Self {
        Problem {
            file: file.into(),
            line,
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", location(&self.file, self.line), self.message)
    }
}

/// `file:line`; for what a Helm chart rendered (a file named `<file> (chart <name>,
/// <template>)`), `<file>:<line> (chart <name>, <template>)`, so that `file:line` stays the
/// HelmChart's own (README "HelmChart — a Helm chart rendered by tend itself").
pub fn location(file: &Path, line: usize) -> String {
    let text = file.display().to_string();
    match text.split_once(" (chart ") {
        Some((file, chart)) if text.ends_with(')') => format!("{file}:{line} (chart {chart}"),
        _ => format!("{text}:{line}"),
    }
}

/// Several problems, printed one per line; the error type of a rejected input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problems(pub Vec<Problem>);

impl fmt::Display for Problems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}
/// Where tend's own one-line message about an error ends and the server's full text begins
/// (see [`with_server_text`]).
pub const SERVER_SAID: &str = "\nthe server said: ";

/// tend's one-line message, followed by the server's full text when there is one: [`crate::cluster::cause::cut`]
/// keeps the line, `-v` and `-o json` show both.
pub fn with_server_text(line: String, server: Option<&str>) -> String {
    match server {
        Some(server) if !server.is_empty() => format!("{line}{SERVER_SAID}{server}"),
        _ => line,
    }
}
