//! The scheduler's debug table (`/sys/kernel/debug/sched/debug`, root only): per CPU, each task
//! group's run queue, and the entity that stands for the group in its parent's queue. No other
//! file says where a group entity stands: its vruntime against the average of the queue it
//! sits in is what EEVDF judges eligibility by (at or below the average: eligible).

/// Where the kernel writes it (debugfs).
pub const PATH: &str = "/sys/kernel/debug/sched/debug";

/// A nice-0 task's weight as the table prints weights (scaled by 1024 on 64-bit kernels).
const NICE_0_WEIGHT: f64 = 1_048_576.0;

/// One task group's run queue on one CPU.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupQueue {
    pub cpu: u32,
    /// The group's path: "/" for the root, "/autogroup-12" for a session's autogroup, else
    /// its path in the cpu controller's hierarchy.
    pub path: String,
    /// Tasks queued under it on this CPU, at any depth.
    pub h_nr_queued: u64,
    /// The average vruntime of its own queue, in ms as the kernel prints it; None on kernels
    /// before EEVDF (no such line).
    pub avg_vruntime_ms: Option<f64>,
    /// Its entity in the parent's queue: vruntime (ms) and weight (1.0: a nice-0 task). None
    /// for the root, which has no parent.
    pub entity: Option<(f64, f64)>,
}

/// Where a group's entity stood on one CPU at one read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Standing {
    pub cpu: u32,
    /// The parent queue's average vruntime less the entity's, in ms of virtual time: at or
    /// above zero the entity is eligible to run, below it has run ahead of its share.
    pub lag_ms: f64,
    /// Its weight (1.0: a nice-0 task).
    pub weight: f64,
}

/// Reads and parses the table; None when it cannot be read (not root, no debugfs).
pub fn read() -> Option<Vec<GroupQueue>> {
    let text = std::fs::read_to_string(PATH).ok()?;
    let queues = parse(&text);
    (!queues.is_empty()).then_some(queues)
}

/// The `cfs_rq[CPU]:PATH` sections of the table; what it cannot read it leaves out.
pub fn parse(text: &str) -> Vec<GroupQueue> {
    let mut out: Vec<GroupQueue> = Vec::new();
    let mut open = false;
    for line in text.lines() {
        if let Some(head) = line.strip_prefix("cfs_rq[") {
            let Some((cpu, path)) = head.split_once("]:") else {
                open = false;
                continue;
            };
            let Ok(cpu) = cpu.parse() else {
                open = false;
                continue;
            };
            out.push(GroupQueue {
                cpu,
                path: path.trim().to_string(),
                h_nr_queued: 0,
                avg_vruntime_ms: None,
                entity: None,
            });
            open = true;
            continue;
        }
        if !line.starts_with("  .") {
            // Another section (rt_rq, dl_rq, the task list) ends this one.
            open &= line.trim().is_empty();
            continue;
        }
        let (Some(q), true) = (out.last_mut(), open) else {
            continue;
        };
        let Some((key, value)) = line.trim().split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            ".h_nr_queued" | ".h_nr_running" => q.h_nr_queued = value.parse().unwrap_or(0),
            ".avg_vruntime" => q.avg_vruntime_ms = value.parse().ok(),
            ".se->vruntime" => {
                if let Ok(v) = value.parse() {
                    q.entity = Some((v, q.entity.map_or(1.0, |e| e.1)));
                }
            }
            ".se->load.weight" => {
                if let (Ok(w), Some(e)) = (value.parse::<f64>(), q.entity.as_mut()) {
                    e.1 = w / NICE_0_WEIGHT;
                }
            }
            _ => {}
        }
    }
    out
}

/// The parent of a group's path ("/autogroup-3" and "/a" → "/", "/a/b" → "/a").
pub fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// Whether the table has a queue for this path.
pub fn has_group(queues: &[GroupQueue], path: &str) -> bool {
    queues.iter().any(|q| q.path == path)
}

/// Where the group `path`'s entity stands on each CPU it has tasks queued on.
pub fn standing(queues: &[GroupQueue], path: &str) -> Vec<Standing> {
    let up = parent(path);
    queues
        .iter()
        .filter(|q| q.path == path && q.h_nr_queued > 0)
        .filter_map(|q| {
            let (vruntime, weight) = q.entity?;
            let avg = queues
                .iter()
                .find(|p| p.cpu == q.cpu && p.path == up)?
                .avg_vruntime_ms?;
            Some(Standing {
                cpu: q.cpu,
                lag_ms: avg - vruntime,
                weight,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two CPUs of the table as kernel 6.18 printed it, trimmed: a pinned ping-pong's session
    /// (autogroup-1979, on both CPUs) and a hog's (autogroup-2066, on CPU 0).
    const TABLE: &str = "\
cpu#0, 2600.000 MHz
  .nr_running                    : 9

cfs_rq[0]:/autogroup-1979
  .avg_vruntime                  : 401045.917932
  .nr_queued                     : 2
  .h_nr_queued                   : 2
  .se->vruntime                  : 38739069.249020
  .se->sum_exec_runtime          : 75809.198182
  .se->load.weight               : 426850

cfs_rq[0]:/autogroup-2066
  .avg_vruntime                  : -1.048576
  .h_nr_queued                   : 1
  .se->vruntime                  : 38739082.880516
  .se->load.weight               : 1048576

cfs_rq[0]:/
  .avg_vruntime                  : 38739082.879400
  .h_nr_queued                   : 8
  .tg_load_avg                   : 0

rt_rq[0]:/
  .rt_nr_running                 : 0

runnable tasks:
 S     process_api     1  37935270.154278   E    37935270.296909

cpu#1, 2600.000 MHz

cfs_rq[1]:/autogroup-1979
  .avg_vruntime                  : 541876.063573
  .h_nr_queued                   : 2
  .se->vruntime                  : 37268834.028102
  .se->load.weight               : 625996

cfs_rq[1]:/autogroup-2066
  .avg_vruntime                  : 0.000000
  .h_nr_queued                   : 0
  .se->vruntime                  : 37268850.000000
  .se->load.weight               : 2

cfs_rq[1]:/
  .avg_vruntime                  : 37268843.468655
  .h_nr_queued                   : 6
";

    #[test]
    fn the_table_gives_each_group_s_queue_per_cpu() {
        let qs = parse(TABLE);
        assert_eq!(qs.len(), 6, "{qs:#?}");
        assert_eq!(qs[0].path, "/autogroup-1979");
        assert_eq!(qs[0].h_nr_queued, 2);
        let (v, w) = qs[0].entity.unwrap();
        assert!((v - 38739069.249020).abs() < 1e-6);
        assert!((w - 426850.0 / 1_048_576.0).abs() < 1e-9);
        let root = &qs[2];
        assert_eq!((root.cpu, root.path.as_str()), (0, "/"));
        assert_eq!(root.entity, None, "the root has no entity");
        assert_eq!(root.h_nr_queued, 8, "the rt_rq after it is not its");
        assert!(has_group(&qs, "/autogroup-2066"));
        assert!(!has_group(&qs, "/autogroup-7"));
    }

    #[test]
    fn a_group_s_standing_is_its_entity_against_its_parent_s_average() {
        let qs = parse(TABLE);
        let pingpong = standing(&qs, "/autogroup-1979");
        assert_eq!(pingpong.len(), 2);
        // 38739082.879400 - 38739069.249020: 13.6 ms of virtual time owed, eligible.
        assert!(
            (pingpong[0].lag_ms - 13.630380).abs() < 1e-6,
            "{pingpong:?}"
        );
        assert!((pingpong[1].lag_ms - 9.440553).abs() < 1e-6, "{pingpong:?}");
        // The hog's, queued on CPU 0 only, at the average to a microsecond.
        let hog = standing(&qs, "/autogroup-2066");
        assert_eq!(hog.len(), 1, "no tasks queued on CPU 1: {hog:?}");
        assert!((hog[0].lag_ms + 0.001116).abs() < 1e-6, "{hog:?}");
        assert!((hog[0].weight - 1.0).abs() < 1e-9);
        assert_eq!(parent("/a/b"), "/a");
        assert_eq!(parent("/a"), "/");
    }

    #[test]
    fn the_kernel_s_own_table_reads_when_it_can() {
        // Root with debugfs: every CPU has a root queue. Elsewhere: nothing, quietly.
        if let Some(qs) = read() {
            assert!(qs.iter().any(|q| q.path == "/"), "{qs:?}");
        }
    }
}
