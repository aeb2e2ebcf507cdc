//! Reading, planning, writing and restoring on copies of the recorded trees.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use common::{fixtures, snapshot, tree_copy};
use kairos_resctrl::fake::FakeKernel;
use kairos_resctrl::plan::{plan, Request};
use kairos_resctrl::write::{apply, move_task, Journal};
use kairos_resctrl::{avail, monitor, Error, Tree};

fn read(name: &str) -> Tree {
    Tree::read(&fixtures().join(name)).unwrap()
}

fn req(level: &str, ways: u32) -> Request {
    Request {
        level: level.into(),
        ways,
        lock_domain: None,
        group: "kairos-test".into(),
    }
}

fn refusal(t: &Tree, r: &Request) -> String {
    match plan(t, r) {
        Err(Error::Refused(s)) => s,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn capabilities_of_each_tree() {
    let full = read("resctrl.full");
    let l3 = full.caps.cache("L3").unwrap();
    assert_eq!(
        (
            l3.ways(),
            l3.min_cbm_bits,
            l3.num_closids,
            l3.shareable_bits
        ),
        (20, 1, 16, 0xc0000)
    );
    assert!(!l3.sparse_masks && !full.cdp_mounted && !full.mba_mbps);
    assert_eq!(full.caps.bandwidth[0].bandwidth_gran, Some(10));
    assert_eq!(
        full.caps.closid_limit(),
        Some(8),
        "MB has 8 CLOS, L3 16: the kernel uses the smaller"
    );
    assert!(full.caps.monitors("mbm_local_bytes"));
    assert_eq!(full.domains("L3"), vec![0, 1, 2, 3]);
    assert_eq!(full.way_bytes("L3", 0), Some(57671680 / 20));
    let names: Vec<&str> = full.groups.iter().map(|g| g.label()).collect();
    assert_eq!(
        names,
        [
            "default",
            "Guaranteed",
            "goresctrl.Guaranteed",
            "goresctrl.Stale",
            "non_goresctrl.Group"
        ]
    );
    assert_eq!(full.default_group().cpus.len(), 192);

    let cdp = read("resctrl.nomb.cdp");
    assert!(cdp.cdp_mounted);
    assert_eq!(
        cdp.caps
            .level(3)
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        ["L3CODE", "L3DATA"]
    );
    assert!(read("resctrl.nol3.mbps").mba_mbps);
    assert!(!read("resctrl.nol3").mba_mbps);
    assert!(read("resctrl.nol3").caps.caches.is_empty());
    let mixed = read("resctrl.l2l3mb");
    assert_eq!(mixed.domains("L2").len(), 40);
    assert_eq!(mixed.caps.cache("L3").map(|c| c.sparse_masks), Some(false));
    assert_eq!(
        mixed.caps.bandwidth[0].thread_throttle_mode.as_deref(),
        Some("max")
    );
}

#[test]
fn monitoring_oracle_of_the_full_tree() {
    let r = monitor::read(&fixtures().join("resctrl.full")).unwrap();
    assert_eq!(r.len(), 4);
    assert_eq!(r[0].llc_occupancy, Some(32440320));
    assert_eq!(r[1].mbm_total_bytes, Some(208404480));
    assert_eq!(r[3].mbm_local_bytes, Some(693239808));
    assert_eq!(monitor::total_occupancy(&r), Some(127008768));
}

#[test]
fn availability_marks_io_and_sharing() {
    let full = read("resctrl.full");
    let uses = avail::domains(&full).unwrap();
    let d0 = uses
        .iter()
        .find(|u| u.resource == "L3" && u.domain == 0)
        .unwrap();
    assert_eq!(d0.io, 0xc0000);
    let def = d0.group("default").unwrap();
    assert_eq!(def.exclusive, 0, "every way of the default group is shared");
    assert!(
        def.shared_with.contains(&"Guaranteed".to_string())
            && def.shared_with.contains(&avail::IO.to_string())
    );
    // bit_usage H marks count as hardware use: domain 1 of l2l3mb is HH00SSSSSSSS0000000H.
    let mixed = avail::domains(&read("resctrl.l2l3mb")).unwrap();
    let l3d1 = mixed
        .iter()
        .find(|u| u.resource == "L3" && u.domain == 1)
        .unwrap();
    assert_eq!(l3d1.io, 0xc0001);
    assert_eq!(l3d1.group("default").unwrap().exclusive, 0x3fffe);
}

#[test]
fn planner_picks_masks() {
    // L2 of 8 ways, 2 domains, nothing else: the default group gives up its low ways.
    let p = plan(&read("resctrl.l2"), &req("L2", 4)).unwrap();
    assert_eq!(p.resources, ["L2"]);
    assert_eq!(
        p.domains
            .iter()
            .map(|d| (d.domain, d.mask))
            .collect::<Vec<_>>(),
        [(0, 0x0f), (1, 0x0f)]
    );
    assert_eq!(p.domains[0].shrink, [("L2".to_string(), 0xff, 0xf0)]);
    // CDP: both halves; ways 9-12 are used by nobody (default 001ff, I/O c0000), so the
    // default group is left alone.
    let p = plan(&read("resctrl.nomb.cdp"), &req("L3", 4)).unwrap();
    assert_eq!(p.resources, ["L3CODE", "L3DATA"]);
    assert!(
        p.domains
            .iter()
            .all(|d| d.mask == 0x1e00 && d.shrink.is_empty()),
        "{p:?}"
    );
    // Shareable (I/O) ways are avoided: the full tree without its other groups.
    let (_t, root) = tree_copy("resctrl.full");
    for g in [
        "Guaranteed",
        "goresctrl.Guaranteed",
        "goresctrl.Stale",
        "non_goresctrl.Group",
    ] {
        std::fs::remove_dir_all(root.join(g)).unwrap();
    }
    let p = plan(&Tree::read(&root).unwrap(), &req("L3", 18)).unwrap();
    assert_eq!(p.domains[0].mask, 0x3ffff);
    assert_eq!(p.domains[0].shrink[0].2, 0xc0000);
    let r = refusal(&Tree::read(&root).unwrap(), &req("L3", 19));
    assert!(
        r.contains("ways 18-19 are filled by I/O") && r.contains("at most 18 would fit"),
        "{r}"
    );
}

#[test]
fn planner_refusals_say_why() {
    let full = read("resctrl.full");
    // Another group's mask covers every way (a mask in use).
    let r = refusal(&full, &req("L3", 2));
    assert!(r.contains("ways 0-19 belong to groups Guaranteed, goresctrl.Guaranteed, goresctrl.Stale, non_goresctrl.Group") && r.contains("none would fit"), "{r}");
    assert!(refusal(&full, &req("L3", 21)).contains("has 20 ways"));
    assert!(refusal(&read("resctrl.nomb"), &req("L3", 1)).contains("at least 2 ways"));
    assert!(refusal(&full, &req("L3", 0)).contains("at least 1"));
    assert!(refusal(&read("resctrl.l2"), &req("L3", 2))
        .contains("offers cache allocation for L2, not L3"));
    let r = refusal(&full, &req("L3DATA", 2));
    assert!(
        r.contains("mounted without the cdp option")
            && r.contains("mount -t resctrl -o cdp resctrl"),
        "{r}"
    );
    assert!(refusal(&read("resctrl.nol3"), &req("L3", 2)).contains("no cache allocation at all"));
    assert!(refusal(&full, &req("L4", 2)).contains("not a cache level"));
    // The CLOS limit: resctrl.l2 has 4; the default group and three others use them.
    let (_t, root) = tree_copy("resctrl.l2");
    for g in ["a", "b", "c"] {
        std::fs::create_dir(root.join(g)).unwrap();
        std::fs::write(root.join(g).join("schemata"), "L2:0=ff;1=ff\n").unwrap();
    }
    let r = refusal(&Tree::read(&root).unwrap(), &req("L2", 2));
    assert!(
        r.contains("all 4 classes of service (CLOS) are in use by the groups default, a, b, c"),
        "{r}"
    );
    let mut lock = req("L2", 2);
    lock.lock_domain = Some(7);
    assert!(refusal(&read("resctrl.l2"), &lock).contains("no domain 7"));
    lock.lock_domain = Some(0);
    assert!(refusal(
        &read("resctrl.nomb.cdp"),
        &Request {
            level: "L3".into(),
            ..lock
        }
    )
    .contains("CDP"));
}

#[test]
fn writer_applies_and_journal_restores() {
    let (_t, root) = tree_copy("resctrl.l2");
    let before = snapshot(&root);
    let _kernel = FakeKernel::start(&root);
    let tree = Tree::read(&root).unwrap();
    let p = plan(&tree, &req("L2", 3)).unwrap();
    {
        let mut j = Journal::new(&tree);
        let a = apply(&tree, &p, &mut j).unwrap();
        assert!(a.exclusive_mode.is_ok());
        assert_eq!(
            std::fs::read_to_string(root.join("schemata")).unwrap(),
            "L2:0=f8;1=f8\n"
        );
        assert_eq!(
            std::fs::read_to_string(a.path.join("schemata")).unwrap(),
            "L2:0=07;1=07\n"
        );
        assert_eq!(
            std::fs::read_to_string(a.path.join("mode")).unwrap(),
            "exclusive\n"
        );
        move_task(&a.path, 4242).unwrap();
        assert_eq!(
            std::fs::read_to_string(a.path.join("tasks")).unwrap(),
            "4242\n"
        );
        let now = avail::domains(&Tree::read(&root).unwrap()).unwrap();
        assert_eq!(now[0].group("kairos-test").unwrap().exclusive, 0x07);
        assert_eq!(j.undo(), Vec::<String>::new());
        assert!(
            j.log.iter().any(|l| l.starts_with("removed group")),
            "{:?}",
            j.log
        );
    }
    assert_eq!(snapshot(&root), before, "the tree was not restored");
}

#[test]
fn own_error_midway_restores_on_drop() {
    let (_t, root) = tree_copy("resctrl.l2");
    let before = snapshot(&root);
    let tree = Tree::read(&root).unwrap();
    let p = plan(&tree, &req("L2", 2)).unwrap();
    // A file with the group's name: the default group is shrunk first, then mkdir fails.
    std::fs::write(root.join("kairos-test"), "").unwrap();
    let mut before_with_file = before.clone();
    before_with_file.insert("kairos-test".into(), String::new());
    let err = {
        let mut j = Journal::new(&tree);
        let e = apply(&tree, &p, &mut j).unwrap_err();
        assert_eq!(
            std::fs::read_to_string(root.join("schemata")).unwrap(),
            "L2:0=fc;1=fc\n",
            "shrunk before the failure"
        );
        e
    };
    assert!(err.to_string().contains("create group"), "{err}");
    assert_eq!(
        snapshot(&root),
        before_with_file,
        "dropping the journal did not restore the default group"
    );
}

#[test]
fn bad_files_are_errors_not_panics() {
    let (_t, root) = tree_copy("resctrl.l2");
    std::fs::write(root.join("info/L2/cbm_mask"), "zz\n").unwrap();
    assert!(matches!(Tree::read(&root), Err(Error::Parse(_))));
    std::fs::write(root.join("info/L2/cbm_mask"), "f0f\n").unwrap();
    assert!(Tree::read(&root)
        .unwrap_err()
        .to_string()
        .contains("not a run of ways"));
    std::fs::write(root.join("info/L2/cbm_mask"), "ff\n").unwrap();
    std::fs::write(root.join("schemata"), "L2 0=ff\n").unwrap();
    assert!(Tree::read(&root)
        .unwrap_err()
        .to_string()
        .contains("RESOURCE:"));
    std::fs::write(root.join("schemata"), "L2:0=ff;1=ff\n").unwrap();
    std::fs::write(root.join("info/L2/num_closids"), "four\n").unwrap();
    assert!(Tree::read(&root)
        .unwrap_err()
        .to_string()
        .contains("not a number"));
    assert!(matches!(
        Tree::read(&root.join("info")),
        Err(Error::NotResctrl(_))
    ));
}
