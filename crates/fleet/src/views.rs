//! The views for the common questions, read from `views.sql` (the one text every engine
//! defines them from): their names, what each answers, the tables each needs and the
//! order `kairos query VIEW` shows its rows in.

/// The views' SQL, as Spark or DuckDB would read it too.
pub const VIEWS_SQL: &str = include_str!("views.sql");

/// One view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    pub name: String,
    pub about: String,
    pub needs: Vec<String>,
    /// `ORDER BY` of `kairos query VIEW`.
    pub order: String,
    /// The SELECT, without the final `;`.
    pub sql: String,
}

/// Every view, in the file's order (a view may use the ones before it).
pub fn views() -> Vec<View> {
    parse(VIEWS_SQL)
}

fn parse(text: &str) -> Vec<View> {
    let mut out: Vec<View> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("-- view:") {
            out.push(View {
                name: name.trim().to_owned(),
                about: String::new(),
                needs: Vec::new(),
                order: String::new(),
                sql: String::new(),
            });
            continue;
        }
        let Some(v) = out.last_mut() else { continue };
        if let Some(needs) = line.strip_prefix("-- needs:") {
            v.needs = needs.split(',').map(|t| t.trim().to_owned()).collect();
        } else if let Some(order) = line.strip_prefix("-- order:") {
            v.order = order.trim().to_owned();
        } else if let Some(about) = line.strip_prefix("-- ") {
            if v.sql.is_empty() {
                v.about = about.trim().to_owned();
            }
        } else if !line.trim().is_empty() {
            v.sql.push_str(line);
            v.sql.push('\n');
        }
    }
    for v in &mut out {
        v.sql = v.sql.trim().trim_end_matches(';').trim().to_owned();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_view_has_its_parts() {
        let views = views();
        assert!(views.len() >= 5);
        for v in &views {
            assert!(!v.about.is_empty(), "{v:?}");
            assert!(!v.needs.is_empty(), "{v:?}");
            assert!(!v.order.is_empty(), "{v:?}");
            assert!(v.sql.starts_with("SELECT"), "{v:?}");
            assert!(!v.sql.contains(';'), "{v:?}");
        }
    }
}
