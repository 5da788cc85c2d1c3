//! Injected time (Decision 11).
//!
//! *Invariant:* nothing in the core calls `SystemTime::now` or `Instant::now` (they panic on
//! `wasm32-unknown-unknown`); every timestamp comes from a [`Clock`] the caller supplies.

use std::cell::Cell;
use std::rc::Rc;

/// Milliseconds since the Unix epoch (UTC), as JavaScript's `Date.now()` gives them.
pub type Millis = i64;

/// A source of wall-clock time.
pub trait Clock {
    /// Current time in milliseconds since the Unix epoch.
    fn now_ms(&self) -> Millis;
}

/// The system clock: `std::time::SystemTime` natively, `Date.now()` in the browser.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[cfg(not(target_arch = "wasm32"))]
    fn now_ms(&self) -> Millis {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as Millis)
            .unwrap_or(0)
    }

    #[cfg(target_arch = "wasm32")]
    fn now_ms(&self) -> Millis {
        js_sys::Date::now() as Millis
    }
}

/// A clock tests move by hand. Clones share the same time.
#[derive(Debug, Clone)]
pub struct ManualClock(Rc<Cell<Millis>>);

impl ManualClock {
    /// A clock standing at `start` ms.
    pub fn new(start: Millis) -> Self {
        ManualClock(Rc::new(Cell::new(start)))
    }
    /// Moves the clock forward by `ms` milliseconds.
    pub fn advance(&self, ms: Millis) {
        self.0.set(self.0.get() + ms);
    }
    /// Sets the clock to `ms`.
    pub fn set(&self, ms: Millis) {
        self.0.set(ms);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> Millis {
        self.0.get()
    }
}

/// Formats `ms` as an ISO-8601 UTC timestamp (`2026-11-29T21:05:00Z`), used in frontmatter and log.md.
/// Uses Howard Hinnant's `civil_from_days` algorithm (proleptic Gregorian calendar).
pub fn format_iso8601(ms: Millis) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Formats `ms` as a UTC date (`2026-11-29`).
pub fn format_date(ms: Millis) -> String {
    format_iso8601(ms)[..10].to_string()
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_dates() {
        assert_eq!(format_iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_iso8601(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(format_iso8601(1_795_986_300_000), "2026-11-29T21:05:00Z");
        assert_eq!(format_date(-86_400_000), "1969-12-31");
    }

    #[test]
    fn manual_clock_is_shared() {
        let c = ManualClock::new(5);
        let d = c.clone();
        c.advance(10);
        assert_eq!(d.now_ms(), 15);
    }
}
