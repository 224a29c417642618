/*
 * stallwatch: catches a thread that stops running, and says where it waits.
 *
 * Polls /proc/PID/task/TID/schedstat every 10 ms. When the thread's run time has not moved
 * for LIMIT ms (a sampler that should sweep every 100 ms), prints its state, wchan and kernel
 * stack (root), and those of every other thread of the process; then, when it runs again,
 * how long it was off and how much of that it spent runnable (schedstat's wait).
 *
 * This is how the observer's multi-second sweep stalls were found (docs/performance.md, "Late
 * and missed samples"): the sampler in D state in synchronize_rcu, from expand_files.
 *
 * Usage, as root, beside a `schedlab run` whose sampler is its main thread:
 *   gcc -O2 -o /tmp/stallwatch bench/c/stallwatch.c
 *   chrt -f 2 /tmp/stallwatch "$(pgrep -f 'schedlab run')" [TID [LIMIT_MS]]
 * Run it under SCHED_FIFO above the sampler's priority 1, or it stalls with what it watches.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* Reads a small file into buf (NUL-terminated); -1 when it cannot be opened. */
static int slurp(const char *path, char *buf, int size)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n > 0 ? n : 0] = 0;
	return n;
}

static void show(int pid, int tid, const char *who)
{
	char path[256], buf[8192], comm[64] = "", wchan[128] = "", ss[128] = "";
	snprintf(path, sizeof path, "/proc/%d/task/%d/stat", pid, tid);
	if (slurp(path, buf, sizeof buf) < 0)
		return;
	char *r = strrchr(buf, ')');
	char state = r ? r[2] : '?';
	snprintf(path, sizeof path, "/proc/%d/task/%d/comm", pid, tid);
	slurp(path, comm, sizeof comm);
	comm[strcspn(comm, "\n")] = 0;
	snprintf(path, sizeof path, "/proc/%d/task/%d/wchan", pid, tid);
	slurp(path, wchan, sizeof wchan);
	snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", pid, tid);
	slurp(path, ss, sizeof ss);
	ss[strcspn(ss, "\n")] = 0;
	printf("  %s %d (%s) state %c wchan %s schedstat %s\n", who, tid, comm, state, wchan, ss);
	snprintf(path, sizeof path, "/proc/%d/task/%d/stack", pid, tid);
	if (slurp(path, buf, sizeof buf) > 0) {
		int k = 0;
		for (char *l = strtok(buf, "\n"); l && k < 12; l = strtok(NULL, "\n"), k++)
			printf("      %s\n", l);
	}
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: stallwatch PID [TID [LIMIT_MS]]\n");
		return 2;
	}
	int pid = atoi(argv[1]), tid = argc > 2 ? atoi(argv[2]) : pid;
	double limit = (argc > 3 ? atof(argv[3]) : 250) / 1000;
	char path[256], buf[256];
	snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", pid, tid);
	unsigned long long run = 0, wait = 0, slices, last_run = 0, last_wait = 0;
	double since = now(), t0 = since;
	int told = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (;;) {
		struct timespec tick = {0, 10 * 1000 * 1000};
		nanosleep(&tick, NULL);
		if (slurp(path, buf, sizeof buf) < 0)
			break; /* it exited */
		sscanf(buf, "%llu %llu %llu", &run, &wait, &slices);
		double t = now();
		if (run != last_run) {
			if (told)
				printf("%.3f ran again after %.0f ms, runnable for %.1f ms of it\n", t - t0,
				       (t - since) * 1000, (wait - last_wait) / 1e6);
			last_run = run;
			last_wait = wait;
			since = t;
			told = 0;
			continue;
		}
		if (told || t - since <= limit)
			continue;
		told = 1;
		printf("%.3f STALL: thread %d has not run for %.0f ms\n", t - t0, tid, (t - since) * 1000);
		show(pid, tid, "stalled");
		char dir[64];
		snprintf(dir, sizeof dir, "/proc/%d/task", pid);
		DIR *d = opendir(dir);
		for (struct dirent *e; d && (e = readdir(d));) {
			int other = atoi(e->d_name);
			if (other > 0 && other != tid)
				show(pid, other, "other");
		}
		if (d)
			closedir(d);
		if (slurp("/proc/loadavg", buf, sizeof buf) > 0)
			printf("  loadavg %s", buf);
	}
	return 0;
}
