//! Kustomize build units (README "Kustomize"): overlays render as `kubectl kustomize` builds them, apply
//! and diff clean, generators roll workloads, and broken kustomizations change nothing.

use crate::common::*;

use serde_json::Value;
use std::path::{Path, PathBuf};
use tend_testserver::{TestCluster, Verb};

fn podinfo() -> PathBuf {
    fixture("kustomize")
}

fn mixed() -> PathBuf {
    fixture("kustomize-mixed")
}

/// `tend` building with `kubectl kustomize` (what the comparisons are made against), whatever
/// else is on PATH.
fn tend_k() -> assert_cmd::Command {
    let mut cmd = tend();
    cmd.env("TEND_KUSTOMIZE_COMMAND", "kubectl kustomize");
    cmd
}

/// `kubectl kustomize <dir>` as objects.
fn kubectl_kustomize(dir: &Path) -> Vec<Value> {
    let out = std::process::Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .expect("kubectl is installed (`kubectl kustomize` builds the expected output)");
    assert!(
        out.status.success(),
        "kubectl kustomize {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    parse_stream(&String::from_utf8_lossy(&out.stdout))
}

/// `tend render -o json` with `args`, as objects.
fn render(args: &[&str]) -> Vec<Value> {
    let (code, stdout, stderr) = run(tend_k().args(["render", "-o", "json"]).args(args));
    assert_eq!(code, 0, "tend render {args:?}:\n{stderr}");
    let list: Value = serde_json::from_str(&stdout).expect("render -o json prints a List");
    list["items"].as_array().cloned().unwrap_or_default()
}

/// Remove what tend adds on its own (`tend.dev/*` labels and annotations, such as the config
/// hash on pod templates), and maps left empty by that.
fn without_tend_metadata(value: &mut Value) {
    if let Value::Object(map) = value {
        for key in ["annotations", "labels"] {
            if let Some(Value::Object(inner)) = map.get_mut(key) {
                inner.retain(|k, _| !k.starts_with("tend.dev/"));
                if inner.is_empty() {
                    map.remove(key);
                }
            }
        }
        map.values_mut().for_each(without_tend_metadata);
    } else if let Value::Array(items) = value {
        items.iter_mut().for_each(without_tend_metadata);
    }
}

fn id(o: &Value) -> String {
    ids(std::slice::from_ref(o)).remove(0)
}

/// Object for object: every object kustomize built is rendered, equal but for tend's own
/// metadata and a namespace tend defaulted; and nothing else is.
fn assert_same_objects(rendered: &[Value], built: &[Value]) {
    assert_eq!(
        rendered.len(),
        built.len(),
        "tend rendered {:?}\nkustomize built {:?}",
        ids(rendered),
        ids(built)
    );
    for k in built {
        let found = rendered.iter().find(|t| {
            t["kind"] == k["kind"]
                && t["metadata"]["name"] == k["metadata"]["name"]
                && (k["metadata"]["namespace"].is_null()
                    || t["metadata"]["namespace"] == k["metadata"]["namespace"])
        });
        let mut t = found
            .unwrap_or_else(|| panic!("tend did not render {}", id(k)))
            .clone();
        without_tend_metadata(&mut t);
        if k["metadata"]["namespace"].is_null() {
            t["metadata"].as_object_mut().unwrap().remove("namespace");
        }
        assert_eq!(&t, k, "{}: tend render and kubectl kustomize differ", id(k));
    }
}

fn workload_config(deploy: &Value) -> String {
    deploy["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Mutating requests of any kind, tend's own bookkeeping included.
fn writes(cluster: &TestCluster) -> Vec<String> {
    cluster
        .requests()
        .into_iter()
        .filter(|r| {
            matches!(
                r.verb,
                Verb::Create
                    | Verb::Update
                    | Verb::Patch
                    | Verb::Apply
                    | Verb::Delete
                    | Verb::DeleteCollection
            )
        })
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

#[test]
fn overlays_render_as_kubectl_kustomize_builds_them() {
    for overlay in ["overlays/staging", "overlays/production"] {
        let rendered = render(&["--path", overlay, "--repo", podinfo().to_str().unwrap()]);
        let built = kubectl_kustomize(&podinfo().join(overlay));
        assert_same_objects(&rendered, &built);
    }
    // What the overlays do, as a reader of the fixture expects it.
    let prod = render(&[
        "--path",
        "overlays/production",
        "--repo",
        podinfo().to_str().unwrap(),
    ]);
    let deploy = prod
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("a Deployment");
    assert_eq!(deploy["metadata"]["name"], "prod-podinfo");
    assert_eq!(deploy["metadata"]["namespace"], "production");
    assert_eq!(deploy["spec"]["replicas"], 3, "the ha Component");
    let container = &deploy["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["image"],
        "registry.example.com/mirror/podinfo:6.5.1"
    );
    assert_eq!(
        container["command"][3], "--level=warn",
        "the JSON 6902 patch"
    );
    assert!(workload_config(deploy).starts_with("prod-podinfo-config-"));
    assert!(
        deploy["spec"]["template"]["metadata"]["annotations"]["tend.dev/config-hash"].is_string(),
        "built workloads get tend's config hash like any other"
    );
}

#[test]
fn a_tree_of_overlays_builds_each_overlay_but_not_its_base_or_component() {
    let (code, stdout, stderr) = run(tend_k().arg("render").arg("--repo").arg(podinfo()));
    assert_eq!(code, 0, "{stderr}");
    let rendered = parse_stream(&stdout);
    let mut expected = kubectl_kustomize(&podinfo().join("overlays/production"));
    expected.extend(kubectl_kustomize(&podinfo().join("overlays/staging")));
    assert_same_objects(&rendered, &expected);
    assert!(
        rendered.iter().all(|o| o["metadata"]["name"] != "podinfo"),
        "the base is not built on its own"
    );
    // Each object names the build it came from, at its line in the build output.
    assert!(
        stdout.contains("# Source: overlays/production (kustomize build):1\n"),
        "{stdout}"
    );
    assert!(stdout.contains("# Source: overlays/staging (kustomize build):"));
    assert!(
        stderr.contains("rendered 8 objects from 2 files"),
        "{stderr}"
    );
    // kustomize's own notices are passed on.
    assert!(stderr.contains("'commonLabels' is deprecated"), "{stderr}");
}

#[test]
fn a_plain_tree_with_kustomize_directories() {
    // The Flux Kustomization is applied as it is (README "Coming from Flux").
    let rendered = render(&[
        "--apply-controller-objects",
        "--repo",
        mixed().to_str().unwrap(),
    ]);
    let mut names: Vec<String> = ids(&rendered);
    names.sort();
    let redis_cm = kubectl_kustomize(&mixed().join("apps/redis"))
        .into_iter()
        .find(|o| o["kind"] == "ConfigMap")
        .unwrap();
    let redis_cm_name = redis_cm["metadata"]["name"].as_str().unwrap();
    assert!(redis_cm_name.starts_with("redis-config-"));
    let mut expected = vec![
        "ConfigMap tools/settings".to_string(),
        format!("ConfigMap tools/{redis_cm_name}"),
        "CustomResourceDefinition /kustomizations.kustomize.toolkit.fluxcd.io".into(),
        "Deployment tools/redis".into(),
        "ImmortalContainer tools/team-memcached".into(),
        "Kustomization flux-system/apps".into(),
        "Namespace /flux-system".into(),
        "Namespace /tools".into(),
        "Pod tools/team-memcached-immortalpod".into(),
        "Service tools/redis".into(),
    ];
    expected.sort();
    assert_eq!(names, expected, "patch files are not objects of their own");
    // The kustomize directories render as kustomize builds them.
    let redis: Vec<Value> = rendered
        .iter()
        .filter(|o| o["metadata"]["annotations"]["team"] == "platform")
        .cloned()
        .collect();
    assert_same_objects(&redis, &kubectl_kustomize(&mixed().join("apps/redis")));
    // Flux's Kustomization is an object like any other.
    let flux = rendered
        .iter()
        .find(|o| o["kind"] == "Kustomization")
        .unwrap();
    assert_eq!(flux["apiVersion"], "kustomize.toolkit.fluxcd.io/v1");
    assert_eq!(flux["spec"]["path"], "./apps");
    // tend's kinds inside a kustomization: kustomize names it, tend expands it.
    let immortal = rendered
        .iter()
        .find(|o| o["kind"] == "ImmortalContainer")
        .unwrap();
    assert_eq!(immortal["spec"]["image"], "memcached:1.6");
}

#[test]
fn overlays_and_a_mixed_tree_apply_then_diff_clean() {
    let cluster = crate::kinds::cluster_with_crds();
    let repo = podinfo();
    for overlay in ["overlays/staging", "overlays/production"] {
        let set = overlay.replace("overlays/", "podinfo-");
        let args = ["--path", overlay, "--applyset", &set];
        let (code, stdout, stderr) = tend_on(&cluster, &repo, &[&["apply"][..], &args].concat());
        assert_eq!(code, 0, "apply {overlay}:\n{stdout}\n{stderr}");
        let (code, stdout, stderr) = tend_on(&cluster, &repo, &[&["diff"][..], &args].concat());
        assert_eq!(code, 0, "diff {overlay} after apply:\n{stdout}\n{stderr}");
    }
    let deploy = get(
        &cluster,
        "apps",
        "deployments",
        "production",
        "prod-podinfo",
    )
    .unwrap();
    assert_eq!(deploy["spec"]["replicas"], 3);
    assert!(get(
        &cluster,
        "apps",
        "deployments",
        "staging",
        "staging-podinfo"
    )
    .is_some());

    let args = ["--applyset", "mixed", "--apply-controller-objects"];
    let (code, stdout, stderr) = tend_on(&cluster, &mixed(), &[&["apply"][..], &args].concat());
    assert_eq!(code, 0, "apply mixed:\n{stdout}\n{stderr}");
    let (code, stdout, stderr) = tend_on(&cluster, &mixed(), &[&["diff"][..], &args].concat());
    assert_eq!(code, 0, "diff mixed after apply:\n{stdout}\n{stderr}");
    assert!(get(&cluster, "apps", "deployments", "tools", "redis").is_some());
    assert!(get(
        &cluster,
        "tend.dev",
        "immortalcontainers",
        "tools",
        "team-memcached"
    )
    .is_some());
    assert!(get(
        &cluster,
        "kustomize.toolkit.fluxcd.io",
        "kustomizations",
        "flux-system",
        "apps"
    )
    .is_some());
}

#[test]
fn a_generator_change_rolls_the_workload_that_mounts_it() {
    let cluster = TestCluster::start();
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&podinfo(), dir.path());
    let args = ["--path", "overlays/production"];
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &[&["apply"][..], &args].concat());
    assert_eq!(code, 0, "{stderr}");
    let before = get(
        &cluster,
        "apps",
        "deployments",
        "production",
        "prod-podinfo",
    )
    .unwrap();
    let old_cm = workload_config(&before);

    let props = dir.path().join("base/config/app.properties");
    let text = std::fs::read_to_string(&props).unwrap();
    std::fs::write(&props, text.replace("level=info", "level=debug")).unwrap();
    let (code, stdout, _) = tend_on(&cluster, dir.path(), &[&["diff"][..], &args].concat());
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("~ apps/v1 Deployment production/prod-podinfo"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("- v1 ConfigMap production/{old_cm}")),
        "{stdout}"
    );

    let (code, _, stderr) = tend_on(&cluster, dir.path(), &[&["apply"][..], &args].concat());
    assert_eq!(code, 0, "{stderr}");
    let after = get(
        &cluster,
        "apps",
        "deployments",
        "production",
        "prod-podinfo",
    )
    .unwrap();
    let new_cm = workload_config(&after);
    assert_ne!(
        new_cm, old_cm,
        "the generated name changed with the content"
    );
    assert_ne!(
        before["spec"]["template"], after["spec"]["template"],
        "the pod template changed, so the Deployment rolls"
    );
    let cm = get(&cluster, "", "configmaps", "production", &new_cm).unwrap();
    assert!(cm["data"]["app.properties"]
        .as_str()
        .unwrap()
        .contains("level=debug"));
    assert!(
        get(&cluster, "", "configmaps", "production", &old_cm).is_none(),
        "the old generated ConfigMap is pruned"
    );
    let (code, stdout, _) = tend_on(&cluster, dir.path(), &[&["diff"][..], &args].concat());
    assert_eq!(code, 0, "{stdout}");
}

#[test]
fn a_broken_kustomization_exits_2_naming_the_file_and_writes_nothing() {
    let cluster = TestCluster::start();
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&podinfo(), dir.path());
    let file = dir.path().join("overlays/production/kustomization.yaml");
    let good = std::fs::read_to_string(&file).unwrap();

    // A resource that does not exist.
    std::fs::write(&file, good.replace("- namespace.yaml", "- namespaces.yaml")).unwrap();
    cluster.clear_requests();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("overlays/production/kustomization.yaml:1: `kubectl kustomize overlays/production` failed: ")
            || stderr.contains("overlays/production/kustomization.yaml:1: `kustomize build overlays/production` failed: "),
        "{stderr}"
    );
    assert!(stderr.contains("namespaces.yaml"), "{stderr}");
    assert!(
        !stderr.contains(&dir.path().display().to_string()),
        "paths are relative: {stderr}"
    );
    assert_eq!(writes(&cluster), Vec::<String>::new());

    // An unknown field: the line of the field.
    std::fs::write(&file, good.replace("images:", "imagez:")).unwrap();
    let (code, _, stderr) = run(tend_k().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 2, "{stderr}");
    let line = good.lines().position(|l| l == "images:").unwrap() + 1;
    assert!(
        stderr.contains(&format!("overlays/production/kustomization.yaml:{line}: `kubectl kustomize overlays/production` failed: invalid Kustomization: json: unknown field \"imagez\"")),
        "{stderr}"
    );
    // Broken YAML: kustomize's line.
    std::fs::write(
        &file,
        good.replace("namePrefix: prod-", "namePrefix: [prod-"),
    )
    .unwrap();
    let (code, _, stderr) = run(tend_k().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("overlays/production/kustomization.yaml:"),
        "{stderr}"
    );
    assert!(stderr.contains("invalid Kustomization: yaml:"), "{stderr}");
    assert_eq!(writes(&cluster), Vec::<String>::new());
}

/// A directory holding only links to the named programs, for a PATH without the others.
fn path_with(programs: &[&str]) -> tempfile::TempDir {
    let bin = tempfile::tempdir().unwrap();
    for program in programs {
        let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|d| d.join(program))
            .find(|p| p.is_file())
            .unwrap_or_else(|| panic!("{program} is on PATH"));
        std::os::unix::fs::symlink(found, bin.path().join(program)).unwrap();
    }
    bin
}

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn the_builder_is_kustomize_else_kubectl_else_a_clear_error() {
    let repo = podinfo();
    let path = ["--path", "overlays/staging"];
    // Only kubectl: `kubectl kustomize`.
    let bin = path_with(&["kubectl"]);
    let (code, stdout, stderr) = run(tend()
        .env("PATH", bin.path())
        .args(["render", "-o", "json", "--repo"])
        .arg(&repo)
        .args(path));
    assert_eq!(code, 0, "{stderr}");
    let list: Value = serde_json::from_str(&stdout).unwrap();
    assert_same_objects(
        list["items"].as_array().unwrap(),
        &kubectl_kustomize(&repo.join("overlays/staging")),
    );

    // A kustomize binary wins (here a stand-in that says how it was called).
    script(
        bin.path(),
        "kustomize",
        "printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: built\\ndata:\\n  args: \"%s\"\\n' \"$*\"\n",
    );
    let (code, stdout, stderr) = run(tend()
        .env("PATH", bin.path())
        .args(["render", "--repo"])
        .arg(&repo)
        .args(path));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("args: build .\n"), "{stdout}");

    // Neither: exit 2, nothing rendered, and what to do.
    let empty = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = run(tend()
        .env("PATH", empty.path())
        .args(["render", "--repo"])
        .arg(&repo));
    assert_eq!(code, 2, "{stdout}");
    assert!(stdout.is_empty());
    for overlay in ["production", "staging"] {
        assert!(
            stderr.contains(&format!("overlays/{overlay}/kustomization.yaml:1: cannot build this kustomization: neither `kustomize` nor `kubectl` is on PATH")),
            "{stderr}"
        );
    }
    assert!(stderr.contains("--kustomize-command"), "{stderr}");
}

#[test]
fn kustomize_command_runs_without_tend_secrets() {
    let bin = tempfile::tempdir().unwrap();
    let builder = script(
        bin.path(),
        "my-builder",
        "printf 'apiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: built\\ndata:\\n  args: \"%s\"\\n  token: \"%s\"\\n  prompt: \"%s\"\\n  pwd: \"%s\"\\n' \"$*\" \"${TEND_GIT_TOKEN:-none}\" \"$GIT_TERMINAL_PROMPT\" \"$(pwd)\"\n",
    );
    let repo = podinfo();
    let command = format!("{} build --enable-helm", builder.display());
    for via_env in [false, true] {
        let mut cmd = tend();
        cmd.env("TEND_GIT_TOKEN", "s3cret-token")
            .args([
                "render",
                "-o",
                "json",
                "--path",
                "overlays/production",
                "--repo",
            ])
            .arg(&repo);
        if via_env {
            cmd.env("TEND_KUSTOMIZE_COMMAND", &command);
        } else {
            cmd.args(["--kustomize-command", &command]);
        }
        let (code, stdout, stderr) = run(&mut cmd);
        assert_eq!(code, 0, "{stderr}");
        let list: Value = serde_json::from_str(&stdout).unwrap();
        let data = &list["items"][0]["data"];
        assert_eq!(
            data["args"], "build --enable-helm .",
            "the --path directory is the root"
        );
        assert_eq!(data["token"], "none", "tend's variables are not passed on");
        assert_eq!(data["prompt"], "0", "git never prompts");
        assert_eq!(
            Path::new(data["pwd"].as_str().unwrap()),
            repo.join("overlays/production").canonicalize().unwrap()
        );
    }
    // A builder that fails: its message, cut to one readable line.
    let failing = script(
        bin.path(),
        "failing",
        "echo 'Error: something broke' >&2\necho 'second line' >&2\nexit 1\n",
    );
    let (code, _, stderr) = run(tend()
        .args([
            "render",
            "--path",
            "overlays/production",
            "--kustomize-command",
        ])
        .arg(&failing)
        .arg("--repo")
        .arg(&repo));
    assert_eq!(code, 2);
    assert!(
        stderr.contains("kustomization.yaml:1: `")
            && stderr.contains("` failed: something broke; second line"),
        "{stderr}"
    );
    let (code, _, stderr) = run(tend()
        .args([
            "render",
            "--kustomize-command",
            "no-such-builder build",
            "--repo",
        ])
        .arg(&repo));
    assert_eq!(code, 2);
    assert!(
        stderr.contains("`no-such-builder` was not found"),
        "{stderr}"
    );
}

#[test]
fn a_component_alone_is_not_a_build() {
    let (code, stdout, stderr) = run(tend_k()
        .args(["render", "--path", "components/ha", "--repo"])
        .arg(podinfo()));
    assert_eq!(code, 2, "{stdout}");
    assert!(
        stderr.contains("kustomization.yaml:1: this directory is a kustomize Component"),
        "{stderr}"
    );
}

/// Commit everything in `dir` as a new git repository.
fn git_commit_all(dir: &Path) {
    commit_all(&git2::Repository::init(dir).unwrap(), "site");
}

#[test]
fn git_sources_build_at_the_fetched_commit() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("site");
    copy_tree(&podinfo(), &work);
    git_commit_all(&work);
    // An uncommitted edit is not what the commit holds.
    let props = work.join("base/config/app.properties");
    std::fs::write(&props, "level=uncommitted\n").unwrap();
    let cache = tempfile::tempdir().unwrap();
    let url = format!("file://{}", work.display());
    let rendered = render(&[
        "--repo",
        &url,
        "--path",
        "overlays/production",
        "--cache-dir",
        cache.path().to_str().unwrap(),
    ]);
    assert_same_objects(
        &rendered,
        &kubectl_kustomize(&podinfo().join("overlays/production")),
    );
}

#[test]
fn origin_annotations_name_the_resource_file_and_are_not_applied() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        (
            "app/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nbuildMetadata: [originAnnotations]\nnamespace: web\nresources:\n  - good.yaml\n  - bad.yaml\n",
        ),
        (
            "app/good.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: good\ndata:\n  a: \"1\"\n",
        ),
        (
            "app/bad.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Not_A_Name\ndata:\n  a: \"1\"\n",
        ),
    ];
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let out = std::process::Command::new("kubectl")
        .arg("kustomize")
        .arg(dir.path().join("app"))
        .output()
        .unwrap();
    let built = String::from_utf8_lossy(&out.stdout);
    let line = built
        .lines()
        .position(|l| l == "  name: Not_A_Name")
        .unwrap()
        + 1;
    let (code, _, stderr) = run(tend_k().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 2);
    assert!(
        stderr.contains(&format!(
            "app (kustomize build, from app/bad.yaml):{line}: metadata.name \"Not_A_Name\""
        )),
        "{stderr}\n{built}"
    );

    std::fs::remove_file(dir.path().join("app/bad.yaml")).unwrap();
    std::fs::write(
        dir.path().join("app/kustomization.yaml"),
        files[0].1.replace("  - bad.yaml\n", ""),
    )
    .unwrap();
    let (code, stdout, stderr) = run(tend_k().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("# Source: app (kustomize build, from app/good.yaml):1"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("config.kubernetes.io"),
        "build annotations are removed: {stdout}"
    );
}

#[test]
fn files_a_kustomization_reads_from_outside_its_directory_are_not_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        (
            "app/kustomization.yaml",
            "resources:\n  - ../shared/cm.yaml\nnamespace: web\n",
        ),
        (
            "shared/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n",
        ),
        (
            "other.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n  namespace: web\n",
        ),
    ];
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let rendered = render(&[
        "--kustomize-command",
        "kubectl kustomize --load-restrictor LoadRestrictionsNone",
        "--repo",
        dir.path().to_str().unwrap(),
    ]);
    let mut names = ids(&rendered);
    names.sort();
    assert_eq!(names, ["ConfigMap web/other", "ConfigMap web/shared"]);
}

#[test]
fn a_tendignored_kustomization_file_makes_a_plain_directory() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&repo_root().join("cronjob"), dir.path());
    // The fleet's CronJob is an install of its own (README "A fleet of clusters").
    std::fs::remove_dir_all(dir.path().join("fleet")).unwrap();
    // As `cronjob/` used to be read: file by file, kustomization.yaml skipped.
    std::fs::write(dir.path().join(".tendignore"), "kustomization.yaml\n").unwrap();
    let (code, _, stderr) = run(tend_k().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("rendered 24 objects from 7 files"),
        "{stderr}"
    );
    std::fs::remove_file(dir.path().join(".tendignore")).unwrap();
    let (code, _, stderr) = run(tend_k().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("rendered 24 objects from 1 file"),
        "{stderr}"
    );
}

/// The README's "Kustomize" example, checked for what the README says about it (the README
/// test runs its commands; this one looks at what they print).
#[test]
fn the_readme_example_renders_as_the_readme_says() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let section = readme
        .split("\n## Kustomize\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("README has a Kustomize section");
    let work = tempfile::tempdir().unwrap();
    let mut blocks = section.split("```yaml\n").skip(1);
    let mut written = 0;
    for block in blocks.by_ref() {
        let block = block.split("```").next().unwrap();
        let path = block.lines().next().unwrap().trim_start_matches("# ");
        let path = work.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, block).unwrap();
        written += 1;
    }
    assert_eq!(written, 4);
    let shop = work.path().join("shop");
    let overlay = render(&["--repo", shop.to_str().unwrap(), "--path", "overlays/prod"]);
    assert_same_objects(&overlay, &kubectl_kustomize(&shop.join("overlays/prod")));
    // The whole tree: the overlay once, the base not on its own.
    let tree = render(&[
        "--repo",
        shop.to_str().unwrap(),
        "--kustomize-command",
        "kubectl kustomize",
    ]);
    assert_eq!(ids(&tree), ids(&overlay));
    assert!(section.contains("tend render --repo shop --kustomize-command \"kubectl kustomize\""));

    // The failure the README quotes.
    let file = shop.join("overlays/prod/kustomization.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("- namespace.yaml", "- namespaces.yaml")).unwrap();
    let (code, _, stderr) = run(tend_k().arg("render").arg("--repo").arg(&shop));
    assert_eq!(code, 2);
    let quoted = section
        .split("```text\n")
        .nth(1)
        .and_then(|t| t.split("...").next())
        .unwrap();
    for line in quoted.lines() {
        assert!(
            stderr.contains(line),
            "README quotes `{line}`; tend says:\n{stderr}"
        );
    }
}

#[test]
fn a_namespace_kustomize_sets_on_a_cluster_scoped_kind_it_does_not_know_is_dropped_as_the_api_server_drops_it(
) {
    let dir = site(&[
        (
            "policy/kustomization.yaml",
            "namespace: o11y\nresources:\n  - policy.yaml\n  - cm.yaml\n",
        ),
        (
            "policy/policy.yaml",
            "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingAdmissionPolicyBinding\nmetadata:\n  name: add-label\nspec:\n  policyName: add-label\n",
        ),
        ("policy/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"),
    ]);
    let built = kubectl_kustomize(&dir.path().join("policy"));
    assert!(
        built
            .iter()
            .any(|o| o["kind"] == "MutatingAdmissionPolicyBinding"
                && o["metadata"]["namespace"] == "o11y"),
        "kustomize sets the namespace on a kind it does not know: {built:?}"
    );
    let objects = render(&["--repo", dir.path().to_str().unwrap()]);
    let binding = objects
        .iter()
        .find(|o| o["kind"] == "MutatingAdmissionPolicyBinding")
        .expect("the binding");
    assert!(binding["metadata"].get("namespace").is_none(), "{binding}");
    let cm = objects
        .iter()
        .find(|o| o["kind"] == "ConfigMap")
        .expect("the ConfigMap");
    assert_eq!(cm["metadata"]["namespace"], "o11y");
}

#[test]
fn a_cluster_scoped_custom_resource_a_build_put_in_a_namespace_applies_as_kubectl_applies_it() {
    let cluster = TestCluster::start();
    let crd = serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "clusterissuers.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Cluster",
            "names": {"plural": "clusterissuers", "singular": "clusterissuer", "kind": "ClusterIssuer"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    });
    cluster.seed(crd).unwrap();
    let dir = site(&[
        ("namespaces.yaml", &ns_yaml("certs")),
        ("issuer/kustomization.yaml", "namespace: certs\nresources:\n  - issuer.yaml\n"),
        (
            "issuer/issuer.yaml",
            "apiVersion: example.com/v1\nkind: ClusterIssuer\nmetadata:\n  name: letsencrypt\nspec:\n  acme: {}\n",
        ),
    ]);
    let mut cmd = tend_k();
    let (code, out, err) = run(cmd
        .args(["apply", "--repo"])
        .arg(dir.path())
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path()));
    assert_eq!(code, 0, "{out}\n{err}");
    let issuer =
        get(&cluster, "example.com", "clusterissuers", "", "letsencrypt").expect("applied");
    assert!(issuer["metadata"].get("namespace").is_none(), "{issuer}");
    let (code, out, err) = run(tend_k()
        .args(["diff", "--repo"])
        .arg(dir.path())
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path()));
    assert_eq!(code, 0, "the second diff is clean: {out}\n{err}");
    // A file written by hand is still held to the rule.
    let plain = site(&[(
        "issuer.yaml",
        "apiVersion: example.com/v1\nkind: ClusterIssuer\nmetadata:\n  name: other\n  namespace: certs\n",
    )]);
    let (code, _, err) = tend_on(&cluster, plain.path(), &["diff"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("ClusterIssuer is cluster-scoped and cannot have metadata.namespace"),
        "{err}"
    );
}
