//! Keys `--verify-signatures` trusts from a Secret (`--trusted-keys-secret`, as Flux keeps
//! them for `GitRepository.spec.verify`): every entry is armored OpenPGP public keys or
//! `allowed_signers` lines, added to those of `--trusted-keys`.

use crate::source::SourceOptions;
use crate::Error;
use std::sync::Arc;

/// The source options with the keys of the Secret added.
pub async fn with_secret(
    session: &crate::cluster::Session,
    source: &SourceOptions,
    secret: &Option<(String, String)>,
) -> Result<SourceOptions, Error> {
    let mut source = source.clone();
    let Some((namespace, name)) = secret else {
        return Ok(source);
    };
    let entries = super::keys::flag_secret(
        session,
        "--trusted-keys-secret",
        namespace,
        name,
        "create it with the armored OpenPGP public keys or allowed_signers files of the people \
         who sign (kubectl create secret generic NAME --from-file=...)",
    )
    .await?;
    let mut keys = (*source.trusted_keys).clone();
    for (key, bytes) in &entries {
        let text = String::from_utf8_lossy(bytes);
        keys.add(&format!("Secret {namespace}/{name} key {key}"), &text)
            .map_err(|e| Error::Usage(format!("--trusted-keys-secret {e}")))?;
    }
    if keys.is_empty() && source.verify.is_some() {
        return Err(Error::Usage(format!(
            "--trusted-keys-secret {namespace}/{name}: holds no keys, so no signature could \
             be trusted; add the signers' public keys to it"
        )));
    }
    source.trusted_keys = Arc::new(keys);
    Ok(source)
}
