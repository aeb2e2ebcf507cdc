//! The table model: columns, typed cells, title and notes.

/// Horizontal alignment of a column in the text rendering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// What a column holds, which decides how the text rendering may shorten it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColumnKind {
    /// Names, numbers, labels: the text rendering may cut a long one with `…` (unless
    /// the layout is wide).
    #[default]
    Value,
    /// Sentences (a fix, a finding, a reason): never cut; the text rendering wraps them
    /// within the line width, the row taking as many lines as its longest sentence.
    Sentence,
}

/// One column: its name (the header, and the key in JSON), alignment, optional unit and
/// kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub align: Align,
    /// Shown after the name in text and CSV headers, as `name (unit)`; JSON keys stay
    /// the bare name so scripts do not depend on the unit spelling.
    pub unit: Option<String>,
    pub kind: ColumnKind,
}

impl Column {
    /// A left-aligned column (names, labels).
    pub fn left(name: impl Into<String>) -> Column {
        Column {
            name: name.into(),
            align: Align::Left,
            unit: None,
            kind: ColumnKind::Value,
        }
    }
    /// A right-aligned column (numbers).
    pub fn right(name: impl Into<String>) -> Column {
        Column {
            name: name.into(),
            align: Align::Right,
            unit: None,
            kind: ColumnKind::Value,
        }
    }
    /// A left-aligned column of sentences, which text never cuts (see [`ColumnKind`]).
    pub fn sentence(name: impl Into<String>) -> Column {
        Column {
            name: name.into(),
            align: Align::Left,
            unit: None,
            kind: ColumnKind::Sentence,
        }
    }
    /// Sets the unit shown in text and CSV headers.
    pub fn with_unit(mut self, unit: impl Into<String>) -> Column {
        self.unit = Some(unit.into());
        self
    }
    /// Header as shown in text and CSV: `name` or `name (unit)`.
    pub fn header(&self) -> String {
        match &self.unit {
            Some(u) => format!("{} ({u})", self.name),
            None => self.name.clone(),
        }
    }
}

/// A typed value. Renderers decide the presentation; analyses never pre-format numbers.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Text(String),
    Int(i64),
    UInt(u64),
    /// A float shown with `decimals` digits after the point (in every format, so that
    /// golden files do not depend on the last bits of a computation).
    Float {
        value: f64,
        decimals: u8,
    },
    /// Percentage points: 12.5 means 12.5 %.
    Percent(f64),
    /// A duration; text scales it (ns/us/ms/s per column), CSV and JSON give integer ns.
    Duration {
        ns: u64,
    },
    Empty,
}

impl Cell {
    /// Shorthand for `Cell::Text`.
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }
    /// Shorthand for `Cell::Duration`.
    pub fn ns(ns: u64) -> Cell {
        Cell::Duration { ns }
    }
    /// Shorthand for `Cell::Float`.
    pub fn float(value: f64, decimals: u8) -> Cell {
        Cell::Float { value, decimals }
    }
}

/// A table: optional title, columns, rows of cells and free-text notes shown under it.
///
/// Rows shorter than `columns` are padded with [`Cell::Empty`]; extra cells are ignored,
/// so a malformed row never makes a renderer panic.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    pub title: Option<String>,
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Cell>>,
    pub notes: Vec<String>,
}

impl Table {
    /// An empty table with these columns.
    pub fn new(columns: Vec<Column>) -> Table {
        Table {
            columns,
            ..Table::default()
        }
    }
    /// Sets the title.
    pub fn with_title(mut self, title: impl Into<String>) -> Table {
        self.title = Some(title.into());
        self
    }
    /// Appends a row.
    pub fn push_row(&mut self, row: Vec<Cell>) {
        self.rows.push(row);
    }
    /// Appends a note.
    pub fn push_note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }
    /// Cell `col` of `row`, `Empty` when the row is short.
    pub(crate) fn cell(row: &[Cell], col: usize) -> &Cell {
        const EMPTY: &Cell = &Cell::Empty;
        row.get(col).unwrap_or(EMPTY)
    }
    /// Renders in `format`.
    pub fn render(&self, format: crate::Format) -> String {
        match format {
            crate::Format::Text => self.to_text(),
            crate::Format::Csv => self.to_csv(),
            crate::Format::Json => self.to_json(),
        }
    }
}
