//! What a blob says about itself where the backend can keep it (Azure's content type and
//! metadata): the kind of bytes, sniffed from their first bytes, and the job the key names.
//! A SAS link, a storage browser or a lifecycle rule then sees an image as an image.

use uuid::Uuid;

/// The media type of `data`, stored under `key`: images by their signature, JSON by its key's
/// extension or its first character, anything else as bytes.
pub fn content_type(key: &str, data: &[u8]) -> &'static str {
    const SIGNATURES: [(&[u8], &str); 5] = [
        (b"\x89PNG\r\n\x1a\n", "image/png"),
        (b"\xff\xd8\xff", "image/jpeg"),
        (b"II*\0", "image/tiff"),
        (b"MM\0*", "image/tiff"),
        (b"II+\0", "image/tiff"),
    ];
    if let Some((_, media)) = SIGNATURES.iter().find(|(sig, _)| data.starts_with(sig)) {
        return media;
    }
    if data.len() >= 12 && &data[..4] == b"RIFF" && &data[8..12] == b"WEBP" {
        return "image/webp";
    }
    if data.len() >= 12 && &data[4..8] == b"ftyp" {
        return match &data[8..12] {
            b"avif" | b"avis" => "image/avif",
            _ => "image/heic",
        };
    }
    if key.ends_with(".json") || data.first() == Some(&b'{') {
        return "application/json";
    }
    "application/octet-stream"
}

/// The job a key belongs to: the UUID that is its second path segment (less any extension),
/// as in `imageoutput/{job}.png`, `sliceinput/{job}/00003` or `jobs/{job}.json`.
pub fn job_of(key: &str) -> Option<Uuid> {
    let segment = key.split('/').nth(1)?;
    segment.split('.').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_are_described_by_their_bytes_and_keys() {
        let job = Uuid::new_v4();
        let cases: [(&str, &[u8], &str); 7] = [
            ("imageoutput/x", b"\x89PNG\r\n\x1a\n....", "image/png"),
            ("imageoutput/x.jpg", b"\xff\xd8\xff\xe0", "image/jpeg"),
            ("imageoutput/x.tif", b"II+\0\x08\0", "image/tiff"),
            ("imageinput/x", b"\0\0\0\x18ftypheic....", "image/heic"),
            ("jobs/x.json", b"[]", "application/json"),
            ("messagebodies/q/x", b"{\"v\":1}", "application/json"),
            (
                "sliceoutput/x/00001",
                b"\x01\x02",
                "application/octet-stream",
            ),
        ];
        for (key, bytes, described) in cases {
            assert_eq!(content_type(key, bytes), described, "{key}");
        }
        assert_eq!(job_of(&format!("imageoutput/{job}.png")), Some(job));
        assert_eq!(job_of(&format!("sliceinput/{job}/00003")), Some(job));
        assert_eq!(job_of(&format!("jobs/{job}.json")), Some(job));
        assert_eq!(job_of("libraries/emoji/v1/index"), None);
    }
}
