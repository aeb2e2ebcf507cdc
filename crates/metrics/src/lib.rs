//! Intel perfmon metric formulas (`MetricName` / `MetricExpr` JSON, as in the SKX
//! metrics file) parsed and evaluated on counter values.
//!
//! Grammar (what the TLB formulas use): numbers, `+ - * /`, parentheses, `min(a, b)`,
//! `max(a, b)`, `A if COND else B` with `< > <= >= ==`, event names with modifiers
//! (`DTLB_LOAD_MISSES.WALK_ACTIVE`, `cpu@DTLB_LOAD_MISSES.STLB_HIT\,cmask\=1@`,
//! `EVENT:c1`), and other metrics by name (`tma_info_thread_clks`). Division by zero
//! gives 0, as perf does, so an idle counter never fails a report.

use std::collections::HashMap;

use serde::Deserialize;

mod perfmon;
pub use perfmon::{evaluate_perfmon, load_perfmon, perfmon_events, Binding, PerfmonMetric};

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Metric {
    #[serde(rename = "MetricName")]
    pub name: String,
    #[serde(rename = "MetricExpr")]
    pub expr: String,
    #[serde(rename = "BriefDescription", default)]
    pub brief: String,
    #[serde(rename = "ScaleUnit", default)]
    pub scale_unit: String,
}

#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum Error {
    #[error("cannot parse '{expr}' at character {at}: {what}")]
    Parse {
        expr: String,
        at: usize,
        what: String,
    },
    #[error("no value for event '{0}'")]
    MissingEvent(String),
    #[error("metric '{0}' refers to itself")]
    Cycle(String),
    #[error("metric file is not valid: {0}")]
    File(String),
}

/// The vendored subset: DTLB overhead, Load STLB hit, Load STLB miss (Skylake-SP).
pub const SKX_TLB_JSON: &str = include_str!("../data/skx-tlb-metrics.json");

pub fn load(json: &str) -> Result<Vec<Metric>, Error> {
    serde_json::from_str(json).map_err(|e| Error::File(e.to_string()))
}

/// The three TLB metrics of the recipe, from the vendored file.
pub fn tlb_metrics() -> Vec<Metric> {
    load(SKX_TLB_JSON)
        .unwrap_or_default()
        .into_iter()
        .filter(|m| !m.name.starts_with("tma_info"))
        .collect()
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Num(f64),
    Name(String),
    Neg(Box<Expr>),
    Bin(char, Box<Expr>, Box<Expr>),
    Cmp(String, Box<Expr>, Box<Expr>),
    Call(String, Vec<Expr>),
    If {
        then: Box<Expr>,
        cond: Box<Expr>,
        other: Box<Expr>,
    },
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    src: &'a str,
}

impl Parser<'_> {
    fn err<T>(&self, what: &str) -> Result<T, Error> {
        Err(Error::Parse {
            expr: self.src.into(),
            at: self.i,
            what: what.into(),
        })
    }
    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }
    fn eat(&mut self, t: &str) -> bool {
        self.ws();
        if self.s[self.i..].starts_with(t.as_bytes()) {
            self.i += t.len();
            true
        } else {
            false
        }
    }
    /// A bare word (`if`, `else`) followed by a non-name character.
    fn keyword(&mut self, k: &str) -> bool {
        self.ws();
        let end = self.i + k.len();
        if self.s[self.i..].starts_with(k.as_bytes())
            && !self.s.get(end).is_some_and(|&c| is_name(c))
        {
            self.i = end;
            true
        } else {
            false
        }
    }
    fn expr(&mut self) -> Result<Expr, Error> {
        let then = self.cmp()?;
        if self.keyword("if") {
            let cond = self.cmp()?;
            if !self.keyword("else") {
                return self.err("'if' without 'else'");
            }
            let other = self.expr()?;
            return Ok(Expr::If {
                then: Box::new(then),
                cond: Box::new(cond),
                other: Box::new(other),
            });
        }
        Ok(then)
    }
    fn cmp(&mut self) -> Result<Expr, Error> {
        let l = self.sum()?;
        for op in ["<=", ">=", "==", "<", ">"] {
            if self.eat(op) {
                return Ok(Expr::Cmp(op.into(), Box::new(l), Box::new(self.sum()?)));
            }
        }
        Ok(l)
    }
    fn sum(&mut self) -> Result<Expr, Error> {
        let mut l = self.product()?;
        loop {
            if self.eat("+") {
                l = Expr::Bin('+', Box::new(l), Box::new(self.product()?));
            } else if self.eat("-") {
                l = Expr::Bin('-', Box::new(l), Box::new(self.product()?));
            } else {
                return Ok(l);
            }
        }
    }
    fn product(&mut self) -> Result<Expr, Error> {
        let mut l = self.unary()?;
        loop {
            if self.eat("*") {
                l = Expr::Bin('*', Box::new(l), Box::new(self.unary()?));
            } else if self.eat("/") {
                l = Expr::Bin('/', Box::new(l), Box::new(self.unary()?));
            } else {
                return Ok(l);
            }
        }
    }
    fn unary(&mut self) -> Result<Expr, Error> {
        if self.eat("-") {
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        if self.eat("(") {
            let e = self.expr()?;
            if !self.eat(")") {
                return self.err("missing ')'");
            }
            return Ok(e);
        }
        self.ws();
        let start = self.i;
        match self.s.get(self.i) {
            Some(c) if c.is_ascii_digit() || *c == b'.' => {
                while self
                    .s
                    .get(self.i)
                    .is_some_and(|c| c.is_ascii_digit() || *c == b'.' || *c == b'e')
                {
                    self.i += 1;
                }
                match self.src[start..self.i].parse() {
                    Ok(v) => Ok(Expr::Num(v)),
                    Err(_) => self.err("bad number"),
                }
            }
            Some(c) if is_name(*c) || *c == b'#' => {
                let name = self.name()?;
                if (name == "min" || name == "max") && self.eat("(") {
                    let mut args = vec![self.expr()?];
                    while self.eat(",") {
                        args.push(self.expr()?);
                    }
                    if !self.eat(")") {
                        return self.err("missing ')' after the arguments");
                    }
                    return Ok(Expr::Call(name, args));
                }
                Ok(Expr::Name(name))
            }
            _ => self.err("expected a number, a name or '('"),
        }
    }
    /// An event or metric name. `pmu@EVENT\,mod\=v@` spans up to the closing '@', with
    /// backslash escapes; `EVENT:c1` keeps its modifier; both stay part of the name.
    fn name(&mut self) -> Result<String, Error> {
        let start = self.i;
        let mut at = false;
        while let Some(&c) = self.s.get(self.i) {
            if c == b'\\' {
                self.i += 2;
                continue;
            }
            if c == b'@' {
                at = !at;
            } else if !(at || is_name(c) || c == b'#' || c == b':') {
                break;
            }
            self.i += 1;
        }
        if at {
            return self.err("unclosed '@'");
        }
        Ok(self.src[start..self.i.min(self.src.len())].replace('\\', ""))
    }
}

fn is_name(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'.'
}

pub fn parse(src: &str) -> Result<Expr, Error> {
    let mut p = Parser {
        s: src.as_bytes(),
        i: 0,
        src,
    };
    let e = p.expr()?;
    p.ws();
    if p.i < src.len() {
        return p.err("unexpected text");
    }
    Ok(e)
}

/// Evaluates `metric` (by name among `metrics`) on `counts` (event name -> count; names
/// as written in the formulas, modifiers included).
pub fn evaluate(
    metric: &str,
    metrics: &[Metric],
    counts: &HashMap<String, f64>,
) -> Result<f64, Error> {
    let by_name: HashMap<&str, &Metric> = metrics.iter().map(|m| (m.name.as_str(), m)).collect();
    eval_metric(metric, &by_name, counts, &mut Vec::new())
}

fn eval_metric(
    name: &str,
    by: &HashMap<&str, &Metric>,
    counts: &HashMap<String, f64>,
    stack: &mut Vec<String>,
) -> Result<f64, Error> {
    if let Some(v) = counts.get(name) {
        return Ok(*v);
    }
    let Some(m) = by.get(name) else {
        return Err(Error::MissingEvent(name.into()));
    };
    if stack.iter().any(|s| s == name) || stack.len() > 64 {
        return Err(Error::Cycle(name.into()));
    }
    stack.push(name.into());
    let v = eval(&parse(&m.expr)?, by, counts, stack);
    stack.pop();
    v
}

/// Evaluates an expression over named values only (no metric references).
pub(crate) fn eval_names(e: &Expr, vals: &HashMap<String, f64>) -> Result<f64, Error> {
    eval(e, &HashMap::new(), vals, &mut Vec::new())
}

fn eval(
    e: &Expr,
    by: &HashMap<&str, &Metric>,
    counts: &HashMap<String, f64>,
    stack: &mut Vec<String>,
) -> Result<f64, Error> {
    let mut ev = |x: &Expr| eval(x, by, counts, stack);
    Ok(match e {
        Expr::Num(v) => *v,
        Expr::Name(n) => eval_metric(n, by, counts, stack)?,
        Expr::Neg(x) => -ev(x)?,
        Expr::Bin(op, a, b) => {
            let (a, b) = (ev(a)?, ev(b)?);
            match op {
                '+' => a + b,
                '-' => a - b,
                '*' => a * b,
                _ if b == 0.0 => 0.0,
                _ => a / b,
            }
        }
        Expr::Cmp(op, a, b) => {
            let (a, b) = (ev(a)?, ev(b)?);
            f64::from(u8::from(match op.as_str() {
                "<" => a < b,
                ">" => a > b,
                "<=" => a <= b,
                ">=" => a >= b,
                _ => a == b,
            }))
        }
        Expr::Call(f, args) => {
            let mut vals = Vec::with_capacity(args.len());
            for a in args {
                vals.push(ev(a)?);
            }
            let init = if f == "min" {
                f64::INFINITY
            } else {
                f64::NEG_INFINITY
            };
            vals.into_iter().fold(
                init,
                |acc, v| if f == "min" { acc.min(v) } else { acc.max(v) },
            )
        }
        Expr::If { then, cond, other } => {
            if ev(cond)? != 0.0 {
                ev(then)?
            } else {
                ev(other)?
            }
        }
    })
}

/// Event names a metric needs, other metrics expanded.
pub fn events(metric: &str, metrics: &[Metric]) -> Vec<String> {
    fn walk(e: &Expr, metrics: &[Metric], out: &mut Vec<String>, depth: u32) {
        match e {
            Expr::Name(n) => match metrics.iter().find(|m| &m.name == n) {
                Some(m) if depth < 32 => {
                    if let Ok(x) = parse(&m.expr) {
                        walk(&x, metrics, out, depth + 1);
                    }
                }
                _ if !out.contains(n) => out.push(n.clone()),
                _ => {}
            },
            Expr::Neg(x) => walk(x, metrics, out, depth),
            Expr::Bin(_, a, b) | Expr::Cmp(_, a, b) => {
                walk(a, metrics, out, depth);
                walk(b, metrics, out, depth);
            }
            Expr::Call(_, a) => a.iter().for_each(|x| walk(x, metrics, out, depth)),
            Expr::If { then, cond, other } => [then, cond, other]
                .iter()
                .for_each(|x| walk(x, metrics, out, depth)),
            Expr::Num(_) => {}
        }
    }
    let mut out = Vec::new();
    walk(&Expr::Name(metric.into()), metrics, &mut out, 0);
    out
}
