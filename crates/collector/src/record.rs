//! The recording loop: polling the rings, copying every record into the perf.data file
//! (`Sink`), counting samples, losses and throttling, and every way of ending (target
//! exit, duration, signal, write error) draining the rings and finishing the file.

use super::*;
use crate::cpus::realtime_ns;
use crate::open::*;

/// Record counting and writing, shared by the loop and the final drain.
pub(crate) struct Sink {
    pub(crate) writer: PerfDataWriter,
    pub(crate) samples: u64,
    pub(crate) lost: u64,
    pub(crate) throttled: u64,
    pub(crate) first_time: u64,
    pub(crate) last_time: u64,
    pub(crate) write_error: Option<String>,
    pub(crate) hook: Option<sample_hook::Hook>,
    pub(crate) build_ids: crate::build_ids::BuildIds,
}

pub(crate) const PERF_RECORD_LOST: u32 = 2;
pub(crate) const PERF_RECORD_THROTTLE: u32 = 5;
pub(crate) const PERF_RECORD_SAMPLE: u32 = 9;
pub(crate) const PERF_RECORD_LOST_SAMPLES: u32 = 13;

impl Sink {
    fn record(&mut self, rec: &[u8]) {
        if self.write_error.is_some() {
            return;
        }
        let ty = u32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]);
        match ty {
            PERF_RECORD_SAMPLE => {
                self.samples += 1;
                // Our sample layout: header, identifier, ip, pid/tid, time.
                let t = u64_at(rec, 32);
                if self.first_time == 0 || t < self.first_time {
                    self.first_time = t;
                }
                self.last_time = self.last_time.max(t);
                if let Some(h) = &self.hook {
                    h.offer(rec);
                }
            }
            // Both carry {u64 id, u64 lost} first.
            PERF_RECORD_LOST | PERF_RECORD_LOST_SAMPLES => self.lost += u64_at(rec, 16),
            PERF_RECORD_THROTTLE => self.throttled += 1,
            kairos_perf_data::PERF_RECORD_MMAP2 => self.build_ids.offer(rec),
            _ => {}
        }
        if let Err(e) = self.writer.write_record(rec) {
            self.write_error = Some(format!("writing the perf.data file failed: {e}"));
        }
    }

    fn drain(&mut self, rings: &mut [Ring]) -> u64 {
        let mut n = 0;
        for r in rings.iter_mut() {
            n += r.drain(&mut |rec| self.record(rec));
        }
        if n > 0 {
            // As perf: mark a round so readers can sort and flush what came before.
            self.record(&synth::finished_round_record());
        }
        n
    }

    fn progress(&self, start: Instant) -> Progress {
        Progress {
            samples: self.samples,
            bytes: self.writer.data_bytes(),
            lost_records: self.lost,
            elapsed: start.elapsed(),
        }
    }
}

/// The sampling events as opened, with one ring buffer per CPU and every fd's id.
/// (Fields drop in order: the rings are unmapped before the events close.)
struct Sampling {
    rings: Vec<Ring>,
    events: Events,
    /// Why this event was chosen.
    reason: String,
    period: u64,
    branch_records: BranchOutcome,
    ring_bytes: usize,
    ids: Vec<u64>,
}

/// The extra and PMU events opened beside the sampling event, and what became of each.
struct Extras {
    /// Enabled, disabled and closed with the sampling events.
    fds: Vec<OwnedFd>,
    pmu_outcomes: Vec<pmu::PmuOutcome>,
    extra_outcomes: Vec<extra::ExtraOutcome>,
}

/// A recording under way: the target, the opened events and the file being written.
/// (Fields drop in order: on an error the events close before the launched child is
/// killed.)
struct Recording<'a> {
    sink: Sink,
    extras: Extras,
    sampling: Sampling,
    child: Option<launch::Launched>,
    opts: &'a CollectOptions,
    wall_start: Instant,
    start_ns: u64,
}

pub(crate) fn run(
    opts: &CollectOptions,
    file: std::fs::File,
    cpus: &[i32],
    signals: &Signals,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<CollectSummary, CollectError> {
    let wall_start = Instant::now();
    let mut writer =
        PerfDataWriter::create(file).map_err(io_err("writing the perf.data header"))?;

    // Launch: the child exists (blocked before exec) while the events are opened on it.
    let child = match &opts.target {
        Target::Launch { program, args } => {
            Some(launch::spawn_waiting_with(program, args, &opts.env)?)
        }
        _ => None,
    };
    let sampling = open_sampling(opts, child.as_ref().map(|c| c.pid), cpus)?;
    let event_name = sampling.events.kind.name(sampling.events.include_kernel);
    writer.add_attr(
        attr::attr_bytes(&sampling.events.attr),
        sampling.ids.clone(),
        event_name.clone(),
    );
    let extras = open_extras(opts, &sampling.events, cpus, &mut writer)?;
    // The machine's online CPUs, not only those sampled (-C).
    set_features(&mut writer, online_cpus().len().max(cpus.len()));
    add_tracing_data(opts, &extras.extra_outcomes, &mut writer);

    let hook = opts
        .on_sample
        .clone()
        .map(|tx| sample_hook::Hook::new(tx, &sampling.events.attr, &sampling.ids));
    let sink = Sink {
        writer,
        samples: 0,
        lost: 0,
        throttled: 0,
        first_time: 0,
        last_time: 0,
        write_error: None,
        hook,
        build_ids: Default::default(),
    };
    let mut rec = Recording {
        opts,
        child,
        sampling,
        extras,
        sink,
        wall_start,
        start_ns: monotonic_ns(),
    };
    rec.write_side_band();
    rec.prepare_targets()?;
    rec.start_counting()?;
    let stop = rec.poll_until_stop(signals, on_progress);
    let summary = rec.finish(stop)?.summary(opts, event_name, cpus);
    on_progress(&Progress {
        samples: summary.samples,
        bytes: summary.bytes,
        lost_records: summary.lost_records,
        elapsed: wall_start.elapsed(),
    });
    Ok(summary)
}

/// Opens the sampling events (with branch records as asked), maps one ring buffer per CPU
/// and reads every fd's id.
fn open_sampling(
    opts: &CollectOptions,
    child: Option<i32>,
    cpus: &[i32],
) -> Result<Sampling, CollectError> {
    let pages = opts.ring_buffer_pages.max(1).next_power_of_two();
    let ring_bytes = pages * ring::page_size();
    let wakeup = (ring_bytes / 4).min(u32::MAX as usize) as u32;
    let (events, reason, period, branch_records) = open_with_branches(opts, child, cpus, wakeup)?;

    let mut rings = Vec::with_capacity(events.leaders.len());
    for &l in &events.leaders {
        let r = Ring::map(events.fds[l].as_raw_fd(), pages).map_err(|e| {
            if e.raw_os_error() == Some(libc::EPERM) {
                CollectError::Permission {
                    paranoid: attr::paranoid(),
                    detail: format!(
                        "ring buffer of {} KiB per CPU exceeds kernel.perf_event_mlock_kb; use fewer pages",
                        ring_bytes / 1024
                    ),
                }
            } else {
                CollectError::Io { context: format!("mapping a ring buffer of {} KiB", ring_bytes / 1024), source: e }
            }
        })?;
        rings.push(r);
    }
    redirect_to_leaders(&events)?;

    let mut ids = Vec::with_capacity(events.fds.len());
    for fd in &events.fds {
        let mut id = 0u64;
        // SAFETY: fd is a perf event fd; id is a valid out pointer.
        if unsafe { sys::ioctls::ID(fd.as_raw_fd(), &mut id) } != 0 {
            return Err(io_err("reading an event id")(io::Error::last_os_error()));
        }
        ids.push(id);
    }
    Ok(Sampling {
        events,
        reason,
        period,
        branch_records,
        rings,
        ring_bytes,
        ids,
    })
}

/// Opens the PMU events and the extra events on the sampling events' (task, CPU) pairs,
/// declaring each one opened in the file; an extra event the kernel refuses is recorded
/// as missing, with why.
fn open_extras(
    opts: &CollectOptions,
    events: &Events,
    cpus: &[i32],
    writer: &mut PerfDataWriter,
) -> Result<Extras, CollectError> {
    // PMU fds are enabled, disabled and closed with the extra events'.
    let (mut fds, pmu_outcomes) = pmu::open_all(opts, events, cpus, writer)?;
    let mut extra_outcomes = Vec::with_capacity(opts.extra_events.len());
    for x in &opts.extra_events {
        let enable_on_exec = matches!(opts.target, Target::Launch { .. }) && !x.every_process;
        let inherit = !matches!(opts.target, Target::SystemWide) && !x.every_process;
        let mut a = x.attr(events.include_kernel, enable_on_exec, inherit);
        if x.every_process {
            // Counting from now: no exec or enable call is waited for.
            a.set_disabled(0);
        }
        match open_extra(&mut a, events, cpus, x.every_process) {
            Ok((xfds, xids)) => {
                writer.add_attr(attr::attr_bytes(&a), xids, x.name.clone());
                fds.extend(xfds);
                extra_outcomes.push(extra::ExtraOutcome {
                    name: x.name.clone(),
                    missing: None,
                });
            }
            Err(why) => extra_outcomes.push(extra::ExtraOutcome {
                name: x.name.clone(),
                missing: Some(why),
            }),
        }
    }
    Ok(Extras {
        fds,
        pmu_outcomes,
        extra_outcomes,
    })
}

/// perf refuses a file with tracepoints but no event formats: writes the formats of the
/// tracepoints among the extra events recorded.
fn add_tracing_data(
    opts: &CollectOptions,
    outcomes: &[extra::ExtraOutcome],
    writer: &mut PerfDataWriter,
) {
    let recorded: Vec<extra::ExtraEvent> = opts
        .extra_events
        .iter()
        .filter(|x| {
            outcomes
                .iter()
                .any(|o| o.name == x.name && o.missing.is_none())
        })
        .cloned()
        .collect();
    if recorded
        .iter()
        .any(|x| x.type_ == sys::bindings::PERF_TYPE_TRACEPOINT)
    {
        if let Some(t) = extra::tracing_data(&recorded) {
            writer.set_feature_raw(kairos_perf_data::HEADER_TRACING_DATA, t);
        }
    }
}

impl Recording<'_> {
    /// Side-band records of what exists already (the kernel's text, the processes'
    /// mappings). Written before anything from the buffers, stamped with the start time.
    fn write_side_band(&mut self) {
        let opts = self.opts;
        let trailer = IdTrailer {
            time: self.start_ns,
            id: self.sampling.ids.first().copied().unwrap_or(0),
        };
        if let Some(addr) = synth::kernel_text_address() {
            self.sink.record(&synth::kernel_mmap_record(addr, trailer));
        }
        let mut synthesised = Vec::new();
        let data_maps = matches!(opts.unwinding, Unwinding::Dwarf { .. }) || opts.data_mmaps;
        match opts.target {
            Target::Pid(pid) => synth::process_records(pid, data_maps, trailer, &mut synthesised),
            Target::SystemWide => {
                for pid in synth::all_pids() {
                    synth::process_records(pid, data_maps, trailer, &mut synthesised);
                }
            }
            Target::Launch { .. } => {}
        }
        for r in &synthesised {
            self.sink.record(r);
        }
    }

    /// Runs the `on_target` hook on the launched child or on each thread of the attached
    /// process.
    fn prepare_targets(&self) -> Result<(), CollectError> {
        if let Some(h) = &self.opts.on_target {
            let tids = match (&self.child, &self.opts.target) {
                (Some(c), _) => vec![c.pid],
                (None, Target::Pid(pid)) => target_hook::threads(*pid),
                _ => Vec::new(),
            };
            for tid in tids {
                (h.0)(tid).map_err(CollectError::TargetSetup)?;
            }
        }
        Ok(())
    }

    /// Starts counting: lets the launched child exec (its events are enabled on exec), or
    /// enables every event.
    fn start_counting(&mut self) -> Result<(), CollectError> {
        if let Some(c) = self.child.as_mut() {
            c.release()?;
        } else {
            for fd in self.sampling.events.fds.iter().chain(&self.extras.fds) {
                // SAFETY: enabling our own perf fd.
                unsafe { sys::ioctls::ENABLE(fd.as_raw_fd(), 0) };
            }
        }
        Ok(())
    }

    /// Polls the rings and copies their records into the file until the target exits, the
    /// duration elapses, a signal arrives or writing fails; reports progress on the way.
    fn poll_until_stop(
        &mut self,
        signals: &Signals,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> StopReason {
        let events = &self.sampling.events;
        let mut pollfds: Vec<libc::pollfd> = events
            .leaders
            .iter()
            .map(|&l| libc::pollfd {
                fd: events.fds[l].as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // The duration is of collection proper: opening events and reading /proc for the
        // side-band records can take long on a loaded machine and must not eat into it.
        let deadline = self.opts.duration.map(|d| Instant::now() + d);
        let mut last_progress = Instant::now();
        loop {
            wait_for_records(&mut pollfds, deadline);
            self.sink.drain(&mut self.sampling.rings);
            if let Some(stop) = self.stop_reason(signals, deadline) {
                return stop;
            }
            if last_progress.elapsed() >= Duration::from_millis(250) {
                last_progress = Instant::now();
                on_progress(&self.sink.progress(self.wall_start));
            }
        }
    }

    /// Why recording must stop now, if it must.
    fn stop_reason(&mut self, signals: &Signals, deadline: Option<Instant>) -> Option<StopReason> {
        if let Some(e) = &self.sink.write_error {
            return Some(StopReason::WriteError(e.clone()));
        }
        if let Some(sig) = signals.received() {
            return Some(StopReason::Signal(sig));
        }
        if let Some(c) = self.child.as_mut() {
            if c.try_wait().is_some() {
                return Some(StopReason::TargetExited);
            }
        }
        if let Target::Pid(pid) = self.opts.target {
            if !process_alive(pid) {
                return Some(StopReason::TargetExited);
            }
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Some(StopReason::Duration);
        }
        if self
            .opts
            .stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
        {
            return Some(StopReason::Duration);
        }
        None
    }

    fn disable(&self) {
        for fd in self.sampling.events.fds.iter().chain(&self.extras.fds) {
            // SAFETY: disabling our own perf fd; no new records after this.
            unsafe { sys::ioctls::DISABLE(fd.as_raw_fd(), 0) };
        }
    }

    /// Stops recording and the launched program and drains the rings: the end time and
    /// how the program ended.
    fn stop(&mut self, stop: &StopReason) -> (u64, Option<TargetExit>) {
        // When we, not the target, decided to stop (a signal to kairos, the duration, a
        // write error), recording stops now, as perf record does: the target may take a
        // while to end, or never end, and nothing it does after the stop belongs in the
        // result.
        let mut end_ns = None;
        if *stop != StopReason::TargetExited {
            self.disable();
            end_ns = Some(monotonic_ns());
        }
        let target_exit = self.end_target(stop);
        self.disable();
        let end_ns = end_ns.unwrap_or_else(monotonic_ns);
        self.sink.drain(&mut self.sampling.rings);
        (end_ns, target_exit)
    }

    /// Stops, then finishes the file (sample times, build ids) once every event is
    /// closed.
    fn finish(mut self, stop: StopReason) -> Result<Finished, CollectError> {
        let (end_ns, mut target_exit) = self.stop(&stop);
        let stopped_by = self.flush(stop);
        let Recording {
            mut child,
            sampling,
            extras,
            mut sink,
            wall_start,
            start_ns,
            ..
        } = self;
        if sink.samples > 0 {
            sink.writer.set_sample_time(sink.first_time, sink.last_time);
        }
        let ids = sink.build_ids.entries().to_vec();
        sink.writer.set_build_ids(&ids);
        let include_kernel = sampling.events.include_kernel;
        drop(sampling.rings);
        drop(extras.fds);
        drop(sampling.events);
        let bytes = sink
            .writer
            .finish()
            .map_err(io_err("finishing the perf.data file"))?;
        if let Some(c) = child.as_mut() {
            target_exit = target_exit.or_else(|| c.try_wait());
        }
        Ok(Finished {
            reason: sampling.reason,
            period: sampling.period,
            branch_records: sampling.branch_records,
            ring_bytes: sampling.ring_bytes,
            include_kernel,
            pmu_outcomes: extras.pmu_outcomes,
            extra_outcomes: extras.extra_outcomes,
            samples: sink.samples,
            lost: sink.lost,
            throttled: sink.throttled,
            wall_start,
            start_ns,
            stopped_by,
            target_exit,
            end_ns,
            bytes,
        })
    }

    /// Ends the program we launched (SIGTERM, SIGKILL after 2 s) and reaps it, draining
    /// the rings meanwhile. An attached process (-p) or the system (-a) is left running:
    /// there is no child.
    fn end_target(&mut self, stop: &StopReason) -> Option<TargetExit> {
        let c = self.child.as_mut()?;
        let sink = &mut self.sink;
        let rings = &mut self.sampling.rings;
        let mut tick = || {
            sink.drain(rings);
        };
        match stop {
            StopReason::TargetExited => c.try_wait(),
            StopReason::Signal(_) | StopReason::Duration | StopReason::WriteError(_) => {
                c.terminate(Duration::from_secs(2), &mut tick)
            }
        }
    }

    /// Flushes the data section; a write error, then or before, becomes the stop reason.
    fn flush(&mut self, stop: StopReason) -> StopReason {
        let mut stopped_by = stop;
        if let Err(e) = self.sink.writer.flush_data() {
            if self.sink.write_error.is_none() {
                self.sink.write_error = Some(format!("writing the perf.data file failed: {e}"));
            }
        }
        if let Some(e) = &self.sink.write_error {
            if !matches!(stopped_by, StopReason::WriteError(_)) {
                stopped_by = StopReason::WriteError(e.clone());
            }
        }
        stopped_by
    }
}

/// Waits until a ring has records or 50 ms pass (at most until the deadline); stops
/// polling the events that hung up.
fn wait_for_records(pollfds: &mut [libc::pollfd], deadline: Option<Instant>) {
    // A launched child's exit does not wake poll(), so this bounds how late we notice it.
    let mut timeout = Duration::from_millis(50);
    if let Some(d) = deadline {
        timeout = timeout.min(d.saturating_duration_since(Instant::now()));
    }
    // SAFETY: pollfds is a valid array of pollfd.
    unsafe {
        libc::poll(
            pollfds.as_mut_ptr(),
            pollfds.len() as libc::nfds_t,
            timeout.as_millis() as i32,
        )
    };
    for p in pollfds.iter_mut() {
        // A hung-up event (its task is gone) would make poll return at once forever;
        // stop polling it, but keep draining its buffer.
        if p.revents & (libc::POLLHUP | libc::POLLERR) != 0 {
            p.fd = -1;
        }
        p.revents = 0;
    }
}

/// What the summary takes from a recording once its file is finished.
struct Finished {
    reason: String,
    period: u64,
    branch_records: BranchOutcome,
    ring_bytes: usize,
    include_kernel: bool,
    pmu_outcomes: Vec<pmu::PmuOutcome>,
    extra_outcomes: Vec<extra::ExtraOutcome>,
    samples: u64,
    lost: u64,
    throttled: u64,
    wall_start: Instant,
    start_ns: u64,
    stopped_by: StopReason,
    target_exit: Option<TargetExit>,
    end_ns: u64,
    bytes: u64,
}

impl Finished {
    fn summary(self, opts: &CollectOptions, event_name: String, cpus: &[i32]) -> CollectSummary {
        let pmu_only = pmu::replaces_timer(opts);
        CollectSummary {
            event_name: match pmu_only {
                true => self
                    .pmu_outcomes
                    .iter()
                    .map(|o| o.name.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
                false => event_name,
            },
            event_reason: self.reason,
            sample_period: if pmu_only { 0 } else { self.period },
            include_kernel: self.include_kernel,
            samples: self.samples,
            lost_records: self.lost,
            throttled: self.throttled,
            ring_bytes: self.ring_bytes as u64,
            bytes: self.bytes,
            stopped_by: self.stopped_by,
            target_exit: self.target_exit,
            start_monotonic_ns: self.start_ns,
            end_monotonic_ns: self.end_ns,
            wall_seconds: self.wall_start.elapsed().as_secs_f64(),
            cpus: cpus.len(),
            branch_records: self.branch_records,
            extra_events: self.extra_outcomes,
            pmu_events: self.pmu_outcomes,
        }
    }
}

pub(crate) fn set_features(w: &mut PerfDataWriter, online: usize) {
    // SAFETY: utsname is plain data; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: valid out pointer.
    if unsafe { libc::uname(&mut u) } == 0 {
        let field = |f: &[libc::c_char]| -> String {
            let bytes: Vec<u8> = f
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8)
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        };
        w.set_feature_string(StringFeature::Hostname, field(&u.nodename));
        w.set_feature_string(StringFeature::OsRelease, field(&u.release));
        w.set_feature_string(StringFeature::Arch, field(&u.machine));
    }
    w.set_feature_string(
        StringFeature::Version,
        format!("kairos {}", env!("CARGO_PKG_VERSION")),
    );
    let model = attr::cpu_model();
    if !model.is_empty() {
        w.set_feature_string(StringFeature::CpuDesc, model);
    }
    let possible = std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .map(|s| parse_cpu_list(&s).len())
        .unwrap_or(online);
    w.set_nr_cpus(possible.max(online) as u32, online as u32);
    if let Some(kb) = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
    }) {
        w.set_total_mem_kb(kb);
    }
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    w.set_cmdline(&args);
    let mut res = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out pointer.
    if unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut res) } == 0 {
        w.set_clockid_res_ns(res.tv_sec as u64 * 1_000_000_000 + res.tv_nsec as u64);
    }
    let tod = realtime_ns();
    let mono = monotonic_ns();
    w.set_clock_data(libc::CLOCK_MONOTONIC as u32, tod, mono);
}
