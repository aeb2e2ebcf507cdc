//! The `schemata` (and `size`, `bit_usage`) line format: `RES:ID=VALUE;ID=VALUE`, one
//! resource per line. The kernel pads with spaces (`    L3:0=fffff`, `MB:0=  100`) and
//! domain ids need not be contiguous (AMD: 0-7 then 16-23), so neither is assumed.

use crate::Error;

/// One resource's line: its name and each domain's value, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub resource: String,
    pub domains: Vec<(u32, String)>,
}

impl Line {
    pub fn get(&self, domain: u32) -> Option<&str> {
        self.domains
            .iter()
            .find(|(d, _)| *d == domain)
            .map(|(_, v)| v.as_str())
    }
    /// The line as written to the kernel.
    pub fn render(&self) -> String {
        let doms: Vec<String> = self
            .domains
            .iter()
            .map(|(d, v)| format!("{d}={v}"))
            .collect();
        format!("{}:{}", self.resource, doms.join(";"))
    }
}

/// A parsed schemata (or size / bit_usage) file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Schemata {
    pub lines: Vec<Line>,
}

impl Schemata {
    /// Parses `text`. bit_usage files have no `RES:` prefix; give them `resource`.
    pub fn parse(text: &str) -> Result<Schemata, Error> {
        let mut lines = Vec::new();
        for raw in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let (res, rest) = raw.split_once(':').ok_or_else(|| {
                Error::Parse(format!("schemata line '{raw}' has no 'RESOURCE:' prefix"))
            })?;
            lines.push(Line {
                resource: res.trim().to_string(),
                domains: parse_domains(rest)?,
            });
        }
        Ok(Schemata { lines })
    }
    pub fn line(&self, resource: &str) -> Option<&Line> {
        self.lines.iter().find(|l| l.resource == resource)
    }
    /// Replaces (or adds) one resource's line.
    pub fn set_line(&mut self, line: Line) {
        match self.lines.iter_mut().find(|l| l.resource == line.resource) {
            Some(l) => *l = line,
            None => self.lines.push(line),
        }
    }
    /// All lines, each ending in a newline: writing this back sets every resource to the
    /// values shown, which the kernel accepts as it accepts any subset of lines.
    pub fn render(&self) -> String {
        self.lines.iter().map(|l| l.render() + "\n").collect()
    }
}

/// `0=fffff;1=fffff` (a bit_usage file's whole content, or the part after `RES:`).
pub fn parse_domains(s: &str) -> Result<Vec<(u32, String)>, Error> {
    let mut out = Vec::new();
    for part in s.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (id, v) = part
            .split_once('=')
            .ok_or_else(|| Error::Parse(format!("'{part}' is not DOMAIN=VALUE")))?;
        let id = id
            .trim()
            .parse::<u32>()
            .map_err(|_| Error::Parse(format!("domain id '{}' is not a number", id.trim())))?;
        if out.iter().any(|(d, _)| *d == id) {
            return Err(Error::Parse(format!(
                "domain {id} appears twice in '{}'",
                s.trim()
            )));
        }
        out.push((id, v.trim().to_string()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kernel_padding_and_sparse_ids() {
        let s =
            Schemata::parse("    MB:0=  100;1=  100\n    L3:0=fffff;1=fffff\n").unwrap_or_default();
        assert_eq!(s.line("MB").and_then(|l| l.get(1)), Some("100"));
        assert_eq!(
            s.line("L3").map(|l| l.render()).as_deref(),
            Some("L3:0=fffff;1=fffff")
        );
        let amd = Schemata::parse("L3:0=ffff;7=ffff;16=ffff;23=ffff").unwrap_or_default();
        let ids: Vec<u32> = amd.lines[0].domains.iter().map(|(d, _)| *d).collect();
        assert_eq!(ids, vec![0, 7, 16, 23]);
    }

    #[test]
    fn rejects_bad_lines() {
        assert!(Schemata::parse("L3 0=fff").is_err());
        assert!(Schemata::parse("L3:x=fff").is_err());
        assert!(Schemata::parse("L3:0=f;0=f").is_err());
        assert!(Schemata::parse("L3:0").is_err());
    }
}
