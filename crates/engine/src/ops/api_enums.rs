//! Named OpenAPI schemas of the API's closed sets of values (issue 35: "OpenAPI fit for
//! generators"). The fields stay strings in Rust (the facade validates them and answers 422
//! naming the field); these types only tell `utoipa` what to document, with the values taken
//! from the code that accepts them — the kinds of `kairos serve`'s node, [`JobState::ALL`],
//! [`PeriodUnit::ALL`], … — so the document cannot drift from what the server accepts.
//! Where a value is open (`all:N`) the schema is a `pattern`.

use crate::kinds::Kinds;
use kairos_core::JobState;
use kairos_core::schedule::PeriodUnit;
use std::borrow::Cow;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::{PartialSchema, ToSchema};

fn string_enum(description: &str, values: Vec<String>) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(description))
        .enum_values(Some(values))
        .into()
}

/// Declares a unit struct documenting a string enum under `$name`, its values from `$values`.
macro_rules! string_enum_schema {
    ($(#[$doc:meta])* $ty:ident, $name:literal, $description:literal, $values:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $ty;

        impl $ty {
            /// The values the schema lists.
            pub fn values() -> Vec<String> {
                $values
            }
        }

        impl PartialSchema for $ty {
            fn schema() -> RefOr<Schema> {
                string_enum($description, Self::values())
            }
        }

        impl ToSchema for $ty {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed($name)
            }
        }
    };
}

fn strings<'a>(v: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    v.into_iter().map(str::to_string).collect()
}

string_enum_schema!(
    /// A job's state.
    JobStateSchema,
    "JobState",
    "A job's state: `available` (waiting to run, or waiting for a retry), `running`, and the \
     final `succeeded`, `skipped`, `cancelled`, `dead`.",
    strings(JobState::ALL.iter().map(|s| s.as_str()))
);

string_enum_schema!(
    /// The job kinds of `kairos serve`.
    JobKindSchema,
    "JobKind",
    "A job kind of `kairos serve`: `webhook` (a signed POST), `http` (a call to a URL), \
     `email` (a topic's mail to its subscribers), `digest` (feeds summarized into an artifact).",
    strings(Kinds::builtin().names())
);

string_enum_schema!(
    /// The kinds a schedule's channel may have.
    ChannelKindSchema,
    "ChannelKind",
    "The kind of job a schedule's channel creates (mail reaches people through a topic's \
     subscriptions instead).",
    {
        let kinds = Kinds::builtin();
        strings(kinds.names().into_iter().filter(|k| kinds.get(k).is_channel()))
    }
);

string_enum_schema!(
    /// A subscription's channels.
    AudienceChannelSchema,
    "AudienceChannel",
    "A channel a subscriber is reached on.",
    strings(crate::audience::CHANNELS.iter().copied())
);

string_enum_schema!(
    /// A period unit, with its `iso_week` alias.
    PeriodSchema,
    "Period",
    "The granularity of a firing's period key, in the schedule's zone: `occurrence` (each \
     firing its own period), `minute`, `hour`, `day`, `week` (ISO week; `iso_week` is accepted \
     as the same and shown as `week`), `month`, `year`.",
    {
        let mut v = strings(PeriodUnit::ALL.iter().map(|u| u.as_str()));
        v.insert(5, "iso_week".to_string());
        v
    }
);

string_enum_schema!(
    /// A schedule's state.
    ScheduleStateSchema,
    "ScheduleState",
    "A schedule's state: `active`, `paused`, or `finished` (a one-shot that has fired).",
    strings(["active", "paused", "finished"])
);

string_enum_schema!(
    /// How an attempt ended.
    AttemptOutcomeSchema,
    "AttemptOutcome",
    "How an attempt ended.",
    strings(kairos_core::job::AttemptOutcome::ALL.iter().map(|o| o.as_str()))
);

string_enum_schema!(
    /// The class of a failure.
    ErrorClassSchema,
    "ErrorClass",
    "The class of a failed attempt: `transient` (retried with the transient delays), \
     `permanent` (the permanent class's delays, then dead), `rate_limited` (waits without \
     spending an attempt).",
    strings(kairos_core::ErrorClass::ALL.iter().map(|c| c.as_str()))
);

string_enum_schema!(
    /// How an `http` target authenticates.
    HttpAuthSchema,
    "HttpAuth",
    "How an `http` call authenticates: `none`, `bearer` (an `Authorization: Bearer` token) or \
     `signature` (Standard Webhooks headers).",
    strings(
        [
            kairos_store::HttpAuth::None,
            kairos_store::HttpAuth::Bearer,
            kairos_store::HttpAuth::Signature,
        ]
        .map(kairos_store::HttpAuth::as_str)
    )
);

string_enum_schema!(
    /// An occurrence's (or one of its channels') derived status.
    OccurrenceStatusSchema,
    "OccurrenceStatus",
    "An occurrence's derived status: `pending` while a job is open; then `success` (something \
     succeeded, nothing died), `partial` (both), `failure` (something died, nothing \
     succeeded), `skipped` (a job was skipped), else `cancelled`; `missed` for firings that did \
     not run.",
    strings(OCCURRENCE_STATUSES.iter().copied())
);

/// The statuses an occurrence can show (`GET /v1/occurrences`).
pub use super::OCCURRENCE_STATUSES;

string_enum_schema!(
    /// A digest's summarizer.
    SummarizerSchema,
    "Summarizer",
    "How a digest is summarized: `extractive` (no model), `gemini` or `openai`.",
    strings(kairos_channels::digest::Summarizer::NAMES)
);

/// A misfire policy: `skip`, `once`, `all` or `all:N` — open (`N`), so a pattern.
#[derive(Debug, Clone, Copy)]
pub struct MisfireSchema;

impl MisfireSchema {
    /// The pattern of a policy as the API shows it and accepts it (lower case).
    pub const PATTERN: &'static str = "^(skip|once|all|all:([1-9][0-9]{0,2}|1000))$";
}

impl PartialSchema for MisfireSchema {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .description(Some(
                "What a firing later than the misfire threshold does: `skip`, `once` (the \
                 default: the most recent missed firing runs), `all` (the most recent 10) or \
                 `all:N` (the most recent N, 1 to 1000). Shown as `skip`, `once` or `all:N`.",
            ))
            .pattern(Some(Self::PATTERN))
            .examples(["once", "skip", "all:5"])
            .into()
    }
}

impl ToSchema for MisfireSchema {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Misfire")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kairos_core::schedule::Misfire;

    #[test]
    fn every_listed_period_parses_and_iso_week_is_week() {
        for v in PeriodSchema::values() {
            PeriodUnit::parse(&v).unwrap_or_else(|e| panic!("{v}: {e}"));
        }
        assert_eq!(PeriodUnit::parse("iso_week").unwrap(), PeriodUnit::Week);
        assert_eq!(PeriodSchema::values().len(), PeriodUnit::ALL.len() + 1);
    }

    #[test]
    fn misfire_examples_parse_and_shown_policies_keep_their_shape() {
        for s in ["skip", "once", "all", "all:1", "all:999", "all:1000"] {
            let shown = Misfire::parse(s).unwrap().to_string_repr();
            assert!(
                ["skip", "once"].contains(&shown.as_str()) || shown.starts_with("all:"),
                "{shown}"
            );
        }
        for s in ["all:0", "all:1001", "never"] {
            assert!(Misfire::parse(s).is_err(), "{s}");
        }
        assert!(MisfireSchema::PATTERN.contains("1000"));
    }

    #[test]
    fn schedule_states_are_the_stored_ones() {
        for v in ScheduleStateSchema::values() {
            assert_eq!(kairos_store::ScheduleState::parse(&v).as_str(), v);
        }
    }

    #[test]
    fn channel_kinds_are_webhook_and_http() {
        assert_eq!(ChannelKindSchema::values(), ["webhook", "http"]);
        assert_eq!(
            JobKindSchema::values(),
            ["webhook", "http", "email", "digest"]
        );
    }
}
