use crate::common::*;

#[test]
fn version_names_version_commit_and_kubernetes() {
    let (code, stdout, _) = run(tend().arg("version"));
    assert_eq!(code, 0);
    assert!(
        stdout.starts_with(&format!("tend {}\n", env!("CARGO_PKG_VERSION"))),
        "{stdout}"
    );
    assert!(stdout.contains("commit: "));
    assert!(stdout.contains("kubernetes: 1.26 to 1.33"));
    let (code, stdout, _) = run(tend().args(["version", "-o", "json"]));
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["kubernetes"]["min"], "1.26");
}

#[test]
fn unknown_command_is_a_usage_error() {
    let (code, _, stderr) = run(tend().arg("frobnicate"));
    assert_eq!(code, 2);
    assert!(stderr.contains("unrecognized subcommand"), "{stderr}");
}
