//! The hashing the lint cache's keys and the import memo share: fields
//! prefixed by their length, so no two lists of fields hash alike.

use sha2::{Digest, Sha256};

/// Adds a length-prefixed field, so no two field lists hash alike.
pub(super) fn field(hash: &mut Sha256, bytes: &[u8]) {
    hash.update((bytes.len() as u64).to_le_bytes());
    hash.update(bytes);
}
