//! Erasure of a person on SQLite: the transaction behind `recipient_erase`, and the erasure
//! key that the suppression statements hash addresses with.

use crate::map_err;
use kairos_store::*;
use sqlx::SqliteConnection;

/// The erasure key, if one was created: from the store's cache, else from `kairos_keys`
/// (cached once found; it never changes).
pub(crate) async fn erasure_key(
    keys: &KeyCache,
    conn: &mut SqliteConnection,
) -> Result<Option<Vec<u8>>> {
    if let Some(k) = keys.get() {
        return Ok(Some(k.to_vec()));
    }
    let key: Option<Vec<u8>> = sqlx::query_scalar("SELECT key FROM kairos_keys WHERE name = ?1")
        .bind(ERASURE_KEY)
        .fetch_optional(&mut *conn)
        .await
        .map_err(|e| map_err("reading the erasure key", e))?;
    Ok(key.map(|k| keys.set(k).to_vec()))
}

/// The keyed hash of `address` if an erasure key exists (else no address was ever erased).
pub(crate) async fn hash_of(
    keys: &KeyCache,
    conn: &mut SqliteConnection,
    address: &str,
) -> Result<Option<String>> {
    Ok(erasure_key(keys, conn)
        .await?
        .map(|k| address_hash(&k, address)))
}
