//! Login backoff per source address: the first [`FREE_ATTEMPTS`] login attempts from an
//! address are checked at once; after that each further attempt must wait twice as long as
//! the one before (1 s, 2 s, 4 s, … at most [`MAX_DELAY_SECS`]) after the previous attempt,
//! and one that comes sooner is answered 429 with `Retry-After` without looking at the token
//! (not even the right one). A successful login clears the address. Ten wrong attempts take at
//! least 1 + 2 + 4 + 8 + 16 = 31 seconds.
//!
//! Every attempt counts until it succeeds, so concurrent attempts cannot slip past the count.
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
#[derive(Debug, Default)]
pub struct LoginLimiter {
    by_addr: Mutex<HashMap<IpAddr, Attempts>>,
}

/// The key an address counts under: IPv4 as is, IPv6 by its /64.
fn key(addr: IpAddr) -> IpAddr {
    match addr.to_canonical() {
        IpAddr::V6(v6) => {
            let mut seg = v6.segments();
            seg[4..].fill(0);
            IpAddr::V6(seg.into())
        }
        v4 => v4,
    }
}

/// How long after the previous attempt the next may come, given `count` attempts so far.
fn delay(count: u32) -> Duration {
    if count < FREE_ATTEMPTS {
        return Duration::zero();
    }
    let exp = (count - FREE_ATTEMPTS).min(20);
    Duration::seconds((1i64 << exp).min(MAX_DELAY_SECS))
}

impl LoginLimiter {
    /// Count an attempt from `addr` at `now`: `Ok` if it may be checked, else `Err(seconds)`
    /// to wait (the `Retry-After`), and the attempt is not counted.
    pub fn attempt(&self, addr: IpAddr, now: DateTime<Utc>) -> Result<(), u64> {
        let mut map = self.by_addr.lock().unwrap_or_else(|e| e.into_inner());
        let k = key(addr);
        let forget = Duration::seconds(FORGET_AFTER_SECS);
        let entry = match map.get(&k) {
            Some(a) if now - a.last < forget => *a,
            _ => Attempts {
                count: 0,
                last: now,
            },
        };
        let next = entry.last + delay(entry.count);
        if now < next {
            let ms = (next - now).num_milliseconds().max(0) as u64;
            return Err(ms.div_ceil(1000).max(1));
        }
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
        Ok(())
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
