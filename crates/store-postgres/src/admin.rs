//! Admin UI sessions on PostgreSQL (issue 12).

use crate::{PostgresStore, map_err};
use kairos_store::*;
use sqlx::Row;

impl PostgresStore {
    pub(crate) async fn admin_session_create_impl(&self, p: AdminSessionCreate) -> Result<()> {
        let s = p.session;
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(|e| map_err("admin session create", e))?;
        sqlx::query("DELETE FROM admin_sessions WHERE expires_at <= $1")
            .bind(s.created_at)
            .execute(&mut *tx)
            .await
            .map_err(|e| map_err("admin session create", e))?;
        sqlx::query(
            "INSERT INTO admin_sessions (id_hash, created_at, expires_at) VALUES ($1, $2, $3)",
        )
        .bind(&s.id_hash)
        .bind(s.created_at)
        .bind(s.expires_at)
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
            "SELECT id_hash, created_at, expires_at FROM admin_sessions WHERE id_hash = $1",
        )
        .bind(id_hash)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| map_err("admin session get", e))?;
        row.map(|r| {
            let e = |e| map_err("admin session get", e);
            Ok(AdminSession {
                id_hash: r.try_get("id_hash").map_err(e)?,
                created_at: r.try_get("created_at").map_err(e)?,
                expires_at: r.try_get("expires_at").map_err(e)?,
            })
        })
        .transpose()
    }

    pub(crate) async fn admin_session_delete_impl(&self, id_hash: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM admin_sessions WHERE id_hash = $1")
            .bind(id_hash)
            .execute(&self.pool)
            .await
            .map_err(|e| map_err("admin session delete", e))?;
        Ok(done.rows_affected() > 0)
    }
}
