//! The README's "From a clone to a diff against your cluster", run step by step on an empty
//! cluster (tend's CRDs installed, nothing else): the first thing a new user runs. A real
//! kube-apiserver answers the empty metadata LISTs of such a cluster with `"items": null`,
//! which once failed this very diff (issue 21).

use crate::common::copy_tree;
use crate::common::repo_root;
use crate::shipping::{
    bin_dir, kubectl, output, readme, readme_steps, shell, ReadmeStep, README_NOT_RUN,
};
use tend_testserver::TestCluster;

/// The commands of one README section (from its `## ` heading to the next).
fn section_commands(heading: &str) -> Vec<String> {
    let readme = readme();
    let start = readme
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("README has a section `{heading}`"));
    let rest = &readme[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 3);
    readme_steps(&rest[..end])
        .into_iter()
        .filter_map(|step| match step {
            ReadmeStep::Command(c) => Some(c),
            ReadmeStep::File(..) => None,
        })
        .collect()
}

#[test]
fn readme_clone_to_diff_works_on_an_empty_cluster() {
    if kubectl().is_none() {
        eprintln!("note: kubectl not found; the README's `tend crds | kubectl apply -f -` cannot run, skipping");
        return;
    }
    let cluster = TestCluster::start();
    let bin = bin_dir();
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    copy_tree(&repo_root().join("examples"), &work.path().join("examples"));
    let commands = section_commands("From a clone to a diff against your cluster");
    let mut diffs = Vec::new();
    let mut ran = Vec::new();
    for command in commands {
        if README_NOT_RUN.iter().any(|(p, _)| command.starts_with(p)) {
            continue;
        }
        let mut cmd = shell(
            "bash",
            bin.path(),
            home.path(),
            &cluster,
            &format!("set -o pipefail\n{command}"),
        );
        cmd.current_dir(work.path());
        let (code, stdout, stderr) = output(&mut cmd);
        if command.starts_with("tend diff") {
            diffs.push((code, stdout.clone()));
            assert!(
                code == 0 || code == 1,
                "`{command}` exited {code}:\n{stdout}\n{stderr}"
            );
        } else {
            assert_eq!(code, 0, "`{command}` failed:\n{stdout}\n{stderr}");
        }
        ran.push(command);
    }
    assert!(
        ran.iter().any(|c| c == "tend crds | kubectl apply -f -"),
        "the section installs the CRDs: {ran:?}"
    );
    assert!(ran.iter().any(|c| c.starts_with("tend apply")), "{ran:?}");
    // The first diff shows everything to create (exit 1), the one after the apply is clean.
    assert_eq!(diffs.len(), 2, "{ran:?}");
    let (code, stdout) = &diffs[0];
    assert_eq!(*code, 1, "{stdout}");
    assert!(
        stdout.contains(" to create, 0 to update, 0 to prune, 0 unchanged"),
        "{stdout}"
    );
    let (code, stdout) = &diffs[1];
    assert_eq!(*code, 0, "the second diff is clean:\n{stdout}");
}
