//! The scheduler's tracepoints through a tracefs instance of schedlab's own, read as the ring
//! buffer's binary pages (`per_cpu/cpuN/trace_pipe_raw`): no text is formatted per event, so
//! reading costs tens of ns an event where `trace_pipe`'s text costs about a µs.
//!
//! An instance has its own buffers, events and clock, so a tracer the user runs beside it
//! (perf, trace-cmd, bpftrace) is not disturbed. The instance is removed and its events
//! disabled whatever happens (Drop; an instance left by a killed schedlab is removed by the
//! next one), and tracefs is unmounted again when schedlab mounted it.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};
use std::time::Duration;

/// Where tracefs is (mounted there when it is not).
pub const TRACING: &str = "/sys/kernel/tracing";
/// Instances are named this and the owning process's pid, so a stale one can be told.
const PREFIX: &str = "schedlab-";

/// The instances open now, for the exit hook: a signal or a panic disables their events at
/// once (the directory itself goes with the next schedlab, as its process is then gone).
static OPEN: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn register(dir: &Path) {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        crate::sys::exit::lifeline::on_exit(|| {
            let open = match OPEN.try_lock() {
                Ok(g) => g.clone(),
                Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().clone(),
                Err(std::sync::TryLockError::WouldBlock) => return,
            };
            for dir in open {
                disable(&dir);
            }
        })
    });
    OPEN.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(dir.to_owned());
}

fn unregister(dir: &Path) {
    OPEN.lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|d| d != dir);
}

/// One scheduler event, with the fields schedlab reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedEvent {
    /// `prev` leaves its CPU, still runnable (preempted or yielding) or not; `next` takes it.
    /// `prev_dead`: it left for good (its last switch).
    Switch {
        prev: u32,
        prev_runnable: bool,
        prev_dead: bool,
        next: u32,
    },
    Wakeup {
        pid: u32,
    },
    WakeupNew {
        pid: u32,
    },
    Fork {
        parent: u32,
        child: u32,
    },
    Migrate {
        pid: u32,
    },
}

/// An event and when it happened (CLOCK_MONOTONIC ns: the instance's clock is `mono`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamped {
    pub ns: u64,
    pub event: SchedEvent,
}

/// The events schedlab records, by their tracepoint names.
pub const EVENTS: [&str; 5] = [
    "sched_switch",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_process_fork",
    "sched_migrate_task",
];

/// A field's place in an event's record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Field {
    offset: usize,
    size: usize,
}

/// Where each event's fields lie, from the events' `format` files (they differ across
/// kernels: sched_migrate_task's comm became a dynamic string in 6.x).
#[derive(Clone, Debug, Default)]
pub struct Layout {
    by_id: HashMap<u16, (Kind, [Field; 3])>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Switch,
    Wakeup,
    WakeupNew,
    Fork,
    Migrate,
}

impl Kind {
    fn of(event: &str) -> Option<(Kind, [&'static str; 3])> {
        Some(match event {
            "sched_switch" => (Kind::Switch, ["prev_pid", "prev_state", "next_pid"]),
            "sched_wakeup" => (Kind::Wakeup, ["pid", "", ""]),
            "sched_wakeup_new" => (Kind::WakeupNew, ["pid", "", ""]),
            "sched_process_fork" => (Kind::Fork, ["parent_pid", "child_pid", ""]),
            "sched_migrate_task" => (Kind::Migrate, ["pid", "", ""]),
            _ => return None,
        })
    }
}

impl Layout {
    /// Adds one event from its `format` file's text.
    pub fn add(&mut self, event: &str, format: &str) -> Result<(), String> {
        let (kind, names) = Kind::of(event).ok_or_else(|| format!("{event} is not read"))?;
        let id = format
            .lines()
            .find_map(|l| l.strip_prefix("ID: "))
            .and_then(|n| n.trim().parse::<u16>().ok())
            .ok_or_else(|| format!("{event}'s format has no ID"))?;
        let fields = parse_fields(format);
        let mut out = [Field::default(); 3];
        for (slot, name) in out.iter_mut().zip(names) {
            if name.is_empty() {
                continue;
            }
            *slot = *fields
                .get(name)
                .ok_or_else(|| format!("{event} has no field {name}"))?;
        }
        self.by_id.insert(id, (kind, out));
        Ok(())
    }

    /// The event a record holds (its payload, from `common_type` on); None for other events
    /// or a record too short for its fields.
    pub fn decode(&self, rec: &[u8]) -> Option<SchedEvent> {
        let id = u16::from_ne_bytes(rec.get(..2)?.try_into().ok()?);
        let (kind, f) = self.by_id.get(&id)?;
        let int = |f: Field| -> Option<i64> {
            let b = rec.get(f.offset..f.offset + f.size)?;
            Some(match f.size {
                4 => i32::from_ne_bytes(b.try_into().ok()?) as i64,
                8 => i64::from_ne_bytes(b.try_into().ok()?),
                _ => return None,
            })
        };
        let pid = |f: Field| int(f).map(|v| v as u32);
        Some(match kind {
            Kind::Switch => {
                // The task states' report bits (S D T t X Z P I); none set is R, and
                // preemption is reported as a bit above them (TASK_REPORT_MAX).
                let state = int(f[1])?;
                SchedEvent::Switch {
                    prev: pid(f[0])?,
                    prev_runnable: state & 0xff == 0,
                    prev_dead: state & 0x30 != 0,
                    next: pid(f[2])?,
                }
            }
            Kind::Wakeup => SchedEvent::Wakeup { pid: pid(f[0])? },
            Kind::WakeupNew => SchedEvent::WakeupNew { pid: pid(f[0])? },
            Kind::Fork => SchedEvent::Fork {
                parent: pid(f[0])?,
                child: pid(f[1])?,
            },
            Kind::Migrate => SchedEvent::Migrate { pid: pid(f[0])? },
        })
    }
}

/// `field:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;` lines, by field name.
fn parse_fields(format: &str) -> HashMap<String, Field> {
    let mut out = HashMap::new();
    for line in format.lines() {
        let mut parts = line.trim().split(';').map(str::trim);
        let Some(decl) = parts.next().and_then(|d| d.strip_prefix("field:")) else {
            continue;
        };
        let Some(name) = decl.split_whitespace().last() else {
            continue;
        };
        let name = name.split('[').next().unwrap_or(name).to_string();
        let mut field = Field::default();
        for p in parts {
            if let Some(v) = p.strip_prefix("offset:") {
                field.offset = v.parse().unwrap_or(0);
            } else if let Some(v) = p.strip_prefix("size:") {
                field.size = v.parse().unwrap_or(0);
            }
        }
        out.insert(name, field);
    }
    out
}

/// The ring buffer's page header: a u64 timestamp, then the committed length (a local_t,
/// whose top bits flag missed events), then the records.
const PAGE_HEADER: usize = 16;
const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
/// The committed length's bits below the missed-events flags (bits 30 and 31).
const COMMIT_MASK: u64 = (1 << 30) - 1;

/// Decodes one page as `trace_pipe_raw` gives it, appending its events to `out`. Records of
/// other events are skipped; a malformed page ends where it stops making sense.
pub fn parse_page(page: &[u8], layout: &Layout, out: &mut Vec<Stamped>) {
    if page.len() < PAGE_HEADER {
        return;
    }
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(page.get(at..at + 4)?.try_into().ok()?))
    };
    let mut ns = u64::from_ne_bytes(page[0..8].try_into().expect("8 bytes"));
    let commit = u64::from_ne_bytes(page[8..16].try_into().expect("8 bytes")) & COMMIT_MASK;
    let end = (PAGE_HEADER + commit as usize).min(page.len());
    let mut at = PAGE_HEADER;
    while at + 4 <= end {
        let Some(head) = word(at) else { break };
        let (type_len, delta) = (head & 0x1f, (head >> 5) as u64);
        match type_len {
            TYPE_PADDING => {
                // A discarded record: its length follows. With no delta, the page's end.
                if delta == 0 {
                    break;
                }
                let Some(len) = word(at + 4) else { break };
                ns += delta;
                at += 4 + len as usize;
            }
            TYPE_TIME_EXTEND => {
                let Some(ext) = word(at + 4) else { break };
                ns += ((ext as u64) << 27) + delta;
                at += 8;
            }
            TYPE_TIME_STAMP => {
                let Some(abs) = word(at + 4) else { break };
                // 59 bits of an absolute time; the top ones are the page's.
                let low = ((abs as u64) << 27) | delta;
                ns = (ns & !((1u64 << 59) - 1)) | low;
                at += 8;
            }
            0 => {
                // A long record: its length (itself included) follows the header.
                let Some(len) = word(at + 4) else { break };
                let len = len as usize;
                if len < 4 || at + 4 + len > end {
                    break;
                }
                ns += delta;
                if let Some(event) = layout.decode(&page[at + 8..at + 4 + len]) {
                    out.push(Stamped { ns, event });
                }
                at += 4 + len;
            }
            n => {
                let len = n as usize * 4;
                if at + 4 + len > end {
                    break;
                }
                ns += delta;
                if let Some(event) = layout.decode(&page[at + 4..at + 4 + len]) {
                    out.push(Stamped { ns, event });
                }
                at += 4 + len;
            }
        }
    }
}

/// A tracefs instance of schedlab's own with the scheduler events enabled, read per CPU.
pub struct Instance {
    dir: PathBuf,
    mounted: bool,
    pipes: Vec<File>,
    page: Vec<u8>,
    layout: Layout,
}

impl Instance {
    /// Opens an instance for [`EVENTS`] with `buffer_kb` of ring buffer per CPU, recording
    /// nothing until [`Instance::set_recording`]; or says why tracing cannot be done here (not
    /// root, no tracefs, an old kernel). Opening takes a while (the buffers are allocated):
    /// recording then starts at once.
    pub fn open(buffer_kb: u32) -> Result<Instance, String> {
        let (mounted, dir) = new_instance(PREFIX)?;
        let made = fs::create_dir(&dir);
        // From here on the Drop cleans up, the mount included.
        let mut inst = Instance {
            dir,
            mounted,
            pipes: Vec::new(),
            page: Vec::new(),
            layout: Layout::default(),
        };
        made.map_err(|e| format!("cannot create {}: {e}", inst.dir.display()))?;
        register(&inst.dir);
        for ev in EVENTS {
            let format = fs::read_to_string(event_dir(&inst.dir, ev).join("format"))
                .map_err(|_| format!("this kernel has no sched:{ev} tracepoint"))?;
            inst.layout.add(ev, &format)?;
        }
        let header = fs::read_to_string(inst.dir.join("events/header_page")).unwrap_or_default();
        inst.page = vec![0; page_size(&header)];
        write_setting(&inst.dir, "buffer_size_kb", &buffer_kb.to_string())?;
        // CLOCK_MONOTONIC: the clock Samples are stamped with.
        write_setting(&inst.dir, "trace_clock", "mono")?;
        let cpus = fs::read_dir(inst.dir.join("per_cpu"))
            .map_err(|e| format!("{}/per_cpu: {e}", inst.dir.display()))?;
        let mut paths: Vec<PathBuf> = cpus
            .flatten()
            .map(|c| c.path().join("trace_pipe_raw"))
            .collect();
        paths.sort();
        for p in paths {
            let pipe = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&p)
                .map_err(|e| format!("cannot open {}: {e}", p.display()))?;
            inst.pipes.push(pipe);
        }
        Ok(inst)
    }

    /// Stops or starts recording the events (their tracepoints off cost nothing).
    pub fn set_recording(&self, on: bool) -> Result<(), String> {
        for ev in EVENTS {
            write_setting(
                &self.dir,
                &format!("events/sched/{ev}/enable"),
                if on { "1" } else { "0" },
            )?;
        }
        Ok(())
    }

    /// Appends every event the buffers hold now to `out`, CPU by CPU (not in time order).
    pub fn drain(&mut self, out: &mut Vec<Stamped>) {
        for pipe in &mut self.pipes {
            // A page a read; a bound, so that a CPU writing faster than this reads cannot
            // keep the reader here.
            for _ in 0..4096 {
                match pipe.read(&mut self.page) {
                    Ok(0) => break,
                    Ok(n) => parse_page(&self.page[..n], &self.layout, out),
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    // WouldBlock: nothing more on this CPU for now.
                    Err(_) => break,
                }
            }
        }
    }

    /// Events the ring buffers lost (overwritten before they were read, or dropped), over
    /// all CPUs, from their per-CPU stats.
    pub fn lost(&self) -> u64 {
        lost_in(&self.dir)
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // The kernel refuses to remove an instance whose pipes are open.
        self.pipes.clear();
        disable(&self.dir);
        unregister(&self.dir);
        if !remove_instance(&self.dir) {
            crate::errln!(
                "schedlab: could not remove {} (its events are disabled)",
                self.dir.display()
            );
        }
        if self.mounted {
            let _ = nix::mount::umount(TRACING);
        }
    }
}

/// Events an instance's ring buffers lost (overwritten before they were read, or dropped),
/// over all CPUs, from their per-CPU stats.
pub fn lost_in(instance: &Path) -> u64 {
    let Ok(cpus) = fs::read_dir(instance.join("per_cpu")) else {
        return 0;
    };
    let mut lost = 0;
    for cpu in cpus.flatten() {
        let stats = fs::read_to_string(cpu.path().join("stats")).unwrap_or_default();
        for line in stats.lines() {
            if let Some(n) = line
                .strip_prefix("overrun: ")
                .or_else(|| line.strip_prefix("dropped events: "))
            {
                lost += n.trim().parse::<u64>().unwrap_or(0);
            }
        }
    }
    lost
}

/// The directory of a scheduler event `ev` in the tracefs instance `instance`.
pub fn event_dir(instance: &Path, ev: &str) -> PathBuf {
    instance.join("events/sched").join(ev)
}

/// Writes `value` to the instance's `file` (a setting, or an event's), or says what failed.
pub fn write_setting(instance: &Path, file: &str, value: &str) -> Result<(), String> {
    let path = instance.join(file);
    fs::write(&path, value).map_err(|e| format!("writing {value:?} to {}: {e}", path.display()))
}

/// Gets tracefs ready for an instance of this process named `prefix` and its pid: mounted
/// when it was not, what a killed process left under that prefix removed. Whether this call
/// mounted tracefs, and the instance's path (not made yet); or why tracing cannot be done.
pub fn new_instance(prefix: &str) -> Result<(bool, PathBuf), String> {
    let root = Path::new(TRACING);
    let mounted = mount()?;
    remove_stale(root, prefix);
    let dir = root
        .join("instances")
        .join(format!("{prefix}{}", std::process::id()));
    Ok((mounted, dir))
}

/// Mounts tracefs at [`TRACING`] when it is not there: whether this call mounted it (then the
/// caller unmounts it when done), or why tracing cannot be done here.
pub fn mount() -> Result<bool, String> {
    let root = Path::new(TRACING);
    if root.join("instances").is_dir() {
        return Ok(false);
    }
    if is_mounted(root) {
        return Err(format!("{TRACING} has no instances directory"));
    }
    nix::mount::mount(
        Some("tracefs"),
        root,
        Some("tracefs"),
        nix::mount::MsFlags::empty(),
        None::<&str>,
    )
    .map_err(|e| format!("tracefs cannot be mounted at {TRACING}: {e}"))?;
    if !root.join("instances").is_dir() {
        let _ = nix::mount::umount(root);
        return Err(format!("tracefs at {TRACING} has no instances directory"));
    }
    Ok(true)
}

/// The ring buffer's page size, from `events/header_page` (the data field's offset and size);
/// 4096 when it cannot be read.
fn page_size(header: &str) -> usize {
    parse_fields(header)
        .get("data")
        .map(|f| f.offset + f.size)
        .filter(|&n| n >= PAGE_HEADER)
        .unwrap_or(4096)
}

fn disable(dir: &Path) {
    for ev in EVENTS {
        let _ = fs::write(dir.join("events/sched").join(ev).join("enable"), "0");
    }
    let _ = fs::write(dir.join("tracing_on"), "0");
}

/// Removes an instance directory, retrying for up to two seconds while the kernel says it is
/// busy. Whether it is gone.
pub fn remove_instance(dir: &Path) -> bool {
    for _ in 0..40 {
        match fs::remove_dir(dir) {
            Ok(()) => return true,
            Err(e) if e.kind() == ErrorKind::NotFound => return true,
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    false
}

/// Whether tracefs is mounted at `at` (/proc/mounts).
pub fn is_mounted(at: &Path) -> bool {
    fs::read_to_string("/proc/mounts").is_ok_and(|m| {
        m.lines().any(|l| {
            let mut f = l.split_whitespace();
            let (_, dir, ty) = (f.next(), f.next(), f.next());
            dir == at.to_str() && ty == Some("tracefs")
        })
    })
}

/// Instances named `prefix` and a pid that a killed process left behind (its process is
/// gone): their events disabled, and removed.
pub fn remove_stale(root: &Path, prefix: &str) {
    let Ok(dir) = fs::read_dir(root.join("instances")) else {
        return;
    };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            disable(&e.path());
            remove_instance(&e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWITCH: &str = "name: sched_switch\nID: 372\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
        \tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
        \tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
        \tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\
        \tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\
        \tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n\
        \tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n\
        \tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n";
    const WAKEUP: &str = "name: sched_wakeup\nID: 374\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n";

    fn layout() -> Layout {
        let mut l = Layout::default();
        l.add("sched_switch", SWITCH).unwrap();
        l.add("sched_wakeup", WAKEUP).unwrap();
        l
    }

    fn switch_record(prev: i32, state: i64, next: i32) -> Vec<u8> {
        let mut r = vec![0u8; 64];
        r[0..2].copy_from_slice(&372u16.to_ne_bytes());
        r[24..28].copy_from_slice(&prev.to_ne_bytes());
        r[32..40].copy_from_slice(&state.to_ne_bytes());
        r[56..60].copy_from_slice(&next.to_ne_bytes());
        r
    }

    fn wakeup_record(pid: i32) -> Vec<u8> {
        let mut r = vec![0u8; 28];
        r[0..2].copy_from_slice(&374u16.to_ne_bytes());
        r[24..28].copy_from_slice(&pid.to_ne_bytes());
        r
    }

    /// A page as the kernel writes it: records after a header, deltas in their headers.
    fn page(start: u64, records: &[(u32, Vec<u8>)], extend: Option<u64>) -> Vec<u8> {
        let mut data = Vec::new();
        if let Some(ext) = extend {
            let head = TYPE_TIME_EXTEND | (((ext & ((1 << 27) - 1)) as u32) << 5);
            data.extend_from_slice(&head.to_ne_bytes());
            data.extend_from_slice(&((ext >> 27) as u32).to_ne_bytes());
        }
        for (delta, rec) in records {
            if rec.len() <= 28 * 4 && rec.len() % 4 == 0 {
                let head = (rec.len() / 4) as u32 | (delta << 5);
                data.extend_from_slice(&head.to_ne_bytes());
            } else {
                data.extend_from_slice(&(delta << 5).to_ne_bytes());
                data.extend_from_slice(&(rec.len() as u32 + 4).to_ne_bytes());
            }
            data.extend_from_slice(rec);
        }
        let mut p = Vec::new();
        p.extend_from_slice(&start.to_ne_bytes());
        // A missed-events flag in the commit word must not change the length.
        p.extend_from_slice(&((data.len() as u64) | (1 << 31)).to_ne_bytes());
        p.extend_from_slice(&data);
        p.resize(4096, 0);
        p
    }

    #[test]
    fn formats_give_the_fields_places() {
        let f = parse_fields(SWITCH);
        assert_eq!(
            f["prev_state"],
            Field {
                offset: 32,
                size: 8
            }
        );
        assert_eq!(
            f["next_comm"],
            Field {
                offset: 40,
                size: 16
            }
        );
        assert_eq!(
            page_size("\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n"),
            4096
        );
        assert!(Layout::default().add("sched_switch", "ID: 1\n").is_err());
    }

    #[test]
    fn pages_decode_with_their_times() {
        let l = layout();
        let p = page(
            1_000,
            &[
                (5, switch_record(10, 0x100, 11)),
                (7, wakeup_record(10)),
                (3, switch_record(11, 1, 10)),
                (2, switch_record(12, 0x10, 0)),
                // Over 112 bytes: a long record, its length after the header.
                (4, {
                    let mut r = wakeup_record(20);
                    r.resize(120, 0);
                    r
                }),
            ],
            Some(1 << 30),
        );
        let mut out = Vec::new();
        parse_page(&p, &l, &mut out);
        let t0 = 1_000 + (1u64 << 30) + 5;
        assert_eq!(
            out,
            vec![
                Stamped {
                    ns: t0,
                    event: SchedEvent::Switch {
                        prev: 10,
                        prev_runnable: true,
                        prev_dead: false,
                        next: 11
                    }
                },
                Stamped {
                    ns: t0 + 7,
                    event: SchedEvent::Wakeup { pid: 10 }
                },
                Stamped {
                    ns: t0 + 10,
                    event: SchedEvent::Switch {
                        prev: 11,
                        prev_runnable: false,
                        prev_dead: false,
                        next: 10
                    }
                },
                Stamped {
                    ns: t0 + 12,
                    event: SchedEvent::Switch {
                        prev: 12,
                        prev_runnable: false,
                        prev_dead: true,
                        next: 0
                    }
                },
                Stamped {
                    ns: t0 + 16,
                    event: SchedEvent::Wakeup { pid: 20 }
                },
            ]
        );
    }

    #[test]
    fn a_cut_page_ends_where_it_stops_making_sense() {
        let l = layout();
        let mut p = page(
            0,
            &[(1, wakeup_record(3)), (1, switch_record(1, 0, 2))],
            None,
        );
        // Claim more committed bytes than the records hold: the rest is zeros (padding with
        // no delta), which ends the page.
        p[8..16].copy_from_slice(&4000u64.to_ne_bytes());
        let mut out = Vec::new();
        parse_page(&p, &l, &mut out);
        assert_eq!(out.len(), 2);
        parse_page(&p[..20], &l, &mut out);
        parse_page(&[], &l, &mut out);
        assert_eq!(out.len(), 2);
    }
}
