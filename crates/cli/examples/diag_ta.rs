// Throwaway diagnostic (to delete): per-function share error contribution per method.
use std::collections::HashMap;
use kairos_time_assignment::{assign, Method};
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let dir = kairos_result::ResultDir::open(std::path::Path::new(&path)).unwrap();
    let p = kairos_result::read_profile(&dir).unwrap();
    let b = 10_000_000u64;
    let te = kairos_lab::thread_events(&p).unwrap();
    let origin = te.iter().filter_map(|t| t.span()).map(|s| s.0).min().unwrap();
    let end = te.iter().filter_map(|t| t.span()).map(|s| s.1).max().unwrap();
    let name = |f: Option<u32>| f.map_or("[untraced]".to_string(), |f| p.frames[f as usize].function.clone());
    let mut truth: HashMap<u64, HashMap<String, f64>> = HashMap::new();
    for t in &te { for (mut a, e, f) in t.segments() { while a < e { let k = (a-origin)/b; let ed = (origin+(k+1)*b).min(e); *truth.entry(k).or_default().entry(name(f)).or_default() += (ed-a) as f64; a = ed; } } }
    leafs(&p);
    let blind = kairos_model::Profile { calls: vec![], ..p.clone() };
    let methods: Vec<Method> = std::env::args().skip(2).map(|m| m.parse().unwrap()).collect();
    for m in methods {
        let a = assign(&blind, m).unwrap();
        let mut est: HashMap<u64, HashMap<String, f64>> = HashMap::new();
        for pt in &a.points { let (mut x, e) = (pt.time_ns.saturating_sub(pt.weight_ns).max(origin), pt.time_ns.min(end)); let n = name(pt.frame); while x < e { let k=(x-origin)/b; let ed=(origin+(k+1)*b).min(e); *est.entry(k).or_default().entry(n.clone()).or_default() += (ed-x) as f64; x=ed; } }
        let mut by: HashMap<String, f64> = HashMap::new();
        let nb = truth.len() as f64;
        for (k, t) in &truth { let q = est.get(k).cloned().unwrap_or_default(); let st: f64 = t.values().sum(); let sq: f64 = q.values().sum::<f64>().max(1e-9);
            let mut keys: Vec<&String> = t.keys().chain(q.keys()).collect(); keys.sort(); keys.dedup();
            for f in keys { let d = (t.get(f).copied().unwrap_or(0.0)/st - q.get(f).copied().unwrap_or(0.0)/sq).abs()/2.0; *by.entry(f.clone()).or_default() += d/nb*100.0; } }
        let mut worst: Vec<(f64, u64, String)> = Vec::new();
        for (k, t) in &truth { let q = est.get(k).cloned().unwrap_or_default(); let st: f64 = t.values().sum(); let sq: f64 = q.values().sum::<f64>().max(1e-9);
            let mut keys: Vec<&String> = t.keys().chain(q.keys()).collect(); keys.sort(); keys.dedup();
            let e: f64 = keys.iter().map(|f| (t.get(*f).copied().unwrap_or(0.0)/st - q.get(*f).copied().unwrap_or(0.0)/sq).abs()/2.0).sum();
            let desc = keys.iter().map(|f| format!("{f}:{:.2}/{:.2}", t.get(*f).copied().unwrap_or(0.0)/st*100.0, q.get(*f).copied().unwrap_or(0.0)/sq*100.0)).collect::<Vec<_>>().join(" ");
            worst.push((e, *k, desc)); }
        worst.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap());
        for w in worst.iter().take(8) { println!("  bucket {} err {:.2}% {}", w.1, w.0*100.0, w.2); }
        if let Ok(bk) = std::env::var("BK") { let bk: u64 = bk.parse().unwrap(); let (lo, hi) = (origin + bk*b, origin+(bk+1)*b);
            for pt in a.points.iter().filter(|pt| pt.time_ns >= lo && pt.time_ns < hi + 1_000_000) { println!("   pt {} {} w{} br{}", pt.time_ns - lo, name(pt.frame), pt.weight_ns, pt.from_branch); }
            for c in p.calls.iter().filter(|c| c.end_ns >= lo && c.start_ns < hi && p.frames[c.frame as usize].function == "rare_delay") { println!("   RD call {}..{}", c.start_ns - lo, c.end_ns - lo); } }
        let mut v: Vec<_> = by.into_iter().collect(); v.sort_by(|a,b| b.1.partial_cmp(&a.1).unwrap());
        println!("{m}: total {:.3}% {:?}", v.iter().map(|x| x.1).sum::<f64>(), v.iter().take(6).map(|(f, e)| format!("{f}={e:.3}")).collect::<Vec<_>>());
    }
}
#[allow(dead_code)]
fn leafs(p: &kairos_model::Profile) {
    let mut c: HashMap<String, usize> = HashMap::new();
    for s in &p.samples { let f = s.stack.map(|st| p.frames[p.stacks[st as usize].frame as usize].function.clone()).unwrap_or_default(); *c.entry(f).or_default() += 1; }
    let mut r: HashMap<String, usize> = HashMap::new();
    for b in p.branches.iter().filter(|b| b.is_new) { let f = b.from_frame.map(|f| p.frames[f as usize].function.clone()).unwrap_or_default(); *r.entry(f).or_default() += 1; }
    let te = kairos_lab::thread_events(p).unwrap();
    let mut tt: HashMap<String, u64> = HashMap::new();
    for t in &te { for (a, e, f) in t.segments() { *tt.entry(f.map_or("-".into(), |f| p.frames[f as usize].function.clone())).or_default() += e - a; } }
    println!("samples {c:?}\nnew records from {r:?}\ntrue self ns {tt:?}");
}
