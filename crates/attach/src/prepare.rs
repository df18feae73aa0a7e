//! Bytes to an image the provider takes: the format checked, the size measured, scaled down
//! when it is larger than the wire API accepts.

use std::io::Cursor;
use std::path::Path;

use base64::Engine as _;
use image::{DynamicImage, ImageFormat, ImageReader, imageops::FilterType};
use llm::{ImageContent, ImageLimit};

/// An image ready to go with a message, and what the chip says of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Attachment {
    pub image: ImageContent,
    /// `PNG`, `JPEG`, `GIF` or `WebP`.
    pub format: &'static str,
    pub width: u32,
    pub height: u32,
    /// Size of the bytes sent (before base64).
    pub bytes: usize,
    /// The size it had before it was scaled down to fit the provider.
    pub scaled_from: Option<(u32, u32)>,
}

impl Attachment {
    /// The editor's chip: `[image #1 · PNG 1280×800 · 210 KB]`, and `· scaled from W×H` when
    /// it was.
    pub fn chip(&self, number: usize) -> String {
        let mut chip = format!(
            "[image #{number} · {} {}×{} · {}",
            self.format,
            self.width,
            self.height,
            human_size(self.bytes)
        );
        if let Some((w, h)) = self.scaled_from {
            chip.push_str(&format!(" · scaled from {w}×{h}"));
        }
        chip.push(']');
        chip
    }
}

/// Largest file read as an image: far past any screenshot, short of filling memory.
const MAX_FILE: u64 = 64 << 20;

/// Reads the image file at `path` and prepares it.
pub fn from_path(path: &Path, limit: ImageLimit) -> Result<Attachment, String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|err| format!("{shown}: {err}"))?;
    if !meta.is_file() {
        return Err(format!("{shown} is not a file"));
    }
    if meta.len() > MAX_FILE {
        return Err(format!(
            "{shown} is {}, more than the {} an image may be",
            human_size(meta.len() as usize),
            human_size(MAX_FILE as usize)
        ));
    }
    let bytes = std::fs::read(path).map_err(|err| format!("{shown}: {err}"))?;
    prepare(bytes, limit).map_err(|err| format!("{shown}: {err}"))
}

/// The image on this display's clipboard, as PNG.
pub fn from_clipboard(limit: ImageLimit) -> Result<Attachment, String> {
    let (width, height, rgba) = platform::clipboard::image()?;
    let pixels = image::RgbaImage::from_raw(width, height, rgba)
        .ok_or("the clipboard's image has fewer pixels than its size says")?;
    let png = encode(&DynamicImage::ImageRgba8(pixels), ImageFormat::Png)?;
    prepare(png, limit)
}

/// Checks `bytes` are a PNG, JPEG, GIF or WebP image and scales it down when it is larger
/// than `limit`.
pub fn prepare(bytes: Vec<u8>, limit: ImageLimit) -> Result<Attachment, String> {
    let format = image::guess_format(&bytes)
        .map_err(|_| "not an image (PNG, JPEG, GIF and WebP are what models take)".to_string())?;
    let (name, mime) = match format {
        ImageFormat::Png => ("PNG", "image/png"),
        ImageFormat::Jpeg => ("JPEG", "image/jpeg"),
        ImageFormat::Gif => ("GIF", "image/gif"),
        ImageFormat::WebP => ("WebP", "image/webp"),
        other => {
            return Err(format!(
                "a {} image; models take PNG, JPEG, GIF and WebP",
                other
                    .extensions_str()
                    .first()
                    .unwrap_or(&"other")
                    .to_uppercase()
            ));
        }
    };
    let reader = ImageReader::with_format(Cursor::new(&bytes), format);
    let (width, height) = reader
        .into_dimensions()
        .map_err(|err| format!("a damaged {name} image: {err}"))?;
    if width.max(height) <= limit.max_edge && bytes.len() <= limit.max_bytes {
        return Ok(Attachment {
            image: ImageContent::new(base64_of(&bytes), mime),
            format: name,
            width,
            height,
            bytes: bytes.len(),
            scaled_from: None,
        });
    }
    scale_down(&bytes, format, (width, height), limit)
}

/// Decodes the image and shrinks it until it fits `limit`: a JPEG stays a JPEG (a photo), the
/// rest become PNG (a GIF keeps its first frame).
fn scale_down(
    bytes: &[u8],
    format: ImageFormat,
    (width, height): (u32, u32),
    limit: ImageLimit,
) -> Result<Attachment, String> {
    let decoded = ImageReader::with_format(Cursor::new(bytes), format)
        .decode()
        .map_err(|err| format!("the image cannot be decoded: {err}"))?;
    let (out_format, name, mime) = match format {
        ImageFormat::Jpeg => (ImageFormat::Jpeg, "JPEG", "image/jpeg"),
        _ => (ImageFormat::Png, "PNG", "image/png"),
    };
    let mut edge = limit.max_edge.min(width.max(height));
    // Each round that is still too many bytes takes a quarter off the longest side.
    for _ in 0..8 {
        let scaled = if width.max(height) > edge {
            decoded.resize(edge, edge, FilterType::Triangle)
        } else {
            decoded.clone()
        };
        let encoded = encode(&scaled, out_format)?;
        if encoded.len() <= limit.max_bytes {
            return Ok(Attachment {
                image: ImageContent::new(base64_of(&encoded), mime),
                format: name,
                width: scaled.width(),
                height: scaled.height(),
                bytes: encoded.len(),
                scaled_from: Some((width, height)),
            });
        }
        edge = edge * 3 / 4;
    }
    Err(format!(
        "the image stays over {} even scaled down",
        human_size(limit.max_bytes)
    ))
}

fn encode(image: &DynamicImage, format: ImageFormat) -> Result<Vec<u8>, String> {
    let mut out = Cursor::new(Vec::new());
    // JPEG has no alpha channel: a transparent PNG turned JPEG would fail to encode.
    let image = if format == ImageFormat::Jpeg {
        DynamicImage::ImageRgb8(image.to_rgb8())
    } else {
        image.clone()
    };
    image
        .write_to(&mut out, format)
        .map_err(|err| format!("the image cannot be encoded: {err}"))?;
    Ok(out.into_inner())
}

fn base64_of(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn human_size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 1 << 20 {
        format!("{} KB", bytes.div_ceil(1024))
    } else {
        format!("{:.1} MB", bytes as f64 / (1 << 20) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WIDE: ImageLimit = ImageLimit {
        max_edge: 2048,
        max_bytes: 20 << 20,
    };

    fn png(width: u32, height: u32) -> Vec<u8> {
        let pixels = image::RgbImage::from_fn(width, height, |x, y| {
            image::Rgb([(x % 251) as u8, (y % 241) as u8, ((x * y) % 239) as u8])
        });
        encode(&DynamicImage::ImageRgb8(pixels), ImageFormat::Png).unwrap()
    }

    #[test]
    fn a_small_png_goes_as_it_is() {
        let bytes = png(40, 30);
        let attached = prepare(bytes.clone(), WIDE).unwrap();
        assert_eq!((attached.width, attached.height), (40, 30));
        assert_eq!(attached.image.mime_type, "image/png");
        assert_eq!(attached.image.bytes().unwrap(), bytes);
        assert_eq!(attached.scaled_from, None);
        assert_eq!(
            attached.chip(1),
            format!("[image #1 · PNG 40×30 · {}]", human_size(bytes.len()))
        );
    }

    #[test]
    fn a_large_image_is_scaled_to_the_limit_keeping_its_shape() {
        let limit = ImageLimit {
            max_edge: 200,
            max_bytes: 20 << 20,
        };
        let attached = prepare(png(800, 400), limit).unwrap();
        assert_eq!((attached.width, attached.height), (200, 100));
        assert_eq!(attached.scaled_from, Some((800, 400)));
        assert!(attached.chip(2).ends_with(" · scaled from 800×400]"));
        // What is sent is the scaled image.
        let sent = image::load_from_memory(&attached.image.bytes().unwrap()).unwrap();
        assert_eq!((sent.width(), sent.height()), (200, 100));
    }

    #[test]
    fn an_image_over_the_byte_limit_shrinks_until_it_fits() {
        let bytes = png(600, 600);
        let limit = ImageLimit {
            max_edge: 2048,
            max_bytes: bytes.len() / 3,
        };
        let attached = prepare(bytes, limit).unwrap();
        assert!(attached.bytes <= limit.max_bytes);
        assert!(attached.width < 600);
        assert_eq!(attached.width, attached.height);
    }

    #[test]
    fn text_and_other_formats_are_refused_with_the_reason() {
        let err = prepare(b"just some text".to_vec(), WIDE).unwrap_err();
        assert!(err.contains("not an image"), "{err}");
        let bmp = b"BM\x3a\0\0\0\0\0\0\0\x36\0\0\0".to_vec();
        let err = prepare(bmp, WIDE).unwrap_err();
        assert!(err.contains("BMP"), "{err}");
        let mut cut = png(50, 50);
        cut.truncate(20);
        assert!(prepare(cut, WIDE).is_err());
    }
}
