/*
 * What the two C chat peers (chat_c.c, chat_s.c) share: the protocol's sizes, whole-message
 * transfers, a semaphore step, the server's address from the command line, and the signals
 * that end a run. Each program brings its own die() and on_term() (what it removes on exit).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sem.h>
#include <sys/socket.h>

#define USERS 20
#define MSG 100
#define STACK (64 * 1024)

/* Receives exactly `len` bytes; -1 on an error or a closed connection (errno ECONNRESET). */
static inline int read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = recv(fd, (char *)buf + done, len - done, MSG_WAITALL);
		if (n > 0)
			done += n;
		else if (n == 0)
			return errno = ECONNRESET, -1;
		else if (errno != EINTR)
			return -1;
	}
	return 0;
}

/* Sends exactly `len` bytes; -1 on an error. */
static inline int write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = send(fd, (const char *)buf + done, len - done, MSG_NOSIGNAL);
		if (n >= 0)
			done += n;
		else if (errno != EINTR)
			return -1;
	}
	return 0;
}

/* Adds `delta` to semaphore `num` of set `id`, retried when a signal interrupts it. */
static inline int sem_add(int id, int num, int delta)
{
	struct sembuf op = { .sem_num = num, .sem_op = delta, .sem_flg = 0 };
	while (semop(id, &op, 1) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

/* Exits 1 with the usage line unless the command line names the server (its first word). */
static inline void need_server(int argc, const char *usage)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s\n", usage);
		exit(1);
	}
}

/* The server's address from its command-line words; exits 1 saying why when `ip` is not one. */
static inline struct sockaddr_in server_address(const char *prog, const char *ip, int port)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons(port) };
	if (inet_pton(AF_INET, ip, &addr.sin_addr) != 1) {
		fprintf(stderr, "%s: invalid address %s\n", prog, ip);
		exit(1);
	}
	return addr;
}

/* Ends the program through `on_term` on SIGTERM, SIGINT and SIGHUP. */
static inline void end_on_signals(void (*on_term)(int))
{
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	signal(SIGHUP, on_term);
}
