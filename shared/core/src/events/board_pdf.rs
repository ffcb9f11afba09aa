//! A board's prints as PDF (pdf-writer): sheets of stickers for a photo printer, each sticker
//! at its exact size with its row and column beside it, and the board itself in panels of
//! paper, each cell at a sticker's size with its row and column and a faint print of the
//! target's colour; and keepsake prints, a guest's photo whole on 4 x 6 inch photo paper with
//! the event's name and where its sticker went. Text is in the PDF's standard Helvetica, so
//! that any reader (and `pdftotext`) finds it.

use pdf_writer::{Content, Filter, Finish, Name, Pdf, Rect, Ref, Str};

use super::board::{Board, Cell};

/// Points in a millimetre.
const PT_PER_MM: f32 = 72.0 / 25.4;
/// The sheets' and panels' margin, in millimetres (what a printer leaves unprinted).
const MARGIN_MM: f32 = 10.0;
/// Room under each sticker for its row and column, in millimetres.
const LABEL_MM: f32 = 6.0;
/// Space between stickers on a sheet, in millimetres.
const GAP_MM: f32 = 4.0;

/// Paper for sheets and panels, portrait, in millimetres.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Paper {
    pub name: &'static str,
    pub width_mm: f32,
    pub height_mm: f32,
}

/// The papers a board prints on.
pub const PAPERS: &[Paper] = &[
    Paper {
        name: "A4",
        width_mm: 210.0,
        height_mm: 297.0,
    },
    Paper {
        name: "A3",
        width_mm: 297.0,
        height_mm: 420.0,
    },
    Paper {
        name: "Letter",
        width_mm: 215.9,
        height_mm: 279.4,
    },
    Paper {
        name: "Tabloid",
        width_mm: 279.4,
        height_mm: 431.8,
    },
];

impl Paper {
    /// The paper named `name` (any case).
    pub fn named(name: &str) -> Option<Paper> {
        PAPERS
            .iter()
            .copied()
            .find(|p| p.name.eq_ignore_ascii_case(name))
    }
}

/// Keepsake prints' paper: 4 x 6 inches, turned the photo's way.
pub const KEEPSAKE_PAPER: Paper = Paper {
    name: "4x6",
    width_mm: 101.6,
    height_mm: 152.4,
};
/// A keepsake's resolution, in dots an inch.
pub const KEEPSAKE_DPI: f32 = 300.0;
/// A keepsake's margin, and the band under its photo for the event's name, in millimetres.
const KEEPSAKE_MARGIN_MM: f32 = 5.0;
const KEEPSAKE_LABEL_MM: f32 = 12.0;

/// One keepsake to print: the photo (a JPEG, `width` x `height` pixels) and the cell its
/// sticker went to, if any.
pub struct Keepsake {
    pub jpeg: Vec<u8>,
    pub width: u32,
    pub height: u32,
    pub cell: Option<Cell>,
}

/// The paper of a keepsake of a `width` x `height` photo: landscape for a wide photo.
fn keepsake_paper(width: u32, height: u32) -> Paper {
    let p = KEEPSAKE_PAPER;
    if width > height {
        Paper {
            width_mm: p.height_mm,
            height_mm: p.width_mm,
            ..p
        }
    } else {
        p
    }
}

/// Where a `width` x `height` photo is printed on its keepsake: (x, y, w, h) in millimetres,
/// fitted whole above the label band and centred.
fn keepsake_frame(width: u32, height: u32) -> (f32, f32, f32, f32) {
    let paper = keepsake_paper(width, height);
    let room_w = paper.width_mm - 2.0 * KEEPSAKE_MARGIN_MM;
    let room_h = paper.height_mm - 2.0 * KEEPSAKE_MARGIN_MM - KEEPSAKE_LABEL_MM;
    let scale = (room_w / width.max(1) as f32).min(room_h / height.max(1) as f32);
    let (w, h) = (width as f32 * scale, height as f32 * scale);
    let x = (paper.width_mm - w) / 2.0;
    let y = KEEPSAKE_MARGIN_MM + KEEPSAKE_LABEL_MM + (room_h - h) / 2.0;
    (x, y, w, h)
}

/// The keepsake of `photo` (decoded, upright, sRGB): at most the keepsake's resolution where it
/// is printed (never enlarged), as a JPEG.
pub fn keepsake_of(photo: &image::RgbImage, cell: Option<Cell>) -> Result<Keepsake, String> {
    let (w, h) = photo.dimensions();
    let (_, _, w_mm, h_mm) = keepsake_frame(w, h);
    let px = |mm: f32| (mm / 25.4 * KEEPSAKE_DPI).round() as u32;
    let (width, height) = if px(w_mm) < w {
        (px(w_mm).max(1), px(h_mm).max(1))
    } else {
        (w, h)
    };
    let jpeg = if (width, height) == (w, h) {
        jpeg_of(photo)?
    } else {
        let filter = image::imageops::FilterType::Triangle;
        jpeg_of(&image::imageops::resize(photo, width, height, filter))?
    };
    Ok(Keepsake {
        jpeg,
        width,
        height,
        cell,
    })
}

/// Keepsake prints, one a page of 4 x 6 inches: each photo whole, the event's name under it,
/// and its sticker's row and column.
pub fn keepsakes(event_name: &str, prints: &[Keepsake]) -> Vec<u8> {
    let mut doc = Document::new();
    for print in prints {
        let paper = keepsake_paper(print.width, print.height);
        let mut page = doc.page(paper);
        let (x, y, w, h) = keepsake_frame(print.width, print.height);
        page.picture(&print.jpeg, (print.width, print.height), x, y, (w, h));
        let left = KEEPSAKE_MARGIN_MM;
        page.text(&short(event_name, 60), left, KEEPSAKE_MARGIN_MM + 6.0, 11.0);
        if let Some(cell) = print.cell {
            let at = format!("Your sticker: row {}, column {}", cell.row, cell.col);
            page.text(&at, left, KEEPSAKE_MARGIN_MM + 1.0, 8.0);
        }
        doc.finish_page(page);
    }
    doc.finish()
}

/// One sticker to print: its cell and its picture (a JPEG, square, at the board's DPI).
pub struct Sticker {
    pub cell: Cell,
    pub jpeg: Vec<u8>,
    /// The picture's side in pixels.
    pub px: u32,
}

/// How many stickers of `board` fit on one sheet of `paper`: columns and rows.
pub fn sheet_grid(board: &Board, paper: Paper) -> (u32, u32) {
    let side = board.sticker_mm as f32;
    let fit = |room: f32, each: f32| (((room + GAP_MM) / (each + GAP_MM)).floor() as u32).max(1);
    (
        fit(paper.width_mm - 2.0 * MARGIN_MM, side),
        fit(paper.height_mm - 2.0 * MARGIN_MM, side + LABEL_MM),
    )
}

/// A sheet (or several, when they do not fit on one) of `stickers` for event `event_name`'s
/// board: each at the board's sticker size, its row and column under it.
pub fn sticker_sheets(
    board: &Board,
    paper: Paper,
    event_name: &str,
    stickers: &[Sticker],
) -> Vec<u8> {
    let (cols, rows) = sheet_grid(board, paper);
    let per_sheet = (cols * rows) as usize;
    let mut doc = Document::new();
    let side = board.sticker_mm as f32;
    for sheet in stickers.chunks(per_sheet) {
        let mut page = doc.page(paper);
        for (i, sticker) in sheet.iter().enumerate() {
            let (c, r) = (i as u32 % cols, i as u32 / cols);
            let x = MARGIN_MM + c as f32 * (side + GAP_MM);
            let top = MARGIN_MM + r as f32 * (side + LABEL_MM + GAP_MM);
            let y = paper.height_mm - top - side;
            page.image(&sticker.jpeg, sticker.px, x, y, side);
            let label = format!("R{} C{}", sticker.cell.row, sticker.cell.col);
            page.text(&label, x, y - 4.0, 8.0);
            page.text(&short(event_name, 24), x + side * 0.5, y - 4.0, 5.0);
        }
        doc.finish_page(page);
    }
    doc.finish()
}

/// The board to stick on, in panels of `paper`: each panel as many whole cells as fit, each
/// cell at a sticker's size with a faint print of the target's colour and its row and column,
/// the panel's name and where it joins the others.
pub fn board_panels(board: &Board, paper: Paper, event_name: &str) -> Vec<u8> {
    let side = board.sticker_mm as f32;
    let per = |room: f32| ((room / side).floor() as u32).max(1);
    // Room for the panel's title above its cells.
    let (across, down) = (
        per(paper.width_mm - 2.0 * MARGIN_MM),
        per(paper.height_mm - 2.0 * MARGIN_MM - 8.0),
    );
    let (panels_x, panels_y) = (board.cols.div_ceil(across), board.rows.div_ceil(down));
    let mut doc = Document::new();
    for py in 0..panels_y {
        for px in 0..panels_x {
            let mut page = doc.page(paper);
            let (col0, row0) = (px * across, py * down);
            let (cols, rows) = (across.min(board.cols - col0), down.min(board.rows - row0));
            let title = format!(
                "{} - panel {}{} of {} x {}: rows {}-{}, columns {}-{}; joins {}",
                short(event_name, 40),
                (b'A' + (py % 26) as u8) as char,
                px + 1,
                panels_y,
                panels_x,
                row0 + 1,
                row0 + rows,
                col0 + 1,
                col0 + cols,
                joins(px, py, panels_x, panels_y)
            );
            page.text(&title, MARGIN_MM, paper.height_mm - MARGIN_MM - 4.0, 7.0);
            let top = paper.height_mm - MARGIN_MM - 8.0;
            for r in 0..rows {
                for c in 0..cols {
                    let cell = Cell {
                        row: row0 + r + 1,
                        col: col0 + c + 1,
                    };
                    let (x, y) = (MARGIN_MM + c as f32 * side, top - (r + 1) as f32 * side);
                    page.cell(x, y, side, faint(board.colour(cell)));
                    let label = format!("R{} C{}", cell.row, cell.col);
                    page.text(&label, x + 1.0, y + 1.5, (side / 6.0).clamp(3.0, 7.0));
                }
            }
            doc.finish_page(page);
        }
    }
    doc.finish()
}

/// Which panels a panel joins, by name.
fn joins(px: u32, py: u32, across: u32, down: u32) -> String {
    let name = |x: u32, y: u32| format!("{}{}", (b'A' + (y % 26) as u8) as char, x + 1);
    let mut sides = Vec::new();
    if px > 0 {
        sides.push(format!("{} on the left", name(px - 1, py)));
    }
    if px + 1 < across {
        sides.push(format!("{} on the right", name(px + 1, py)));
    }
    if py > 0 {
        sides.push(format!("{} above", name(px, py - 1)));
    }
    if py + 1 < down {
        sides.push(format!("{} below", name(px, py + 1)));
    }
    if sides.is_empty() {
        "no other".into()
    } else {
        sides.join(", ")
    }
}

/// A colour printed faintly: a quarter of it over white.
fn faint(c: [u8; 3]) -> [f32; 3] {
    c.map(|v| (f32::from(v) / 255.0) * 0.25 + 0.75)
}

/// `text` cut to `n` characters, in the characters Helvetica's standard encoding prints.
fn short(text: &str, n: usize) -> String {
    text.chars()
        .filter(|c| c.is_ascii() && !c.is_ascii_control())
        .take(n)
        .collect()
}

/// A PDF being written: pages, their contents and images, and one font.
struct Document {
    pdf: Pdf,
    next: i32,
    pages: Vec<Ref>,
    font: Ref,
}

/// A page being drawn, in millimetres from the bottom left.
struct Page {
    paper: Paper,
    content: Content,
    /// The page's pictures: JPEGs and their sizes in pixels.
    images: Vec<(Vec<u8>, (u32, u32))>,
}

impl Document {
    fn new() -> Self {
        Document {
            pdf: Pdf::new(),
            next: 4,
            pages: Vec::new(),
            font: Ref::new(3),
        }
    }

    fn alloc(&mut self) -> Ref {
        self.next += 1;
        Ref::new(self.next)
    }

    fn page(&mut self, paper: Paper) -> Page {
        Page {
            paper,
            content: Content::new(),
            images: Vec::new(),
        }
    }

    fn finish_page(&mut self, page: Page) {
        let (page_id, content_id) = (self.alloc(), self.alloc());
        let images: Vec<(Ref, Vec<u8>, (u32, u32))> = page
            .images
            .into_iter()
            .map(|(jpeg, px)| (self.alloc(), jpeg, px))
            .collect();
        let mut writer = self.pdf.page(page_id);
        writer.media_box(Rect::new(
            0.0,
            0.0,
            page.paper.width_mm * PT_PER_MM,
            page.paper.height_mm * PT_PER_MM,
        ));
        writer.parent(Ref::new(2));
        writer.contents(content_id);
        let mut resources = writer.resources();
        resources.fonts().pair(Name(b"F1"), self.font);
        let mut objects = resources.x_objects();
        for (i, (id, _, _)) in images.iter().enumerate() {
            objects.pair(Name(format!("Im{i}").as_bytes()), *id);
        }
        objects.finish();
        resources.finish();
        writer.finish();
        self.pdf.stream(content_id, &page.content.finish());
        for (id, jpeg, (w, h)) in &images {
            let mut image = self.pdf.image_xobject(*id, jpeg);
            image.filter(Filter::DctDecode);
            image.width(*w as i32);
            image.height(*h as i32);
            image.color_space().device_rgb();
            image.bits_per_component(8);
            image.finish();
        }
        self.pages.push(page_id);
    }

    fn finish(mut self) -> Vec<u8> {
        self.pdf.catalog(Ref::new(1)).pages(Ref::new(2));
        let count = self.pages.len() as i32;
        self.pdf
            .pages(Ref::new(2))
            .kids(self.pages.iter().copied())
            .count(count);
        self.pdf.type1_font(self.font).base_font(Name(b"Helvetica"));
        self.pdf.finish()
    }
}

impl Page {
    /// Draws `jpeg` (`px` square) with its bottom left at (`x`, `y`), `side` millimetres.
    fn image(&mut self, jpeg: &[u8], px: u32, x: f32, y: f32, side: f32) {
        self.picture(jpeg, (px, px), x, y, (side, side));
    }

    /// Draws `jpeg` (`pixels` wide and high) with its bottom left at (`x`, `y`), `size`
    /// millimetres wide and high.
    fn picture(&mut self, jpeg: &[u8], pixels: (u32, u32), x: f32, y: f32, size: (f32, f32)) {
        let name = format!("Im{}", self.images.len());
        self.images.push((jpeg.to_vec(), pixels));
        let (w, h) = (size.0 * PT_PER_MM, size.1 * PT_PER_MM);
        self.content.save_state();
        self.content
            .transform([w, 0.0, 0.0, h, x * PT_PER_MM, y * PT_PER_MM]);
        self.content.x_object(Name(name.as_bytes()));
        self.content.restore_state();
    }

    /// A cell's square: filled with `fill` (RGB from 0 to 1), outlined in grey.
    fn cell(&mut self, x: f32, y: f32, side: f32, fill: [f32; 3]) {
        let (x, y, s) = (x * PT_PER_MM, y * PT_PER_MM, side * PT_PER_MM);
        self.content.set_fill_rgb(fill[0], fill[1], fill[2]);
        self.content.set_stroke_rgb(0.55, 0.55, 0.55);
        self.content.set_line_width(0.3);
        self.content.rect(x, y, s, s);
        self.content.fill_nonzero_and_stroke();
    }

    /// `text` in black Helvetica of `size` points, starting at (`x`, `y`).
    fn text(&mut self, text: &str, x: f32, y: f32, size: f32) {
        self.content.set_fill_rgb(0.0, 0.0, 0.0);
        self.content.begin_text();
        self.content.set_font(Name(b"F1"), size);
        self.content.next_line(x * PT_PER_MM, y * PT_PER_MM);
        self.content.show(Str(text.as_bytes()));
        self.content.end_text();
    }
}

/// The sticker of a photo placed in `cell`: its square thumbnail (`square`, a JPEG at least
/// the sticker's size) at the board's sticker size and resolution, its colour moved toward
/// the cell's by the board's cap at most ([`super::board::capped_shift`]); `shifted` false
/// prints it as it is. A JPEG, and its side in pixels.
pub fn sticker_of(
    board: &Board,
    cell: Cell,
    square: &[u8],
    shifted: bool,
) -> Result<(Vec<u8>, u32), String> {
    use tessera_engine::color::{lab_to_srgb, srgb_to_lab};
    let px = board.sticker_px();
    let decoded = image::load_from_memory_with_format(square, image::ImageFormat::Jpeg)
        .map_err(|e| format!("the photo's square: {e}"))?
        .to_rgb8();
    let mut rgb = image::imageops::resize(&decoded, px, px, image::imageops::FilterType::Triangle);
    if shifted && board.shift_cap > 0.0 {
        let mean = mean_of(&rgb);
        let shift = super::board::capped_shift(mean, board.colour(cell), board.shift_cap);
        for p in rgb.pixels_mut() {
            let lab = srgb_to_lab([p[0] as f64, p[1] as f64, p[2] as f64]);
            let moved = lab_to_srgb([lab[0] + shift[0], lab[1] + shift[1], lab[2] + shift[2]]);
            for k in 0..3 {
                p[k] = moved[k].round().clamp(0.0, 255.0) as u8;
            }
        }
    }
    Ok((jpeg_of(&rgb)?, px))
}

/// A plain sticker of the target's colour in `cell`, for a cell its owner filled so: its JPEG
/// and side in pixels.
pub fn patch_of(board: &Board, cell: Cell) -> Result<(Vec<u8>, u32), String> {
    let px = board.sticker_px();
    let rgb = image::RgbImage::from_pixel(px, px, image::Rgb(board.colour(cell)));
    Ok((jpeg_of(&rgb)?, px))
}

/// `rgb` as the JPEG a print embeds.
fn jpeg_of(rgb: &image::RgbImage) -> Result<Vec<u8>, String> {
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 92)
        .encode_image(rgb)
        .map_err(|e| format!("a print's JPEG: {e}"))?;
    Ok(jpeg)
}

/// The mean sRGB colour of `rgb`.
pub fn mean_of(rgb: &image::RgbImage) -> [u8; 3] {
    let mut sum = [0u64; 3];
    for p in rgb.pixels() {
        for k in 0..3 {
            sum[k] += u64::from(p[k]);
        }
    }
    let n = u64::from(rgb.width() * rgb.height()).max(1);
    sum.map(|s| (s / n) as u8)
}
