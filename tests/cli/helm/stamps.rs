//! A kept render is found by its chart's digest, which a chart directory whose files are
//! stamped (name, inode, size, modification and change time) as when a run hashed them
//! recalls instead of hashing its bytes again. Any write to a chart file changes its change
//! time, so it is read and rendered again, even when its size and modification time are
//! put back.

use super::{chart_site, DEPLOYMENT, RELEASE};
use crate::common::*;
use std::path::Path;

fn render(cache: &Path, dir: &Path) -> (String, String) {
    let (code, stdout, stderr) = run(tend()
        .args(["-v", "render", "--cache-dir"])
        .arg(cache)
        .arg("--repo")
        .arg(dir));
    assert_eq!(code, 0, "{stderr}");
    (stdout, stderr)
}

/// Rewrite `path` with `from` replaced by `to` (as long), its modification time put back.
fn rewrite_in_place(path: &Path, from: &str, to: &str) {
    assert_eq!(from.len(), to.len());
    let modified = std::fs::metadata(path).unwrap().modified().unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{text}");
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(modified).unwrap();
}

const RECALLED: &str = "Helm charts: 1 known by their files' stamps";
const TAKEN: &str = "Helm releases: 1 render(s) from the cache";
const RENDERED: &str = "Helm releases: 0 render(s) from the cache, 1 kept";

#[test]
fn a_chart_is_known_by_its_files_stamps_until_any_file_is_written() {
    let dir = chart_site(RELEASE, DEPLOYMENT);
    let cache = tempfile::tempdir().unwrap();
    // Files changed within two seconds of a read are not trusted by their stamps.
    let (first, stderr) = render(cache.path(), dir.path());
    assert!(
        stderr.contains(RENDERED) && !stderr.contains(RECALLED),
        "{stderr}"
    );
    let (_, stderr) = render(cache.path(), dir.path());
    assert!(
        stderr.contains(TAKEN) && !stderr.contains(RECALLED),
        "{stderr}"
    );
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let (_, stderr) = render(cache.path(), dir.path());
    assert!(
        stderr.contains(TAKEN) && !stderr.contains(RECALLED),
        "{stderr}"
    );
    let (second, stderr) = render(cache.path(), dir.path());
    assert!(
        stderr.contains(TAKEN) && stderr.contains(RECALLED),
        "{stderr}"
    );
    assert_eq!(first, second);

    // A template rewritten, size and modification time as they were: rendered again.
    let chart = dir.path().join("charts/shop");
    rewrite_in_place(
        &chart.join("templates/deployment.yaml"),
        "name: web",
        "name: api",
    );
    let (third, stderr) = render(cache.path(), dir.path());
    assert!(
        stderr.contains(RENDERED) && !stderr.contains(RECALLED),
        "{stderr}"
    );
    assert!(
        third.contains("name: api") && !third.contains("name: web"),
        "{third}"
    );

    // The chart's values.yaml, the same way.
    rewrite_in_place(&chart.join("values.yaml"), "64Mi", "65Mi");
    let (fourth, stderr) = render(cache.path(), dir.path());
    assert!(stderr.contains(RENDERED), "{stderr}");
    assert!(
        fourth.contains("65Mi") && !fourth.contains("64Mi"),
        "{fourth}"
    );

    // A file added, and one taken away.
    let extra = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n";
    std::fs::write(chart.join("templates/extra.yaml"), extra).unwrap();
    let (fifth, stderr) = render(cache.path(), dir.path());
    assert!(stderr.contains(RENDERED), "{stderr}");
    assert!(fifth.contains("name: extra"), "{fifth}");
    std::fs::remove_file(chart.join("templates/extra.yaml")).unwrap();
    let (sixth, _) = render(cache.path(), dir.path());
    assert!(!sixth.contains("name: extra"), "{sixth}");
    assert!(
        sixth.contains("name: api") && sixth.contains("65Mi"),
        "{sixth}"
    );

    // A .helmignore that leaves a template out.
    std::fs::write(chart.join(".helmignore"), "templates/deployment.yaml\n").unwrap();
    let (seventh, stderr) = render(cache.path(), dir.path());
    assert!(stderr.contains(RENDERED), "{stderr}");
    assert!(!seventh.contains("kind: Deployment"), "{seventh}");
}
