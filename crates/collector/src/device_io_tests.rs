#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

const NET_DEV_QUEUE: &str = "name: net_dev_queue
ID: 1780
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:void * skbaddr;\toffset:8;\tsize:8;\tsigned:0;
\tfield:unsigned int len;\toffset:16;\tsize:4;\tsigned:0;
\tfield:__data_loc char[] name;\toffset:20;\tsize:4;\tsigned:0;
";

/// A sample record as the kernel writes it for SAMPLE_TYPE.
fn record(id: u64, pid: u32, tid: u32, cpu: u32, raw: &[u8]) -> Vec<u8> {
    let mut r = Vec::new();
    r.extend_from_slice(&b::PERF_RECORD_SAMPLE.to_le_bytes());
    r.extend_from_slice(&0u16.to_le_bytes());
    r.extend_from_slice(&0u16.to_le_bytes()); // size, unused by decode
    r.extend_from_slice(&id.to_le_bytes());
    r.extend_from_slice(&pid.to_le_bytes());
    r.extend_from_slice(&tid.to_le_bytes());
    r.extend_from_slice(&123u64.to_le_bytes());
    r.extend_from_slice(&cpu.to_le_bytes());
    r.extend_from_slice(&0u32.to_le_bytes());
    r.extend_from_slice(&(raw.len() as u32).to_le_bytes());
    r.extend_from_slice(raw);
    r
}

#[test]
fn a_queued_packet_is_decoded_through_its_format_file() {
    let f = Fields::parse(NET_DEV_QUEUE);
    assert_eq!(f.get("skbaddr"), Some((8, 8)));
    assert_eq!(f.get("name"), Some((20, 4)));
    let mut raw = vec![0u8; 24];
    raw[8..16].copy_from_slice(&0xffff_8880_1234_5678u64.to_le_bytes());
    raw[16..20].copy_from_slice(&1514u32.to_le_bytes());
    // __data_loc: "eth1\0" at offset 24, 5 bytes.
    raw[20..24].copy_from_slice(&(5u32 << 16 | 24).to_le_bytes());
    raw.extend_from_slice(b"eth1\0");
    let ids: HashMap<u64, (Kind, usize)> = [(77, (Kind::Queued, 0))].into();
    let got = sample(&record(77, 10, 11, 3, &raw), &ids, std::slice::from_ref(&f));
    assert_eq!(
        got,
        Some(DeviceEvent::Queued {
            task: Task {
                pid: 10,
                tid: 11,
                cpu: 3,
                time: 123
            },
            name: "eth1".into(),
            bytes: 1514
        })
    );
    // Unknown id, truncated raw data, a name pointing outside: nothing, no panic.
    assert_eq!(
        sample(&record(78, 1, 1, 0, &raw), &ids, std::slice::from_ref(&f)),
        None
    );
    assert_eq!(
        sample(
            &record(77, 1, 1, 0, &raw[..12]),
            &ids,
            std::slice::from_ref(&f)
        ),
        None
    );
    raw[20..24].copy_from_slice(&(50u32 << 16 | 24).to_le_bytes());
    assert_eq!(sample(&record(77, 1, 1, 0, &raw), &ids, &[f]), None);
}

/// Root only (system-wide tracepoints): dd writing then reading a file with direct I/O
/// shows as writes and reads of the file's block device, each by its dd process.
#[test]
fn direct_io_on_a_file_is_seen_with_its_process() {
    use std::os::unix::fs::MetadataExt;
    let dir = std::env::temp_dir();
    let dev = std::fs::metadata(&dir).unwrap().dev();
    // tmpfs and other memory file systems have major 0: no block I/O to see.
    if libc::major(dev) == 0 {
        eprintln!("{} is not on a block device: skipped", dir.display());
        return;
    }
    let Ok(mut t) = DeviceTracer::open(&crate::online_cpus(), 16) else {
        eprintln!("tracepoints refused (not root?): skipped");
        return;
    };
    let file = dir.join(format!("kairos-device-io-{}", std::process::id()));
    let dd = |args: &[String]| {
        let c = std::process::Command::new("dd")
            .args(args)
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = c.id();
        assert!(c.wait_with_output().unwrap().status.success());
        pid
    };
    let f = file.display();
    let writer = dd(&[
        "if=/dev/zero".into(),
        format!("of={f}"),
        "bs=64k".into(),
        "count=64".into(),
        "oflag=direct".into(),
    ]);
    let reader = dd(&[
        format!("if={f}"),
        "of=/dev/null".into(),
        "bs=64k".into(),
        "iflag=direct".into(),
    ]);
    std::fs::remove_file(&file).ok();
    let (mut written, mut read) = (0, 0);
    t.drain(&mut |e| match e {
        DeviceEvent::Block {
            task,
            bytes,
            write: true,
            ..
        } if task.pid == writer => written += bytes,
        DeviceEvent::Block {
            task,
            bytes,
            write: false,
            ..
        } if task.pid == reader => read += bytes,
        _ => {}
    });
    assert_eq!(t.lost, 0);
    // 64 x 64 KiB each way (file system metadata may add a little).
    assert!(written >= 64 * 65536, "written {written} bytes");
    assert!(read >= 64 * 65536, "read {read} bytes");
}
