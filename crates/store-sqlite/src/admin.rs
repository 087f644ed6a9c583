//! The node role on SQLite: migrations, settings and admin UI sessions.

use crate::rows::Sq;
use crate::{SqliteStore, map_err};
use async_trait::async_trait;
use kairos_core::clock::to_millis;
use kairos_store::sql::rows;
use kairos_store::*;

#[async_trait]
impl NodeStore for SqliteStore {
    async fn migrate(&self) -> Result<()> {
        crate::migrate::run(&self.write).await
    }

    async fn migration_pending(&self) -> Result<Vec<i64>> {
        crate::migrate::pending(&self.read).await
    }

    async fn setting_get(&self, name: &str) -> Result<Option<Setting>> {
        let row = sqlx::query("SELECT name, value, updated_at FROM settings WHERE name = ?1")
            .bind(name)
            .fetch_optional(&self.read)
            .await
            .map_err(|e| map_err("setting get", e))?;
        row.map(|r| rows::setting(&Sq(&r))).transpose()
    }

    async fn setting_put(&self, p: SettingPut) -> Result<()> {
        let q = match &p.value {
            Some(v) => sqlx::query(
                "INSERT INTO settings (name, value, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
            )
            .bind(&p.name)
            .bind(v)
            .bind(to_millis(p.now)),
            None => sqlx::query("DELETE FROM settings WHERE name = ?1").bind(&p.name),
        };
        q.execute(&self.write)
            .await
            .map_err(|e| map_err("setting put", e))?;
        Ok(())
    }

    async fn admin_session_create(&self, p: AdminSessionCreate) -> Result<()> {
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

    async fn admin_session_get(&self, id_hash: &str) -> Result<Option<AdminSession>> {
        let row = sqlx::query(
            "SELECT id_hash, created_at, expires_at FROM admin_sessions WHERE id_hash = ?1",
        )
        .bind(id_hash)
        .fetch_optional(&self.read)
        .await
        .map_err(|e| map_err("admin session get", e))?;
        row.map(|r| {
            let _e = |e| map_err("admin session get", e);
            rows::admin_session(&Sq(&r))
        })
        .transpose()
    }

    async fn admin_session_delete(&self, id_hash: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM admin_sessions WHERE id_hash = ?1")
            .bind(id_hash)
            .execute(&self.write)
            .await
            .map_err(|e| map_err("admin session delete", e))?;
        Ok(done.rows_affected() > 0)
    }
}
