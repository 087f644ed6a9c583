//! Erasure of a person on PostgreSQL: the transaction behind `recipient_erase`, and the erasure
//! key that the suppression statements hash addresses with.

use crate::rows::PgRun;
use kairos_store::sql::inbound;
use kairos_store::*;
use sqlx::PgConnection;

/// The keyed hash of `address` if an erasure key exists (else no address was ever erased).
pub(crate) async fn hash_of(
    keys: &KeyCache,
    conn: &mut PgConnection,
    address: &str,
) -> Result<Option<String>> {
    inbound::hash_of(keys, &mut PgRun::Conn(conn), address).await
}
