//! The node role on SQLite: migrations, settings and admin UI sessions.

use crate::rows::SqRun;
use crate::{SqliteStore, map_err};
use async_trait::async_trait;
use kairos_store::sql::admin;
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
        admin::setting_get(&mut SqRun::Pool(&self.read), name).await
    }

    async fn setting_put(&self, p: SettingPut) -> Result<()> {
        admin::setting_put(&mut SqRun::Pool(&self.write), p).await
    }

    async fn admin_session_create(&self, p: AdminSessionCreate) -> Result<()> {
        let mut tx = self.begin_write("admin session create").await?;
        admin::admin_session_create(&mut SqRun::Conn(&mut tx), p).await?;
        tx.commit()
            .await
            .map_err(|e| map_err("admin session create", e))
    }

    async fn admin_session_get(&self, id_hash: &str) -> Result<Option<AdminSession>> {
        admin::admin_session_get(&mut SqRun::Pool(&self.read), id_hash).await
    }

    async fn admin_session_delete(&self, id_hash: &str) -> Result<bool> {
        admin::admin_session_delete(&mut SqRun::Pool(&self.write), id_hash).await
    }
}
