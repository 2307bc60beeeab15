//! A kept render keeps its files' documents as the render parsed them: the next run takes
//! them instead of parsing the chart's output again, with the same objects, lines and
//! messages; an entry that does not read is rendered again.

use super::{chart_site, DEPLOYMENT, RELEASE};
use crate::common::*;
use std::path::{Path, PathBuf};

fn render(cache: &Path, dir: &Path) -> (i32, String, String) {
    run(tend()
        .args(["-v", "render", "--cache-dir"])
        .arg(cache)
        .arg("--repo")
        .arg(dir))
}

/// The kept renders (not the chart digests kept beside them).
fn entries(cache: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(cache.join("helm-renders"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect()
}

/// What a run reported, without the lines of `-v` (timings and the cache's own notes).
fn reported(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| l.starts_with("error") || l.starts_with("warning") || l.contains(".yaml:"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_kept_render_brings_its_documents_parsed_with_their_lines() {
    // The second document has no name: refused, at its line in what the template rendered.
    let template = format!(
        "{DEPLOYMENT}---\n# a comment\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {{a: b}}\ndata:\n  mode: 0644\n  on: yes\n"
    );
    for (deployment, code) in [(DEPLOYMENT.to_string(), 0), (template, 2)] {
        let dir = chart_site(RELEASE, &deployment);
        let cache = tempfile::tempdir().unwrap();
        let (first_code, first, first_err) = render(cache.path(), dir.path());
        assert_eq!(first_code, code, "{first_err}");
        assert!(
            first_err.contains("0 render(s) from the cache, 1 kept"),
            "{first_err}"
        );
        let kept = entries(cache.path());
        assert_eq!(kept.len(), 1);
        let entry = std::fs::read_to_string(&kept[0]).unwrap();
        assert!(
            entry.contains("\"parsed\":[[\"") && entry.contains("templates/deployment.yaml"),
            "{entry}"
        );
        let (second_code, second, second_err) = render(cache.path(), dir.path());
        assert_eq!(second_code, code, "{second_err}");
        assert!(
            second_err.contains("1 render(s) from the cache"),
            "{second_err}"
        );
        assert!(second_err.contains("taken as parsed"), "{second_err}");
        assert_eq!(first, second, "the same objects");
        assert_eq!(reported(&first_err), reported(&second_err));
        if code == 2 {
            assert!(
                second_err.contains("missing metadata.name") && second_err.contains("(at line "),
                "{second_err}"
            );
        }
        // Half an entry does not read: rendered again, and kept again.
        std::fs::write(&kept[0], &entry[..entry.len() / 2]).unwrap();
        let (third_code, third, third_err) = render(cache.path(), dir.path());
        assert_eq!(third_code, code, "{third_err}");
        assert!(
            third_err.contains("0 render(s) from the cache, 1 kept"),
            "{third_err}"
        );
        assert_eq!(first, third);
    }
}

#[test]
fn an_entry_whose_texts_do_not_fit_its_head_is_rendered_again() {
    let dir = chart_site(RELEASE, DEPLOYMENT);
    let cache = tempfile::tempdir().unwrap();
    let (code, first, stderr) = render(cache.path(), dir.path());
    assert_eq!(code, 0, "{stderr}");
    let kept = entries(cache.path());
    let entry = std::fs::read(&kept[0]).unwrap();
    // The manifests' texts are kept raw after the head, which gives each one's length.
    let text = String::from_utf8_lossy(&entry).to_string();
    let at = text.find("\"len\":").expect("a text's length") + 6;
    let mut other_length = entry.clone();
    other_length[at] = if entry[at] == b'1' { b'2' } else { b'1' };
    let damaged: [Vec<u8>; 4] = [
        [entry.as_slice(), b"x"].concat(),
        entry[..entry.len() - 1].to_vec(),
        other_length,
        entry
            .iter()
            .map(|&b| if b == b'\n' { b' ' } else { b })
            .collect(),
    ];
    for bytes in damaged {
        std::fs::write(&kept[0], &bytes).unwrap();
        let (code, again, stderr) = render(cache.path(), dir.path());
        assert_eq!(code, 0, "{stderr}");
        assert!(
            stderr.contains("0 render(s) from the cache, 1 kept"),
            "{stderr}"
        );
        assert_eq!(first, again);
    }
}
