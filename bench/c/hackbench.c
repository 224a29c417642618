/* A small C hackbench for bench/loads.sh: the workload docs/workloads.md describes,
 * written for this benchmark (not the original's code), so schedlab can be compared with a
 * C program of the same size and shape as well as with `perf bench sched messaging`, a much
 * larger process that runs 1.5-2x slower here in process and pipe modes.
 * usage: hackbench GROUPS LOOPS MODE   (MODE: process | pipe | thread)
 * Prints `Time: S.mmm`. 20 senders and 20 receivers per group, 100-byte messages. */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define FDS 20
#define SIZE 100

static int use_pipe, use_threads, loops, ready_w, wake_r;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void pair(int fds[2])
{
	if ((use_pipe ? pipe(fds) : socketpair(AF_UNIX, SOCK_STREAM, 0, fds)) != 0)
		die("pair");
}

static void wait_go(void)
{
	char c = 0;
	struct pollfd p = { .fd = wake_r, .events = POLLIN };
	if (write(ready_w, &c, 1) != 1 || poll(&p, 1, -1) != 1)
		die("ready");
}

struct task {
	int in;            /* receiver: its descriptor */
	int out[FDS];      /* sender: its group's descriptors */
	int sender;
};

static void *run(void *arg)
{
	struct task *t = arg;
	char buf[SIZE];
	wait_go();
	if (t->sender) {
		memset(buf, 0, sizeof buf);
		for (int l = 0; l < loops; l++)
			for (int j = 0; j < FDS; j++)
				for (int done = 0; done < SIZE;) {
					ssize_t n = write(t->out[j], buf + done, SIZE - done);
					if (n <= 0)
						die("write");
					done += n;
				}
	} else {
		for (int m = 0; m < FDS * loops; m++)
			for (int done = 0; done < SIZE;) {
				ssize_t n = read(t->in, buf + done, SIZE - done);
				if (n <= 0)
					die("read");
				done += n;
			}
	}
	return NULL;
}

/* Starts a task: a thread, or a process that first closes `unused` (-1: nothing). */
static void start(pthread_t *th, struct task *t, int unused)
{
	if (use_threads) {
		if (pthread_create(th, NULL, run, t))
			die("pthread_create");
		return;
	}
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		if (unused >= 0)
			close(unused);
		run(t);
		_exit(0);
	}
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return fprintf(stderr, "usage: hackbench GROUPS LOOPS process|pipe|thread\n"), 2;
	int groups = atoi(argv[1]);
	loops = atoi(argv[2]);
	use_pipe = !strcmp(argv[3], "pipe");
	use_threads = !strcmp(argv[3], "thread");
	int ready[2], wake[2];
	pair(ready);
	pair(wake);
	ready_w = ready[1];
	wake_r = wake[0];
	int tasks = groups * FDS * 2;
	struct task *t = calloc(tasks, sizeof *t);
	pthread_t *th = calloc(tasks, sizeof *th);
	int n = 0;
	for (int g = 0; g < groups; g++) {
		int out[FDS];
		for (int i = 0; i < FDS; i++, n++) {
			int fds[2];
			pair(fds);
			t[n].in = fds[0];
			out[i] = fds[1];
			start(&th[n], &t[n], fds[1]);
			if (!use_threads)
				close(fds[0]);
		}
		for (int i = 0; i < FDS; i++, n++) {
			t[n].sender = 1;
			memcpy(t[n].out, out, sizeof out);
			start(&th[n], &t[n], -1);
		}
		if (!use_threads)
			for (int i = 0; i < FDS; i++)
				close(out[i]);
	}
	char c;
	for (int i = 0; i < tasks; i++)
		if (read(ready[0], &c, 1) != 1)
			die("ready read");
	struct timeval start, stop, d;
	gettimeofday(&start, NULL);
	if (write(wake[1], &c, 1) != 1)
		die("wake");
	for (int i = 0; i < tasks; i++) {
		if (use_threads) {
			pthread_join(th[i], NULL);
		} else {
			int status;
			if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
				die("child");
		}
	}
	gettimeofday(&stop, NULL);
	timersub(&stop, &start, &d);
	printf("Time: %ld.%03ld\n", (long)d.tv_sec, (long)d.tv_usec / 1000);
	return 0;
}
