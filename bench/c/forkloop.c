/* The C peer of `schedlab fork-load`: contest's fork_load loop, plainly.
 * usage: forkloop PROGRAM SECONDS FORKERS
 * FORKERS processes each fork, exec PROGRAM in the child, wait for it, and repeat until the
 * parent raises a stop flag after SECONDS. Prints `Children forked: N` like contest.
 * Counts and the flag live in a shared anonymous mapping, one cache line each. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LINE 64

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: forkloop PROGRAM SECONDS FORKERS\n");
		return 2;
	}
	char *prog = argv[1];
	double secs = atof(argv[2]);
	int forkers = atoi(argv[3]);
	char *shared = mmap(NULL, LINE * (forkers + 1), PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED || forkers < 1) {
		perror("forkloop");
		return 1;
	}
	volatile int *stop = (volatile int *)shared;
	double start = now();
	for (int f = 0; f < forkers; f++) {
		if (fork() == 0) {
			volatile long *count = (volatile long *)(shared + LINE * (f + 1));
			char *child_argv[] = { prog, NULL };
			while (!*stop) {
				pid_t pid = fork();
				if (pid == 0) {
					execv(prog, child_argv);
					_exit(127);
				}
				if (pid < 0) {
					perror("fork");
					_exit(1);
				}
				waitpid(pid, NULL, 0);
				(*count)++;
			}
			_exit(0);
		}
	}
	struct timespec ts = { (time_t)secs, (long)((secs - (time_t)secs) * 1e9) };
	nanosleep(&ts, NULL);
	*stop = 1;
	while (wait(NULL) > 0)
		;
	double elapsed = now() - start;
	long total = 0;
	for (int f = 0; f < forkers; f++)
		total += *(volatile long *)(shared + LINE * (f + 1));
	printf("Children forked: %ld\n", total);
	printf("Rate: %.0f forks/s over %.3f s\n", total / elapsed, elapsed);
	return 0;
}
