//! Login backoff per source address: the first [`FREE_ATTEMPTS`] login attempts from an
//! address are checked at once; after that each further attempt must wait twice as long as
//! the one before (1 s, 2 s, 4 s, … at most [`MAX_DELAY_SECS`]) after the previous attempt,
//! and one that comes sooner is answered 429 with `Retry-After` without looking at the token
//! (not even the right one). A successful login clears the address. Ten wrong attempts take at
//! least 1 + 2 + 4 + 8 + 16 = 31 seconds.
//!
//! Every attempt counts until it succeeds, so concurrent attempts cannot slip past the count.
//!
//! The same table guards bearer tokens on `/v1` ([`LoginLimiter::bearer`], used by
//! [`crate::auth::require_token`]), where only failures count ([`LoginLimiter::check`] before
//! the token is looked at, [`LoginLimiter::failed`] after a wrong one) so that valid tokens
//! are never slowed: the first [`BEARER_FREE_FAILURES`] wrong tokens from an address are
//! answered 401, later ones within the backoff 429 with `Retry-After`, whatever the token.
//! IPv6 addresses count per /64 (one host usually owns the whole prefix). The table is in
//! memory, per node, and bounded ([`MAX_ADDRESSES`]; the longest-quiet address goes first);
//! behind a reverse proxy every request comes from the proxy's address, so the proxy should
//! rate-limit `/admin/login` itself. Time comes from the engine's clock.

use chrono::{DateTime, Duration, Utc};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

/// Attempts from one address checked without delay.
pub const FREE_ATTEMPTS: u32 = 5;
/// Wrong bearer tokens from one address answered 401 before the backoff starts.
pub const BEARER_FREE_FAILURES: u32 = 10;
/// The longest wait between two attempts.
pub const MAX_DELAY_SECS: i64 = 300;
/// An address quiet this long starts afresh.
pub const FORGET_AFTER_SECS: i64 = 3600;
/// Addresses remembered at once.
pub const MAX_ADDRESSES: usize = 10_000;

#[derive(Debug, Clone, Copy)]
struct Attempts {
    count: u32,
    last: DateTime<Utc>,
}

/// The per-address attempt counts. See the module docs.
#[derive(Debug)]
pub struct LoginLimiter {
    by_addr: Mutex<HashMap<IpAddr, Attempts>>,
    free: u32,
}

impl Default for LoginLimiter {
    /// The admin login's: [`FREE_ATTEMPTS`] free.
    fn default() -> Self {
        LoginLimiter {
            by_addr: Mutex::default(),
            free: FREE_ATTEMPTS,
        }
    }
}

use crate::http::source_key as key;

/// How long after the previous attempt the next may come, given `count` attempts so far and
/// `free` of them without delay.
fn delay(count: u32, free: u32) -> Duration {
    if count < free {
        return Duration::zero();
    }
    let exp = (count - free).min(20);
    Duration::seconds((1i64 << exp).min(MAX_DELAY_SECS))
}

type Table = HashMap<IpAddr, Attempts>;

impl LoginLimiter {
    /// The bearer-token table: [`BEARER_FREE_FAILURES`] free.
    pub fn bearer() -> Self {
        LoginLimiter {
            free: BEARER_FREE_FAILURES,
            ..LoginLimiter::default()
        }
    }

    /// Count an attempt from `addr` at `now`: `Ok` if it may be checked, else `Err(seconds)`
    /// to wait (the `Retry-After`), and the attempt is not counted.
    pub fn attempt(&self, addr: IpAddr, now: DateTime<Utc>) -> Result<(), u64> {
        let mut map = self.by_addr.lock().unwrap_or_else(|e| e.into_inner());
        let entry = self.wait(&map, key(addr), now)?;
        Self::count(&mut map, key(addr), entry, now);
        Ok(())
    }

    /// Whether an attempt from `addr` may be checked at `now` (`Err(seconds)` to wait),
    /// without counting it.
    pub fn check(&self, addr: IpAddr, now: DateTime<Utc>) -> Result<(), u64> {
        let map = self.by_addr.lock().unwrap_or_else(|e| e.into_inner());
        self.wait(&map, key(addr), now).map(|_| ())
    }

    /// Count a failed attempt from `addr` at `now` (one [`LoginLimiter::check`] let through).
    pub fn failed(&self, addr: IpAddr, now: DateTime<Utc>) {
        let mut map = self.by_addr.lock().unwrap_or_else(|e| e.into_inner());
        let entry = Self::current(&map, key(addr), now);
        Self::count(&mut map, key(addr), entry, now);
    }

    /// The attempts counted for key `k` at `now` (none once quiet long enough).
    fn current(map: &Table, k: IpAddr, now: DateTime<Utc>) -> Attempts {
        match map.get(&k) {
            Some(a) if now - a.last < Duration::seconds(FORGET_AFTER_SECS) => *a,
            _ => Attempts {
                count: 0,
                last: now,
            },
        }
    }

    /// `Ok(counted so far)` if key `k` may try at `now`, else `Err(seconds to wait)`.
    fn wait(&self, map: &Table, k: IpAddr, now: DateTime<Utc>) -> Result<Attempts, u64> {
        let entry = Self::current(map, k, now);
        let next = entry.last + delay(entry.count, self.free);
        if now < next {
            let ms = (next - now).num_milliseconds().max(0) as u64;
            return Err(ms.div_ceil(1000).max(1));
        }
        Ok(entry)
    }

    /// Count one more attempt of key `k` (which had `entry`) at `now`, keeping the table
    /// bounded.
    fn count(map: &mut Table, k: IpAddr, entry: Attempts, now: DateTime<Utc>) {
        let forget = Duration::seconds(FORGET_AFTER_SECS);
        if !map.contains_key(&k) && map.len() >= MAX_ADDRESSES {
            map.retain(|_, a| now - a.last < forget);
            if map.len() >= MAX_ADDRESSES
                && let Some(oldest) = map.iter().min_by_key(|(_, a)| a.last).map(|(k, _)| *k)
            {
                map.remove(&oldest);
            }
        }
        map.insert(
            k,
            Attempts {
                count: entry.count.saturating_add(1),
                last: now,
            },
        );
    }

    /// A login from `addr` succeeded: forget its attempts.
    pub fn succeeded(&self, addr: IpAddr) {
        let mut map = self.by_addr.lock().unwrap_or_else(|e| e.into_inner());
        map.remove(&key(addr));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).expect("instant")
    }

    #[test]
    fn five_attempts_are_free_then_each_waits_twice_as_long() {
        let l = LoginLimiter::default();
        let a: IpAddr = "192.0.2.1".parse().expect("ip");
        for _ in 0..FREE_ATTEMPTS {
            assert_eq!(l.attempt(a, t(0)), Ok(()));
        }
        assert_eq!(l.attempt(a, t(0)), Err(1));
        assert_eq!(l.attempt(a, t(1)), Ok(()));
        assert_eq!(l.attempt(a, t(2)), Err(1), "now 2 s after the last");
        assert_eq!(l.attempt(a, t(3)), Ok(()));
        assert_eq!(l.attempt(a, t(4)), Err(3));
        // Another address is not slowed down; success clears the address.
        assert_eq!(l.attempt("192.0.2.2".parse().expect("ip"), t(4)), Ok(()));
        l.succeeded(a);
        assert_eq!(l.attempt(a, t(4)), Ok(()));
    }

    #[test]
    fn ten_attempts_take_at_least_three_seconds_and_the_delay_is_capped() {
        let l = LoginLimiter::default();
        let a: IpAddr = "2001:db8::1".parse().expect("ip");
        let mut now = t(0);
        let mut made = 0;
        for _ in 0..1000 {
            match l.attempt(a, now) {
                Ok(()) => made += 1,
                Err(wait) => {
                    assert!(wait as i64 <= MAX_DELAY_SECS);
                    now += Duration::seconds(wait as i64);
                }
            }
            if made == 10 {
                break;
            }
        }
        assert_eq!(made, 10);
        assert!(now - t(0) >= Duration::seconds(3), "{:?}", now - t(0));
        // Same /64: same count.
        let b: IpAddr = "2001:db8::2".parse().expect("ip");
        assert!(l.attempt(b, now).is_err());
    }

    #[test]
    fn bearer_failures_alone_count_and_checks_do_not() {
        let l = LoginLimiter::bearer();
        let a: IpAddr = "192.0.2.1".parse().expect("ip");
        for _ in 0..100 {
            assert_eq!(
                l.check(a, t(0)),
                Ok(()),
                "checks alone never slow an address"
            );
        }
        for _ in 0..BEARER_FREE_FAILURES {
            assert_eq!(l.check(a, t(0)), Ok(()));
            l.failed(a, t(0));
        }
        assert_eq!(l.check(a, t(0)), Err(1));
        assert_eq!(l.check("192.0.2.2".parse().expect("ip"), t(0)), Ok(()));
        assert_eq!(l.check(a, t(1)), Ok(()));
        l.failed(a, t(1));
        assert_eq!(l.check(a, t(2)), Err(1));
    }

    #[test]
    fn quiet_addresses_are_forgotten_and_the_table_is_bounded() {
        let l = LoginLimiter::default();
        let a: IpAddr = "192.0.2.1".parse().expect("ip");
        for _ in 0..6 {
            let _ = l.attempt(a, t(0));
        }
        assert!(l.attempt(a, t(0)).is_err());
        assert_eq!(l.attempt(a, t(FORGET_AFTER_SECS)), Ok(()));
        for i in 0..(MAX_ADDRESSES as u32 + 10) {
            let ip = IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            let _ = l.attempt(ip, t(FORGET_AFTER_SECS + 1));
        }
        assert!(l.by_addr.lock().expect("lock").len() <= MAX_ADDRESSES);
    }
}
