//! Composites every image of a folder onto a background colour and writes it as PNG (for tools
//! that ignore transparency, e.g. metapixel): `flatten SRC DEST [RRGGBB]`.

// A benchmark tool: it reports on stdout and stderr, and stops at the first error.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(src), Some(dest)) = (args.first(), args.get(1)) else {
        return Err("usage: flatten SRC DEST [RRGGBB]".into());
    };
    let hex = args.get(2).map_or("ffffff", String::as_str);
    let bg = [0, 2, 4].map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap_or(255));
    std::fs::create_dir_all(dest)?;
    let mut n = 0;
    for entry in std::fs::read_dir(src)? {
        let path = entry?.path();
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let Ok(img) = tessera_engine::decode_target(&bytes, bg) else {
            continue;
        };
        let stem = path.file_stem().unwrap_or_default().to_string_lossy();
        img.save(std::path::Path::new(dest).join(format!("{stem}.png")))?;
        n += 1;
    }
    eprintln!("flattened {n} images into {dest}");
    Ok(())
}
