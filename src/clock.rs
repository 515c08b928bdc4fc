//! Wall-clock time in the two shapes the team files use: epoch milliseconds
//! (`createdAt`, `joinedAt`, request ids) and JavaScript's `Date.toISOString()`
//! (`2026-11-30T07:14:23.941Z`, the inbox `timestamp`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Microseconds since the Unix epoch, now (for latency logs compared
/// across processes).
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// `Date.toISOString()` of now.
pub fn now_iso() -> String {
    iso_from_ms(now_ms())
}

/// `Date.toISOString()` of an epoch-milliseconds instant: always UTC, always
/// three fractional digits, always `Z`.
pub fn iso_from_ms(ms: u64) -> String {
    let secs = ms / 1000;
    let (y, mo, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60,
        ms % 1000
    )
}

/// Parses what [`iso_from_ms`] writes (and the same shape without the
/// fraction). Returns epoch ms, or `None` for anything else.
pub fn ms_from_iso(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || *b.last()? != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<u64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let frac = match &s[19..s.len() - 1] {
        "" => 0,
        f if f.starts_with('.') && f.len() >= 2 => {
            let digits = &f[1..f.len().min(4)];
            digits.parse::<u64>().ok()? * 10u64.pow(3 - digits.len() as u32)
        }
        _ => return None,
    };
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let days = days_from_civil(y as i64, mo as u32, d as u32);
    Some((days as u64 * 86_400 + h * 3600 + mi * 60 + sec) * 1000 + frac)
}

/// A short human age: `4s`, `3m`, `2h`, `5d`.
pub fn age(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        3600..=86_399 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

// Howard Hinnant's days <-> civil date algorithms (public domain).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_matches_javascript_for_a_fixture_instant() {
        // The fixture's shutdown request id `shutdown-1796022927589@…` has
        // timestamp `2026-11-30T07:15:27.589Z`.
        assert_eq!(iso_from_ms(1_796_022_927_589), "2026-11-30T07:15:27.589Z");
        assert_eq!(iso_from_ms(0), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn iso_round_trips() {
        for ms in [0, 951_782_400_000, 1_796_022_927_589, 4_102_444_799_999] {
            assert_eq!(ms_from_iso(&iso_from_ms(ms)), Some(ms));
        }
        assert_eq!(ms_from_iso("2026-11-30T07:15:27Z"), Some(1_796_022_927_000));
        assert_eq!(ms_from_iso("yesterday"), None);
        assert_eq!(ms_from_iso("2026-13-30T07:15:27.589Z"), None);
    }
}
