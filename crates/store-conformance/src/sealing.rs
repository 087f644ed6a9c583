//! Sealing behaviours that need two stores on one database — one without a sealer (as a
//! node before `KAIROS_SECRET_KEY`), one with — and a back door to read what is stored. Each
//! store's test file opens both and calls these.

use crate::raw::RawSql;
use chrono::{TimeZone, Utc};
use kairos_store::sealing::Sealer;
use kairos_store::{EndpointSecretRotate, EndpointUpsert, Store};
use std::sync::Arc;

const OLD: &str = "whsec_b2xkLW9sZC1vbGQtb2xkLW9sZC1vbGQtb2xkLW9sZA==";
const NEW: &str = "whsec_bmV3LW5ldy1uZXctbmV3LW5ldy1uZXctbmV3LW5ldw==";

/// The sealer `sealed` must have been given.
pub fn sealer() -> Arc<Sealer> {
    Arc::new(Sealer::new(&[7u8; 32]))
}

/// Rotating the secret of an endpoint stored before sealing (plaintext, no lookup hash): the
/// secret that becomes the previous one is sealed on the way, because the row's new hash
/// takes it out of the sealing pass that would otherwise have sealed it. `plain` writes
/// without a sealer, `sealed` (the same database) with [`sealer`].
pub async fn rotating_a_plaintext_endpoint_seals_the_secret_it_keeps_as_previous(
    plain: Arc<dyn Store>,
    sealed: Arc<dyn Store>,
    raw: RawSql,
) {
    let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let ep = plain
        .endpoint_upsert(EndpointUpsert {
            id: "ep_plain".into(),
            url: "https://example.com/hook".into(),
            secret: OLD.into(),
            now,
        })
        .await
        .unwrap();
    sealed
        .endpoint_secret_rotate(EndpointSecretRotate {
            id: ep.id.clone(),
            secret: NEW.into(),
            previous_expires_at: now + chrono::Duration::days(1),
        })
        .await
        .unwrap()
        .expect("the endpoint exists");
    // Both secrets are still usable through the store.
    let got = sealed
        .endpoint_get(&ep.id)
        .await
        .unwrap()
        .expect("endpoint");
    assert_eq!(got.secret, NEW);
    assert_eq!(got.previous_secret.as_deref(), Some(OLD));
    // Neither is stored in plaintext.
    for (column, plaintext) in [("secret", NEW), ("previous_secret", OLD)] {
        let value = raw(format!(
            "SELECT {column} FROM endpoints WHERE id = 'ep_plain'"
        ))
        .await
        .unwrap_or_default();
        assert!(
            Sealer::is_sealed(&value) && !value.contains(plaintext),
            "{column} is stored in plaintext: {value}"
        );
    }
}

/// The start-up sealing pass of the store under test (`seal_existing` on the sealed store),
/// returning how many rows it sealed.
pub type SealPass = Box<dyn Fn() -> futures::future::BoxFuture<'static, u64> + Send + Sync>;

/// The [`SealPass`] of `db` (a store with [`sealer`]): `seal_existing` on it.
pub fn seal_pass<D: kairos_store::sql::SqlDb + Clone + Send + Sync + 'static>(db: D) -> SealPass {
    Box::new(move || {
        let db = db.clone();
        Box::pin(async move {
            kairos_store::sql::secrets::seal_existing(&db)
                .await
                .expect("seal pass")
        })
    })
}

/// Issue 33, finding 5: the user info and query of a webhook or http URL are stored sealed —
/// rows written before (by `plain`, no sealer) are sealed by the start-up pass, new ones on
/// the way in — and read back whole; an endpoint with a sealed URL is found again by its keyed
/// hash; a URL without a credential stays readable; a second pass finds nothing.
pub async fn urls_with_credentials_are_stored_sealed(
    plain: Arc<dyn Store>,
    sealed: Arc<dyn Store>,
    raw: RawSql,
    seal_pass: SealPass,
) {
    use kairos_store::{HttpAuth, HttpTargetUpsert};
    let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let legacy_url = "https://hookuser:pw-legacy@example.com/hook?token=legacytok";
    let target_url = "https://api.example.com/x?api_key=legacykey";
    plain
        .endpoint_upsert(EndpointUpsert {
            id: "ep_legacy_url".into(),
            url: legacy_url.into(),
            secret: OLD.into(),
            now,
        })
        .await
        .unwrap();
    let target = |id: &str, url: &str, fp: &str| HttpTargetUpsert {
        id: id.into(),
        fingerprint: fp.into(),
        url: url.into(),
        method: "GET".into(),
        headers: Default::default(),
        body: None,
        timeout_ms: 1000,
        auth: HttpAuth::None,
        secret: None,
        now,
    };
    plain
        .http_target_upsert(target("ht_legacy_url", target_url, "fp-legacy"))
        .await
        .unwrap();
    let stored = |table: &str, id: &str| {
        let q = format!("SELECT url FROM {table} WHERE id = '{id}'");
        let raw = raw.clone();
        async move { raw(q).await.unwrap_or_default() }
    };
    assert!(
        stored("endpoints", "ep_legacy_url")
            .await
            .contains("legacytok")
    );
    assert!(seal_pass().await >= 2, "the pass seals both legacy URLs");
    for (table, id, secret) in [
        ("endpoints", "ep_legacy_url", "legacytok"),
        ("endpoints", "ep_legacy_url", "pw-legacy"),
        ("http_targets", "ht_legacy_url", "legacykey"),
    ] {
        let v = stored(table, id).await;
        assert!(
            Sealer::is_sealed(&v) && !v.contains(secret),
            "{table}.url {id}: {v}"
        );
    }
    let ep = sealed
        .endpoint_get("ep_legacy_url")
        .await
        .unwrap()
        .expect("endpoint");
    assert_eq!(ep.url, legacy_url);
    let t = sealed
        .http_target_get("ht_legacy_url")
        .await
        .unwrap()
        .expect("target");
    assert_eq!(t.url, target_url);
    // New rows: sealed on the way in, the endpoint found again by the keyed hash.
    let new_url = "https://hookuser:pw-new@example.com/hook?token=newtok";
    let a = sealed
        .endpoint_upsert(EndpointUpsert {
            id: "ep_new_url".into(),
            url: new_url.into(),
            secret: NEW.into(),
            now,
        })
        .await
        .unwrap();
    assert_eq!(a.url, new_url);
    let b = sealed
        .endpoint_upsert(EndpointUpsert {
            id: "ep_other_id".into(),
            url: new_url.into(),
            secret: NEW.into(),
            now,
        })
        .await
        .unwrap();
    assert_eq!(b.id, a.id, "the same URL and secret is the same endpoint");
    let v = stored("endpoints", &a.id).await;
    assert!(Sealer::is_sealed(&v) && !v.contains("newtok"), "{v}");
    let t = sealed
        .http_target_upsert(target(
            "ht_new_url",
            "https://api.example.com/y?k=newkey",
            "fp-new",
        ))
        .await
        .unwrap();
    assert_eq!(t.url, "https://api.example.com/y?k=newkey");
    assert!(!stored("http_targets", &t.id).await.contains("newkey"));
    // A URL without a credential stays as it is.
    let p = sealed
        .endpoint_upsert(EndpointUpsert {
            id: "ep_plain_url".into(),
            url: "https://example.com/plain".into(),
            secret: OLD.into(),
            now,
        })
        .await
        .unwrap();
    assert_eq!(
        stored("endpoints", &p.id).await,
        "https://example.com/plain"
    );
    assert_eq!(seal_pass().await, 0, "nothing left to seal");
}
