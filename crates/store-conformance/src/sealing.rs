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
