//! Chart archives (`charts/<name>-<version>.tgz`, as `helm package` and `helm dependency
//! update` write them): a gzipped tar whose entries sit under one top directory, which is
//! stripped (Helm's `loadArchiveFiles`). Only regular files are read; ustar names with a
//! prefix, GNU long names and PAX `path` records are understood.

use sha2::Digest;
use std::io::Read;
use std::path::Path;

/// Largest total size an archive may unpack to (a chart is kilobytes; this stops a bomb).
const MAX_UNPACKED: u64 = 64 * 1024 * 1024;

/// The files of a chart archive: path inside the chart, and bytes. It may unpack to at most
/// `room` bytes (what is left of the chart tree's budget), and never more than 64 MiB.
pub fn files(gz: &[u8], room: u64) -> Result<Vec<(String, Vec<u8>)>, String> {
    entries(gz, room, true)
}

/// The regular files of a gzipped tar, with the first path element stripped (a chart's
/// directory) or not (a Flux artifact, whose files sit at its top), within the same limits.
pub fn entries(gz: &[u8], room: u64, strip_first: bool) -> Result<Vec<(String, Vec<u8>)>, String> {
    let limit = room.min(MAX_UNPACKED);
    let mut tar = Vec::new();
    flate2::read::MultiGzDecoder::new(gz)
        .take(limit + 1)
        .read_to_end(&mut tar)
        .map_err(|e| format!("not a gzip archive: {e}"))?;
    if tar.len() as u64 > limit {
        return Err(if limit < MAX_UNPACKED {
            format!("it unpacks to more than the {limit} bytes left of the budget of the whole chart tree (the chart, its subcharts and the archives within archives); a chart is kilobytes")
        } else {
            format!("it unpacks to more than {MAX_UNPACKED} bytes")
        });
    }
    let mut out = Vec::new();
    let mut pos = 0;
    let mut long_name: Option<String> = None;
    while pos + 512 <= tar.len() {
        let header = &tar[pos..pos + 512];
        if header.iter().all(|&b| b == 0) {
            break;
        }
        let size = parse_size(&header[124..136]).ok_or("bad size in a tar header")?;
        let start = pos + 512;
        let end = start
            .checked_add(size)
            .filter(|&e| e <= tar.len())
            .ok_or("the archive is truncated")?;
        let data = &tar[start..end];
        pos = start + size.div_ceil(512) * 512;
        let name = match long_name.take() {
            Some(n) => n,
            None => {
                let name = c_string(&header[0..100]);
                let prefix = c_string(&header[345..500]);
                if &header[257..262] == b"ustar" && !prefix.is_empty() {
                    format!("{prefix}/{name}")
                } else {
                    name
                }
            }
        };
        match header[156] {
            b'x' => long_name = pax_path(data),
            b'L' => long_name = Some(c_string(data)),
            b'0' | 0 => {
                // Helm drops the first path element (the chart's directory).
                let trimmed = name.trim_start_matches("./");
                let inside = if strip_first {
                    let Some((_, inside)) = trimmed.split_once('/') else {
                        continue;
                    };
                    inside
                } else {
                    trimmed
                };
                if inside.is_empty() {
                    continue;
                }
                out.push((inside_path(&name, inside)?, data.to_vec()));
            }
            _ => {} // directories, links, global headers
        }
    }
    out.sort();
    Ok(out)
}

/// The archive whose sha256 is `digest` (hex): from `cache_dir/helm/<digest>.tgz` when there,
/// else from `download`, checked against the digest (`gives` says who gave it, for the
/// message) and kept there, so each chart version is downloaded once.
pub fn cached(
    cache_dir: &Path,
    digest: &str,
    what: &str,
    gives: &str,
    download: impl FnOnce() -> Result<Vec<u8>, String>,
) -> Result<Vec<u8>, String> {
    let cached = cache_dir.join("helm").join(format!("{digest}.tgz"));
    if let Ok(bytes) = std::fs::read(&cached) {
        if hex::encode(sha2::Sha256::digest(&bytes)) == digest {
            return Ok(bytes);
        }
    }
    let bytes = download()?;
    let got = hex::encode(sha2::Sha256::digest(&bytes));
    if got != digest {
        return Err(format!(
            "the archive of {what} has digest sha256:{got}, not the sha256:{digest} {gives}; refusing it (a changed or corrupted chart)"
        ));
    }
    // The cache is an optimisation: a read-only cache directory costs a download.
    if std::fs::create_dir_all(cached.parent().unwrap_or(cache_dir)).is_ok() {
        let partial = cached.with_extension("tgz.partial");
        if std::fs::write(&partial, &bytes).is_ok() {
            let _ = std::fs::rename(&partial, &cached);
        }
    }
    Ok(bytes)
}

/// Helm's `loadArchiveFiles` checks of an entry's path inside the chart: no absolute path,
/// nothing that climbs above the chart (`templates/../../x`), cleaned as Go's `path.Clean`.
fn inside_path(entry: &str, inside: &str) -> Result<String, String> {
    let inside = inside.replace('\\', "/");
    if inside.starts_with('/') {
        return Err(format!(
            "chart illegally contains absolute paths ({entry:?}); Helm refuses this archive too"
        ));
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in inside.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(format!(
                        "chart illegally references parent directory ({entry:?}); Helm refuses this archive too"
                    ));
                }
            }
            part => parts.push(part),
        }
    }
    if parts.is_empty() {
        return Err(format!(
            "chart illegally contains content outside the base directory: {entry:?}"
        ));
    }
    Ok(parts.join("/"))
}

fn c_string(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// Octal, or GNU's base-256 (high bit set) for large sizes.
fn parse_size(field: &[u8]) -> Option<usize> {
    if field[0] & 0x80 != 0 {
        let mut n: u64 = u64::from(field[0] & 0x7f);
        for &b in &field[1..] {
            n = n.checked_mul(256)?.checked_add(u64::from(b))?;
        }
        return usize::try_from(n).ok();
    }
    let text = c_string(field);
    let text = text.trim();
    if text.is_empty() {
        return Some(0);
    }
    usize::from_str_radix(text, 8).ok()
}

/// The `path` record of a PAX extended header (`<len> path=<name>\n`).
fn pax_path(data: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(data);
    text.lines()
        .filter_map(|record| record.split_once(' ').map(|(_, kv)| kv))
        .find_map(|kv| kv.strip_prefix("path=").map(String::from))
}

#[cfg(test)]
pub mod tests {
    use std::io::Write;

    /// A .tgz of `files` (paths inside the archive), as `helm package` writes one.
    pub fn tgz(files: &[(&str, &str)]) -> Vec<u8> {
        let files: Vec<(&str, &[u8])> = files.iter().map(|(n, t)| (*n, t.as_bytes())).collect();
        tgz_bytes(&files)
    }

    pub fn tgz_bytes(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut tar = Vec::new();
        for (name, text) in files {
            let mut header = [0u8; 512];
            header[..name.len()].copy_from_slice(name.as_bytes());
            header[100..107].copy_from_slice(b"0000644");
            header[124..135].copy_from_slice(format!("{:011o}", text.len()).as_bytes());
            header[156] = b'0';
            header[257..263].copy_from_slice(b"ustar\0");
            header[148..156].copy_from_slice(b"        ");
            let sum: u32 = header.iter().map(|&b| u32::from(b)).sum();
            header[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
            tar.extend_from_slice(&header);
            tar.extend_from_slice(text);
            tar.resize(tar.len().div_ceil(512) * 512, 0);
        }
        tar.resize(tar.len() + 1024, 0);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&tar).expect("in memory");
        gz.finish().expect("in memory")
    }

    #[test]
    fn reads_what_helm_package_writes() {
        let bytes = tgz(&[
            ("db/Chart.yaml", "name: db\n"),
            ("db/templates/a.yaml", "kind: A\n"),
        ]);
        let files = super::files(&bytes, u64::MAX).unwrap();
        assert_eq!(
            files,
            vec![
                ("Chart.yaml".to_string(), b"name: db\n".to_vec()),
                ("templates/a.yaml".to_string(), b"kind: A\n".to_vec()),
            ]
        );
        assert!(super::files(b"not gzip", u64::MAX).is_err());
    }
}
