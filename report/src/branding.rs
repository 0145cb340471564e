//! The operator's name and logo on reports: a hosting provider hands each customer a report that
//! says who prepared it (config keys `operator_name`, `operator_logo`; docs/config.md).
//!
//! The logo is embedded in the page as a `data:` URL, so a report stays one self-contained file
//! that loads nothing; the report's Content-Security-Policy then allows `img-src data:` and nothing
//! else. Only image types a browser shows in `<img>` are accepted, recognised by their first
//! bytes, never by the file name. An SVG logo is safe there: an image in `<img>` runs no script
//! and loads nothing.

use std::fmt;

/// The largest logo accepted (it is embedded in every page of a report).
pub const MAX_LOGO_BYTES: usize = 256 * 1024;
/// The longest operator name accepted, in characters.
pub const MAX_OPERATOR_CHARS: usize = 120;

/// Why a logo or name cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum BrandingError {
    /// The logo file is over [`MAX_LOGO_BYTES`].
    #[error("the logo is {size} bytes; at most {max} bytes are embedded in a report (scale or compress it)")]
    LogoTooLarge {
        /// Its size.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// Not PNG, JPEG, GIF, WebP or SVG.
    #[error("the logo is not a PNG, JPEG, GIF, WebP or SVG image")]
    LogoType,
    /// The operator name is empty, too long or has control characters.
    #[error("the operator name must be 1 to {MAX_OPERATOR_CHARS} characters without control characters")]
    OperatorName,
}

/// An image to show on reports.
#[derive(Clone, PartialEq, Eq)]
pub struct Logo {
    data_url: String,
}

impl fmt::Debug for Logo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Logo").field("bytes_in_data_url", &self.data_url.len()).finish()
    }
}

impl Logo {
    /// A logo from the bytes of an image file.
    ///
    /// # Errors
    /// [`BrandingError::LogoTooLarge`], [`BrandingError::LogoType`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Logo, BrandingError> {
        if bytes.len() > MAX_LOGO_BYTES {
            return Err(BrandingError::LogoTooLarge { size: bytes.len(), max: MAX_LOGO_BYTES });
        }
        let mime = sniff(bytes).ok_or(BrandingError::LogoType)?;
        Ok(Logo { data_url: format!("data:{mime};base64,{}", crate::html::csp::base64(bytes)) })
    }

    /// The `data:` URL of the image (only base64 and a fixed media type: nothing to escape).
    #[must_use]
    pub fn data_url(&self) -> &str {
        &self.data_url
    }
}

/// The media type of an image by its first bytes.
fn sniff(b: &[u8]) -> Option<&'static str> {
    if b.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if b.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if b.len() >= 12 && &b[..4] == b"RIFF" && &b[8..12] == b"WEBP" {
        Some("image/webp")
    } else if is_svg(b) {
        Some("image/svg+xml")
    } else {
        None
    }
}

/// UTF-8 text whose first element (after an XML declaration, comments, a doctype) is `<svg`.
fn is_svg(b: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(&b[..b.len().min(4096)]) else {
        // A multi-byte character cut at 4096 bytes: judge the valid start.
        return std::str::from_utf8(&b[..b.len().min(4096).saturating_sub(3)]).is_ok_and(starts_svg);
    };
    starts_svg(text)
}

fn starts_svg(text: &str) -> bool {
    let mut rest = text.trim_start_matches('\u{feff}').trim_start();
    for _ in 0..32 {
        if let Some(r) = rest.strip_prefix("<?") {
            rest = r.split_once("?>").map_or("", |(_, after)| after).trim_start();
        } else if let Some(r) = rest.strip_prefix("<!--") {
            rest = r.split_once("-->").map_or("", |(_, after)| after).trim_start();
        } else if let Some(r) = rest.strip_prefix("<!") {
            rest = r.split_once('>').map_or("", |(_, after)| after).trim_start();
        } else {
            break;
        }
    }
    rest.starts_with("<svg")
}

/// Who prepared a report, shown in its header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Branding {
    operator: Option<String>,
    logo: Option<Logo>,
}

impl Branding {
    /// Branding with an operator name (trimmed) and a logo, either optional.
    ///
    /// # Errors
    /// [`BrandingError::OperatorName`] for an empty, over-long or control-character name.
    pub fn new(operator: Option<&str>, logo: Option<Logo>) -> Result<Branding, BrandingError> {
        let operator = match operator.map(str::trim) {
            None => None,
            Some(name)
                if !name.is_empty()
                    && name.chars().count() <= MAX_OPERATOR_CHARS
                    && !name.chars().any(char::is_control) =>
            {
                Some(name.to_owned())
            }
            Some(_) => return Err(BrandingError::OperatorName),
        };
        Ok(Branding { operator, logo })
    }

    /// The operator's name.
    #[must_use]
    pub fn operator(&self) -> Option<&str> {
        self.operator.as_deref()
    }

    /// The logo.
    #[must_use]
    pub fn logo(&self) -> Option<&Logo> {
        self.logo.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logos_are_recognised_by_their_bytes() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        assert!(Logo::from_bytes(png).expect("png").data_url().starts_with("data:image/png;base64,iVBORw0KGgo"));
        assert!(Logo::from_bytes(&[0xff, 0xd8, 0xff, 0xe0]).expect("jpeg").data_url().starts_with("data:image/jpeg;"));
        assert!(Logo::from_bytes(b"GIF89a....").is_ok());
        assert!(Logo::from_bytes(b"RIFF\0\0\0\0WEBPVP8 ").is_ok());
        let svg = "\u{feff}<?xml version=\"1.0\"?>\n<!-- made by hand -->\n<!DOCTYPE svg>\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>";
        assert!(Logo::from_bytes(svg.as_bytes()).expect("svg").data_url().starts_with("data:image/svg+xml;base64,"));
        for bad in [&b"<html><svg>"[..], b"", b"%PDF-1.7", b"<script>alert(1)</script>"] {
            assert_eq!(Logo::from_bytes(bad), Err(BrandingError::LogoType), "{bad:?}");
        }
        let huge = vec![0x89; MAX_LOGO_BYTES + 1];
        assert!(matches!(Logo::from_bytes(&huge), Err(BrandingError::LogoTooLarge { .. })));
    }

    #[test]
    fn operator_names_are_checked() {
        assert_eq!(Branding::new(Some("  Acme Hosting "), None).expect("ok").operator(), Some("Acme Hosting"));
        assert_eq!(Branding::new(None, None).expect("ok").operator(), None);
        for bad in ["", "   ", "a\nb", &"x".repeat(MAX_OPERATOR_CHARS + 1)] {
            assert_eq!(Branding::new(Some(bad), None), Err(BrandingError::OperatorName), "{bad:?}");
        }
    }
}
