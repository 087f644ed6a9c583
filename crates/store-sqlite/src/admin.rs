//! Admin UI sessions on SQLite (issue 12).

use crate::{SqliteStore, map_err};
use kairos_core::clock::{from_millis, to_millis};
use kairos_store::*;
use sqlx::Row;

impl SqliteStore {
    pub(crate) async fn admin_session_create_impl(&self, p: AdminSessionCreate) -> Result<()> {
        let s = p.session;
        let mut tx = self.begin_write("admin session create").await?;
        sqlx::query("DELETE FROM admin_sessions WHERE expires_at <= ?1")
            .bind(to_millis(s.created_at))
            .execute(&mut *tx)
            .await
            .map_err(|e| map_err("admin session create", e))?;
        sqlx::query(
            "INSERT INTO admin_sessions (id_hash, created_at, expires_at) VALUES (?1, ?2, ?3)",
        )
        .bind(&s.id_hash)
        .bind(to_millis(s.created_at))
        .bind(to_millis(s.expires_at))
        .execute(&mut *tx)
        .await
        .map_err(|e| map_err("admin session create", e))?;
        tx.commit()
            .await
            .map_err(|e| map_err("admin session create", e))
    }

    pub(crate) async fn admin_session_get_impl(
        &self,
        id_hash: &str,
    ) -> Result<Option<AdminSession>> {
        let row = sqlx::query(
            "SELECT id_hash, created_at, expires_at FROM admin_sessions WHERE id_hash = ?1",
        )
        .bind(id_hash)
        .fetch_optional(&self.read)
        .await
        .map_err(|e| map_err("admin session get", e))?;
        row.map(|r| {
            let e = |e| map_err("admin session get", e);
            Ok(AdminSession {
                id_hash: r.try_get("id_hash").map_err(e)?,
                created_at: from_millis(r.try_get("created_at").map_err(e)?),
                expires_at: from_millis(r.try_get("expires_at").map_err(e)?),
            })
        })
        .transpose()
    }

    pub(crate) async fn admin_session_delete_impl(&self, id_hash: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM admin_sessions WHERE id_hash = ?1")
            .bind(id_hash)
            .execute(&self.write)
            .await
            .map_err(|e| map_err("admin session delete", e))?;
        Ok(done.rows_affected() > 0)
    }
}
