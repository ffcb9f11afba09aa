//! Captions: a tile's words, from its file name or the library's captions.csv.

use super::*;

/// The captions section of an index (format 2 on): one length-prefixed string per tile, filling
/// `bytes` exactly. All empty reads as none, as an import without captions holds.
pub(super) fn read_captions(bytes: &[u8], tiles: usize) -> Result<Vec<String>, Error> {
    let mut r = Reader {
        b: bytes,
        at: 0,
        short: false,
    };
    let mut captions = Vec::with_capacity(tiles.min(1 << 20));
    for _ in 0..tiles {
        let len = r.u32()? as usize;
        let s = std::str::from_utf8(r.take(len)?)
            .map_err(|_| Error::BadIndex("caption is not UTF-8".into()))?;
        captions.push(s.to_string());
    }
    if r.at != bytes.len() {
        return Err(Error::BadIndex("trailing bytes".into()));
    }
    if captions.iter().all(String::is_empty) {
        captions.clear();
    }
    Ok(captions)
}

pub(super) fn is_captions_file(name: &str) -> bool {
    name.eq_ignore_ascii_case(CAPTIONS_FILE)
}

/// A caption made from a file name: no folders or extension, `_` and `-` as spaces.
pub(super) fn caption_from_name(name: &str) -> String {
    let base = name.rsplit('/').next().unwrap_or(name);
    let stem = base.rsplit_once('.').map_or(base, |(stem, _)| stem);
    let words: Vec<&str> = stem
        .split(['_', '-', ' '])
        .filter(|w| !w.is_empty())
        .collect();
    if words.is_empty() {
        base.to_string()
    } else {
        words.join(" ")
    }
}

/// Gives the tiles of an import the captions of its captions file, if it has one, and seals
/// the library. `listed` are the image files found: a caption for one of them that did not
/// become a tile (unreadable, or a duplicate) is dropped; a caption for a file not there is an
/// error.
pub(super) fn with_captions<'a>(
    (mut library, report): (Library, ImportReport),
    csv: Option<Vec<u8>>,
    listed: impl Iterator<Item = &'a str>,
) -> Result<(Library, ImportReport), Error> {
    let Some(csv) = csv else {
        library.seal();
        return Ok((library, report));
    };
    let listed: std::collections::HashSet<&str> = listed.collect();
    let tiles: std::collections::HashMap<&str, usize> = library
        .names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let mut captions = vec![String::new(); library.names.len()];
    for (line, file, caption) in parse_captions(&csv)? {
        match tiles.get(file.as_str()) {
            Some(&i) => captions[i] = caption,
            None if listed.contains(file.as_str()) => {}
            None => {
                return Err(Error::Captions(format!(
                    "{CAPTIONS_FILE} line {line}: there is no image {file:?} in the library"
                )));
            }
        }
    }
    drop(tiles);
    library.captions = captions;
    library.seal();
    Ok((library, report))
}

/// The `(line, file, caption)` rows of a captions file: CSV with two columns, fields optionally
/// in double quotes (`""` for a quote), an optional `file,caption` header, blank lines skipped.
pub(super) fn parse_captions(bytes: &[u8]) -> Result<Vec<(usize, String, String)>, Error> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| Error::Captions(format!("{CAPTIONS_FILE} is not UTF-8 text")))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut rows = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let bad = |why: &str| Error::Captions(format!("{CAPTIONS_FILE} line {line}: {why}"));
        if raw.trim().is_empty() {
            continue;
        }
        let fields = split_csv_line(raw).ok_or_else(|| bad("an unclosed quote"))?;
        let [file, caption] = fields.as_slice() else {
            return Err(bad(&format!(
                "{} fields; each line is file,caption (quote a caption with commas)",
                fields.len()
            )));
        };
        let (file, caption) = (file.trim(), caption.trim());
        if line == 1 && file.eq_ignore_ascii_case("file") && caption.eq_ignore_ascii_case("caption")
        {
            continue;
        }
        if file.is_empty() || caption.is_empty() {
            return Err(bad("a file name and a caption are both needed"));
        }
        if caption.chars().count() > MAX_CAPTION_CHARS {
            return Err(bad(&format!(
                "the caption is over {MAX_CAPTION_CHARS} characters"
            )));
        }
        if caption.chars().any(char::is_control) {
            return Err(bad("the caption has control characters"));
        }
        rows.push((line, file.to_string(), caption.to_string()));
    }
    Ok(rows)
}

/// The fields of one CSV line; `None` if a quote is left open.
pub(super) fn split_csv_line(line: &str) -> Option<Vec<String>> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            (true, '"') => quoted = false,
            (false, '"') if field.trim().is_empty() => {
                field.clear();
                quoted = true;
            }
            (false, ',') => fields.push(std::mem::take(&mut field)),
            (_, c) => field.push(c),
        }
    }
    if quoted {
        return None;
    }
    fields.push(field);
    Some(fields)
}
