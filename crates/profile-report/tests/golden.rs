//! Golden-file tests: every report and grouping, in every format, on one synthetic
//! profile. Refresh with `KAIROS_BLESS=1 cargo test --release -p kairos-analysis-hotspots`.

use std::collections::HashMap;
use std::path::PathBuf;

use kairos_model::{
    Frame, FrameIdx, LossCounts, Mode, Module, Profile, Sample, StackInterner, Thread,
};
use kairos_profile_report::{hotspots, summary, timeline, top_down, Filter, GroupBy};
use kairos_report::{assert_golden, Format};

const MS: u64 = 1_000_000;
const T0: u64 = 5_000_000_000;
const LONG: &str = "std::vector<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char>>>::_M_realloc_insert";

struct B {
    p: Profile,
    interner: StackInterner,
    frames: HashMap<(String, u32, u16), FrameIdx>,
}

impl B {
    fn frame(&mut self, name: &str, module: u32, inline_depth: u16) -> FrameIdx {
        let frames = &mut self.p.frames;
        *self
            .frames
            .entry((name.into(), module, inline_depth))
            .or_insert_with(|| {
                frames.push(Frame {
                    address: 0x40_0000 + 0x10 * frames.len() as u64,
                    module: Some(module),
                    module_offset: 0x10 * frames.len() as u64,
                    function: name.into(),
                    file: None,
                    line: None,
                    inline_depth,
                    mode: if module == 2 {
                        Mode::Kernel
                    } else {
                        Mode::User
                    },
                });
                (frames.len() - 1) as FrameIdx
            })
    }
    /// `path` root first, each `name@module[:inline]`.
    fn sample(&mut self, ms: u64, thread: u32, cpu: u32, path: &[(&str, u32, u16)]) {
        let ids: Vec<FrameIdx> = path.iter().map(|&(n, m, d)| self.frame(n, m, d)).collect();
        let stack = if ids.is_empty() {
            None
        } else {
            self.interner.intern_path(&mut self.p.stacks, ids)
        };
        self.p.samples.push(Sample {
            time_ns: T0 + ms * MS,
            thread,
            cpu,
            stack,
            weight: MS,
        });
    }
}

/// 200 ms of a two-process workload: `app` (main thread + worker) and `other`, with
/// recursion (fib), an inlined leaf (square), unknown libc frames, kernel frames, samples
/// without a stack, a 3 ms burst of `gc_pause`, a `main` in each program and a very long
/// C++ name.
fn profile() -> Profile {
    let mut b = B {
        p: Profile::default(),
        interner: StackInterner::default(),
        frames: HashMap::new(),
    };
    for path in [
        "/usr/bin/app",
        "/lib/x86_64-linux-gnu/libc.so.6",
        "[kernel.kallsyms]",
        "/usr/bin/other",
    ] {
        b.p.modules.push(Module {
            path: path.into(),
            build_id: String::new(),
        });
    }
    b.p.threads = vec![
        Thread {
            pid: 100,
            tid: 100,
            name: "app".into(),
            process_name: "app".into(),
        },
        Thread {
            pid: 100,
            tid: 101,
            name: "app-worker".into(),
            process_name: "app".into(),
        },
        Thread {
            pid: 200,
            tid: 200,
            name: "other".into(),
            process_name: "other".into(),
        },
    ];
    let (app, libc, kernel, other) = (0, 1, 2, 3);
    for i in 0..200u64 {
        let main = ("main", app, 0);
        let compute = ("compute", app, 0);
        let fib = ("fib", app, 0);
        let path: Vec<(&str, u32, u16)> = match i {
            120..=122 => vec![main, ("gc_pause", app, 0)],
            _ if i % 4 == 0 => vec![main, ("parse", app, 0), ("memcpy", libc, 0)],
            _ if i % 4 == 1 => vec![main, compute, fib, fib, fib],
            _ if i % 4 == 2 => vec![main, compute, ("square", app, 1)],
            _ => vec![main, compute, ("[unknown]", libc, 0)],
        };
        b.sample(i, 0, 0, &path);
        if i % 2 == 0 {
            if i % 6 == 0 {
                b.sample(i, 1, 1, &[]);
            } else if i % 10 == 4 {
                b.sample(
                    i,
                    1,
                    1,
                    &[
                        ("start_thread", libc, 0),
                        ("worker_loop", app, 0),
                        (LONG, app, 0),
                    ],
                );
            } else {
                b.sample(
                    i,
                    1,
                    1,
                    &[
                        ("start_thread", libc, 0),
                        ("worker_loop", app, 0),
                        ("asm_exc_page_fault", kernel, 0),
                    ],
                );
            }
        }
        if i % 5 == 0 {
            b.sample(
                i,
                2,
                (i % 2) as u32,
                &[("main", other, 0), ("other_work", other, 0)],
            );
        }
    }
    b.p.losses = LossCounts {
        lost_records: 0,
        lost_samples: 3,
        throttled: 1,
        undecodable_records: 0,
    };
    b.p
}

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

fn ext(f: Format) -> &'static str {
    match f {
        Format::Text => "txt",
        Format::Csv => "csv",
        Format::Json => "json",
    }
}

#[test]
fn summary_report() {
    let p = profile();
    let d = summary(
        &p,
        &[
            ("Event", "cpu-clock"),
            ("Interval", "1 ms"),
            ("Knobs", "call-graph=fp"),
        ],
    );
    for f in Format::ALL {
        assert_golden(&golden(&format!("summary.{}", ext(f))), &d.render(f));
    }
}

#[test]
fn hotspots_every_grouping() {
    let p = profile();
    for g in GroupBy::ALL {
        let t = hotspots(&p, &Filter::default(), g, None).expect("hotspots");
        for f in Format::ALL {
            assert_golden(&golden(&format!("hotspots_{g}.{}", ext(f))), &t.render(f));
        }
    }
}

#[test]
fn hotspots_filtered_and_limited() {
    let p = profile();
    let f = Filter {
        time_range: Some((100 * MS, 150 * MS)),
        threads: None,
        comms: None,
        pids: Some(vec![100]),
        cpus: None,
    };
    let t = hotspots(&p, &f, GroupBy::Function, Some(5)).expect("hotspots");
    assert_golden(&golden("hotspots_function_filtered.txt"), &t.to_text());
    let f = Filter {
        threads: Some(vec![101]),
        ..Filter::default()
    };
    let t = hotspots(&p, &f, GroupBy::Function, None).expect("hotspots");
    assert_golden(
        &golden("hotspots_function_tid101_width30.txt"),
        &t.to_text_width(30),
    );
}

#[test]
fn top_down_report() {
    let p = profile();
    let t = top_down(&p, &Filter::default(), None, None).expect("top_down");
    for f in Format::ALL {
        assert_golden(&golden(&format!("top_down.{}", ext(f))), &t.render(f));
    }
    let t = top_down(&p, &Filter::default(), Some(1), Some(6)).expect("top_down");
    assert_golden(&golden("top_down_depth1_limit6.txt"), &t.to_text());
}

#[test]
fn timeline_every_grouping() {
    let p = profile();
    for g in GroupBy::ALL {
        let d = timeline(&p, &Filter::default(), 20 * MS, g, 3).expect("timeline");
        for f in Format::ALL {
            assert_golden(&golden(&format!("timeline_{g}.{}", ext(f))), &d.render(f));
        }
    }
    let f = Filter {
        time_range: Some((110 * MS, 130 * MS)),
        ..Filter::default()
    };
    let d = timeline(&p, &f, 2 * MS, GroupBy::Function, 4).expect("timeline");
    assert_golden(&golden("timeline_function_110_130ms.txt"), &d.to_text());
}

#[test]
fn burst_is_the_top_peak() {
    let p = profile();
    let d = timeline(&p, &Filter::default(), 10 * MS, GroupBy::Function, 5).expect("timeline");
    let csv = d.to_csv();
    let peaks = csv.split("Peaks:").nth(1).unwrap_or_default();
    let first = peaks.lines().nth(2).unwrap_or_default();
    assert!(first.starts_with("gc_pause,app,"), "{csv}");
}
