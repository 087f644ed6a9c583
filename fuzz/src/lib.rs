//! Helpers shared by the fuzz targets: inputs are text, one field per line, so the seed
//! corpora (`fuzz/seeds/<target>/`) are readable and the fuzzer mutates them field by field.

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;

/// The input as text (invalid UTF-8 replaced), split into at most `n` fields on `\n`; the last
/// field keeps its newlines. Missing fields are empty.
pub fn fields(data: &[u8], n: usize) -> Vec<String> {
    let text = String::from_utf8_lossy(data);
    let mut out: Vec<String> = text.splitn(n, '\n').map(str::to_string).collect();
    out.resize(n, String::new());
    out
}

/// A time zone named by `s` (through kairos's own parser), else UTC.
pub fn zone(s: &str) -> Tz {
    kairos_core::schedule::parse_timezone(s).unwrap_or(chrono_tz::UTC)
}

/// An instant from `s`: RFC 3339, or whole seconds since the epoch; else 2026-11-29T08:05:09Z.
/// Limited to the years 1970 to 9999 (kairos refuses instants outside them at the API).
pub fn instant(s: &str) -> DateTime<Utc> {
    let fallback = Utc
        .timestamp_opt(1_795_935_909, 0)
        .single()
        .expect("fixed instant");
    let t = DateTime::parse_from_rfc3339(s.trim())
        .map(|t| t.with_timezone(&Utc))
        .ok()
        .or_else(|| {
            s.trim()
                .parse::<i64>()
                .ok()
                .and_then(|n| Utc.timestamp_opt(n.rem_euclid(253_402_300_800), 0).single())
        })
        .unwrap_or(fallback);
    if t.timestamp() < 0 || t.timestamp() >= 253_402_300_800 {
        fallback
    } else {
        t
    }
}

/// A number derived from the input, to pick positions and offsets deterministically.
pub fn pick(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}
