//! The node role on PostgreSQL: migrations, settings and admin UI sessions.

use crate::rows::PgRun;
use crate::{PostgresStore, map_err};
use async_trait::async_trait;
use kairos_store::sql::admin;
use kairos_store::*;

#[async_trait]
impl NodeStore for PostgresStore {
    async fn migrate(&self) -> Result<()> {
        crate::migrate::run(&self.pool, &self.schema).await
    }

    async fn migration_pending(&self) -> Result<Vec<i64>> {
        crate::migrate::pending(&self.pool, &self.schema).await
    }

    async fn setting_get(&self, name: &str) -> Result<Option<Setting>> {
        admin::setting_get(&mut PgRun::Pool(&self.pool), name).await
    }

    async fn setting_put(&self, p: SettingPut) -> Result<()> {
        admin::setting_put(&mut PgRun::Pool(&self.pool), p).await
    }

    async fn admin_session_create(&self, p: AdminSessionCreate) -> Result<()> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(|e| map_err("admin session create", e))?;
        admin::admin_session_create(&mut PgRun::Conn(&mut tx), p).await?;
        tx.commit()
            .await
            .map_err(|e| map_err("admin session create", e))
    }

    async fn admin_session_get(&self, id_hash: &str) -> Result<Option<AdminSession>> {
        admin::admin_session_get(&mut PgRun::Pool(&self.pool), id_hash).await
    }

    async fn admin_session_delete(&self, id_hash: &str) -> Result<bool> {
        admin::admin_session_delete(&mut PgRun::Pool(&self.pool), id_hash).await
    }
}
