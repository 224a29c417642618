/*
 * The C peer of `schedlab ipc-pingpong`, for bench/ipc.sh: the same pairs of forked
 * processes bouncing a token with the same system calls, so the ratio of the two shows
 * what schedlab's Rust adds (it should add nothing measurable).
 *
 *   pingpong msg|sem|pipe same|cross|none PAIRS SECONDS
 *
 * msg:  one queue per pair; the pinger msgsnd()s type 1 and msgrcv()s type 2 (4 bytes).
 * sem:  two semaphores per pair; the pinger does +1 on 0 then -1 on 1, the ponger the reverse.
 * pipe: two pipes per pair, 4-byte write/read (as perf bench sched pipe).
 * same: both tasks of pair k on CPU k; cross: pinger on CPU k, ponger on CPU k+1.
 * Prints: Total: N round trips in S s = R round trips/sec
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/sem.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { MSG, SEM, PIPE };

struct pair_ctl {
	volatile unsigned quit;
	volatile unsigned long count;
	char pad[64 - sizeof(unsigned) - sizeof(unsigned long)];
};

struct shared {
	volatile unsigned stop;
	char pad[60];
	struct pair_ctl pair[];
};

struct tok {
	long mtype;
	char text[128];
};

static int kind;
static struct shared *sh;

static void die(const char *what)
{
	perror(what);
	_exit(2);
}

static void pin(int cpu)
{
	cpu_set_t set;
	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
}

struct end {
	int id;
	int wfd, rfd;
	long stype, rtype;
	unsigned short post, wait;
	struct tok buf;
};

/* One semop on semaphore `num` of set `id`, retried when a signal interrupts it. */
static void sem_step(int id, unsigned short num, short delta)
{
	struct sembuf op = { num, delta, 0 };
	while (semop(id, &op, 1) < 0)
		if (errno != EINTR)
			die("semop");
}

static void tsend(struct end *e)
{
	switch (kind) {
	case MSG:
		e->buf.mtype = e->stype;
		while (msgsnd(e->id, &e->buf, 4, 0) < 0)
			if (errno != EINTR)
				die("msgsnd");
		break;
	case SEM:
		sem_step(e->id, e->post, 1);
		break;
	case PIPE:
		if (write(e->wfd, e->buf.text, 4) != 4)
			die("write");
		break;
	}
}

static void trecv(struct end *e)
{
	switch (kind) {
	case MSG:
		while (msgrcv(e->id, &e->buf, sizeof(e->buf.text), e->rtype, 0) < 0)
			if (errno != EINTR)
				die("msgrcv");
		break;
	case SEM:
		sem_step(e->id, e->wait, -1);
		break;
	case PIPE:
		if (read(e->rfd, e->buf.text, 4) != 4)
			die("read");
		break;
	}
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s msg|sem|pipe same|cross|none PAIRS SECONDS\n", argv[0]);
		return 2;
	}
	kind = !strcmp(argv[1], "msg") ? MSG : !strcmp(argv[1], "sem") ? SEM : PIPE;
	const char *pinmode = argv[2];
	int pairs = atoi(argv[3]);
	double seconds = atof(argv[4]);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	size_t len = 64 * (pairs + 1);
	sh = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap");
	int *ids = calloc(pairs, sizeof(int));
	int (*fds)[4] = calloc(pairs, sizeof(*fds));
	for (int k = 0; k < pairs; k++) {
		if (kind == MSG)
			ids[k] = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
		else if (kind == SEM)
			ids[k] = semget(IPC_PRIVATE, 2, IPC_CREAT | 0600);
		else if (pipe(fds[k]) || pipe(fds[k] + 2))
			die("pipe");
		if (ids[k] < 0)
			die("msgget/semget");
	}
	int ready[2], go[2];
	if (pipe(ready) || pipe(go))
		die("pipe");
	pid_t parent = getpid();
	pid_t *pids = calloc(2 * pairs, sizeof(pid_t));
	for (int k = 0; k < pairs; k++) {
		for (int role = 0; role < 2; role++) {
			pid_t pid = fork();
			if (pid < 0)
				die("fork");
			if (pid) {
				pids[2 * k + role] = pid;
				continue;
			}
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(3);
			close(go[1]);
			close(ready[0]);
			int cpu = -1;
			if (!strcmp(pinmode, "same"))
				cpu = k % ncpu;
			else if (!strcmp(pinmode, "cross"))
				cpu = (k + role) % ncpu;
			pin(cpu);
			struct end e = { 0 };
			e.id = ids[k];
			e.stype = role ? 2 : 1;
			e.rtype = role ? 1 : 2;
			e.post = role ? 1 : 0;
			e.wait = role ? 0 : 1;
			e.wfd = role ? fds[k][3] : fds[k][1];
			e.rfd = role ? fds[k][0] : fds[k][2];
			char c = 0;
			if (write(ready[1], &c, 1) != 1)
				die("write ready");
			close(ready[1]);
			if (read(go[0], &c, 1) != 1)
				_exit(0);
			struct pair_ctl *pc = &sh->pair[k];
			if (role == 0) {
				while (!sh->stop) {
					tsend(&e);
					trecv(&e);
					pc->count++;
				}
				__atomic_store_n(&pc->quit, 1, __ATOMIC_SEQ_CST);
				tsend(&e);
			} else {
				for (;;) {
					trecv(&e);
					if (__atomic_load_n(&pc->quit, __ATOMIC_SEQ_CST))
						break;
					tsend(&e);
				}
			}
			_exit(0);
		}
	}
	close(ready[1]);
	close(go[0]);
	if (kind == PIPE)
		for (int k = 0; k < pairs; k++)
			for (int j = 0; j < 4; j++)
				close(fds[k][j]);
	char buf[4096];
	int want = 2 * pairs, got = 0;
	while (got < want) {
		ssize_t n = read(ready[0], buf, sizeof(buf));
		if (n <= 0)
			die("a task did not start");
		got += n;
	}
	struct timespec t0, t1, nap;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(buf, 1, sizeof(buf));
	for (int left = want; left > 0;) {
		ssize_t n = write(go[1], buf, left < (int)sizeof(buf) ? left : (int)sizeof(buf));
		if (n <= 0)
			die("write go");
		left -= n;
	}
	nap.tv_sec = (time_t)seconds;
	nap.tv_nsec = (long)((seconds - nap.tv_sec) * 1e9);
	while (nanosleep(&nap, &nap) && errno == EINTR)
		;
	__atomic_store_n(&sh->stop, 1, __ATOMIC_SEQ_CST);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	int bad = 0;
	for (int i = 0; i < want; i++) {
		int status;
		waitpid(pids[i], &status, 0);
		bad |= !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	for (int k = 0; k < pairs; k++) {
		if (kind == MSG)
			msgctl(ids[k], IPC_RMID, NULL);
		else if (kind == SEM)
			semctl(ids[k], 0, IPC_RMID);
	}
	double secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	unsigned long total = 0;
	for (int k = 0; k < pairs; k++)
		total += sh->pair[k].count;
	printf("Total: %lu round trips in %.3f s = %.0f round trips/sec\n", total, secs, total / secs);
	return bad;
}
