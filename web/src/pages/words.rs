//! Figures as people say them: sizes, spans of time, moments, and the first letter in upper case.

/// A size in bytes as people read it: "238 MB", "1.4 GB", "950 kB".
pub(super) fn bytes_in_words(bytes: u64) -> String {
    let b = bytes as f64;
    match bytes {
        0..1_000 => format!("{bytes} bytes"),
        1_000..1_000_000 => format!("{:.0} kB", b / 1e3),
        1_000_000..10_000_000 => format!("{:.1} MB", b / 1e6),
        10_000_000..1_000_000_000 => format!("{:.0} MB", b / 1e6),
        _ => format!("{:.1} GB", b / 1e9),
    }
}

/// A time span in words, as a person says how long ago something happened.
pub(super) fn ago(span: time::Duration) -> String {
    let seconds = span.whole_seconds().max(0);
    let (n, unit) = match seconds {
        0..45 => return "just now".to_string(),
        45..5400 => ((seconds + 30) / 60, "minute"),
        5400..79_200 => ((seconds + 1800) / 3600, "hour"),
        79_200..3_888_000 => ((seconds + 43_200) / 86_400, "day"),
        _ => ((seconds + 1_296_000) / 2_592_000, "month"),
    };
    format!("{n} {unit}{} ago", if n == 1 { "" } else { "s" })
}

/// `text` with its first letter in upper case.
pub(super) fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// A moment as `(machine-readable, readable)`: RFC 3339, and UTC to the second.
pub(super) fn moment(t: time::OffsetDateTime) -> (String, String) {
    let readable =
        time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
    (
        t.format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default(),
        t.format(readable).unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::ago;
    use time::Duration;

    #[test]
    fn sizes_read_as_people_say_them() {
        for (bytes, words) in [
            (512, "512 bytes"),
            (950_400, "950 kB"),
            (1_450_000, "1.4 MB"),
            (238_123_456, "238 MB"),
            (1_400_000_000, "1.4 GB"),
        ] {
            assert_eq!(super::bytes_in_words(bytes), words);
        }
    }

    #[test]
    fn spans_read_as_people_say_them() {
        for (span, words) in [
            (Duration::seconds(3), "just now"),
            (Duration::seconds(50), "1 minute ago"),
            (Duration::minutes(59), "59 minutes ago"),
            (Duration::minutes(100), "2 hours ago"),
            (Duration::hours(30), "1 day ago"),
            (Duration::hours(37), "2 days ago"),
            (Duration::days(60), "2 months ago"),
            (Duration::seconds(-5), "just now"),
        ] {
            assert_eq!(ago(span), words, "{span}");
        }
    }
}
