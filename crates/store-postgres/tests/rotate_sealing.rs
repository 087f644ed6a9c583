//! Rotating the secret of an endpoint stored before sealing (plaintext, no lookup hash) on
//! PostgreSQL: the secret that becomes the previous one is sealed on the way, as on SQLite
//! (`crates/store-sqlite/tests/rotate_sealing.rs`; the code is shared, the databases differ).

mod common;

use chrono::{TimeZone, Utc};
use kairos_store::sealing::Sealer;
use kairos_store::{EndpointSecretRotate, EndpointStore, EndpointUpsert};
use kairos_store_postgres::PostgresStore;
use std::sync::Arc;

const OLD: &str = "whsec_b2xkLW9sZC1vbGQtb2xkLW9sZC1vbGQtb2xkLW9sZA==";
const NEW: &str = "whsec_bmV3LW5ldy1uZXctbmV3LW5ldy1uZXctbmV3LW5ldw==";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotating_a_plaintext_endpoint_seals_the_secret_it_keeps_as_previous_postgres() {
    let Some((plain, guard)) = common::open().await else {
        return;
    };
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

    let sealed = PostgresStore::connect(&guard.url, &guard.schema)
        .await
        .unwrap()
        .with_sealer(Arc::new(Sealer::new(&[7u8; 32])));
    sealed
        .endpoint_secret_rotate(EndpointSecretRotate {
            id: ep.id.clone(),
            secret: NEW.into(),
            previous_expires_at: now + chrono::Duration::days(1),
        })
        .await
        .unwrap()
        .expect("the endpoint exists");
    let got = sealed
        .endpoint_get(&ep.id)
        .await
        .unwrap()
        .expect("endpoint");
    assert_eq!(got.secret, NEW);
    assert_eq!(got.previous_secret.as_deref(), Some(OLD));

    // Neither is in the database in plaintext.
    let (secret, previous): (String, String) =
        sqlx::query_as("SELECT secret, previous_secret FROM endpoints WHERE id = 'ep_plain'")
            .fetch_one(plain.pool())
            .await
            .unwrap();
    for (column, value, plaintext) in [
        ("secret", &secret, NEW),
        ("previous_secret", &previous, OLD),
    ] {
        assert!(
            Sealer::is_sealed(value) && !value.contains(plaintext),
            "{column} is stored in plaintext: {value}"
        );
    }
    plain.pool().close().await;
    sealed.pool().close().await;
}
