//! `Debug` for the settings that never prints a secret: a `{:?}` of a [`Config`] or a
//! [`Database`] in a log line or a panic message must not leak a token, a key or a password.
//!
//! `Config`'s `Debug` goes through its `Serialize`, so a setting added later is printed
//! without touching this file; a secret is recognised by its name (`*_secret`, `*_secrets`,
//! `*_key`, `*_token`), and every `*_url` loses its user, password and query.

use super::{Config, Database};
use std::fmt;

/// What a secret setting prints as.
const REDACTED: &str = "[redacted]";

/// Whether the setting named `field` holds a secret.
fn is_secret(field: &str) -> bool {
    ["_secret", "_secrets", "_key", "_token"]
        .iter()
        .any(|end| field.ends_with(end))
}

/// `url` without `user:password@` and without its query and fragment (either may carry a
/// credential); text that does not parse as a URL is hidden whole.
pub(super) fn url_without_credentials(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            let had_credentials = !u.username().is_empty() || u.password().is_some();
            // Both fail only for URLs that cannot have credentials (`mailto:`, …).
            let _ = u.set_username("");
            let _ = u.set_password(None);
            let had_query = u.query().is_some() || u.fragment().is_some();
            u.set_query(None);
            u.set_fragment(None);
            let mut s = u.to_string();
            if had_credentials || had_query {
                s.push_str(" (credentials hidden)");
            }
            s
        }
        Err(_) => REDACTED.to_string(),
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value = match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(map)) => map,
            _ => return f.write_str("Config { .. }"),
        };
        let mut out = f.debug_struct("Config");
        for (field, v) in &value {
            let shown = match v {
                serde_json::Value::Null => "None".to_string(),
                _ if is_secret(field) => REDACTED.to_string(),
                serde_json::Value::String(s) if field.ends_with("_url") => {
                    format!("{:?}", url_without_credentials(s))
                }
                other => other.to_string(),
            };
            out.field(field, &format_args!("{shown}"));
        }
        out.finish()
    }
}

impl fmt::Debug for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Database::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            // What logs show of it, without credentials.
            Database::Postgres { .. } => f.debug_tuple("Postgres").field(&self.describe()).finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_of_the_settings_prints_no_secret_and_no_password() {
        let config = Config {
            database_url: Some(
                "postgres://kairos:hunter2pw@db.internal:5432/app?password=qsecret".into(),
            ),
            api_token: Some("tok_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".into()),
            secret_key: Some("c2VjcmV0a2V5c2VjcmV0a2V5c2VjcmV0a2V5c2VjcmU=".into()),
            gemini_api_key: Some("gemkey-123".into()),
            openai_api_key: Some("sk-openai-456".into()),
            alert_webhook_secret: Some("whsec_alertalert".into()),
            smtp_url: Some("smtp://mailer:smtppw@127.0.0.1:2525".into()),
            resend_api_key: Some("re_resendkey".into()),
            unsubscribe_secret: Some("unsub-secret-789".into()),
            resend_webhook_secret: Some("whsec_resendhook".into()),
            inbound_secrets: Some("acme=whsec_inboundone".into()),
            unsubscribe_old_secrets: Some("old-unsub-000".into()),
            alert_webhook_url: Some("https://ops:alertpw@alerts.example/hook?token=qtok".into()),
            ..Config::default()
        };
        let shown = format!("{config:?}");
        for secret in [
            "hunter2pw",
            "qsecret",
            "tok_aaaa",
            "c2VjcmV0",
            "gemkey-123",
            "sk-openai-456",
            "whsec_alertalert",
            "smtppw",
            "re_resendkey",
            "unsub-secret-789",
            "whsec_resendhook",
            "whsec_inboundone",
            "old-unsub-000",
            "alertpw",
            "qtok",
        ] {
            assert!(!shown.contains(secret), "{secret} shown in {shown}");
        }
        // What is not secret is still there to debug with.
        assert!(shown.contains("db.internal:5432/app"), "{shown}");
        assert!(shown.contains("alerts.example/hook"), "{shown}");
        assert!(shown.contains("concurrency: 100"), "{shown}");
        assert!(shown.contains("api_token: [redacted]"), "{shown}");

        let db = config.database().expect("a postgres url");
        let shown = format!("{db:?}");
        assert!(
            !shown.contains("hunter2pw") && !shown.contains("qsecret"),
            "{shown}"
        );
        assert!(
            shown.contains("db.internal:5432/app") && shown.contains("kairos"),
            "{shown}"
        );
    }

    #[test]
    fn a_url_that_does_not_parse_is_hidden_whole() {
        assert_eq!(url_without_credentials("not a url with pw"), REDACTED);
        assert_eq!(
            url_without_credentials("http://127.0.0.1:9/x"),
            "http://127.0.0.1:9/x"
        );
    }
}
