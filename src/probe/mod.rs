//! Everything that reads the kernel: which tasks belong to a workload, their
//! schedstat/stat/status, cgroup usage, /proc/stat, PSI, autogroup. Returns raw cumulative
//! counters with a timestamp (a Sample). Nothing else in the program opens /proc.
