//! Bounded retries for rate limits and overload (HTTP 429, 503, 529).
//!
//! The wait before retry *n* is the server's `Retry-After` (seconds or an HTTP date) or
//! `retry-after-ms` when it sent one, else an exponential backoff `base · 2ⁿ⁻¹` capped at
//! `maxBackoffMs`. Retrying stops after `maxAttempts` requests, or when the next wait would push
//! the total waited past `maxTotalWaitMs`: then the call fails with `LLM_RATE_LIMITED` carrying the
//! last `Retry-After`. Sleeping goes through the transport (gloo-timers in the browser, a fake
//! clock in tests), and a cancel ends the wait at once.

use serde::{Deserialize, Serialize};

use crate::clock::Millis;
use crate::error::{Error, Result};

/// How hard to retry. Defaults: 4 attempts, 60 s total wait, backoff 1 s doubling up to 20 s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(target_arch = "wasm32", derive(tsify::Tsify))]
#[serde(rename_all = "camelCase", default)]
pub struct RetryPolicy {
    /// Requests per call, the first included. Range 1..=10; 1 never retries.
    pub max_attempts: u32,
    /// Cap on the summed waits of one call, in ms. Range 0..=600 000; 0 never waits.
    pub max_total_wait_ms: u64,
    /// First backoff when the server sent no `Retry-After`, in ms. Range 0..=60 000.
    pub base_backoff_ms: u64,
    /// Cap on one backoff, in ms. Range ≥ `baseBackoffMs`, ≤ 600 000.
    pub max_backoff_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            max_total_wait_ms: 60_000,
            base_backoff_ms: 1000,
            max_backoff_ms: 20_000,
        }
    }
}

impl RetryPolicy {
    /// Checks the ranges. Errors: [`Error::LlmConfig`].
    pub fn validate(&self) -> Result<()> {
        if !(1..=10).contains(&self.max_attempts)
            || self.max_total_wait_ms > 600_000
            || self.base_backoff_ms > 60_000
            || self.max_backoff_ms < self.base_backoff_ms
            || self.max_backoff_ms > 600_000
        {
            return Err(Error::LlmConfig(
                "retry: maxAttempts 1..=10, maxTotalWaitMs ≤ 600000, baseBackoffMs ≤ 60000 ≤ maxBackoffMs ≤ 600000".into(),
            ));
        }
        Ok(())
    }

    /// The backoff before retry number `retry` (1-based) when the server gave no `Retry-After`.
    pub fn backoff_ms(&self, retry: u32) -> u64 {
        let factor = 1u64 << retry.saturating_sub(1).min(20);
        self.base_backoff_ms
            .saturating_mul(factor)
            .min(self.max_backoff_ms)
    }

    /// How long to wait before the next attempt, or `None` to give up. `attempts` requests were
    /// made so far, `waited_ms` already slept, and the server asked for `retry_after_ms`.
    pub fn next_wait(
        &self,
        attempts: u32,
        waited_ms: u64,
        retry_after_ms: Option<u64>,
    ) -> Option<u64> {
        if attempts >= self.max_attempts {
            return None;
        }
        let wait = retry_after_ms.unwrap_or_else(|| self.backoff_ms(attempts));
        (waited_ms + wait <= self.max_total_wait_ms).then_some(wait)
    }
}

/// Parses a `Retry-After` value (RFC 9110 §10.2.3): delay-seconds, or an HTTP-date
/// (IMF-fixdate, e.g. `Wed, 21 Oct 2015 07:28:00 GMT`) relative to `now_ms`. Returns ms; a date in
/// the past gives 0. `None` when the value is neither.
pub fn parse_retry_after(value: &str, now_ms: Millis) -> Option<u64> {
    let v = value.trim();
    if v.starts_with(|c: char| c.is_ascii_digit() || c == '.' || c == '-' || c == '+') {
        return decimal_scaled(v, 1000);
    }
    let at = parse_http_date(v)?;
    Some(at.saturating_sub(now_ms).max(0) as u64)
}

/// The wait a response asks for: `retry-after-ms` (OpenAI, Azure) before `Retry-After`.
pub fn retry_after_from_headers(headers: &[(String, String)], now_ms: Millis) -> Option<u64> {
    let get = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| decimal_scaled(v.trim(), 1)) {
        return Some(ms);
    }
    get("retry-after").and_then(|v| parse_retry_after(v, now_ms))
}

/// A non-negative decimal (`2`, `0.5`, `1500.25`) times `scale`, rounded up; `None` otherwise.
/// (Hand-written so the wasm does not link a float parser for one header.)
fn decimal_scaled(v: &str, scale: u64) -> Option<u64> {
    let (int, frac) = v.split_once('.').unwrap_or((v, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let int: u64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut total = int.checked_mul(scale)?;
    // Up to 9 fraction digits matter; the rest only decide rounding up.
    let digits = &frac[..frac.len().min(9)];
    let denom = 10u64.pow(digits.len() as u32);
    let num: u64 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    let scaled = num * scale;
    total += scaled / denom;
    if scaled % denom != 0 || frac[digits.len()..].bytes().any(|b| b != b'0') {
        total += 1;
    }
    Some(total)
}

/// IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT` → ms since the epoch.
fn parse_http_date(v: &str) -> Option<Millis> {
    let rest = v.split_once(", ").map_or(v, |(_, r)| r);
    let mut it = rest.split_whitespace();
    let day: i64 = it.next()?.parse().ok()?;
    let month = match it.next()?.to_ascii_lowercase().as_str() {
        "jan" => 1,
        "feb" => 2,
        "mar" => 3,
        "apr" => 4,
        "may" => 5,
        "jun" => 6,
        "jul" => 7,
        "aug" => 8,
        "sep" => 9,
        "oct" => 10,
        "nov" => 11,
        "dec" => 12,
        _ => return None,
    };
    let year: i64 = it.next()?.parse().ok()?;
    let mut hms = it.next()?.split(':');
    let h: i64 = hms.next()?.parse().ok()?;
    let m: i64 = hms.next()?.parse().ok()?;
    let s: i64 = hms.next()?.parse().ok()?;
    if it.next()? != "GMT" || !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some((days * 86_400 + h * 3600 + m * 60 + s) * 1000)
}

/// Howard Hinnant's `days_from_civil` (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_values() {
        assert_eq!(parse_retry_after("2", 0), Some(2000));
        assert_eq!(parse_retry_after(" 0.5 ", 0), Some(500));
        assert_eq!(parse_retry_after("-1", 0), None);
        assert_eq!(parse_retry_after("1.0001", 0), Some(1001));
        assert_eq!(parse_retry_after(".25", 0), Some(250));
        assert_eq!(parse_retry_after("1e3", 0), None);
        assert_eq!(parse_retry_after("soon", 0), None);
        // RFC 9110's example date: 1994-11-06T08:49:37Z = 784111777 s.
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777_000 - 3000),
            Some(3000)
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", 784_111_777_000 + 5),
            Some(0)
        );
        let h = vec![
            ("Retry-After".to_string(), "7".to_string()),
            ("retry-after-ms".to_string(), "1500".to_string()),
        ];
        assert_eq!(retry_after_from_headers(&h, 0), Some(1500));
        assert_eq!(retry_after_from_headers(&h[..1], 0), Some(7000));
    }

    #[test]
    fn waits_are_bounded() {
        let p = RetryPolicy::default();
        assert_eq!(
            (
                p.backoff_ms(1),
                p.backoff_ms(2),
                p.backoff_ms(3),
                p.backoff_ms(9)
            ),
            (1000, 2000, 4000, 20_000)
        );
        assert_eq!(p.next_wait(1, 0, Some(3000)), Some(3000));
        assert_eq!(p.next_wait(1, 0, None), Some(1000));
        assert_eq!(p.next_wait(4, 0, None), None, "attempts exhausted");
        assert_eq!(
            p.next_wait(1, 58_000, Some(3000)),
            None,
            "total wait capped"
        );
        assert_eq!(
            p.next_wait(1, 0, Some(3_600_000)),
            None,
            "a huge Retry-After gives up at once"
        );
    }
}
