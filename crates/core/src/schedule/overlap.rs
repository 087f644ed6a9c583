//! Overlap policies: what a firing does while the schedule's previous occurrence still has
//! jobs that have not finished (waiting, due, running or waiting for a retry).

use crate::error::Error;
use serde::{Deserialize, Serialize};

/// What a firing does while the previous occurrence of its schedule still has open jobs.
///
/// The names and meanings follow Temporal Schedules' overlap policies (`SKIP`,
/// `BUFFER_ONE`, `CANCEL_OTHER`, `ALLOW_ALL`); `BUFFER_ALL` has no counterpart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Overlap {
    /// Run regardless: occurrences may run side by side (the default, and the behaviour
    /// before overlap policies existed).
    #[default]
    Allow,
    /// Do not run the firing; it is recorded as a `missed` occurrence with reason `overlap`.
    Skip,
    /// Hold one firing and run it when the previous occurrence's jobs have ended; a further
    /// firing while one is held is skipped as with [`Overlap::Skip`].
    BufferOne,
    /// Cancel the previous occurrence's open jobs (with a reason), then run the firing.
    CancelPrevious,
}

impl Overlap {
    /// Every policy, in documentation order.
    pub const ALL: [Overlap; 4] = [
        Overlap::Allow,
        Overlap::Skip,
        Overlap::BufferOne,
        Overlap::CancelPrevious,
    ];

    /// The stored and shown name.
    pub fn as_str(self) -> &'static str {
        match self {
            Overlap::Allow => "allow",
            Overlap::Skip => "skip",
            Overlap::BufferOne => "buffer_one",
            Overlap::CancelPrevious => "cancel_previous",
        }
    }

    /// Parse a name (case-insensitive, trimmed). Error field `overlap`.
    pub fn parse(s: &str) -> Result<Self, Error> {
        let t = s.trim().to_ascii_lowercase();
        Overlap::ALL
            .into_iter()
            .find(|o| o.as_str() == t)
            .ok_or_else(|| {
                Error::invalid(
                    "overlap",
                    format!(
                        "{s:?} is not an overlap policy: use \"allow\", \"skip\", \"buffer_one\" \
                         or \"cancel_previous\""
                    ),
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_names_round_trip_and_bad_names_name_the_field() {
        for o in Overlap::ALL {
            assert_eq!(Overlap::parse(o.as_str()).unwrap(), o);
            assert_eq!(
                serde_json::to_value(o).unwrap(),
                serde_json::json!(o.as_str())
            );
        }
        assert_eq!(Overlap::parse(" Buffer_One ").unwrap(), Overlap::BufferOne);
        let e = Overlap::parse("buffer_all").unwrap_err();
        assert_eq!(e.field(), "overlap");
        assert_eq!(Overlap::default(), Overlap::Allow);
    }
}
