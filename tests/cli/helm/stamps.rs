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

const NOT_READ: &str = "Helm charts: 1 not read, every release of them kept";

/// Make `dir`'s files older than the two seconds stamps must have settled for.
fn settle() {
    std::thread::sleep(std::time::Duration::from_millis(2100));
}

#[test]
fn a_kept_render_reads_no_chart_file_and_a_release_that_misses_reads_them_all() {
    let dir = chart_site(RELEASE, DEPLOYMENT);
    let cache = tempfile::tempdir().unwrap();
    settle();
    let (fresh, stderr) = render(cache.path(), dir.path());
    assert!(
        stderr.contains(RENDERED) && !stderr.contains(NOT_READ),
        "{stderr}"
    );
    let (kept, stderr) = render(cache.path(), dir.path());
    assert!(
        stderr.contains(TAKEN) && stderr.contains(NOT_READ),
        "{stderr}"
    );
    assert_eq!(fresh, kept);

    // The release's own values changed: no render kept for them, so the chart is read whole
    // and rendered with them.
    let release = dir.path().join("apps/store.yaml");
    std::fs::write(&release, RELEASE.replace("replicas: 3", "replicas: 5")).unwrap();
    let (changed, stderr) = render(cache.path(), dir.path());
    assert!(
        stderr.contains(RENDERED) && !stderr.contains(NOT_READ),
        "{stderr}"
    );
    assert!(changed.contains("replicas: 5"), "{changed}");
    let (_, stderr) = render(cache.path(), dir.path());
    assert!(stderr.contains(NOT_READ), "{stderr}");

    // A second release of the chart: the first is kept, the second is not, so the chart is
    // read whole for it; both render as they do from a fresh cache.
    let second = RELEASE
        .replace("name: store", "name: other")
        .replace("spec:\n", "spec:\n  includeCrds: false\n");
    std::fs::write(dir.path().join("apps/other.yaml"), &second).unwrap();
    let (both, stderr) = render(cache.path(), dir.path());
    assert!(
        stderr.contains("1 render(s) from the cache, 1 kept") && !stderr.contains(NOT_READ),
        "{stderr}"
    );
    let (both_fresh, _) = render(tempfile::tempdir().unwrap().path(), dir.path());
    assert_eq!(both, both_fresh);
    assert!(both.contains("name: other-shop"), "{both}");

    // Printed as Helm prints it, a release renders afresh from the chart's files.
    let (code, printed, stderr) = run(tend()
        .args(["-v", "render", "--helm-template", "--cache-dir"])
        .arg(cache.path())
        .arg("--repo")
        .arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains(NOT_READ), "{stderr}");
    assert!(
        printed.contains("# Source: shop/templates/deployment.yaml"),
        "{printed}"
    );
}

#[test]
fn a_chart_broken_after_its_render_was_kept_is_reported_not_served_from_the_cache() {
    let dir = chart_site(RELEASE, DEPLOYMENT);
    let cache = tempfile::tempdir().unwrap();
    settle();
    render(cache.path(), dir.path());
    let (_, stderr) = render(cache.path(), dir.path());
    assert!(stderr.contains(NOT_READ), "{stderr}");
    let values = dir.path().join("charts/shop/values.yaml");
    std::fs::write(&values, "replicas: [unclosed\n").unwrap();
    settle();
    let (code, _, stderr) = run(tend()
        .args(["-v", "render", "--cache-dir"])
        .arg(cache.path())
        .arg("--repo")
        .arg(dir.path()));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("charts/shop/values.yaml") && !stderr.contains(TAKEN),
        "{stderr}"
    );
}
