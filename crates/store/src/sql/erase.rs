//! The erasure of a person (`recipient_erase`), written once over [`SqlRun`], in the caller's
//! transaction: the recipient, its subscriptions and attributes go; its suppression stays as a
//! keyed hash; its address is redacted from stored provider events, job errors and attempt
//! logs. The text searches are the dialect's (`instr` on SQLite, `strpos` on PostgreSQL: not
//! `LIKE`, where `_` in an address is a wildcard).

use super::{Dialect, SqlRun};
use crate::binds;
use crate::{
    ERASED_PREFIX, ERASURE_KEY, RecipientErase, RecipientErased, Result, address_hash,
    normalize_address, redact_address,
};

/// `instr`/`strpos` of `needle` (a placeholder) in the lower-cased text of `column`.
fn contains(d: Dialect, column: &str, needle: &str) -> String {
    match d {
        Dialect::Sqlite => format!("instr(lower({column}), {needle}) > 0"),
        Dialect::Postgres => format!("strpos(lower({column}::text), {needle}) > 0"),
    }
}

/// Erase `p.id`; `None` when no such recipient exists. Returns the erasure key with the
/// counts, for the store to cache once the transaction commits.
pub async fn recipient_erase(
    run: &mut impl SqlRun,
    p: RecipientErase,
) -> Result<Option<(RecipientErased, Vec<u8>)>> {
    let d = run.dialect();
    // PostgreSQL: the row is locked, so two erasures of one recipient run one after the
    // other (SQLite's transaction holds the write lock already).
    let lock = if d == Dialect::Postgres {
        " FOR UPDATE"
    } else {
        ""
    };
    let sql = format!("SELECT email FROM recipients WHERE id = $1{lock}");
    let email = run
        .fetch_optional("recipient erase", &sql, binds![&p.id], &|r| r.text("email"))
        .await?;
    let Some(email) = email else {
        return Ok(None);
    };
    let address = normalize_address(&email);
    let mut out = RecipientErased {
        address: address.clone(),
        ..Default::default()
    };

    // The key: created on first use; the first one stored wins.
    run.execute(
        "creating the erasure key",
        "INSERT INTO kairos_keys (name, key, created_at) VALUES ($1, $2, $3)
         ON CONFLICT (name) DO NOTHING",
        binds![ERASURE_KEY, p.new_key, p.now],
    )
    .await?;
    let key = run
        .fetch_one(
            "reading the erasure key",
            "SELECT key FROM kairos_keys WHERE name = $1",
            binds![ERASURE_KEY],
            &|r| Ok(r.opt_bytes("key")?.unwrap_or_default()),
        )
        .await?;
    let hash = address_hash(&key, &address);
    let marker = format!("{ERASED_PREFIX}{hash}");

    // The suppression stays, as the hash (if the hash is there already, from another
    // recipient with the address, the plain entry goes).
    let hashed = run
        .fetch_optional(
            "recipient erase",
            "SELECT 1 AS one FROM suppressions WHERE address_hash = $1",
            binds![&hash],
            &|r| r.int("one"),
        )
        .await?
        .is_some();
    out.suppressions_hashed = if hashed {
        run.execute(
            "hashing the suppression",
            "DELETE FROM suppressions WHERE address = $1",
            binds![&address],
        )
        .await?
    } else {
        run.execute(
            "hashing the suppression",
            "UPDATE suppressions SET address = $2, address_hash = $3 WHERE address = $1",
            binds![&address, &marker, &hash],
        )
        .await?
    };
    run.execute(
        "hashing the suppression log",
        "UPDATE suppression_log SET address = $2 WHERE address = $1",
        binds![&address, &marker],
    )
    .await?;

    // Stored provider events that carry the address: the event stays (its id keeps a
    // redelivery from acting twice), the address goes.
    let sql = format!(
        "SELECT source, id, CAST(payload AS TEXT) AS payload FROM inbound_events WHERE {}",
        contains(d, "payload", "$1")
    );
    let events = run
        .fetch("reading inbound events", &sql, binds![&address], &|r| {
            Ok((r.text("source")?, r.text("id")?, r.text("payload")?))
        })
        .await?;
    let set_payload = match d {
        Dialect::Sqlite => "UPDATE inbound_events SET payload = $3 WHERE source = $1 AND id = $2",
        Dialect::Postgres => {
            "UPDATE inbound_events SET payload = CAST($3 AS JSONB) WHERE source = $1 AND id = $2"
        }
    };
    for (source, id, payload) in events {
        if let Some(clean) = redact_address(&payload, &address) {
            run.execute(
                "redacting an inbound event",
                set_payload,
                binds![source, id, clean],
            )
            .await?;
            out.events_redacted += 1;
        }
    }

    // The recipient's jobs carry ids, but an error or a response excerpt may quote the
    // address (an SMTP 550, a receiver echoing the body).
    let sql = format!(
        "SELECT id, last_error FROM jobs WHERE recipient_id = $1 AND {}",
        contains(d, "last_error", "$2")
    );
    let errors = run
        .fetch("reading job errors", &sql, binds![&p.id, &address], &|r| {
            Ok((r.text("id")?, r.text("last_error")?))
        })
        .await?;
    for (id, text) in errors {
        if let Some(clean) = redact_address(&text, &address) {
            run.execute(
                "redacting a job error",
                "UPDATE jobs SET last_error = $2 WHERE id = $1",
                binds![id, clean],
            )
            .await?;
            out.texts_redacted += 1;
        }
    }
    let sql = format!(
        "SELECT id, error, response FROM job_attempts
         WHERE job_id IN (SELECT id FROM jobs WHERE recipient_id = $1)
           AND ({} OR {})",
        contains(d, "error", "$2"),
        contains(d, "response", "$2")
    );
    let attempts = run
        .fetch("reading attempts", &sql, binds![&p.id, &address], &|r| {
            Ok((r.int("id")?, r.opt_text("error")?, r.opt_text("response")?))
        })
        .await?;
    let redact = |t: Option<String>| t.map(|t| redact_address(&t, &address).unwrap_or(t));
    for (id, error, response) in attempts {
        run.execute(
            "redacting an attempt",
            "UPDATE job_attempts SET error = $2, response = $3 WHERE id = $1",
            binds![id, redact(error), redact(response)],
        )
        .await?;
        out.texts_redacted += 1;
    }

    out.subscriptions = run
        .execute(
            "deleting subscriptions",
            "DELETE FROM subscriptions WHERE recipient_id = $1",
            binds![&p.id],
        )
        .await?;
    run.execute(
        "unlinking exposures",
        "UPDATE exposures SET recipient_id = NULL WHERE recipient_id = $1",
        binds![&p.id],
    )
    .await?;
    run.execute(
        "deleting the recipient",
        "DELETE FROM recipients WHERE id = $1",
        binds![&p.id],
    )
    .await?;
    Ok(Some((out, key)))
}
