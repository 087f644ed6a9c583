//! The jobs list's filters: parsed from the query string, validated with errors that name the
//! field, turned into the store's `job_search`, and written back into "Older →" links.

use crate::admin::state_label;
use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use kairos_store::JobSearch;
use serde::{Deserialize, Serialize};

/// Rows per page.
pub const PAGE: i64 = 50;

/// The filters of the jobs list; every one optional, all combined.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
pub struct JobFilters {
    /// State.
    #[serde(default)]
    pub state: Option<String>,
    /// Kind.
    #[serde(default)]
    pub kind: Option<String>,
    /// Channel (a schedule's channel name, an audience job's `email` or `webhook`).
    #[serde(default)]
    pub channel: Option<String>,
    /// Schedule id (`schedule_id` is an alias).
    #[serde(default, alias = "schedule_id")]
    pub schedule: Option<String>,
    /// Period key.
    #[serde(default)]
    pub period: Option<String>,
    /// Webhook endpoint id (the endpoint page's "its jobs").
    #[serde(default)]
    pub endpoint: Option<String>,
    /// Topic (audience jobs).
    #[serde(default)]
    pub topic: Option<String>,
    /// Recipient id (audience jobs).
    #[serde(default)]
    pub recipient: Option<String>,
    /// Created at or after (`YYYY-MM-DD` or `YYYY-MM-DDTHH:MM`, UTC); `created_after` is
    /// the API's name for it.
    #[serde(default, alias = "created_after")]
    pub from: Option<String>,
    /// Created before (`created_before` in the API).
    #[serde(default, alias = "created_before")]
    pub to: Option<String>,
    /// Keyset cursor: the last id of the previous page.
    #[serde(default)]
    pub before: Option<String>,
    /// A notice code from a redirect.
    #[serde(default)]
    pub notice: Option<String>,
    /// How many jobs a bulk action just acted on (with `notice`).
    #[serde(default)]
    pub done: Option<u64>,
    /// Live refresh: reload every this many seconds (see [`crate::admin::search::RefreshQuery`]).
    #[serde(default)]
    pub refresh: Option<String>,
}

/// A trimmed, non-empty value, or `None`: an empty form field is no filter.
pub fn blank(v: &Option<String>) -> Option<String> {
    v.as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn parse_instant(field: &str, v: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(v) {
        return Ok(t.to_utc());
    }
    if let Ok(t) = NaiveDateTime::parse_from_str(v, "%Y-%m-%dT%H:%M") {
        return Ok(t.and_utc());
    }
    if let Ok(d) = NaiveDate::parse_from_str(v, "%Y-%m-%d") {
        return Ok(d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc());
    }
    Err(format!(
        "{field}: \"{v}\" is not a date (YYYY-MM-DD) or a time (YYYY-MM-DDTHH:MM, UTC)"
    ))
}

impl JobFilters {
    /// The store query, or the reason the filters are invalid (naming the field).
    pub fn to_search(&self) -> Result<JobSearch, String> {
        let state = blank(&self.state);
        if let Some(s) = &state
            && state_label(s) == "unknown"
            && s != "unknown"
        {
            return Err(format!(
                "state: \"{s}\" is not one of available, running, succeeded, skipped, cancelled, dead"
            ));
        }
        Ok(JobSearch {
            state,
            kind: blank(&self.kind),
            schedule_id: blank(&self.schedule),
            period_key: blank(&self.period),
            topic: blank(&self.topic),
            recipient_id: blank(&self.recipient),
            channel: blank(&self.channel),
            endpoint_id: blank(&self.endpoint),
            recipient_endpoint_kinds: Vec::new(),
            payload_text: None,
            created_from: blank(&self.from)
                .map(|v| parse_instant("from", &v))
                .transpose()?,
            created_to: blank(&self.to)
                .map(|v| parse_instant("to", &v))
                .transpose()?,
            before_id: blank(&self.before),
            limit: PAGE,
        })
    }

    /// The query string of these filters with another cursor.
    pub fn query_with_before(&self, before: &str) -> String {
        let mut f = self.clone();
        f.before = Some(before.to_string());
        f.notice = None;
        serde_urlencoded_pairs(&f)
    }
}

impl JobFilters {
    /// The query string of these filters alone (no cursor, no notice).
    pub fn query(&self) -> String {
        let mut f = self.clone();
        f.before = None;
        serde_urlencoded_pairs(&f)
    }

    /// The non-empty filters as (form field, value) pairs, for hidden inputs.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        [
            ("state", &self.state),
            ("kind", &self.kind),
            ("channel", &self.channel),
            ("schedule", &self.schedule),
            ("period", &self.period),
            ("endpoint", &self.endpoint),
            ("topic", &self.topic),
            ("recipient", &self.recipient),
            ("from", &self.from),
            ("to", &self.to),
        ]
        .into_iter()
        .filter_map(|(k, v)| blank(v).map(|v| (k, v)))
        .collect()
    }

    /// Set a filter from a form field; `false` if the field is not a filter.
    pub fn set(&mut self, field: &str, value: String) -> bool {
        let slot = match field {
            "state" => &mut self.state,
            "kind" => &mut self.kind,
            "channel" => &mut self.channel,
            "schedule" => &mut self.schedule,
            "period" => &mut self.period,
            "endpoint" => &mut self.endpoint,
            "topic" => &mut self.topic,
            "recipient" => &mut self.recipient,
            "from" => &mut self.from,
            "to" => &mut self.to,
            _ => return false,
        };
        *slot = Some(value);
        true
    }
}

/// `a=b&c=d` of the non-empty filters.
fn serde_urlencoded_pairs(f: &JobFilters) -> String {
    let pairs = [
        ("state", &f.state),
        ("kind", &f.kind),
        ("channel", &f.channel),
        ("schedule", &f.schedule),
        ("period", &f.period),
        ("endpoint", &f.endpoint),
        ("topic", &f.topic),
        ("recipient", &f.recipient),
        ("from", &f.from),
        ("to", &f.to),
        ("before", &f.before),
    ];
    pairs
        .iter()
        .filter_map(|(k, v)| blank(v).map(|v| format!("{k}={}", urlencode(&v))))
        .collect::<Vec<_>>()
        .join("&")
}

/// Percent-encode a query-string value (the `url` crate's form encoding).
pub fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_name_the_field_of_bad_input() {
        let f = JobFilters {
            state: Some("exploded".into()),
            ..Default::default()
        };
        assert!(f.to_search().unwrap_err().starts_with("state:"));
        let f = JobFilters {
            from: Some("yesterday".into()),
            ..Default::default()
        };
        assert!(f.to_search().unwrap_err().starts_with("from:"));
        let f = JobFilters {
            state: Some("dead".into()),
            kind: Some(" webhook ".into()),
            from: Some("2026-11-29".into()),
            to: Some("2026-11-30T12:30".into()),
            period: Some("".into()),
            ..Default::default()
        };
        let q = f.to_search().unwrap();
        assert_eq!(q.kind.as_deref(), Some("webhook"));
        assert_eq!(q.period_key, None, "blank filters are no filter");
        assert_eq!(
            q.created_from.unwrap().to_rfc3339(),
            "2026-11-29T00:00:00+00:00"
        );
        assert_eq!(
            q.created_to.unwrap().to_rfc3339(),
            "2026-11-30T12:30:00+00:00"
        );
    }

    #[test]
    fn next_page_link_keeps_filters_and_escapes() {
        let f = JobFilters {
            state: Some("dead".into()),
            period: Some("2026-W48".into()),
            kind: Some("a&b".into()),
            ..Default::default()
        };
        assert_eq!(
            f.query_with_before("job_1"),
            "state=dead&kind=a%26b&period=2026-W48&before=job_1"
        );
    }
}
