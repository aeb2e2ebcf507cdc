//! The output format a user picks (`--format text|csv|json`).

use std::fmt;
use std::str::FromStr;

/// Output format of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Text,
    Csv,
    Json,
}

impl Format {
    /// All formats, in the order shown in help and errors.
    pub const ALL: [Format; 3] = [Format::Text, Format::Csv, Format::Json];

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Csv => "csv",
            Format::Json => "json",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown format name; the message lists the valid ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format `{0}`; valid formats: text, csv, json")]
pub struct ParseFormatError(pub String);

impl FromStr for Format {
    type Err = ParseFormatError;
    fn from_str(s: &str) -> Result<Format, ParseFormatError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "text" | "txt" => Ok(Format::Text),
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            _ => Err(ParseFormatError(s.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_displays() {
        for f in Format::ALL {
            assert_eq!(f.to_string().parse::<Format>(), Ok(f));
        }
        assert_eq!(" JSON ".parse::<Format>(), Ok(Format::Json));
        assert_eq!("txt".parse::<Format>(), Ok(Format::Text));
        let err = "xml"
            .parse::<Format>()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(err, "unknown format `xml`; valid formats: text, csv, json");
    }
}
