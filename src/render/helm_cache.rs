//! Renders of Helm releases kept from one run to the next: a release whose chart, values,
//! release name and namespace, and capabilities are what they were renders to what it
//! rendered to, so it is not rendered again. Only renders that depend on nothing else are
//! kept — none that asked for the time, looked the cluster up, or read values decrypted from
//! a SOPS file. A render that drew random values depends on the seed too: it is kept only
//! when the seed is the cluster's stored one, under a key that mixes in the seed, and sealed
//! with a key derived from the seed ([`KeptKey::sealed_with`]), so the passwords a chart
//! drew are readable by no one who could not draw them again. Render reads and writes no file: the
//! caller finds the keys of a render's releases ([`super::kept_render_keys`]), reads what was
//! kept under them into [`KeptRenders`], renders, and writes what the render added.

use crate::helm::chart::{Chart, Depended, Manifest, Release};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Renders of releases kept from earlier runs, read before a render, and those the render
/// adds (taken out with [`KeptRenders::take_added`] once it is done).
#[derive(Debug, Default)]
pub struct KeptRenders {
    /// Taken out, not copied, by the render that uses them: a big chart's render is
    /// megabytes.
    found: Mutex<HashMap<String, Kept>>,
    added: Mutex<Vec<(KeptKey, Vec<Manifest>)>>,
    /// The documents of the added renders' files, as parsed (see
    /// [`super::kept_parse::as_kept`]), by key and template.
    parsed: Mutex<HashMap<String, Vec<(String, String)>>>,
    taken: AtomicUsize,
}

/// A release's render as kept: its manifests, and the documents of its files as the render
/// parsed them, by template (see [`super::kept_parse`]).
#[derive(Debug, Default)]
pub struct Kept {
    pub manifests: Vec<Manifest>,
    pub parsed: HashMap<String, Vec<super::kept_parse::KeptDoc>>,
}

/// The first line of a kept entry: changes whenever its layout does.
const ENTRY: &[u8] = b"tend kept helm render 5\n";

/// What a kept entry holds after its first line: the length of its head (decimal, a line),
/// the head (JSON: each manifest's template, flags and text length; each parsed file's
/// template and the length of its documents), then the files' documents as
/// [`super::kept_parse`] keeps them, then the manifests' texts one after another, as they
/// are. A big chart's texts are megabytes: kept raw they are copied, not read as JSON
/// strings.
#[derive(serde::Deserialize)]
struct Head {
    manifests: Vec<ManifestHead>,
    parsed: Vec<(String, usize)>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct ManifestHead {
    template: String,
    crd: bool,
    random: bool,
    /// Bytes of its text.
    len: usize,
}

impl Kept {
    /// The entry [`Added::write_entry`] wrote; `None` when `bytes` are not one (damaged, or
    /// of another layout): that render is rendered again.
    pub fn read(bytes: &[u8]) -> Option<Kept> {
        let rest = bytes.strip_prefix(ENTRY)?;
        let newline = rest.iter().position(|&b| b == b'\n')?;
        let head_len: usize = std::str::from_utf8(&rest[..newline]).ok()?.parse().ok()?;
        let rest = &rest[newline + 1..];
        let head: Head = serde_json::from_slice(rest.get(..head_len)?).ok()?;
        let body = std::str::from_utf8(&rest[head_len..]).ok()?;
        let mut at = 0usize;
        let mut take = |len: usize| {
            let end = at.checked_add(len)?;
            let taken = body.get(at..end)?;
            at = end;
            Some(taken)
        };
        let mut parsed = HashMap::with_capacity(head.parsed.len());
        for (template, len) in head.parsed {
            parsed.insert(template, super::kept_parse::read(take(len)?)?);
        }
        let mut manifests = Vec::with_capacity(head.manifests.len());
        for m in head.manifests {
            manifests.push(Manifest {
                template: m.template,
                crd: m.crd,
                text: take(m.len)?.to_string(),
                random: m.random,
            });
        }
        (at == body.len()).then_some(Kept { manifests, parsed })
    }
}

/// A render the render added, to keep.
#[derive(Debug)]
pub struct Added {
    pub key: KeptKey,
    pub manifests: Vec<Manifest>,
    /// Its files' documents as kept (see [`super::kept_parse::as_kept`]), by template: those
    /// that were parsed without a problem.
    pub parsed: Vec<(String, String)>,
}

impl Added {
    /// The entry as kept (see [`Kept::read`]).
    pub fn to_entry(&self) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        self.write_entry(&mut out)?;
        Ok(out)
    }

    /// Write the entry as kept to `out` (a big chart's is megabytes: not copied first when
    /// it is not sealed).
    pub fn write_entry(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let heads: Vec<ManifestHead> = self
            .manifests
            .iter()
            .map(|m| ManifestHead {
                template: m.template.clone(),
                crd: m.crd,
                random: m.random,
                len: m.text.len(),
            })
            .collect();
        let parsed: Vec<(&str, usize)> = self
            .parsed
            .iter()
            .map(|(template, docs)| (template.as_str(), docs.len()))
            .collect();
        let head = serde_json::to_vec(&serde_json::json!({"manifests": heads, "parsed": parsed}))?;
        out.write_all(ENTRY)?;
        out.write_all(format!("{}\n", head.len()).as_bytes())?;
        out.write_all(&head)?;
        for (_, docs) in &self.parsed {
            out.write_all(docs.as_bytes())?;
        }
        for m in &self.manifests {
            out.write_all(m.text.as_bytes())?;
        }
        Ok(())
    }
}

/// The keys a release's render may be kept under (none when it is never kept), and whether
/// its chart is known by its stamps only (read whole unless this render is kept).
#[derive(Debug, Clone)]
pub struct ReleaseKeys {
    pub keys: Vec<KeptKey>,
    pub unread_chart: bool,
}

/// What a render is kept under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptKey {
    pub key: String,
    /// For a render that drew random values: the seed it drew them from, which seals it.
    pub sealed_with: Option<u64>,
}

impl KeptKey {
    fn plain(key: &str) -> KeptKey {
        KeptKey {
            key: key.to_string(),
            sealed_with: None,
        }
    }

    /// The key of a render of [`key`] that drew random values from `seed`.
    pub fn sealed(key: &str, seed: u64) -> KeptKey {
        use sha2::Digest;
        let mut hash = sha2::Sha256::new();
        hash.update(b"tend helm render drawn from a seed\0");
        hash.update(key.as_bytes());
        hash.update(seed.to_le_bytes());
        KeptKey {
            key: hex::encode(hash.finalize()),
            sealed_with: Some(seed),
        }
    }

    /// The keys a release's render may be kept under: plain, and sealed with `seed` when
    /// the seed is the cluster's.
    pub fn both(key: &str, seed: Option<u64>) -> Vec<KeptKey> {
        let mut keys = vec![KeptKey::plain(key)];
        keys.extend(seed.map(|seed| KeptKey::sealed(key, seed)));
        keys
    }
}

impl KeptRenders {
    /// What was kept, by [`key`].
    pub fn new(found: HashMap<String, Kept>) -> KeptRenders {
        KeptRenders {
            found: Mutex::new(found),
            ..KeptRenders::default()
        }
    }

    /// Whether every release of `releases` whose chart is unread finds its render here, one
    /// no other release of the pass could take first (the releases render side by side).
    pub fn serves_all_unread(&self, releases: &[ReleaseKeys]) -> bool {
        let Ok(found) = self.found.lock() else {
            return false;
        };
        let mut claims: HashMap<&str, usize> = HashMap::new();
        for key in releases.iter().flat_map(|r| &r.keys) {
            *claims.entry(key.key.as_str()).or_default() += 1;
        }
        releases.iter().filter(|r| r.unread_chart).all(|release| {
            let mut found_keys = release
                .keys
                .iter()
                .filter(|k| found.contains_key(&k.key))
                .peekable();
            found_keys.peek().is_some() && found_keys.all(|k| claims[k.key.as_str()] == 1)
        })
    }

    /// The render kept under `key`, taken out (a release renders once a pass).
    pub fn get(&self, key: &str) -> Option<Kept> {
        let kept = self.found.lock().ok()?.remove(key)?;
        self.taken.fetch_add(1, Ordering::Relaxed);
        Some(kept)
    }

    /// Keep the documents of the file of `template` of the render added under `key`, as
    /// parsed (see [`super::kept_parse::as_kept`]).
    pub fn put_parsed(&self, key: &str, template: &str, docs: String) {
        if let Ok(mut parsed) = self.parsed.lock() {
            let templates = parsed.entry(key.to_string()).or_default();
            templates.push((template.to_string(), docs));
        }
    }

    /// Keep a render the render made.
    pub fn put(&self, key: KeptKey, manifests: &[Manifest]) {
        if let Ok(mut added) = self.added.lock() {
            added.push((key, manifests.to_vec()));
        }
    }

    /// The renders added since the last call, with their files' documents.
    pub fn take_added(&self) -> Vec<Added> {
        let added = self
            .added
            .lock()
            .map(|mut added| std::mem::take(&mut *added))
            .unwrap_or_default();
        let mut parsed = self
            .parsed
            .lock()
            .map(|mut parsed| std::mem::take(&mut *parsed))
            .unwrap_or_default();
        added
            .into_iter()
            .map(|(key, manifests)| Added {
                parsed: parsed.remove(&key.key).unwrap_or_default(),
                key,
                manifests,
            })
            .collect()
    }

    /// Renders taken from what was kept so far, for the log.
    pub fn taken(&self) -> usize {
        self.taken.load(Ordering::Relaxed)
    }
}

/// Changes whenever what a kept render means changes.
const FORMAT: &str = "tend helm render 5";

/// What a release's render is kept under: sha256 (hex) of everything it depends on but the
/// seed and the time (renders that use them are not kept).
pub fn key(chart: &Chart, values: &serde_json::Value, release: &Release) -> String {
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    let mut field = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    field(FORMAT.as_bytes());
    field(chart.digest().as_bytes());
    // serde_json's maps are sorted: the same values give the same text.
    field(values.to_string().as_bytes());
    field(release.name.as_bytes());
    field(release.namespace.as_bytes());
    field(release.kube_version.as_bytes());
    for version in &release.api_versions {
        field(version.as_bytes());
    }
    match &release.cluster {
        None => field(b"offline"),
        Some(cluster) => {
            for version in &cluster.api_versions {
                field(version.as_bytes());
            }
        }
    }
    hex::encode(hash.finalize())
}

/// What of a render may be kept, if it may: it asked neither for the time nor the cluster,
/// and no template that drew random values renders anything tend keeps (a chart test that
/// names its pod at random renders nothing here, and is kept blank: nothing the seed made
/// is written down in the clear). `left_out` is the text of a template without what tend
/// leaves out, and whether it left out something worth a note. With `sealed_with` (the
/// cluster's seed), a render that drew random values is kept whole, under its sealed key.
pub fn keepable(
    manifests: &[Manifest],
    depended: &Depended,
    left_out: impl Fn(&Manifest) -> (String, bool),
    (key, sealed_with): (&str, Option<u64>),
) -> Option<(KeptKey, Vec<Manifest>)> {
    if depended.on_time || depended.on_cluster {
        return None;
    }
    let plain = keepable_in_the_clear(manifests, left_out);
    match (plain, sealed_with) {
        (Some(plain), _) => Some((KeptKey::plain(key), plain)),
        (None, Some(seed)) => Some((KeptKey::sealed(key, seed), manifests.to_vec())),
        (None, None) => None,
    }
}

fn keepable_in_the_clear(
    manifests: &[Manifest],
    left_out: impl Fn(&Manifest) -> (String, bool),
) -> Option<Vec<Manifest>> {
    manifests
        .iter()
        .map(|m| {
            if !m.random {
                return Some(m.clone());
            }
            let (text, noted) = left_out(m);
            (text.trim().is_empty() && !noted).then(|| Manifest {
                text: String::new(),
                random: false,
                ..m.clone()
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn release() -> Release {
        Release {
            name: "web".into(),
            namespace: "apps".into(),
            kube_version: "v1.33.0".into(),
            api_versions: Vec::new(),
            seed: 1,
            now: 0,
            cluster: None,
            limits: Default::default(),
        }
    }

    fn chart(template: &str) -> Chart {
        Chart {
            metadata: json!({"apiVersion": "v2", "name": "web", "version": "1.0.0"}),
            files: [("templates/a.yaml".to_string(), template.to_string())].into(),
            ..Chart::default()
        }
    }

    #[test]
    fn the_key_changes_with_what_the_render_depends_on_and_only_that() {
        let values = json!({"a": 1});
        let base = key(&chart("x"), &values, &release());
        assert_eq!(base, key(&chart("x"), &values, &release()));
        let mut other_seed = release();
        other_seed.seed = 2;
        other_seed.now = 5;
        assert_eq!(base, key(&chart("x"), &values, &other_seed));
        assert_ne!(base, key(&chart("y"), &values, &release()));
        assert_ne!(base, key(&chart("x"), &json!({"a": 2}), &release()));
        let mut renamed = release();
        renamed.namespace = "other".into();
        assert_ne!(base, key(&chart("x"), &values, &renamed));
        let mut newer = release();
        newer.kube_version = "v1.34.0".into();
        assert_ne!(base, key(&chart("x"), &values, &newer));
        let mut connected = release();
        connected.cluster = Some(Default::default());
        assert_ne!(base, key(&chart("x"), &values, &connected));
    }

    #[test]
    fn renders_that_drew_random_values_are_not_kept_but_for_what_tend_leaves_out() {
        let manifest = |template: &str, random| Manifest {
            template: template.into(),
            crd: false,
            text: "a: 1\n".into(),
            random,
        };
        // Chart tests are what tend leaves out here.
        let left_out = |m: &Manifest| {
            if m.template.contains("tests/") {
                (String::new(), false)
            } else {
                (m.text.clone(), false)
            }
        };
        let pure = Depended::default();
        let plain = manifest("templates/a.yaml", false);
        let unsealed = ("k", None);
        assert_eq!(
            keepable(std::slice::from_ref(&plain), &pure, left_out, unsealed),
            Some((KeptKey::plain("k"), vec![plain.clone()]))
        );
        let random = manifest("templates/b.yaml", true);
        let both = [plain.clone(), random];
        assert_eq!(keepable(&both, &pure, left_out, unsealed), None);
        // With the cluster's seed, kept whole under a key of that seed.
        let (sealed, kept) = keepable(&both, &pure, left_out, ("k", Some(7))).expect("kept");
        assert_eq!(sealed, KeptKey::sealed("k", 7));
        assert_ne!(sealed.key, KeptKey::sealed("k", 8).key);
        assert_eq!(kept, both.to_vec());
        let test = manifest("templates/tests/t.yaml", true);
        let (_, kept) = keepable(&[plain.clone(), test], &pure, left_out, unsealed).expect("kept");
        assert_eq!((kept[1].text.as_str(), kept[1].random), ("", false));
        // A render that asked for the time, or read the cluster, is not kept.
        let on_time = Depended {
            on_time: true,
            ..Depended::default()
        };
        let on_cluster = Depended {
            on_cluster: true,
            ..Depended::default()
        };
        assert_eq!(
            keepable(
                std::slice::from_ref(&plain),
                &on_time,
                left_out,
                ("k", Some(1))
            ),
            None
        );
        assert_eq!(keepable(&[plain], &on_cluster, left_out, unsealed), None);
    }

    #[test]
    fn a_render_says_whether_it_asked_for_the_time() {
        let mut chart = chart("{{ now | date \"2006\" }}");
        let (rendered, depended) =
            crate::helm::chart::render_reporting(&chart, &json!({}), &release());
        assert!(rendered.is_ok() && depended.on_time, "{rendered:?}");
        chart.files = [("templates/a.yaml".to_string(), "a: 1".to_string())].into();
        let (_, depended) = crate::helm::chart::render_reporting(&chart, &json!({}), &release());
        assert_eq!(depended, Depended::default());
    }
}
