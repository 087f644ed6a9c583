//! The node role ([`crate::NodeStore`]): migrations (the store's), settings and admin UI
//! sessions, written once over [`SqlRun`].

use super::secrets::SETTING_UPSERT;
use super::{SqlRun, rows};
use crate::binds;
use crate::{
    AdminSession, AdminSessionCreate, ApiTokenCreate, ApiTokenRecord, ApiTokenRevoke,
    ApiTokenTouch, Result, Setting, SettingPut,
};

/// `setting_get`.
pub async fn setting_get(run: &mut impl SqlRun, name: &str) -> Result<Option<Setting>> {
    run.fetch_optional(
        "setting get",
        "SELECT name, value, updated_at FROM settings WHERE name = $1",
        binds![name],
        &|r| rows::setting(r),
    )
    .await
}

/// `setting_put`: stored, or removed without a value.
pub async fn setting_put(run: &mut impl SqlRun, p: SettingPut) -> Result<()> {
    match p.value {
        Some(v) => {
            run.execute("setting put", SETTING_UPSERT, binds![p.name, v, p.now])
                .await?
        }
        None => {
            run.execute(
                "setting put",
                "DELETE FROM settings WHERE name = $1",
                binds![p.name],
            )
            .await?
        }
    };
    Ok(())
}

/// `setting_create`: stored only if the setting does not exist; the stored value either way
/// (of two nodes creating it at once, the first insert wins and both read it).
pub async fn setting_create(run: &mut impl SqlRun, p: SettingPut) -> Result<Option<Setting>> {
    if let Some(v) = p.value {
        run.execute(
            "setting create",
            "INSERT INTO settings (name, value, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (name) DO NOTHING",
            binds![p.name.clone(), v, p.now],
        )
        .await?;
    }
    setting_get(run, &p.name).await
}

/// `admin_session_create`, on a transaction's connection: expired sessions go first.
pub async fn admin_session_create(run: &mut impl SqlRun, p: AdminSessionCreate) -> Result<()> {
    let s = p.session;
    run.execute(
        "admin session create",
        "DELETE FROM admin_sessions WHERE expires_at <= $1",
        binds![s.created_at],
    )
    .await?;
    run.execute(
        "admin session create",
        "INSERT INTO admin_sessions (id_hash, created_at, expires_at) VALUES ($1, $2, $3)",
        binds![s.id_hash, s.created_at, s.expires_at],
    )
    .await?;
    Ok(())
}

/// `admin_session_get`.
pub async fn admin_session_get(
    run: &mut impl SqlRun,
    id_hash: &str,
) -> Result<Option<AdminSession>> {
    run.fetch_optional(
        "admin session get",
        "SELECT id_hash, created_at, expires_at FROM admin_sessions WHERE id_hash = $1",
        binds![id_hash],
        &|r| rows::admin_session(r),
    )
    .await
}

/// `admin_session_delete`.
pub async fn admin_session_delete(run: &mut impl SqlRun, id_hash: &str) -> Result<bool> {
    let n = run
        .execute(
            "admin session delete",
            "DELETE FROM admin_sessions WHERE id_hash = $1",
            binds![id_hash],
        )
        .await?;
    Ok(n > 0)
}

const API_TOKEN_COLUMNS: &str = "id, name, scope, token_hash, created_at, last_used_at, revoked_at";

/// `api_token_create`.
pub async fn api_token_create(run: &mut impl SqlRun, p: ApiTokenCreate) -> Result<()> {
    let t = p.token;
    run.execute(
        "api token create",
        "INSERT INTO api_tokens (id, name, scope, token_hash, created_at) \
         VALUES ($1, $2, $3, $4, $5)",
        binds![t.id, t.name, t.scope, t.token_hash, t.created_at],
    )
    .await?;
    Ok(())
}

/// `api_token_list`.
pub async fn api_token_list(run: &mut impl SqlRun) -> Result<Vec<ApiTokenRecord>> {
    run.fetch(
        "api token list",
        &format!("SELECT {API_TOKEN_COLUMNS} FROM api_tokens ORDER BY created_at, id"),
        binds![],
        &|r| rows::api_token(r),
    )
    .await
}

/// `api_token_get`.
pub async fn api_token_get(
    run: &mut impl SqlRun,
    token_hash: &str,
) -> Result<Option<ApiTokenRecord>> {
    run.fetch_optional(
        "api token get",
        &format!("SELECT {API_TOKEN_COLUMNS} FROM api_tokens WHERE token_hash = $1"),
        binds![token_hash],
        &|r| rows::api_token(r),
    )
    .await
}

/// `api_token_revoke`.
pub async fn api_token_revoke(run: &mut impl SqlRun, p: ApiTokenRevoke) -> Result<bool> {
    let n = run
        .execute(
            "api token revoke",
            "UPDATE api_tokens SET revoked_at = $2 \
             WHERE (id = $1 OR name = $1) AND revoked_at IS NULL",
            binds![p.id_or_name, p.now],
        )
        .await?;
    Ok(n > 0)
}

/// `api_token_touch`.
pub async fn api_token_touch(run: &mut impl SqlRun, p: ApiTokenTouch) -> Result<()> {
    run.execute(
        "api token touch",
        "UPDATE api_tokens SET last_used_at = $2 \
         WHERE token_hash = $1 AND (last_used_at IS NULL OR last_used_at <= $3)",
        binds![p.token_hash, p.now, p.skip_after],
    )
    .await?;
    Ok(())
}

#[async_trait::async_trait]
impl<D: super::SqlDb> crate::NodeStore for D {
    async fn migrate(&self) -> Result<()> {
        self.migrations_apply().await
    }

    async fn migration_list(&self) -> Result<Vec<crate::MigrationStatus>> {
        self.migrations_list().await
    }

    async fn setting_get(&self, name: &str) -> Result<Option<Setting>> {
        setting_get(&mut self.reader(), name).await
    }

    async fn setting_put(&self, p: SettingPut) -> Result<()> {
        setting_put(&mut self.writer(), p).await
    }

    async fn setting_create(&self, p: SettingPut) -> Result<Option<Setting>> {
        setting_create(&mut self.writer(), p).await
    }

    async fn admin_session_create(&self, p: AdminSessionCreate) -> Result<()> {
        let mut tx = self.begin("admin session create").await?;
        admin_session_create(&mut D::in_tx(&mut tx), p).await?;
        self.commit(tx, "admin session create").await
    }

    async fn admin_session_get(&self, id_hash: &str) -> Result<Option<AdminSession>> {
        admin_session_get(&mut self.reader(), id_hash).await
    }

    async fn admin_session_delete(&self, id_hash: &str) -> Result<bool> {
        admin_session_delete(&mut self.writer(), id_hash).await
    }

    async fn api_token_create(&self, p: ApiTokenCreate) -> Result<()> {
        api_token_create(&mut self.writer(), p).await
    }

    async fn api_token_list(&self) -> Result<Vec<ApiTokenRecord>> {
        api_token_list(&mut self.reader()).await
    }

    async fn api_token_get(&self, token_hash: &str) -> Result<Option<ApiTokenRecord>> {
        api_token_get(&mut self.reader(), token_hash).await
    }

    async fn api_token_revoke(&self, p: ApiTokenRevoke) -> Result<bool> {
        api_token_revoke(&mut self.writer(), p).await
    }

    async fn api_token_touch(&self, p: ApiTokenTouch) -> Result<()> {
        api_token_touch(&mut self.writer(), p).await
    }

    async fn db_health_read(&self, p: crate::DbHealthRead) -> Result<crate::DbHealth> {
        self.health_read(p).await
    }

    async fn db_vacuum(&self, p: crate::DbVacuum) -> Result<crate::DbVacuumed> {
        self.vacuum(p).await
    }

    async fn node_heartbeat(&self, p: crate::NodeHeartbeat) -> Result<()> {
        super::nodes::node_heartbeat(self, p).await
    }

    async fn node_list(&self, p: crate::NodeList) -> Result<Vec<crate::NodeRecord>> {
        super::nodes::node_list(&mut self.reader(), p).await
    }

    async fn node_prune(&self, p: crate::NodePrune) -> Result<u64> {
        super::nodes::node_prune(&mut self.writer(), p).await
    }
}
