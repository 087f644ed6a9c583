//! The sealing passes ([`seal_existing`] at start-up, [`reseal`] for key rotation), written
//! once over [`SqlDb`]: their statements and what each row becomes.

use super::{Dialect, RowRead, SqlDb, SqlRun};
use crate::Result;
use crate::binds;
use crate::sealing::{self, ENDPOINT_SECRET_AAD, ENDPOINT_URL_AAD, HTTP_URL_AAD, Sealer};
use serde_json::Value;

/// Endpoints whose secret is still plaintext (no lookup hash), a batch of `$1`.
pub const ENDPOINTS_UNSEALED: &str =
    "SELECT id, url, secret, previous_secret FROM endpoints WHERE secret_hash IS NULL LIMIT $1";
/// Seal one endpoint still unsealed: id `$1`, secret `$2`, lookup hash `$3`, previous
/// secret `$4`, URL `$5`.
pub const ENDPOINT_SEAL: &str =
    "UPDATE endpoints SET secret = $2, secret_hash = $3, previous_secret = $4, url = $5
     WHERE id = $1 AND secret_hash IS NULL";
/// Every endpoint, for re-sealing under a new key.
pub const ENDPOINTS_ALL_SECRETS: &str = "SELECT id, url, secret, previous_secret FROM endpoints";
/// Re-seal one endpoint: id `$1`, secret `$2`, lookup hash `$3`, previous secret `$4`,
/// URL `$5`.
pub const ENDPOINT_RESEAL: &str =
    "UPDATE endpoints SET secret = $2, secret_hash = $3, previous_secret = $4, url = $5
     WHERE id = $1";
/// Every http target, for re-sealing under a new key.
pub const HTTP_TARGETS_ALL_SECRETS: &str = "SELECT id, url, headers, secret FROM http_targets";
/// Endpoints whose URL may carry a credential in plaintext (issue 33: rows stored before URLs
/// were sealed), after id `$2`, a batch of `$1`.
pub const ENDPOINT_URLS_PLAIN: &str = "SELECT id, url FROM endpoints
     WHERE url NOT LIKE 'kairos:v1:%' AND (url LIKE '%@%' OR url LIKE '%?%' OR url LIKE '%#%')
       AND id > $2 ORDER BY id LIMIT $1";
/// Seal one endpoint's URL: id `$1`, URL `$2`.
pub const ENDPOINT_URL_SEAL: &str = "UPDATE endpoints SET url = $2 WHERE id = $1";
/// Http targets whose URL may carry a credential in plaintext, after id `$2`, a batch of `$1`.
pub const HTTP_TARGET_URLS_PLAIN: &str = "SELECT id, url FROM http_targets
     WHERE url NOT LIKE 'kairos:v1:%' AND (url LIKE '%@%' OR url LIKE '%?%' OR url LIKE '%#%')
       AND id > $2 ORDER BY id LIMIT $1";
/// Seal one http target's URL: id `$1`, URL `$2`.
pub const HTTP_TARGET_URL_SEAL: &str = "UPDATE http_targets SET url = $2 WHERE id = $1";
/// Seal one http target: id `$1`, headers `$2`, secret `$3`, fingerprint `$4`, URL `$5`.
pub const HTTP_TARGET_SEAL: &str =
    "UPDATE http_targets SET headers = $2, secret = $3, fingerprint = $4, url = $5 WHERE id = $1";
/// Store a setting: name `$1`, value `$2`, at `$3`.
pub const SETTING_UPSERT: &str = "INSERT INTO settings (name, value, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at";

/// An endpoint row (`id, url, secret, previous_secret`) sealed under `seal`, its stored secret opened with
/// `open` (a plaintext one is taken as it is).
pub struct EndpointSealed {
    /// The endpoint's id.
    pub id: String,
    /// The sealed secret to store.
    pub secret: String,
    /// The secret's lookup hash to store.
    pub secret_hash: String,
    /// The sealed previous secret (of a rotation) to store, if there is one.
    pub previous_secret: Option<String>,
    /// The URL to store (sealed when it carries a credential).
    pub url: String,
}

impl EndpointSealed {
    /// Read an endpoint row and seal it.
    pub fn from_row(
        row: &(impl RowRead + ?Sized),
        open: Option<&Sealer>,
        seal: &Sealer,
    ) -> Result<Self> {
        let id = row.text("id")?;
        let url = sealing::url_from_store(open, row.text("url")?, ENDPOINT_URL_AAD)?;
        let plain = sealing::endpoint_secret_from_store(open, row.text("secret")?)?;
        let previous = row
            .opt_text("previous_secret")?
            .map(|s| sealing::endpoint_secret_from_store(open, s))
            .transpose()?;
        Ok(EndpointSealed {
            id,
            secret: seal.seal(&plain, ENDPOINT_SECRET_AAD),
            secret_hash: seal.lookup_hash(&[&url, &plain]),
            previous_secret: previous.map(|p| seal.seal(&p, ENDPOINT_SECRET_AAD)),
            url: sealing::url_to_store(Some(seal), &url, ENDPOINT_URL_AAD),
        })
    }
}

/// An http target row (`id, headers, secret`) with its headers and secret sealed under
/// `seal`, the stored ones opened with `open`.
pub struct HttpTargetSealed {
    /// The target's id.
    pub id: String,
    /// The headers to store (a JSON string holding the sealed object).
    pub headers: Value,
    /// The secret to store.
    pub secret: Option<String>,
    /// The URL to store (sealed when it carries a credential).
    pub url: String,
}

impl HttpTargetSealed {
    /// Read an http target row and seal it.
    pub fn from_row(
        row: &(impl RowRead + ?Sized),
        open: Option<&Sealer>,
        seal: &Sealer,
    ) -> Result<Self> {
        let headers = sealing::http_headers_from_store(open, row.json("headers")?)?;
        let secret = sealing::http_secret_from_store(open, row.opt_text("secret")?)?;
        let url = sealing::url_from_store(open, row.text("url")?, HTTP_URL_AAD)?;
        Ok(HttpTargetSealed {
            url: sealing::url_to_store(Some(seal), &url, HTTP_URL_AAD),
            id: row.text("id")?,
            headers: sealing::http_headers_to_store(Some(seal), &headers),
            secret: sealing::http_secret_to_store(Some(seal), secret.as_deref()),
        })
    }
}

/// The fingerprint an http target keeps when its plaintext is sealed: a keyed one already
/// stays, a plain one is replaced by its keyed hash.
pub fn http_fingerprint_sealed(sealer: &Sealer, stored: String) -> String {
    if stored.starts_with("hmac:") {
        stored
    } else {
        sealing::http_fingerprint_to_store(Some(sealer), &stored)
    }
}

/// Rows sealed per statement batch of the start-up pass.
const BATCH: i64 = 500;

/// Seal every secret still stored in plaintext under `db`'s sealer — endpoint secrets (with
/// their lookup hash) and http targets' headers and secret (with their fingerprint's keyed
/// hash) — in batches of 500 until none is left; running it again changes nothing. Returns
/// how many rows were sealed; without a sealer it does nothing. On SQLite the WAL is then
/// checkpointed and truncated, and `secure_delete` (set on every connection) has zeroed the
/// replaced values, so no plaintext copy stays in the files. (On PostgreSQL, dead tuples keep
/// the old values until VACUUM.)
pub async fn seal_existing<D: SqlDb>(db: &D) -> Result<u64> {
    let Some(sealer) = db.sealer() else {
        return Ok(0);
    };
    let d = db.writer().dialect();
    let unsealed_targets = match d {
        Dialect::Sqlite => {
            "SELECT id, fingerprint, url, headers, secret FROM http_targets WHERE headers NOT LIKE '\"kairos:v1:%' LIMIT $1"
        }
        Dialect::Postgres => {
            "SELECT id, fingerprint, url, headers, secret FROM http_targets WHERE jsonb_typeof(headers) <> 'string' LIMIT $1"
        }
    };
    let mut sealed = 0u64;
    loop {
        let rows = db
            .writer()
            .fetch(
                "reading plaintext http targets",
                unsealed_targets,
                binds![BATCH],
                &|r| {
                    let t = HttpTargetSealed::from_row(r, Some(sealer), sealer)?;
                    Ok((t, http_fingerprint_sealed(sealer, r.text("fingerprint")?)))
                },
            )
            .await?;
        if rows.is_empty() {
            break;
        }
        let mut tx = db.begin("sealing http targets").await?;
        let mut r = D::in_tx(&mut tx);
        let run = &mut r;
        for (t, fingerprint) in rows {
            let b = binds![t.id, t.headers, t.secret, fingerprint, t.url];
            run.execute("sealing an http target", HTTP_TARGET_SEAL, b)
                .await?;
            sealed += 1;
        }
        drop(r);
        db.commit(tx, "sealing http targets").await?;
    }
    loop {
        let rows = db
            .writer()
            .fetch(
                "reading plaintext endpoint secrets",
                ENDPOINTS_UNSEALED,
                binds![BATCH],
                &|r| EndpointSealed::from_row(r, Some(sealer), sealer),
            )
            .await?;
        if rows.is_empty() {
            break;
        }
        let mut tx = db.begin("sealing endpoint secrets").await?;
        let mut r = D::in_tx(&mut tx);
        let run = &mut r;
        for e in rows {
            let b = binds![e.id, e.secret, e.secret_hash, e.previous_secret, e.url];
            run.execute("sealing an endpoint secret", ENDPOINT_SEAL, b)
                .await?;
            sealed += 1;
        }
        drop(r);
        db.commit(tx, "sealing endpoint secrets").await?;
    }
    for (what, select, update, aad) in [
        (
            "endpoint URLs",
            ENDPOINT_URLS_PLAIN,
            ENDPOINT_URL_SEAL,
            ENDPOINT_URL_AAD,
        ),
        (
            "http target URLs",
            HTTP_TARGET_URLS_PLAIN,
            HTTP_TARGET_URL_SEAL,
            HTTP_URL_AAD,
        ),
    ] {
        sealed += seal_plain_urls(db, sealer, what, select, update, aad).await?;
    }
    if sealed > 0 && d == Dialect::Sqlite {
        // Copy every frame into the database file and empty the WAL, so the plaintext's old
        // frames do not stay behind in it.
        db.writer()
            .execute(
                "checkpointing after sealing",
                "PRAGMA wal_checkpoint(TRUNCATE)",
                vec![],
            )
            .await?;
    }
    Ok(sealed)
}

/// Seal every URL of `select`'s table that carries a credential and is still plaintext
/// (rows stored before URLs were sealed), in batches of [`BATCH`] by id. Returns how many.
async fn seal_plain_urls<D: SqlDb>(
    db: &D,
    sealer: &Sealer,
    what: &str,
    select: &'static str,
    update: &'static str,
    aad: &str,
) -> Result<u64> {
    let mut after = String::new();
    let mut sealed = 0u64;
    loop {
        let rows = db
            .writer()
            .fetch(what, select, binds![BATCH, after.clone()], &|r| {
                Ok((r.text("id")?, r.text("url")?))
            })
            .await?;
        let Some((last, _)) = rows.last() else {
            break;
        };
        after = last.clone();
        let mut tx = db.begin(what).await?;
        let mut r = D::in_tx(&mut tx);
        let run = &mut r;
        for (id, url) in rows {
            // The SQL filter is loose (an `@` in a path): the Rust rule decides.
            let stored = sealing::url_to_store(Some(sealer), &url, aad);
            if stored != url {
                run.execute(what, update, binds![id, stored]).await?;
                sealed += 1;
            }
        }
        drop(r);
        db.commit(tx, what).await?;
    }
    Ok(sealed)
}

/// Key rotation: in one transaction, re-seal every endpoint secret and http target under
/// `new` (opening each with `db`'s current sealer; a plaintext one is sealed too), recompute
/// the endpoints' lookup hashes, and write `setting` (the new key's check value). Returns how
/// many rows were re-sealed.
pub async fn reseal<D: SqlDb>(db: &D, new: &Sealer, setting: crate::SettingPut) -> Result<u64> {
    let mut tx = db.begin("re-sealing secrets").await?;
    let mut r = D::in_tx(&mut tx);
    let run = &mut r;
    let open = db.sealer();
    let endpoints = run
        .fetch(
            "reading endpoint secrets",
            ENDPOINTS_ALL_SECRETS,
            vec![],
            &|r| EndpointSealed::from_row(r, open, new),
        )
        .await?;
    let targets = run
        .fetch(
            "reading http targets",
            HTTP_TARGETS_ALL_SECRETS,
            vec![],
            &|r| HttpTargetSealed::from_row(r, open, new),
        )
        .await?;
    let n = (endpoints.len() + targets.len()) as u64;
    for e in endpoints {
        let b = binds![e.id, e.secret, e.secret_hash, e.previous_secret, e.url];
        run.execute("re-sealing an endpoint secret", ENDPOINT_RESEAL, b)
            .await?;
    }
    for t in targets {
        // The keyed fingerprint cannot be recomputed under the new key (it hashes the
        // definition, which is not stored in the clear): the row gets a unique one, so a new
        // identical definition is stored as a new row.
        let rotated = format!("rotated:{}", t.id);
        let b = binds![t.id, t.headers, t.secret, rotated, t.url];
        run.execute("re-sealing an http target", HTTP_TARGET_SEAL, b)
            .await?;
    }
    // The cluster's API token (PostgreSQL), sealed like the rest.
    let token = run
        .fetch_optional(
            "reading the cluster's API token",
            "SELECT value FROM settings WHERE name = $1",
            binds![sealing::API_TOKEN_SETTING],
            &|r| r.text("value"),
        )
        .await?;
    if let Some(stored) = token {
        let plain = sealing::api_token_from_store(open, stored)?;
        let b = binds![
            sealing::API_TOKEN_SETTING,
            new.seal(&plain, sealing::API_TOKEN_AAD),
            setting.now
        ];
        run.execute("re-sealing the cluster's API token", SETTING_UPSERT, b)
            .await?;
    }
    let b = binds![setting.name, setting.value.unwrap_or_default(), setting.now];
    run.execute("storing the new key's check value", SETTING_UPSERT, b)
        .await?;
    drop(r);
    db.commit(tx, "re-sealing secrets").await?;
    Ok(n)
}
