//! Where every command's output goes.

use crate::Error;

/// Write to stdout, treating a closed pipe (`tend render | head`) as success.
pub(crate) fn print(text: &str) -> Result<(), Error> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(Error::Output),
    }
}
