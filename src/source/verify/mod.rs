//! Signatures on what tend applies (README "Verifying what you apply"): with
//! `--verify-signatures`, the commit tend reads (`head`), the tag it was asked for (`tag`), or
//! both must carry a good signature by a trusted key, checked before anything is rendered.
//!
//! Trusted keys are armored OpenPGP public keys and SSH `allowed_signers` files (the format of
//! git's `gpg.ssh.allowedSignersFile`), from `--trusted-keys` files or directories, or the
//! entries of a Secret (`--trusted-keys-secret`, as Flux keeps them). Git stores both kinds of
//! signature the same way: an armored block in the commit's `gpgsig` header, or at the end of
//! an annotated tag's message; the armor's first line says which kind it is.
//!
//! The cryptography is the `pgp` crate's (rPGP) and the `ssh-key` crate's (RustCrypto);
//! this module only decides which key may sign and when.

pub mod cosign;
mod git;
mod keys;
mod openpgp;
mod outcome;
mod ssh;

pub use git::{verify_checkout, Target, VerifyMode};
pub use keys::TrustedKeys;
pub use outcome::VerifyError;
