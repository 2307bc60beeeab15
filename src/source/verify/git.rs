//! Where git keeps signatures: a commit's `gpgsig` header (libgit2 splits it off), and the
//! end of an annotated tag object, after its message (split as git's `parse_signed_buffer`
//! does: at the last line that begins a signature).

use super::keys::{check, TrustedKeys};
use super::outcome::{Refusal, Signer, Verified, VerifyError};
use git2::{Oid, Repository, StatusOptions};
use std::path::Path;

/// The lines that begin a signature git can store (gpg-interface.c's formats).
const SIGNATURE_STARTS: [&str; 4] = [
    "-----BEGIN PGP SIGNATURE-----",
    "-----BEGIN PGP MESSAGE-----",
    "-----BEGIN SSH SIGNATURE-----",
    "-----BEGIN SIGNED MESSAGE-----",
];

/// What `--verify-signatures` checks, as Flux's `GitRepository.spec.verify.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum VerifyMode {
    /// The commit tend checks out.
    Head,
    /// The annotated tag `--ref` names.
    Tag,
    /// Both the tag and the commit it points at.
    #[value(name = "tag-and-head")]
    TagAndHead,
}

impl VerifyMode {
    fn checks_head(self) -> bool {
        matches!(self, VerifyMode::Head | VerifyMode::TagAndHead)
    }

    fn checks_tag(self) -> bool {
        matches!(self, VerifyMode::Tag | VerifyMode::TagAndHead)
    }
}

/// What was checked out, for verification.
pub struct Target<'a> {
    /// The repository holding the objects (tend's cache, or a local repository).
    pub repository: &'a Path,
    pub commit: &'a str,
    /// The full ref the commit was reached through (`refs/tags/v1`), when known.
    pub resolved_ref: Option<&'a str>,
    /// For a local work tree read as it is: changes not committed are not signed.
    pub work_tree: bool,
}

/// Verifies the checkout as `opts.mode` asks, at `now` (Unix seconds).
pub fn verify_checkout(
    target: &Target<'_>,
    mode: VerifyMode,
    keys: &TrustedKeys,
    now: i64,
) -> Result<Verified, VerifyError> {
    let read_error = |what: &str, e: git2::Error| VerifyError::Read {
        what: what.to_string(),
        message: e.message().to_string(),
    };
    let repo = Repository::discover(target.repository)
        .map_err(|e| read_error(&target.repository.display().to_string(), e))?;
    let mut verified = Verified::default();
    if mode.checks_tag() {
        verified.tag = Some(verify_tag(&repo, target, (mode, keys), now)?);
    }
    if mode.checks_head() {
        if target.work_tree {
            refuse_uncommitted(&repo, target.commit)?;
        }
        let oid = Oid::from_str(target.commit).map_err(|e| read_error(target.commit, e))?;
        let what = format!("commit {}", target.commit);
        let signer = match repo.extract_signature(&oid, None) {
            Ok((signature, signed)) => check(&signature, &signed, keys, now),
            Err(e) if e.code() == git2::ErrorCode::NotFound => Err(Refusal::Unsigned),
            Err(e) => return Err(read_error(&what, e)),
        };
        verified.commit = Some(signer.map_err(|reason| VerifyError::Refused { what, reason })?);
    }
    Ok(verified)
}

fn verify_tag(
    repo: &Repository,
    target: &Target<'_>,
    (mode, keys): (VerifyMode, &TrustedKeys),
    now: i64,
) -> Result<Signer, VerifyError> {
    let mode = match mode {
        VerifyMode::Tag => "tag",
        _ => "tag-and-head",
    };
    let Some(tag_ref) = target.resolved_ref.filter(|r| r.starts_with("refs/tags/")) else {
        return Err(VerifyError::Usage {
            mode,
            message: "checks the tag --ref names, and no tag was asked for; pass --ref with \
                      an annotated tag, or use --verify-signatures head"
                .into(),
        });
    };
    let name = tag_ref.trim_start_matches("refs/tags/");
    let what = format!("tag {name}");
    let read_error = |e: git2::Error| VerifyError::Read {
        what: what.clone(),
        message: e.message().to_string(),
    };
    let oid = repo.refname_to_id(tag_ref).map_err(read_error)?;
    let odb = repo.odb().map_err(read_error)?;
    let object = odb.read(oid).map_err(read_error)?;
    if object.kind() != git2::ObjectType::Tag {
        // A lightweight tag is only a name for a commit: there is nothing to sign.
        return Err(VerifyError::Refused {
            what: format!("{what} (a lightweight tag, which cannot carry a signature)"),
            reason: Refusal::Unsigned,
        });
    }
    let (signed, signature) = split_signed_buffer(object.data());
    if signature.is_empty() {
        return Err(VerifyError::Refused {
            what,
            reason: Refusal::Unsigned,
        });
    }
    check(signature, signed, keys, now).map_err(|reason| VerifyError::Refused { what, reason })
}

/// Splits a tag object at the last line that begins a signature: (signed part, signature).
fn split_signed_buffer(data: &[u8]) -> (&[u8], &[u8]) {
    let mut at = data.len();
    let mut start = 0;
    while start < data.len() {
        let line = &data[start..];
        if SIGNATURE_STARTS
            .iter()
            .any(|s| line.starts_with(s.as_bytes()))
        {
            at = start;
        }
        start += memchr::memchr(b'\n', line).map_or(line.len(), |eol| eol + 1);
    }
    data.split_at(at)
}

/// A work tree read as it is may differ from its commit: refuse that, since only the commit
/// is signed. Ignored files are not read as desired state either, so they do not count.
fn refuse_uncommitted(repo: &Repository, commit: &str) -> Result<(), VerifyError> {
    let mut options = StatusOptions::new();
    options.include_untracked(true).include_ignored(false);
    let statuses = repo
        .statuses(Some(&mut options))
        .map_err(|e| VerifyError::Read {
            what: "the work tree's status".into(),
            message: e.message().to_string(),
        })?;
    let changed: Vec<String> = statuses
        .iter()
        .filter(|s| !s.status().is_ignored())
        .filter_map(|s| s.path().ok().map(|p| p.to_string()))
        .take(3)
        .collect();
    if changed.is_empty() {
        return Ok(());
    }
    Err(VerifyError::Refused {
        what: format!("the work tree at commit {commit}"),
        reason: Refusal::Uncommitted(changed.join(", ")),
    })
}

#[cfg(test)]
mod tests {
    use super::split_signed_buffer;

    #[test]
    fn a_tag_splits_at_its_last_signature() {
        let tag = b"object abc\ntype commit\ntag v1\n\nrelease\n-----BEGIN PGP SIGNATURE-----\nxyz\n-----END PGP SIGNATURE-----\n";
        let (signed, signature) = split_signed_buffer(tag);
        assert_eq!(signed, b"object abc\ntype commit\ntag v1\n\nrelease\n");
        assert!(signature.starts_with(b"-----BEGIN PGP SIGNATURE-----"));
        let (signed, signature) = split_signed_buffer(b"object abc\n\nplain\n");
        assert_eq!(signed, b"object abc\n\nplain\n");
        assert!(signature.is_empty());
    }
}
